package compare

import (
	"context"
	"testing"

	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/recal"
)

// TestCompareRowIsTheMapApplied: every row of a comparison holds the
// figures of its fitted map applied to the test set, as calib eval
// --calibrator measures the map calib fit writes: the spline's KS top-2
// and within-top-2 are those of its map (the map applies only the top-1
// curve), not of the separately fitted top-2 curves (which read 0.863 %
// and 0.381 % where the map gives 2.219 % and 2.501 % on CIFAR-100).
func TestCompareRowIsTheMapApplied(t *testing.T) {
	val, test := load(t, "c07_n100_k4_onehot_row"), load(t, "c09_n40_k4_toplabel_one_correct")
	methods := []recal.Method{recal.MethodSpline, recal.MethodHistogram, recal.MethodIsotonic, recal.MethodDirichlet}
	c, err := Compare(context.Background(), val, test, Options{Methods: methods, Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows[1:] {
		if r.Error != "" {
			t.Fatalf("%s: %s", r.Method, r.Error)
		}
		m, err := recal.Fit(context.Background(), recal.Method(r.Method), val, recal.FitOptions{Linear: recal.LinearOptions{Seed: 1, Workers: 1}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := recal.Apply(m, test)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{Metrics: evaluate.MetricSet{"ks", "brier", "accuracy"}, KS: evaluate.KSOptions{R: []int{1, 2}}, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := func(k evaluate.Key) float64 {
			if e := ev.Lookup(k); e != nil && e.Value != nil {
				return float64(*e.Value)
			}
			t.Errorf("no %+v entry", k)
			return 0
		}
		for _, x := range []struct {
			name      string
			got, want float64
		}{
			{"KS top-1", Value(r.KSTop1), want(evaluate.Key{Metric: evaluate.KS, Notion: "top_r", R: 1})},
			{"KS top-2", Value(r.KSTop2), want(evaluate.Key{Metric: evaluate.KS, Notion: "top_r", R: 2})},
			{"KS within-top-2", Value(r.KSWithinTop2), want(evaluate.Key{Metric: evaluate.KS, Notion: "within_top_r", R: 2})},
			{"KS class-wise", Value(r.KSClassWise), want(evaluate.Key{Metric: evaluate.KS, Notion: "class_wise"})},
			{"Brier", Value(r.Brier), want(evaluate.Key{Metric: evaluate.Brier})},
			{"accuracy", Value(r.Accuracy), want(evaluate.Key{Metric: evaluate.Accuracy})},
		} {
			if x.got != x.want {
				t.Errorf("%s %s: row %v, the map applied %v", r.Method, x.name, x.got, x.want)
			}
		}
	}
}
