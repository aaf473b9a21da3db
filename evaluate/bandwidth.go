package evaluate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
)

// chosenBandwidth is a notion's bandwidth and how it was chosen.
type chosenBandwidth struct {
	h        float64
	method   string
	warnings Warnings
}

// bandwidth returns the bandwidth of a kde notion (chosen once, shared by
// ece_kde and sharpness).
func (ev *evaluator) bandwidth(notion kde.Notion) (*chosenBandwidth, error) {
	if b, ok := ev.bandwidths[notion]; ok {
		return b, nil
	}
	c, s := ev.cfg, ev.set
	b := &chosenBandwidth{h: float64(c.Bandwidth), method: "fixed"}
	if c.Bandwidth == 0 {
		progress, done := ev.step(notion.String() + " bandwidth")
		cv, err := ev.shared.Curve(ev.ctx, notion, s, kde.BandwidthOptions{Objective: c.Objective, Exact: c.Exact, Workers: c.Workers, Progress: progress})
		done()
		if err != nil {
			return nil, fmt.Errorf("%s: %s bandwidth: %w", s.File, notion, err)
		}
		b.h, b.method = cv.Bandwidth, c.Objective.String()
		for _, w := range cv.Warnings {
			b.warnings = append(b.warnings, warn(EstimatorWarning, w.Error()))
		}
		if cv.Refined {
			b.method += "-refined"
		}
	} else if !c.NoBandwidthCheck {
		w, err := ev.fixedBandwidthCheck(notion, b.h)
		if err != nil {
			return nil, err
		}
		if w != "" {
			b.warnings = Warnings{warn(FixedBandwidthOff, w)}
		}
	}
	ev.bandwidths[notion] = b
	return b, nil
}

// fixedSupportGap is the leave-one-out log-likelihood per sample by which
// a bandwidth ten times smaller or larger must beat a fixed bandwidth for
// fixedBandwidthCheck to warn (e^0.1: the data are 10 % more likely per
// sample there).
const fixedSupportGap = 0.1

// fixedCheckPoints is the number of evaluation points the fixed bandwidth
// check starts with (fixedCheckMarginal for marginal, whose terms sum K
// classes): at n = 10,000 its 3 bandwidths cost 3 x 256 x n kernels, a few
// per cent of the estimate they check. When the subsample cannot decide
// (the gap's interval holds fixedSupportGap) the sample grows fourfold, up
// to every point.
const (
	fixedCheckPoints   = 256
	fixedCheckMarginal = 64
	// fixedCheckZ is how many standard errors of the subsample's mean gap
	// the gap must clear fixedSupportGap by, either way.
	fixedCheckZ = 2
)

// fixedBandwidthCheck warns when a fixed bandwidth h is far outside what
// the data support: when the leave-one-out log-likelihood per sample is
// higher by more than fixedSupportGap at h/10 or at 10h. The likelihood
// terms are those of a seeded uniform subsample of the evaluation points
// against every sample (kde.PointSums), grown until the weighted mean gap
// is fixedCheckZ standard errors above or below fixedSupportGap, or is
// every point's (then read as it is). Smoothing far beyond the data's
// scale dominates the estimate (at K = 1,000, h = 0.05 gives canonical
// CE_1 near its maximum 2).
func (ev *evaluator) fixedBandwidthCheck(notion kde.Notion, h float64) (string, error) {
	s := ev.set
	grid := []float64{h / 10, h, h * 10}
	m := fixedCheckPoints
	if notion == kde.ClassWise {
		m = fixedCheckMarginal
	}
	perm := rand.New(rand.NewPCG(ev.cfg.Seed, 0xf1bc)).Perm(s.N)
	best := -1
	var gaps [3]float64 // the mean gap at grid[g] against h, of the last sample
	for {
		m = min(m, s.N)
		ps, err := ev.checkSums(notion, grid, perm[:m])
		if err != nil {
			// The check is advice: a set whose likelihood cannot be
			// computed gets no warning here (the estimate says what fails).
			if ev.ctx.Err() != nil {
				return "", ev.ctx.Err()
			}
			return "", nil
		}
		at := ps.PointLogLik(1)
		undecided := false
		lower := fixedSupportGap
		for _, g := range []int{0, 2} {
			mean, se := gapMean(ps.PointLogLik(g), at, ps.Weights())
			gaps[g] = mean
			if m == s.N {
				se = 0
			}
			if mean-fixedCheckZ*se > lower {
				best, lower = g, mean-fixedCheckZ*se
			} else if mean+fixedCheckZ*se > fixedSupportGap {
				undecided = true
			}
		}
		if best >= 0 || !undecided || m == s.N {
			break
		}
		m *= 4
	}
	if best < 0 {
		return "", nil
	}
	gap := gaps[best]
	side := "smaller: the estimate is dominated by smoothing (biased toward the uniform prediction)"
	if best == 2 {
		side = "larger: the estimate is dominated by noise (too few neighbours per kernel)"
	}
	return fmt.Sprintf("the fixed bandwidth h = %g is far from what the data support: the leave-one-out log-likelihood per sample is %.2f higher at h = %g, ten times %s; --bandwidth auto chooses it from the data",
		h, gap, grid[best], side), nil
}

