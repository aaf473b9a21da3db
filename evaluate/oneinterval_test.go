package evaluate

import (
	"context"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestOneInterval: with CI every computed entry has one interval: the
// estimator's own (ece_variational's cross-fit Interval, no ci keys) or
// the bootstrap's, never both; OneInterval returns it, and nothing for an
// entry without one or with an "exact" (width 0) one.
func TestOneInterval(t *testing.T) {
	s := loadTest(t)
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{ECEVariational, ECEBin, Brier, Accuracy}, CI: true, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, e := range ev.Results {
		if e.Value == nil {
			continue
		}
		iv, ok := e.OneInterval()
		switch {
		case !ok:
			t.Errorf("%s: no interval", e.Key())
		case e.Interval != nil && (e.CI != nil || e.CILevel != nil || e.CIMethod != "" || e.CIResamples != nil || e.CISeed != nil):
			t.Errorf("%s: its own interval %v and a bootstrap's %v", e.Key(), e.Interval, e.CI)
		case e.Metric == ECEVariational:
			own++
			if e.IntervalKind != "cross-fit" || iv.Kind != "cross-fit" || iv.Level != 0.95 || iv.Lo != float64(e.Interval[0]) || iv.Hi != float64(e.Interval[1]) {
				t.Errorf("%s: %+v of %v (%s)", e.Key(), iv, e.Interval, e.IntervalKind)
			}
		default:
			if iv.Kind != "bootstrap" || iv.Method != e.CIMethod || iv.Level != 0.95 || iv.Lo != float64(e.CI[0]) || iv.Hi != float64(e.CI[1]) {
				t.Errorf("%s: %+v of %v", e.Key(), iv, e.CI)
			}
		}
	}
	if own == 0 {
		t.Error("no ece_variational entry")
	}
	// The headline's interval is the same with and without CI.
	plain, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{ECEVariational, ECEBin, Brier, Accuracy}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ev.Lookup(Headline).OneInterval()
	b, _ := plain.Lookup(Headline).OneInterval()
	if a != b {
		t.Errorf("headline interval %+v with CI, %+v without", a, b)
	}
	exact := &Result{Value: jf(0.1), Interval: []data.Float{0.1, 0.1}, IntervalKind: "exact"}
	if _, ok := exact.OneInterval(); ok {
		t.Error("an exact interval shown")
	}
	if _, ok := (&Result{Value: jf(0.1)}).OneInterval(); ok {
		t.Error("an interval of an entry without one")
	}
	both := &Result{Interval: []data.Float{1, 2}, IntervalKind: "cross-fit", CI: []data.Float{3, 4}} // a document from before the rule
	if iv, _ := both.OneInterval(); iv.Lo != 1 || iv.Kind != "cross-fit" {
		t.Errorf("both: %+v", iv)
	}
}
