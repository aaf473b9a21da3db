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

// TestWrite: the headline shows each main figure found, with its one
// interval (the estimator's own, else the bootstrap's), in the headline's
// order, and the text explains the numbers.
func TestWrite(t *testing.T) {
	p1, r1, level := 1.0, 1, 0.95
	v := func(x float64) *data.Float { f := data.Float(x); return &f }
	ev := &evaluate.Evaluation{N: 100, K: 3, Results: []*evaluate.Result{
		{Metric: "accuracy", Value: v(0.9)},
		{Metric: "ece_witness", Notion: "canonical", P: &p1, Value: v(0.07)}, // not a headline figure
		{Metric: "ece_variational", Notion: "canonical", VariationalKeys: evaluate.VariationalKeys{Loss: "lp"}, P: &p1, Value: v(0.05), Interval: []data.Float{0.04, 0.06}, IntervalLevel: &level, IntervalKind: "cross-fit"},
		{Metric: "ks", Notion: "top_r", R: &r1, Value: v(0.02), CI: []data.Float{0.01, 0.03}, CILevel: &level, CIMethod: "centered"},
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
	ks := strings.Index(s, "  KS top-1                               0.0200  [0.0100, 0.0300]\n")
	acc := strings.Index(s, "  accuracy                               0.9000\n")
	if witness < 0 || strings.Contains(s, "0.0700") || ks < witness || acc < ks || strings.Contains(s, "\n  NLL ") || !strings.Contains(s, "test split: n = 100, K = 3 (intervals: 95 % cross-fit for the canonical CE_1, 95 % bootstrap for the others)\n") || !strings.Contains(s, "What the numbers mean:") ||
		!strings.Contains(s, "Is it calibrated? no: 1 of 2 tests reject calibration at the 5 % level (smallest p-value 0.01, skce canonical)") {
		t.Errorf("text:\n%s", s)
	}
}

// TestIntervalsNote: the split's line names the figures' intervals: one
// kind and level in one phrase, the first figure's apart from the others',
// or each kind; nothing without intervals.
func TestIntervalsNote(t *testing.T) {
	boot := evaluate.EntryInterval{Kind: "bootstrap", Level: 0.95}
	cross := evaluate.EntryInterval{Kind: "cross-fit", Level: 0.95}
	bound := evaluate.EntryInterval{Kind: "bound"}
	for _, c := range []struct {
		shown []shownInterval
		want  string
	}{
		{nil, ""},
		{[]shownInterval{{"a", boot}, {"b", boot}}, " (95 % bootstrap intervals)"},
		{[]shownInterval{{"a", cross}}, " (95 % cross-fit intervals)"},
		{[]shownInterval{{"canonical CE_1", cross}, {"b", boot}, {"c", boot}}, " (intervals: 95 % cross-fit for the canonical CE_1, 95 % bootstrap for the others)"},
		{[]shownInterval{{"a", cross}, {"b", boot}, {"c", bound}}, " (intervals: 95 % cross-fit, 95 % bootstrap, bound bounds)"},
	} {
		if got := intervalsNote(c.shown); got != c.want {
			t.Errorf("%v: %q, want %q", c.shown, got, c.want)
		}
	}
}
