package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTooFewRowsIsBadInput: ece_variational on fewer rows than its folds
// is the input's fault (exit 2, the reason named), not calib's (exit 1).
func TestTooFewRowsIsBadInput(t *testing.T) {
	in := filepath.Join(t.TempDir(), "four.csv")
	if err := os.WriteFile(in, []byte("0.2,0.3,0.5,0\n0.6,0.2,0.2,1\n0.1,0.1,0.8,2\n0.3,0.3,0.4,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "eval", in, "--metrics", "ece_variational")
	if code != 2 || !strings.Contains(stderr, "4 rows for 5 folds") {
		t.Errorf("exit %d, %q; want exit 2 naming 4 rows for 5 folds", code, stderr)
	}
}
