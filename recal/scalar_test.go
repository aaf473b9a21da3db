package recal

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/metric"
)

// TestPAVHand checks pool-adjacent-violators on a small case: outcomes
// 1, 0, 1, 1 at scores 0.1, 0.2, 0.3, 0.3 pool the first two (0.5), then
// 0.3 holds one value for both samples (1).
func TestPAVHand(t *testing.T) {
	m, err := fitIsotonic([]float64{0.3, 0.1, 0.2, 0.3}, []float64{1, 1, 0, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pm := m.(*PointMap)
	if !slices.Equal(pm.X, []float64{0.1, 0.2, 0.3}) || !slices.Equal(pm.Y, []float64{0.5, 0.5, 1}) {
		t.Fatalf("PAV points %v %v", pm.X, pm.Y)
	}
	for s, want := range map[float64]float64{0: 0.5, 0.15: 0.5, 0.25: 0.75, 0.3: 1, 0.9: 1} {
		if got := pm.apply(s); math.Abs(got-want) > 1e-15 {
			t.Errorf("apply(%v) = %v, want %v", s, got, want)
		}
	}
}

// TestLogisticRecovers fits data drawn from a known logistic model.
func TestLogisticRecovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	const n = 20000
	x, y := make([][]float64, n), make([]float64, n)
	for i := range x {
		a, b := rng.NormFloat64(), rng.NormFloat64()
		x[i] = []float64{a, b}
		if rng.Float64() < mathx.Sigmoid(1.5*a-0.5*b+0.3) {
			y[i] = 1
		}
	}
	w, err := fitLogistic(x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{1.5, -0.5, 0.3} {
		if math.Abs(w[i]-want) > 0.08 {
			t.Errorf("w[%d] = %v, want %v", i, w[i], want)
		}
	}
}

// TestScalarMethodsReal fits isotonic, histogram, Platt and beta (top-label)
// and one-vs-rest isotonic on the validation logits of the three golden
// sets and requires their own target to go down on the test split: the
// top-label ECE (15 equal-width bins) and, for one-vs-rest, the class-wise
// ECE; the arg max never changes in top-label mode. Every map round-trips.
func TestScalarMethodsReal(t *testing.T) {
	for name, dir := range logitDirs {
		val, test := loadSplit(t, dir, "val"), loadSplit(t, dir, "test")
		k := val.K
		iso, err := FitIsotonic(val.Probs, val.Labels, k, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := FitHistogram(val.Probs, val.Labels, k, 0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		platt, err := FitPlatt(val.Probs, val.Labels, k, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		beta, err := FitBeta(val.Probs, val.Labels, k, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ovr, err := FitIsotonic(val.Probs, val.Labels, k, ModeOneVsRest, nil)
		if err != nil {
			t.Fatal(err)
		}
		ece := func(p []float64) float64 {
			b, _ := metric.TopLabelBins(p, test.Labels, k, nil, metric.BinOptions{})
			return b.ECE(1)
		}
		cw := func(p []float64) float64 {
			cb, _ := metric.ClassWiseBins(p, test.Labels, k, nil, metric.BinOptions{})
			return metric.ClassWise(cb, func(b *metric.Bins) float64 { return b.ECE(1) }).Value
		}
		before := ece(test.Probs)
		_, acc := metric.TopR(test.Probs, test.Labels, k, 1)
		for _, c := range []Calibrator{iso, hist, platt, beta} {
			p, err := c.Calibrate(test.Probs, nil, k)
			if err != nil {
				t.Fatal(err)
			}
			after := ece(p)
			t.Logf("%s %s: top-label ECE %.5f -> %.5f", name, c.Info().Method, before, after)
			if !(after < before) {
				t.Errorf("%s %s: top-label ECE %v -> %v", name, c.Info().Method, before, after)
			}
			if _, acc2 := metric.TopR(p, test.Labels, k, 1); !slices.Equal(acc, acc2) {
				t.Errorf("%s %s: the arg max changed", name, c.Info().Method)
			}
			roundTrip(t, c, test.Probs, k)
		}
		p, _ := ovr.Calibrate(test.Probs, nil, k)
		cb, ca := cw(test.Probs), cw(p)
		t.Logf("%s isotonic one-vs-rest: class-wise ECE %.5f -> %.5f", name, cb, ca)
		if !(ca < cb) {
			t.Errorf("%s one-vs-rest isotonic: class-wise ECE %v -> %v", name, cb, ca)
		}
		roundTrip(t, ovr, test.Probs, k)
	}
}

func roundTrip(t *testing.T, c Calibrator, probs []float64, k int) {
	t.Helper()
	var buf bytes.Buffer
	if err := Save(&buf, c); err != nil {
		t.Fatal(err)
	}
	c2, err := Load(&buf)
	if err != nil {
		t.Fatalf("%s: %v", c.Info().Method, err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Errorf("%s: the loaded map differs", c.Info().Method)
	}
	p1, _ := c.Calibrate(probs, nil, k)
	p2, _ := c2.Calibrate(probs, nil, k)
	if !slices.Equal(p1, p2) {
		t.Errorf("%s: outputs differ after the round trip", c.Info().Method)
	}
}
