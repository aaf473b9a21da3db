package evaluate

import (
	"bytes"
	"strings"
	"testing"
)

// TestErrorCellStaysNarrow: a failed entry's value cell says "error
// (below)" and its message, however long, follows the table, so the
// table's rows keep their width.
func TestErrorCellStaysNarrow(t *testing.T) {
	msg := "more than 5190 occupied canonical cells (15 bins per coordinate, K = 100): " + strings.Repeat("their sums would pass the stream's memory bound; ", 4)
	out := &Evaluation{File: "x.npy", N: 10, K: 100, Results: []*Result{
		{Metric: ECEBin, Notion: "canonical", Error: msg},
		{Metric: Brier, Value: jf(0.25)},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, out); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	table, after, ok := strings.Cut(text, "error: ece_bin canonical: ")
	if !ok || !strings.HasPrefix(after, msg) {
		t.Fatalf("the message does not follow the table:\n%s", text)
	}
	for _, line := range strings.Split(table, "\n") {
		if len(line) > 120 {
			t.Errorf("a row of %d characters: %q", len(line), line)
		}
	}
	if !strings.Contains(table, "error (below)") {
		t.Errorf("no error cell:\n%s", table)
	}
}
