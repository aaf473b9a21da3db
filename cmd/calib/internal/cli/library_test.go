package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/goldenjson"
)

// TestExampleMatchesCLI: the Go program of evaluate's Example_json (load,
// Evaluate, WriteJSON) prints what calib eval --json prints for the same
// file and metrics, times and provenance aside: the CLI adds nothing of
// its own to the numbers.
func TestExampleMatchesCLI(t *testing.T) {
	t.Chdir("../../../../evaluate")
	const file = "testdata/c02_n200_k3.csv"
	for _, weighted := range []bool{false, true} {
		args := []string{"eval", file, "--metrics", "ks,accuracy,ece_bin,brier", "--json", "--progress=false"}
		s, err := data.Load(file, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if weighted {
			w := make([]float64, s.N)
			var text bytes.Buffer
			for i := range w {
				w[i] = float64(i%4) * 0.5
				text.WriteString([]string{"0\n", "0.5\n", "1\n", "1.5\n"}[i%4])
			}
			name := t.TempDir() + "/w.txt"
			if err := atomicfile.WriteBytes(name, text.Bytes()); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWeights(w); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--weights", name)
		}
		ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{Metrics: evaluate.MetricSet{"ks", "accuracy", "ece_bin", "brier"}, Strict: true, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var lib bytes.Buffer
		if err := evaluate.WriteJSON(&lib, ev); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		want, err := goldenjson.Decode(lib.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got, err := goldenjson.Decode([]byte(stdout))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range goldenjson.Diff("", want, got, false) {
			t.Errorf("weighted %v: %s", weighted, d)
		}
		if weighted && !bytes.Contains([]byte(stdout), []byte(`"weighted":true`)) {
			t.Errorf("weighted run does not say so: %.300s", stdout)
		}
	}
}
