package demotext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// TestWrite: the headline shows each main figure found, with its
// interval, in the headline's order, and the text explains the numbers.
func TestWrite(t *testing.T) {
	p1, r1 := 1.0, 1
	v := func(x float64) *data.Float { f := data.Float(x); return &f }
	ev := &evaluate.Evaluation{N: 100, K: 3, Results: []*evaluate.Result{
		{Metric: "accuracy", Value: v(0.9)},
		{Metric: "ece_witness", Notion: "canonical", P: &p1, Value: v(0.07)}, // not a headline figure
		{Metric: "ece_variational", Notion: "canonical", VariationalKeys: evaluate.VariationalKeys{Loss: "lp"}, P: &p1, Value: v(0.05), CI: []data.Float{0.04, 0.06}},
		{Metric: "ks", Notion: "top_r", R: &r1, Value: v(0.02)},
		{Metric: "nll", Error: "failed"},
	}}
	var b bytes.Buffer
	tests := &calibtest.Report{Alpha: 0.05, Tests: []calibtest.Result{
		{Test: "ks", Notion: "top_label", PValue: 0.2},
		{Test: "skce", Notion: "canonical", PValue: 0.01, Reject: true},
	}}
	if err := Write(&b, ev, &compare.Comparison{}, tests); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	witness := strings.Index(s, "  canonical CE_1 (report this)           0.0500  [0.0400, 0.0600]\n")
	ks := strings.Index(s, "  KS top-1                               0.0200\n")
	acc := strings.Index(s, "  accuracy                               0.9000\n")
	if witness < 0 || strings.Contains(s, "0.0700") || ks < witness || acc < ks || strings.Contains(s, "\n  NLL ") || !strings.Contains(s, "test split: n = 100, K = 3") || !strings.Contains(s, "What the numbers mean:") ||
		!strings.Contains(s, "Is it calibrated? no: 1 of 2 tests reject calibration at the 5 % level (smallest p-value 0.01, skce canonical)") {
		t.Errorf("text:\n%s", s)
	}
}
