package metric

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/data"
)

// calibratedSample draws n predictions (softmax of N(0, 2^2) logits, K
// classes) and labels from the predictions themselves: a perfectly
// calibrated sample in every sense.
func calibratedSample(rng *rand.Rand, n, k int) ([]float64, []int) {
	probs, labels := make([]float64, n*k), make([]int, n)
	z := make([]float64, k)
	for i := 0; i < n; i++ {
		for m := range z {
			z[m] = 2 * rng.NormFloat64()
		}
		row := probs[i*k : (i+1)*k]
		data.Softmax(row, z)
		u, acc := rng.Float64(), 0.0
		labels[i] = k - 1
		for m, v := range row {
			if acc += v; u < acc {
				labels[i] = m
				break
			}
		}
	}
	return probs, labels
}

// TestCalibratedShrinks checks on perfectly calibrated samples that every
// calibration error shrinks towards 0 at about the n^-1/2 rate: averaged
// over 16 samples, going from n = 500 to n = 8000 (16 times more) divides
// each error by about 4 (accepted: 2.5 to 7.5), and the debiased L2 error
// is near 0.
func TestCalibratedShrinks(t *testing.T) {
	const k, reps = 3, 16
	metrics := map[string]func(p []float64, y []int) float64{
		"ece_bin top-label L1": func(p []float64, y []int) float64 {
			b, _ := TopLabelBins(p, y, k, nil, BinOptions{Bins: 10})
			return b.ECE(1)
		},
		"ece_bin class-wise L1": func(p []float64, y []int) float64 {
			cb, _ := ClassWiseBins(p, y, k, nil, BinOptions{Bins: 10})
			return ClassWise(cb, func(b *Bins) float64 { return b.ECE(1) }).Value
		},
		"ece_bin canonical L1": func(p []float64, y []int) float64 {
			c, _ := Canonical(p, y, k, 1, nil, BinOptions{Bins: 4})
			return c.Value
		},
		"mce top-label": func(p []float64, y []int) float64 {
			b, _ := TopLabelBins(p, y, k, nil, BinOptions{Bins: 5})
			return b.MCE()
		},
		"ks top-1": func(p []float64, y []int) float64 {
			s, o := TopR(p, y, k, 1)
			v, _ := KS(s, o, false, nil)
			return v
		},
		"ks top-2": func(p []float64, y []int) float64 {
			s, o := TopR(p, y, k, 2)
			v, _ := KS(s, o, false, nil)
			return v
		},
		"ks within-top-2": func(p []float64, y []int) float64 {
			s, o := WithinTopR(p, y, k, 2)
			v, _ := KS(s, o, false, nil)
			return v
		},
		"ks class-wise": func(p []float64, y []int) float64 { return ClassWiseKS(p, y, k, nil).Value },
		"mmce": func(p []float64, y []int) float64 {
			v, _ := TopLabelMMCE(p, y, k, DefaultMMCEWidth, nil, nil)
			return v
		},
	}
	avg := func(n int, f func([]float64, []int) float64) float64 {
		rng := rand.New(rand.NewPCG(uint64(n), 77))
		s := 0.0
		for range reps {
			p, y := calibratedSample(rng, n, k)
			s += f(p, y)
		}
		return s / reps
	}
	for name, f := range metrics {
		small, large := avg(500, f), avg(8000, f)
		ratio := small / large
		if !(ratio > 2.5 && ratio < 7.5) {
			t.Errorf("%s: %.4g at n=500, %.4g at n=8000: ratio %.2f, want about 4", name, small, large, ratio)
		} else {
			t.Logf("%s: %.4g -> %.4g (ratio %.2f)", name, small, large, ratio)
		}
	}
	deb := avg(8000, func(p []float64, y []int) float64 {
		b, _ := TopLabelBins(p, y, k, nil, BinOptions{Bins: 10})
		return b.DebiasedL2()
	})
	plain := avg(8000, func(p []float64, y []int) float64 {
		b, _ := TopLabelBins(p, y, k, nil, BinOptions{Bins: 10})
		return b.ECE(2)
	})
	if !(math.Abs(deb) < plain/3) {
		t.Errorf("debiased L2^2 %.3g not near 0 (plain %.3g)", deb, plain)
	}
}
