package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestTypedWarnings: the warnings are *Warning values with a kind and,
// from AllWarnings, the metric and notion; the JSON keeps the texts.
func TestTypedWarnings(t *testing.T) {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{"ece_bin", "mce"}, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[WarningKind]int{}
	for _, err := range ev.AllWarnings() {
		var w *Warning
		if !errors.As(err, &w) {
			t.Fatalf("%T is not a *Warning", err)
		}
		if w.Metric == "" || w.Notion != "canonical" {
			t.Errorf("warning without its metric and notion: %+v", w)
		}
		kinds[w.Kind]++
	}
	// n = 200 in 82 occupied cells: every canonical binned entry is flagged.
	if kinds[SparseCells] != 3 {
		t.Errorf("SparseCells warnings: %d, want 3 (ece_bin p = 1, 2 and mce)", kinds[SparseCells])
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, ev); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Results []struct {
			Warnings []string `json:"warnings"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range back.Results {
		n += len(r.Warnings)
	}
	if n != 3 {
		t.Errorf("%d warning texts in the JSON, want 3", n)
	}
	var ws Warnings
	if err := json.Unmarshal([]byte(`["a","b"]`), &ws); err != nil || len(ws) != 2 || ws[1].Error() != "b" {
		t.Errorf("Warnings round trip: %v %v", ws, err)
	}
}
