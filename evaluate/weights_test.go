package evaluate

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestWeightsEqualRepeatedRows: an evaluation with integer weights 0..2 of
// mean 1 (their own normalised form, which every weighted number reads)
// gives, for every metric where the identity holds (means, binned ECE, MCE
// and debiased L2 of every notion, KS, MMCE), the values of the set with
// each row repeated w_i times (relative 1e-12). The kernel estimators
// exclude i = j, so copies of a row are each other's neighbours: they are
// checked against a brute-force weighted double loop in package kde.
func TestWeightsEqualRepeatedRows(t *testing.T) {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, s.N)
	var probs []float64
	var labels []int
	for i := range w {
		w[i] = [4]float64{0, 2, 1, 1}[i%4] // mean 1: the weights' normalised form is themselves
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
	metrics := []string{"ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "brier", "nll", "accuracy", "confidence"}
	for _, bins := range []string{"equal_width", "equal_mass"} {
		o := Options{Metrics: metrics, Strict: true, KSR: []int{1, 2, 3}}
		if err := o.Bins.Binning.UnmarshalText([]byte(bins)); err != nil {
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
		var text strings.Builder
		if err := WriteText(&text, a); err != nil || !strings.Contains(text.String(), "every number below is weighted") {
			t.Errorf("the table does not say the numbers are weighted: %v\n%.300s", err, text.String())
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
				t.Errorf("%s %s %s: weighted %.17g, repeated rows %.17g", bins, x.Metric, x.Notion, u, v)
			}
		}
	}
}
