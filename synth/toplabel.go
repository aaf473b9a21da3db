package synth

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// Confidence draws samples rows of the family (in blocks of 65,536, block
// b from PCG(seed, b), as GroundTruth, on all cores for workers 0) and
// returns the population of the top-label notion: each row's confidence
// c_i = max_k f_ik (the first largest class m_i) and the probability
// a_i = h_{i,m_i} that its label is that class (E[1{y = m} | f] = h_m),
// sorted by confidence (ties by a). The result does not depend on
// workers.
func (fa Family) Confidence(ctx context.Context, samples int, seed uint64, workers int) (conf, acc []float64, err error) {
	if err := fa.check(); err != nil {
		return nil, nil, err
	}
	return confidence(ctx, fa.K, samples, seed, workers, fa.sample)
}

// Confidence is Family.Confidence for the setting.
func (d Distortion) Confidence(ctx context.Context, samples int, seed uint64, workers int) (conf, acc []float64, err error) {
	if err := d.check(); err != nil {
		return nil, nil, err
	}
	return confidence(ctx, d.K, samples, seed, workers, d.sample)
}

// confidence is Confidence of the predictions and truths (m×k) that sample
// returns for a block.
func confidence(ctx context.Context, k, samples int, seed uint64, workers int, sample func(rng *rand.Rand, m int) (f, h []float64)) (conf, acc []float64, err error) {
	if samples < 2 {
		return nil, nil, fmt.Errorf("synth: confidence sample: %d samples", samples)
	}
	conf, acc = make([]float64, samples), make([]float64, samples)
	nb := (samples + groundBlock - 1) / groundBlock
	stopped := parallel.ForContext(ctx, nb, workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
		lo := b * groundBlock
		m := min(groundBlock, samples-lo)
		f, h := sample(rand.New(rand.NewPCG(seed, uint64(b))), m)
		for i := range m {
			top := i*k + mathx.Argmax(f[i*k:(i+1)*k])
			conf[lo+i], acc[lo+i] = f[top], h[top]
		}
	})
	if stopped != nil {
		return nil, nil, fmt.Errorf("synth: confidence sample: %w", stopped)
	}
	order := make([]int, samples)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		if c := cmp.Compare(conf[i], conf[j]); c != 0 {
			return c
		}
		return cmp.Compare(acc[i], acc[j])
	})
	sc, sa := make([]float64, samples), make([]float64, samples)
	for j, i := range order {
		sc[j], sa[j] = conf[i], acc[i]
	}
	return sc, sa, nil
}

// TopLabel holds the population top-label (confidence) calibration errors
// of a family, with r(c) = E[a | c] - c the reliability gap at
// confidence c (a = h_m, the probability that the label is the predicted
// class m):
//
//	TL_1   = E |r(c)|          (what binned ECE, ECE-sweep and smECE estimate)
//	TL_2^2 = E r(c)^2          (the debiased binned estimator's target)
//	KS     = max_t |E[(a - c) 1{c <= t}]|   (the splines paper's eq. (7), (12))
//
// Bins is the number of equal-mass runs of the sorted sample over which
// E[a | c] was averaged.
type TopLabel struct {
	L1, L2, KS GroundTruth
	Bins       int
}

// TopLabelTruth returns the top-label errors of a confidence sample
// (Family.Confidence: sorted by conf, a the probability of the predicted
// class). E[a | c] is the mean of a - c over B = ceil(n^(1/3)) runs of
// consecutive confidences holding n/B rows each (equal mass): where r
// keeps its sign across a run, the mean of |r| over the run is exactly
// |mean r|, so the coarse runs cost little, and their many rows make the
// noise of the run means small. TL_2^2 subtracts each run's noise
// variance s_b^2 / m_b from its squared mean (unbiased for the square of
// the run's expectation). SEs are the delta method's over the runs' noise
// for TL_1 and TL_2^2, and sd(a - c) / sqrt(n) for KS (a bound on the
// SE of one cumulative sum). KS takes the cumulative sum at the last row
// of each run of equal confidences.
func TopLabelTruth(conf, acc []float64) (TopLabel, error) {
	n := len(conf)
	if n < 8 || len(acc) != n {
		return TopLabel{}, fmt.Errorf("synth: top-label truth: %d confidences, %d accuracies", n, len(acc))
	}
	bins := int(math.Ceil(math.Cbrt(float64(n))))
	var l1, l2, v1, v2 float64
	for b := range bins {
		lo, hi := b*n/bins, (b+1)*n/bins
		m := float64(hi - lo)
		mean := 0.0
		for i := lo; i < hi; i++ {
			mean += acc[i] - conf[i]
		}
		mean /= m
		ss := 0.0
		for i := lo; i < hi; i++ {
			d := acc[i] - conf[i] - mean
			ss += d * d
		}
		noise := ss / (m - 1) / m // variance of the run's mean
		w := m / float64(n)
		l1 += w * math.Abs(mean)
		l2 += w * (mean*mean - noise)
		v1 += w * w * noise
		v2 += w * w * 4 * mean * mean * noise
	}
	var cum, ks, mean, ss float64
	for i := range n {
		d := acc[i] - conf[i]
		cum += d
		if i == n-1 || conf[i+1] != conf[i] {
			ks = math.Max(ks, math.Abs(cum)/float64(n))
		}
		dm := d - mean
		mean += dm / float64(i+1)
		ss += dm * (d - mean)
	}
	return TopLabel{
		L1:   GroundTruth{Value: l1, SE: math.Sqrt(v1), Samples: n},
		L2:   GroundTruth{Value: math.Max(l2, 0), SE: math.Sqrt(v2), Samples: n},
		KS:   GroundTruth{Value: ks, SE: math.Sqrt(ss / float64(n-1) / float64(n)), Samples: n},
		Bins: bins,
	}, nil
}
