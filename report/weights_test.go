package report

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/internal/testenv"

	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/synth"
)

// TestWeightedFigures: with integer weights 0..3 the reliability diagram
// (bins and kernel curve at a fixed bandwidth), the KS graph and the
// simplex view's fields equal those of the rows repeated w_i times
// (relative 1e-12; the bandwidth choices subsample and the bands resample,
// so the bandwidth is fixed and the bands are off here).
func TestWeightedFigures(t *testing.T) {
	const n, k = 300, 3
	rng := rand.New(rand.NewPCG(3, 4))
	probs := synth.UniformSimplex(make([]float64, n*k), k, rng)
	labels := synth.Labels(nil, probs, k, rng)
	w := make([]float64, n)
	var rp []float64
	var rl []int
	for i := range w {
		w[i] = float64(rng.IntN(4))
	}
	testenv.ZeroOne(w) // their own normalised form: the equal-mass edges of the rows of weight 1
	for i := range w {
		for range int(w[i]) {
			rp, rl = append(rp, probs[i*k:(i+1)*k]...), append(rl, labels[i])
		}
	}
	close := func(what string, a, b float64) {
		t.Helper()
		if (math.IsNaN(a) != math.IsNaN(b)) || math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
			t.Errorf("%s: weighted %.17g, repeated %.17g", what, a, b)
		}
	}
	sc, oc := metric.TopR(probs, labels, k, 1)
	rsc, roc := metric.TopR(rp, rl, k, 1)
	o := ReliabilityOptions{Bandwidth: 0.05, Resamples: -1, Bins: metric.BinOptions{Binning: metric.EqualMass, Bins: 8}}
	a, err := NewReliability(context.Background(), sc, oc, w, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewReliability(context.Background(), rsc, roc, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	close("ECE", a.ECE, b.ECE)
	for j := range a.Bins {
		close("bin freq", a.Bins[j].Freq, b.Bins[j].Freq)
		close("bin score", a.Bins[j].Score, b.Bins[j].Score)
		close("bin edge", a.Bins[j].Hi, b.Bins[j].Hi)
	}
	for j := range a.CurveY {
		close("curve", a.CurveY[j], b.CurveY[j])
	}
	ga, err := NewKSGraph("w", sc, oc, w)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := NewKSGraph("r", rsc, roc, nil)
	if err != nil {
		t.Fatal(err)
	}
	close("KS", ga.KS, gb.KS)
	so := SimplexOptions{Bandwidth: 0.05, Points: -1, Bins: 4, Grid: 6}
	xa, err := NewSimplex(context.Background(), probs, labels, k, w, so)
	if err != nil {
		t.Fatal(err)
	}
	xb, err := NewSimplex(context.Background(), rp, rl, k, nil, so)
	if err != nil {
		t.Fatal(err)
	}
	for c := range xa.Binned {
		close("simplex binned", xa.Binned[c].Value, xb.Binned[c].Value)
	}
	for c := range xa.Kernel {
		close("simplex kernel", xa.Kernel[c].Value, xb.Kernel[c].Value)
	}
}