// checkSums returns the leave-one-out kernel sums of the fixed bandwidth
// check: the evaluation points idx (rows of the set) against every row, on
// grid.
func (ev *evaluator) checkSums(notion kde.Notion, grid []float64, idx []int) (*kde.PointSums, error) {
	s := ev.set
	idx = slices.Sorted(slices.Values(idx))
	self := make([]int, s.N)
	for i := range self {
		self[i] = -1
	}
	pts, labels := make([]float64, 0, len(idx)*s.K), make([]int, len(idx))
	var w []float64
	if s.Weights != nil {
		w = make([]float64, len(idx))
	}
	for j, i := range idx {
		pts = append(pts, s.Probs[i*s.K:(i+1)*s.K]...)
		labels[j], self[i] = s.Labels[i], j
		if w != nil {
			w[j] = s.Weights[i]
		}
	}
	ps, err := kde.NewPointSums(notion, pts, labels, s.K, w, grid)
	if err != nil {
		return nil, err
	}
	return ps, ps.Add(ev.ctx, s.Probs, s.Labels, s.Weights, kde.AddOptions{Self: self, Workers: ev.cfg.Workers})
}

// gapMean returns the weighted mean over the points of ll[j] - at[j] (w:
// the points' weights, nil all 1) and its standard error as the mean of
// independent draws. Points whose density is 0 at both bandwidths are left
// out; the mean is +Inf when a point's density is 0 at the fixed bandwidth
// only (the fixed bandwidth cannot explain it), -Inf when at ll only.
func gapMean(ll, at, w []float64) (mean, se float64) {
	var sw, sd, sd2, sww float64
	for j := range ll {
		wj := mathx.Weight(w, j)
		a, b := math.IsInf(ll[j], -1), math.IsInf(at[j], -1)
		switch {
		case wj == 0 || a && b:
			continue
		case b:
			return math.Inf(1), 0
		case a:
			return math.Inf(-1), 0
		}
		d := ll[j] - at[j]
		sw += wj
		sww += wj * wj
		sd += wj * d
		sd2 += wj * d * d
	}
	if sw == 0 {
		return math.Inf(-1), 0
	}
	mean = sd / sw
	// Var(sum w_j d_j / sum w_j) = sum w_j^2 Var(d) / (sum w_j)^2.
	return mean, math.Sqrt(max(0, sd2/sw-mean*mean)*sww) / sw
}

// gridBandwidth returns the grid index of ps's bandwidth: the fixed one,
// or the LOO choice on the grid (with its warnings).
func (c *streamConfig) gridBandwidth(ps *kde.PointSums) (int, string, Warnings, error) {
	if c.Bandwidth != 0 {
		return 0, "fixed", nil, nil
	}
	sel, err := ps.Select()
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s bandwidth: %w", ps.Notion(), err)
	}
	var warnings Warnings
	for _, w := range sel.Warnings {
		warnings = append(warnings, warn(EstimatorWarning, w.Error()))
	}
	return sel.Index, "loo-grid", warnings, nil
}
