package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// TCEOptions configures TCE. The zero value is the paper's setting: PAVA
// bins of at least n/20 and at most n/5 points, tests at level 0.05.
type TCEOptions struct {
	// MinBin and MaxBin bound the PAVA bins' sizes (n_min, n_max); 0
	// means floor(n/20) and floor(n/5), the settings of the paper's
	// experiments (03_Deep.ipynb; the function's own defaults are 10
	// and 1000). MaxBin < 0 means no upper bound and MinBin < 0 none
	// below (plain PAVA, the repository's strategy "pava").
	MinBin, MaxBin int
	// Quantile, if not 0, bins by equal counts instead of PAVA: that many
	// bins of the sorted points, bin b from floor(b n/B) (TCE(Q), the
	// repository's strategy "quantile").
	Quantile int
	// Level is the significance level of the binomial tests; 0 means
	// 0.05.
	Level float64
}

// TCEResult is a test-based calibration error.
type TCEResult struct {
	// Value is the share of the predictions rejected by their bin's test
	// (the repository prints 100 × Value).
	Value float64
	// Rejected is the number of predictions rejected, and Bins the
	// number of bins.
	Rejected, Bins int
	// MinBin and MaxBin are the PAVA bounds used (0 with Quantile).
	MinBin, MaxBin int
}

// TCE returns the test-based calibration error of Matsubara, Tax, Mudd
// and Guy ("TCE: A Test-Based Approach to Measuring Calibration Error",
// UAI 2023) as their code (facebookresearch/tce, calibration_metric.tce)
// computes it: the scores r_i in [0, 1] are sorted and binned (PAVA with
// bin-size bounds, or equal counts), and each prediction i is rejected
// when the exact two-sided binomial test of its bin's k positives out of
// n against P(positive) = r_i has a p-value <= Level (scipy's binomtest:
// the sum of the probabilities of the outcomes no more likely than k,
// with a relative tolerance of 1e-7); the value is the share rejected.
// Outcomes must be 0 or 1. There are no sample weights (a test counts
// points); ties in the sort are broken by input order.
//
// PAVA-BC (the repository's _pavabc): push the points in sorted order as
// blocks of one and merge the last two blocks while their total size is
// at most MinBin, or at most MaxBin and the earlier block's positive
// share is at least the later one's; the last MinBin points form a block
// of their own, merged into the one before when MinBin + MinBin <=
// MaxBin (the repository tests the new block's size, MinBin, plus
// MinBin: so with its settings that block is always merged, and the last
// bin may exceed MaxBin).
func TCE(scores, outcomes []float64, o TCEOptions) (TCEResult, error) {
	checkPair("TCE", scores, outcomes)
	n := len(scores)
	if n == 0 {
		return TCEResult{}, fmt.Errorf("metric: TCE: no samples")
	}
	for i, r := range scores {
		if !(r >= 0 && r <= 1) {
			return TCEResult{}, fmt.Errorf("metric: TCE: score %d is %v, not in [0, 1]", i, r)
		}
		if y := outcomes[i]; y != 0 && y != 1 {
			return TCEResult{}, fmt.Errorf("metric: TCE: outcome %d is %v, not 0 or 1", i, y)
		}
	}
	level := o.Level
	if level == 0 {
		level = 0.05
	}
	if !(level > 0 && level < 1) {
		return TCEResult{}, fmt.Errorf("metric: TCE: level %v, want one in (0, 1)", level)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	res := TCEResult{}
	var sizes []int
	switch {
	case o.Quantile > 0:
		for b := 0; b < o.Quantile; b++ {
			lo, hi := b*n/o.Quantile, (b+1)*n/o.Quantile
			sizes = append(sizes, hi-lo)
		}
	default:
		lo, hi := o.MinBin, o.MaxBin
		if lo == 0 {
			lo = n / 20
		}
		if hi == 0 {
			hi = n / 5
		}
		if lo < 0 {
			lo = 0
		}
		if hi < 0 {
			hi = n + 1
		}
		if lo >= n {
			return TCEResult{}, fmt.Errorf("metric: TCE: the smallest bin, %d points, holds all %d", lo, n)
		}
		res.MinBin, res.MaxBin = lo, hi
		sizes = pavaBC(order, outcomes, lo, hi)
	}
	start := 0
	for _, size := range sizes {
		bin := order[start : start+size]
		start += size
		if size == 0 {
			continue
		}
		res.Bins++
		k := 0
		for _, i := range bin {
			k += int(outcomes[i])
		}
		for _, i := range bin {
			if binomTestP(k, size, scores[i]) <= level {
				res.Rejected++
			}
		}
	}
	res.Value = float64(res.Rejected) / float64(n)
	return res, nil
}

// pavaBC returns the sizes of the PAVA-BC blocks of the sorted points
// (see TCE).
func pavaBC(order []int, outcomes []float64, nMin, nMax int) []int {
	n := len(order)
	var ys []float64
	var ws []int
	merge := func(y0, y1 float64, w0, w1 int) bool {
		return w0+w1 <= nMin || (w0+w1 <= nMax && y0/float64(w0) >= y1/float64(w1))
	}
	for j := 0; j < n-nMin; j++ {
		ys, ws = append(ys, outcomes[order[j]]), append(ws, 1)
		for c := len(ws) - 1; c > 0 && merge(ys[c-1], ys[c], ws[c-1], ws[c]); c-- {
			ys[c-1] += ys[c]
			ws[c-1] += ws[c]
			ys, ws = ys[:c], ws[:c]
		}
	}
	if nMin > 0 {
		tail := 0.0
		for _, i := range order[n-nMin:] {
			tail += outcomes[i]
		}
		ys, ws = append(ys, tail), append(ws, nMin)
		if c := len(ws) - 1; c > 0 && nMin+nMin <= nMax {
			ys[c-1] += ys[c]
			ws[c-1] += ws[c]
			ws = ws[:c]
		}
	}
	return ws
}

// binomTestP is scipy.stats.binomtest(k, n, p).pvalue, two-sided: 1 when
// k = p n; else the probability of k or further from the mode on its
// side plus that of the outcomes on the other side whose probability is
// at most pmf(k) (1 + 1e-7), capped at 1.
func binomTestP(k, n int, p float64) float64 {
	b := distuv.Binomial{N: float64(n), P: p}
	if float64(k) == p*float64(n) {
		return 1
	}
	d := b.Prob(float64(k)) * (1 + 1e-7)
	var pv float64
	if float64(k) < p*float64(n) {
		// The first x >= ceil(p n) with pmf(x) <= d (pmf decreases there).
		lo, hi := int(math.Ceil(p*float64(n))), n+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			if b.Prob(float64(mid)) <= d {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		pv = b.CDF(float64(k))
		if lo <= n {
			pv += b.Survival(float64(lo - 1))
		}
	} else {
		// The last x <= floor(p n) with pmf(x) <= d (pmf increases there).
		lo, hi := -1, int(math.Floor(p*float64(n)))
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if b.Prob(float64(mid)) <= d {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		pv = b.Survival(float64(k - 1))
		if lo >= 0 {
			pv += b.CDF(float64(lo))
		}
	}
	return min(1, pv)
}
