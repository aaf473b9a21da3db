package report

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/synth"
)

// TestBandwidthViewSharesEstimate: the report's bandwidth view takes its
// estimate at the selected bandwidth from the evaluation; it
// must be the view's own kde.EstimateCurve value bit for bit, with and
// without weights, for the canonical and the binary notion.
func TestBandwidthViewSharesEstimate(t *testing.T) {
	const n = 400
	for _, k := range []int{2, 4} {
		for _, weighted := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(k), 9))
			probs := synth.UniformSimplex(make([]float64, n*k), k, rng)
			labels := synth.Labels(nil, probs, k, rng)
			var w []float64
			if weighted {
				w = make([]float64, n)
				for i := range w {
					w[i] = float64(rng.IntN(4))
				}
			}
			values, cols := probs, k
			if k == 2 { // one column: the binary notion
				values, cols = make([]float64, n), 1
				for i := range values {
					values[i] = probs[2*i+1]
				}
			}
			s, err := data.New(values, cols, labels, false, data.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetWeights(w); err != nil {
				t.Fatal(err)
			}
			s = s.ScaledWeights() // as Evaluate reads them
			notion := kde.Canonical
			if k == 2 {
				notion = kde.Binary
			}
			curves := bandwidth.Cache{}
			ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{Metrics: evaluate.MetricSet{"ece_kde"}, CI: true, Bandwidths: curves})
			if err != nil {
				t.Fatal(err)
			}
			shared, err := bandwidthView(context.Background(), s, notion, curves, ev, 1)
			if err != nil {
				t.Fatal(err)
			}
			if evaluatedCE1(ev, notion, shared.Selection.Bandwidth) == nil {
				t.Fatalf("K = %d: the evaluation's estimate was not found", k)
			}
			own, err := NewBandwidthView(context.Background(), notion, s.Probs, s.Labels, s.K, s.Weights, BandwidthViewOptions{Workers: 2, Selection: shared.Selection})
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(shared.Chosen) != math.Float64bits(own.Chosen) {
				t.Errorf("K = %d, weighted %v: shared %.17g, own %.17g", k, weighted, shared.Chosen, own.Chosen)
			}
		}
	}
}
