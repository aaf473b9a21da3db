package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// TestVariationalFamilyLeftOutIsWarned: ece_variational on predictions
// whose temperature fit runs to the end of its range (uninformative sharp
// predictions) reports the other families' estimate, each entry warning
// that temperature was left out and why.
func TestVariationalFamilyLeftOutIsWarned(t *testing.T) {
	const n, k = 300, 3
	probs, labels := make([]float64, n*k), make([]int, n)
	for i := range n {
		labels[i] = (i * 7) % k
		for j := range k {
			probs[i*k+j] = 0.01
		}
		probs[i*k+(i*5/3)%k] = 0.98
	}
	s := &data.Set{Probs: probs, Labels: labels, N: n, K: k}
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{ECEVariational}, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ev.Results {
		if e.Notion == "class_wise" {
			continue // its own per-class maps
		}
		got := e.Warnings.Strings()
		if e.Family == "temperature" || len(got) != 1 || !strings.Contains(got[0], "family temperature left out, its fit failed: temperature, fold 0") {
			t.Errorf("%s %s: family %s, warnings %q", e.Notion, e.Loss, e.Family, got)
		}
	}
}
