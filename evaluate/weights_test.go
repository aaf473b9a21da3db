package evaluate

import (
	"context"
	"math"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestWeightsEqualRepeatedRows: an evaluation with integer weights gives,
// for every metric where the identity holds (means, binned ECE and MCE on
// equal-width bins, KS, MMCE, with weights 0..3; and with a 0/1 mask also
// the estimators that read weights as counts of their normalised form:
// equal-mass bins, the debiased L2), the values of the set with each row
// repeated w_i times (relative 1e-12). The kernel estimators exclude i =
// j, so copies of a row are each other's neighbours: they are checked
// against a brute-force weighted double loop in package kde.
func TestWeightsEqualRepeatedRows(t *testing.T) {
	base, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bins    string
		pattern [4]float64
		metrics MetricSet
	}{
		{"equal_width", [4]float64{0, 3, 1, 2}, MetricSet{"ece_bin", "mce", "ks", "mmce", "brier", "nll", "accuracy", "confidence"}},
		{"equal_width", [4]float64{0, 1, 1, 0}, MetricSet{"ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "brier", "nll", "accuracy", "confidence"}},
		{"equal_mass", [4]float64{1, 0, 1, 1}, MetricSet{"ece_bin", "mce", "ece_bin_debiased"}},
	} {
		s := base.Rows(0, base.N)
		w := make([]float64, s.N)
		var probs []float64
		var labels []int
		for i := range w {
			w[i] = c.pattern[i%4]
			for range int(w[i]) {
				probs = append(probs, s.Row(i)...)
				labels = append(labels, s.Labels[i])
			}
		}
		rep, err := data.New(probs, s.K, labels, false, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		o := Options{Metrics: c.metrics, Strict: true, KS: KSOptions{R: []int{1, 2, 3}}}
		if err := o.Bins.Binning.UnmarshalText([]byte(c.bins)); err != nil {
			t.Fatal(err)
		}
		a, err := Evaluate(context.Background(), s, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Evaluate(context.Background(), rep, o)
		if err != nil {
			t.Fatal(err)
		}
		if float64(a.WeightSum) != float64(rep.N) || b.WeightSum != 0 {
			t.Errorf("weight_sum %v (want %d, the repeated rows) and %v (want 0, unweighted)", a.WeightSum, rep.N, b.WeightSum)
		}
		if len(a.Results) != len(b.Results) {
			t.Fatalf("%d results weighted, %d repeated", len(a.Results), len(b.Results))
		}
		for i, x := range a.Results {
			y := b.Results[i]
			if !x.Weighted || y.Weighted {
				t.Errorf("%s: weighted key %v / %v", x.Metric, x.Weighted, y.Weighted)
			}
			u, v := float64(*x.Value), float64(*y.Value)
			if d := math.Abs(u - v); d > 1e-12*math.Max(1, math.Abs(v)) {
				t.Errorf("%s %v %s %s: weighted %.17g, repeated rows %.17g", c.bins, c.pattern, x.Metric, x.Notion, u, v)
			}
		}
	}
}
