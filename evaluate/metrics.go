package evaluate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// Output groups, in order.
const (
	groupCanonical = iota
	groupClassWise
	groupTopLabel
	groupBinary
	groupScores
)

var groupNames = [...]string{"canonical", "class-wise", "top-label", "binary", "proper scores and basics"}

// Result is one result of `calib eval --json`. The keys of the foundation's
// contract (metric, notion, p, bandwidth, value, root for ece_kde) and of
// the metrics issue are frozen; a metric that could not be computed has
// "error" instead of "value".
type Result struct {
	Metric          string   `json:"metric"`
	Notion          string   `json:"notion,omitempty"`
	R               *int     `json:"r,omitempty"`
	Binning         string   `json:"binning,omitempty"`
	Bins            *int     `json:"bins,omitempty"`
	P               *float64 `json:"p,omitempty"`
	Bandwidth       *float64 `json:"bandwidth,omitempty"`
	Value           *Float   `json:"value,omitempty"`
	Root            *Float   `json:"root,omitempty"`
	Sum             *Float   `json:"sum,omitempty"`
	PerClass        []Float  `json:"per_class,omitempty"`
	PerClassBins    []int    `json:"per_class_bins,omitempty"` // class-wise with a data-driven bin rule
	Variance        *Float   `json:"variance,omitempty"`       // sharpness
	Squared         *Float   `json:"squared,omitempty"`        // mmce
	Width           *float64 `json:"width,omitempty"`          // mmce
	BandwidthMethod string   `json:"bandwidth_method,omitempty"`
	CVBandwidth     *float64 `json:"cv_bandwidth,omitempty"` // ece_witness p = 2: h_cv (the bandwidth is h_cv / 2)
	Excluded        *int     `json:"excluded,omitempty"`
	Aggregate       string   `json:"aggregate,omitempty"` // marginal ece_kde: "sum" or "mean" over classes
	Warnings        Warnings `json:"warnings,omitempty"`
	CI              []Float  `json:"ci,omitempty"`
	CILevel         *float64 `json:"ci_level,omitempty"`
	CIMethod        string   `json:"ci_method,omitempty"` // "percentile" or "centered" (metric.IntervalMethod)
	CIBias          *Float   `json:"ci_bias,omitempty"`   // centred intervals: the bootstrap bias mean(θ*) - value`
	Seconds         *float64 `json:"seconds,omitempty"`   // on a metric's first Result: the time of the metric (all its entries), intervals included
	Error           string   `json:"error,omitempty"`

	// The streamed evaluation's keys (evaluate.Stream, Finish): ece_kde's
	// number of evaluation points, the standard error of its estimate and
	// its interval (IntervalKind "sampling": the sampling interval at
	// IntervalLevel; "exact": every row evaluated, width 0); ks's rigorous
	// bounds lo <= KS <= hi from the score cells (IntervalKind "bound",
	// Value their midpoint).
	EvalPoints    *int     `json:"eval_points,omitempty"`
	SE            *Float   `json:"se,omitempty"`
	Interval      []Float  `json:"interval,omitempty"`
	IntervalLevel *float64 `json:"interval_level,omitempty"`
	IntervalKind  string   `json:"interval_kind,omitempty"`

	// The definition keys (see definition.go and the README's "What
	// exactly each number is"): with the keys above they say everything
	// needed to recompute the value.
	Estimator   string  `json:"estimator,omitempty"`    // which estimator of the metric (e.g. "plug-in", "witness-crossfit")
	Kernel      string  `json:"kernel,omitempty"`       // kernel of the kernel estimators ("dirichlet", "beta", "laplacian")
	BinRule     string  `json:"bin_rule,omitempty"`     // binned metrics: "fixed", "sqrt" or "doane" (the number of bins)
	BinEdges    string  `json:"bin_edges,omitempty"`    // binned metrics: which bin a score on an edge falls in
	CIResamples *int    `json:"ci_resamples,omitempty"` // with ci: bootstrap resamples
	CISeed      *uint64 `json:"ci_seed,omitempty"`      // with ci: bootstrap seed
	CIExact     bool    `json:"ci_exact,omitempty"`     // with ci: the estimator recomputed on every resample (else the per-point terms resampled)
	Seed        *uint64 `json:"seed,omitempty"`         // ece_witness: seed of the cross-fitting splits
	Weighted    bool    `json:"weighted"`               // sample weights were used (Set.Weights not nil)

	// With Options.PValues: the p-value of the test of calibration whose
	// statistic is this entry (calibtest.ConsistencyMany), its method and
	// its resamples.
	PValue          *Float `json:"p_value,omitempty"`
	PValueMethod    string `json:"p_value_method,omitempty"`
	PValueResamples *int   `json:"p_value_resamples,omitempty"`

	group int
	// stat recomputes the Result's value on a bootstrap resample.
	stat func(idx []int) (float64, error)
}

func ptr[T any](v T) *T { return &v }

func jf(v float64) *Float { return ptr(Float(v)) }

// sortByGroup orders the entries by group, keeping the order within groups.
func sortByGroup(es []*Result) {
	slices.SortStableFunc(es, func(a, b *Result) int { return cmp.Compare(a.group, b.group) })
}

// variants lists the plain estimate and, with Debias, the debiased one.
func (c *config) variants() []bool {
	if c.Debias {
		return []bool{false, true}
	}
	return []bool{false}
}

// chosenBandwidth is a notion's bandwidth and how it was chosen.
type chosenBandwidth struct {
	h        float64
	method   string
	warnings Warnings
}

// evaluator computes the metrics of one set.
type evaluator struct {
	ctx        context.Context
	cfg        *config
	set        *data.Set
	progress   Progress
	bandwidths map[kde.Notion]*chosenBandwidth
	// shared, if not nil, shares LOO bandwidth selections with other
	// users of the same set (report: the comparison and the bandwidth view).
	shared Bandwidths
}

// step starts a progress step (nothing without Options.Progress).
func (ev *evaluator) step(name string) (kde.Progress, func()) {
	if ev.progress == nil {
		return nil, func() {}
	}
	return ev.progress.Step(name)
}

// Bandwidths holds the LOO bandwidth selection of each notion of one set,
// so that several computations on the same set (an evaluation, a
// comparison, the report's bandwidth view) select each once.
type Bandwidths map[kde.Notion]*kde.Curve

// Select returns the cached LOO selection of notion on s, or computes it
// with kde.SelectBandwidth (and caches it when o asks for the default LOO
// selection; a nil Bandwidths caches nothing).
func (cc Bandwidths) Select(notion kde.Notion, s *data.Set, o kde.BandwidthOptions) (*kde.Curve, error) {
	cacheable := cc != nil && o.Objective == kde.LOO && o.Grid == nil && !o.NoRefine && o.Tolerance == 0 && !o.Exact
	if cacheable {
		if cv, ok := cc[notion]; ok {
			return cv, nil
		}
	}
	cv, err := kde.SelectBandwidth(notion, s.Probs, s.Labels, s.K, s.Weights, o)
	if err == nil && cacheable {
		cc[notion] = cv
	}
	return cv, err
}

// bandwidth returns the bandwidth of a kde notion (chosen once, shared by
// ece_kde and sharpness).
func (ev *evaluator) bandwidth(notion kde.Notion) (*chosenBandwidth, error) {
	if b, ok := ev.bandwidths[notion]; ok {
		return b, nil
	}
	c, s := ev.cfg, ev.set
	b := &chosenBandwidth{h: c.Bandwidth, method: "fixed"}
	if c.Bandwidth == 0 {
		progress, done := ev.step(notion.String() + " bandwidth")
		cv, err := ev.shared.Select(notion, s, kde.BandwidthOptions{Objective: c.Objective, Exact: c.Exact, Workers: c.Workers, Progress: progress, Context: ev.ctx})
		done()
		if err != nil {
			return nil, fmt.Errorf("%s: %s bandwidth: %w", s.File, notion, err)
		}
		b.h, b.method = cv.Bandwidth, c.Objective.String()
		for _, w := range cv.Warnings {
			b.warnings = append(b.warnings, warn(EstimatorWarning, w))
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

// Bounds on the median effective number of neighbours of the kernel
// regressions (kde.Result.Neighbours) outside which an ECE^KDE estimate is
// flagged: below minNeighbours each r_j rests on about one other sample's
// label; above smoothedShare of the other samples it is about the overall
// label frequency.
const (
	minNeighbours = 2
	smoothedShare = 0.5
)

// smoothingWarning warns when the kernel regressions behind the plug-in
// estimate v of CE_p^p at bandwidth h cannot resolve E[y | f]: when the
// median point's regression effectively averages fewer than minNeighbours
// other samples (r_j is about the nearest neighbour's one-hot label, so the
// estimate measures label noise: canonical CE_1 near 2(1 - 1/K) x the
// error rate's scale; K = 100 or 1,000 at n = 400 to 10,000 give 1.0 to 1.6
// neighbours at any workable h), or more than smoothedShare of them (r_j
// is about the overall label frequency ybar whatever f_j, and the estimate
// about V_inf = (1/n) sum_j ||ybar - f_j||_p^p, the spread of the
// predictions). A model whose regression resolves f is not flagged,
// however miscalibrated. neighbours 0 (not computed) gives no warning.
func smoothingWarning(notion kde.Notion, s *data.Set, p, v, h, neighbours float64) *Warning {
	n, k := s.N, s.K
	switch {
	case neighbours == 0:
		return nil
	case neighbours < minNeighbours:
		return warn(FewNeighbours, fmt.Sprintf("at h = %.4g each kernel regression rests on about one other sample (median %.2f effective neighbours): it is close to a single neighbour's label, so the estimate (p = %g: %.4g) measures label noise, not calibration; too few samples for K = %d at this h: read ece_witness (a lower bound), or the top-label, binned and KS metrics",
			h, neighbours, p, v, k))
	case neighbours <= smoothedShare*float64(n-1):
		return nil
	}
	// V_inf with the sample weights (nil: all 1): weighted label
	// frequency, weighted mean over j.
	var inf float64
	w, wsum := s.Weights, mathx.WeightSum(s.Weights, n)
	switch notion {
	case kde.TopLabel:
		c, a := metric.TopR(s.Probs, s.Labels, k, 1)
		acc := 0.0
		for i, x := range a {
			acc += mathx.Weight(w, i) * x
		}
		acc /= wsum
		for i, x := range c {
			inf += mathx.Weight(w, i) * math.Pow(math.Abs(acc-x), p)
		}
		inf /= wsum
	default: // canonical, binary: the whole vector
		ybar := make([]float64, k)
		for i, y := range s.Labels {
			ybar[y] += mathx.Weight(w, i)
		}
		for c := range ybar {
			ybar[c] /= wsum
		}
		for j := 0; j < n; j++ {
			for c, f := range s.Probs[j*k : (j+1)*k] {
				inf += mathx.Weight(w, j) * math.Pow(math.Abs(ybar[c]-f), p)
			}
		}
		inf /= wsum
	}
	return warn(OverSmoothed, fmt.Sprintf("at h = %.4g each kernel regression averages most of the data (median %.0f effective neighbours of %d): it is close to the overall label frequency whatever the prediction, so the estimate (p = %g: %.4g, against %.4g with the regression replaced by that frequency) measures the spread of the predictions, not their calibration: read ece_witness, or the binned and KS metrics",
		h, neighbours, n-1, p, v, inf))
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
	if notion == kde.Marginal {
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
			mean, se := gapMean(ps.PointLogLik(g), at, ps.Weights)
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
	return ps, ps.Add(s.Probs, s.Labels, s.Weights, kde.AddOptions{Self: self, Workers: ev.cfg.Workers, Context: ev.ctx})
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

// metricDef is one metric of the table: its name (Options.Metrics, the
// JSON "metric" of its plain entries) and how its entries are computed.
type metricDef struct {
	name    string
	compute func(ev *evaluator) ([]*Result, error)
}

// metricTable is the one place a metric is registered: Metrics (the names
// and the output order) and the dispatch of Evaluate come from it. Each
// entry computes every notion of its metric; the entries carry their group.
var metricTable = []metricDef{
	{"ece_kde", (*evaluator).eceKDE},
	{"ece_witness", (*evaluator).eceWitness},
	{"ece_bin", binnedMetric("ece_bin")},
	{"mce", binnedMetric("mce")},
	{"ece_bin_debiased", binnedMetric("ece_bin_debiased")},
	{"ks", (*evaluator).ks},
	{"sharpness", (*evaluator).sharpness},
	{"mmce", (*evaluator).mmce},
	{"brier", scoreMetric("brier")},
	{"nll", scoreMetric("nll")},
	{"accuracy", scoreMetric("accuracy")},
	{"confidence", scoreMetric("confidence")},
}

// binnedMetric computes the binned metric m (its three notions share one
// binning of the set).
func binnedMetric(m string) func(ev *evaluator) ([]*Result, error) {
	return func(ev *evaluator) ([]*Result, error) { return ev.binned(m) }
}

// scoreMetric computes the mean of the per-point terms of m.
func scoreMetric(m string) func(ev *evaluator) ([]*Result, error) {
	return func(ev *evaluator) ([]*Result, error) { return ev.score(m) }
}

// metricNames lists the names of the table in order.
func metricNames() []string {
	names := make([]string, len(metricTable))
	for i, d := range metricTable {
		names[i] = d.name
	}
	return names
}

func kdeGroup(n kde.Notion) int {
	switch n {
	case kde.Canonical:
		return groupCanonical
	case kde.Marginal:
		return groupClassWise
	case kde.Binary:
		return groupBinary
	}
	return groupTopLabel
}

func (ev *evaluator) eceKDE() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(2, "ECE^KDE"); err != nil {
		return nil, err
	}
	var out []*Result
	for _, notion := range c.notions {
		start := time.Now() // each notion's entries carry its own time
		b, err := ev.bandwidth(notion)
		if err != nil {
			return nil, err
		}
		for _, debias := range c.variants() {
			first := len(out)
			name, step := "ece_kde", notion.String()+" estimate"
			if debias {
				name, step = "ece_kde_debiased", notion.String()+" debiased estimate"
			}
			progress, done := ev.step(step)
			res, err := kde.Estimate(notion, s.Probs, s.Labels, s.K, s.Weights, kde.Options{Bandwidth: b.h, P: c.ps, ClassMean: c.ClassMean, Exact: c.Exact, Workers: c.Workers, Progress: progress, Terms: c.ci, Debias: debias, Context: ev.ctx,
				Neighbours: notion != kde.Marginal && !debias})
			done()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.File, err)
			}
			for i, v := range res.Values {
				e := &Result{Metric: name, Notion: notion.String(), P: ptr(v.P), Bandwidth: ptr(b.h),
					Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: b.method, Excluded: ptr(res.Excluded),
					Warnings: b.warnings, group: kdeGroup(notion)}
				if w := smoothingWarning(notion, s, v.P, v.Value, b.h, res.Neighbours); w != nil {
					e.Warnings = append(slices.Clip(e.Warnings), w)
				}
				if notion == kde.Marginal {
					e.Aggregate = "sum"
					if c.ClassMean {
						e.Aggregate = "mean"
					}
					for _, x := range res.PerClass[i] {
						e.PerClass = append(e.PerClass, Float(x))
					}
				}
				if c.CIExact {
					notion, p, h := notion, v.P, b.h
					e.stat = func(idx []int) (float64, error) {
						r, err := kde.Estimate(notion, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx),
							kde.Options{Bandwidth: h, P: []float64{p}, ClassMean: c.ClassMean, Exact: c.Exact, Workers: 1, Debias: debias})
						if err != nil {
							return 0, err
						}
						return r.Values[0].Value, nil
					}
				} else if c.ci {
					i := i
					e.stat = func(idx []int) (float64, error) { return res.Resampled(i, idx), nil }
				}
				out = append(out, e)
			}
			if len(out) > first {
				out[first].Seconds = ptr(time.Since(start).Seconds())
			}
			start = time.Now()
		}
	}
	return out, nil
}

// eceWitness reports the converging canonical estimators (kde.Witness):
// the cross-fitted residual witness (p = 1) and the debiased kernel
// U-statistic (p = 2), both always (they share one grid sweep).
func (ev *evaluator) eceWitness() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(4, "the witness estimators"); err != nil {
		return nil, err
	}
	o := kde.WitnessOptions{Seed: c.boot.Seed, Workers: c.Workers, Context: ev.ctx}
	if c.WitnessBandwidth > 0 {
		o.Grid = []float64{c.WitnessBandwidth}
	}
	if c.P != nil { // the p of P that the witness has: 1, 2
		for _, p := range c.P {
			if (p == 1 || p == 2) && !slices.Contains(o.P, p) {
				o.P = append(o.P, p)
			}
		}
		if o.P == nil {
			return nil, fmt.Errorf("ece_witness is defined for p = 1 and 2, not for p = %v", c.P)
		}
	}
	progress, done := ev.step("canonical witness")
	o.Progress = progress
	res, err := kde.Witness(s.Probs, s.Labels, s.K, s.Weights, o)
	done()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	var out []*Result
	for i, v := range res.Values {
		e := &Result{Metric: "ece_witness", Notion: "canonical", P: ptr(v.P), Bandwidth: ptr(v.Bandwidth),
			Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: "witness-crossfit", Excluded: ptr(v.Excluded),
			group: groupCanonical}
		for _, w := range v.Warnings {
			e.Warnings = append(e.Warnings, warn(EstimatorWarning, w))
		}
		if v.P == 2 {
			e.BandwidthMethod, e.CVBandwidth = "cv-half", ptr(v.CVBandwidth)
		}
		if c.CIExact {
			p := v.P
			e.stat = func(idx []int) (float64, error) {
				oo := o
				oo.P, oo.Workers, oo.Progress = []float64{p}, 1, nil
				r, err := kde.Witness(metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx), oo)
				if err != nil {
					return 0, err
				}
				return r.Values[0].Value, nil
			}
		} else if c.ci {
			i := i
			e.stat = func(idx []int) (float64, error) {
				if v := res.Resampled(i, idx); !math.IsNaN(v) {
					return v, nil
				}
				return 0, fmt.Errorf("ece_witness: no point kept in the resample")
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (ev *evaluator) binned(m string) ([]*Result, error) {
	c, s := ev.cfg, ev.set
	o := c.bin
	ps := c.ps
	if m == "ece_bin_debiased" {
		ps = []float64{2}
	}
	binning := o.Binning.String()
	var out []*Result
	val := binnedValue(m)
	finish := func(e *Result, p float64) { finishBinnedEntry(m, e, p) }
	if m == "mce" {
		ps = []float64{math.NaN()} // one Result, no p
	}
	// The scores of each view, and their bins when a resample can reuse
	// them (bins that do not depend on the data).
	top, topY := metric.TopR(s.Probs, s.Labels, s.K, 1)
	cols, colsY := make([][]float64, s.K), make([][]float64, s.K)
	for k := range cols {
		cols[k], colsY[k] = metric.ClassColumn(s.Probs, s.Labels, s.K, k)
	}
	var topA *metric.Assignment
	var colA []*metric.Assignment
	var cells *metric.Cells
	// Bins are reused on resamples when they do not depend on the data;
	// with weights the sqrt rule depends on a resample's total weight.
	reuse := s.Weights == nil || o.Rule == metric.Fixed
	if o.DataIndependent() && reuse {
		var err error
		if topA, err = metric.AssignBins(top, s.Weights, o); err != nil {
			return nil, err
		}
		colA = make([]*metric.Assignment, s.K)
		for k := range cols {
			if colA[k], err = metric.AssignBins(cols[k], s.Weights, o); err != nil {
				return nil, err
			}
		}
	}
	if o.Rule != metric.Doane && m != "ece_bin_debiased" && reuse {
		var err error
		if cells, err = metric.AssignCells(s.Probs, s.Labels, s.K, s.Weights, o); err != nil {
			return nil, err
		}
	}
	// bins summarises a view on a resample (nil: all samples).
	bins := func(sc, y []float64, a *metric.Assignment, idx []int) (*metric.Bins, error) {
		if a != nil {
			return a.Summarize(sc, y, idx, s.Weights), nil
		}
		w := s.Weights
		if idx != nil {
			sc, y, w = metric.Resample(sc, 1, idx), metric.Resample(y, 1, idx), metric.Resample(w, 1, idx)
		}
		return metric.BinScores(sc, y, w, o)
	}
	classWise := func(p float64, idx []int) (metric.PerClass, []*metric.Bins, error) {
		cb := make([]*metric.Bins, s.K)
		for k := range cb {
			var a *metric.Assignment
			if colA != nil {
				a = colA[k]
			}
			var err error
			if cb[k], err = bins(cols[k], colsY[k], a, idx); err != nil {
				return metric.PerClass{}, nil, fmt.Errorf("class %d: %w", k, err)
			}
		}
		return metric.ClassWise(cb, func(b *metric.Bins) float64 { return val(b, p) }), cb, nil
	}
	canonical := func(p float64, idx []int) (*metric.CanonicalBinned, error) {
		if cells != nil {
			return cells.Estimate(p, idx), nil
		}
		if idx == nil {
			return metric.Canonical(s.Probs, s.Labels, s.K, p, s.Weights, o)
		}
		return metric.Canonical(metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, p, metric.Resample(s.Weights, 1, idx), o)
	}
	for _, p := range ps {
		// Top-label.
		tb, err := bins(top, topY, topA, nil)
		if err != nil {
			return nil, err
		}
		e := &Result{Metric: m, Notion: "top_label", Binning: binning, Bins: ptr(len(tb.Count)), Value: jf(val(tb, p)), group: groupTopLabel}
		finish(e, p)
		e.stat = func(idx []int) (float64, error) {
			b, err := bins(top, topY, topA, idx)
			if err != nil {
				return 0, err
			}
			return val(b, p), nil
		}
		out = append(out, e)
		// Class-wise: the mean over classes, with the sum and the terms.
		pc, cb, err := classWise(p, nil)
		if err != nil {
			return nil, err
		}
		e = classWiseEntry(m, binning, p, pc, cb, o.Rule)
		e.stat = func(idx []int) (float64, error) {
			pc, _, err := classWise(p, idx)
			return pc.Value, err
		}
		out = append(out, e)
		// Canonical cells (not for the debiased estimator).
		if m == "ece_bin_debiased" {
			continue
		}
		pp := cellP(m, p)
		cn, err := canonical(pp, nil)
		if err != nil {
			return nil, err
		}
		pick := func(c *metric.CanonicalBinned) float64 {
			if m == "mce" {
				return c.MCE
			}
			return c.Value
		}
		e = &Result{Metric: m, Notion: "canonical", Binning: "equal_width", Bins: ptr(cn.B), Value: jf(pick(cn)), group: groupCanonical}
		e.Warnings = canonicalWarnings(m, s.N, s.K, cn)
		finish(e, p)
		e.stat = func(idx []int) (float64, error) {
			c, err := canonical(pp, idx)
			if err != nil {
				return 0, err
			}
			return pick(c), nil
		}
		out = append(out, e)
	}
	return out, nil
}

// binnedValue returns the value of the binned metric m for one bins
// summary and exponent p.
func binnedValue(m string) func(b *metric.Bins, p float64) float64 {
	return func(b *metric.Bins, p float64) float64 {
		switch m {
		case "mce":
			return b.MCE()
		case "ece_bin_debiased":
			return b.DebiasedL2()
		}
		return b.ECE(p)
	}
}

// classWiseEntry is the class-wise entry of the binned metric m for
// exponent p: the mean over classes of the per-class values pc of the
// class bins cb (rule: their bin rule), with the sum and the terms.
func classWiseEntry(m, binning string, p float64, pc metric.PerClass, cb []*metric.Bins, rule metric.BinRule) *Result {
	e := &Result{Metric: m, Notion: "class_wise", Binning: binning, Value: jf(pc.Value), Sum: jf(pc.Sum), group: groupClassWise}
	maxBins := 0
	for k, b := range cb {
		e.PerClass = append(e.PerClass, Float(pc.PerClass[k]))
		maxBins = max(maxBins, len(b.Count))
		if rule != metric.Fixed {
			e.PerClassBins = append(e.PerClassBins, len(b.Count))
		}
	}
	e.Bins = ptr(maxBins)
	finishBinnedEntry(m, e, p)
	return e
}

// cellP is the exponent of the canonical cells' estimate for the binned
// metric m at p: 1 for mce (whose value is the cells' MCE).
func cellP(m string, p float64) float64 {
	if m == "mce" {
		return 1
	}
	return p
}

// finishBinnedEntry sets the p and root of a binned metric's entry from its
// value.
func finishBinnedEntry(m string, e *Result, p float64) {
	v := float64(*e.Value)
	switch m {
	case "mce":
		e.Root = jf(v) // the max norm has no power form: root = value
	case "ece_bin":
		e.P, e.Root = ptr(p), jf(math.Pow(v, 1/p))
	case "ece_bin_debiased":
		e.P, e.Root = ptr(p), jf(math.Sqrt(math.Max(0, v)))
	}
}

// canonicalWarnings returns the warnings of the canonical binned metric m
// on n samples: sparse cells, or an MCE attained in a cell of few samples.
func canonicalWarnings(m string, n, k int, cn *metric.CanonicalBinned) Warnings {
	if w := sparseCellsWarning(n, cn.Cells, k, cn.B); w != "" {
		return Warnings{warn(SparseCells, w)}
	}
	if m == "mce" && cn.MCECount < minPerCell {
		return Warnings{warn(SmallCellMCE, fmt.Sprintf("the largest cell error is attained in a cell of %d sample(s) (%d bins per coordinate, K = %d): it is the label noise of single samples, near 1 by construction, not miscalibration; meaningless at this n: read ece_witness or the canonical ece_bin instead", cn.MCECount, cn.B, k))}
	}
	return nil
}

// minPerCell is the mean number of samples per occupied cell under which
// the canonical binned metrics are flagged: with fewer, most cells hold one
// or two samples, whose label is 0 or 1, so |H_c - fbar_c| measures the
// label noise of single samples, not the miscalibration.
const minPerCell = 10

// sparseCellsWarning returns the warning of the canonical binned metrics
// when n samples fall in occupied cells with fewer than minPerCell samples
// each on average, or "".
func sparseCellsWarning(n, cells, k, b int) string {
	if cells == 0 || float64(n)/float64(cells) >= minPerCell {
		return ""
	}
	return fmt.Sprintf("n = %d samples fall in %d occupied cells (%d bins per coordinate, K = %d; %.1f samples per cell): most cells hold one or two samples, so the canonical binned values measure label noise, not miscalibration (the MCE is then near its maximum by construction); meaningless at this n: read ece_witness instead",
		n, cells, b, k, float64(n)/float64(cells))
}

func (ev *evaluator) ks() ([]*Result, error) {
	s := ev.set
	var out []*Result
	add := func(notion string, r int, sc, oc []float64) {
		v, _ := metric.KS(sc, oc, false, s.Weights)
		e := &Result{Metric: "ks", Notion: notion, R: ptr(r), Value: jf(v), group: groupTopLabel}
		sorted := metric.NewSortedKS(sc, oc, s.Weights)
		e.stat = func(idx []int) (float64, error) { return sorted.KSResample(metric.Counts(s.N, idx)), nil }
		out = append(out, e)
	}
	for _, r := range ev.cfg.ksR {
		if r <= s.K {
			sc, oc := metric.TopR(s.Probs, s.Labels, s.K, r)
			add("top_r", r, sc, oc)
		}
	}
	for _, r := range ev.cfg.ksR {
		if r >= 2 && r <= s.K {
			sc, oc := metric.WithinTopR(s.Probs, s.Labels, s.K, r)
			add("within_top_r", r, sc, oc)
		}
	}
	pc := metric.ClassWiseKS(s.Probs, s.Labels, s.K, s.Weights)
	e := &Result{Metric: "ks", Notion: "class_wise", Value: jf(pc.Value), Sum: jf(pc.Sum), group: groupClassWise}
	for _, v := range pc.PerClass {
		e.PerClass = append(e.PerClass, Float(v))
	}
	sorted := make([]*metric.SortedKS, s.K)
	for k := range sorted {
		sc, oc := metric.ClassColumn(s.Probs, s.Labels, s.K, k)
		sorted[k] = metric.NewSortedKS(sc, oc, s.Weights)
	}
	e.stat = func(idx []int) (float64, error) {
		counts, sum := metric.Counts(s.N, idx), 0.0
		for _, sk := range sorted {
			sum += sk.KSResample(counts)
		}
		return sum / float64(s.K), nil
	}
	out = append(out, e)
	return out, nil
}

func (ev *evaluator) sharpness() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	if err := s.Require(3, "sharpness"); err != nil {
		return nil, err
	}
	notion, group := kde.TopLabel, groupTopLabel
	if s.Binary {
		notion, group = kde.Binary, groupBinary
	}
	b, err := ev.bandwidth(notion)
	if err != nil {
		return nil, err
	}

	var out []*Result
	for _, debias := range c.variants() {
		name := "sharpness"
		if debias {
			name = "sharpness_debiased"
		}
		res, err := kde.Sharpness(notion, s.Probs, s.Labels, s.K, s.Weights, kde.Options{Bandwidth: b.h, Exact: c.Exact, Workers: c.Workers, Debias: debias, Context: ev.ctx})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		e := &Result{Metric: name, Notion: notion.String(), Bandwidth: ptr(b.h), BandwidthMethod: b.method,
			Value: jf(res.Value), Variance: jf(res.Variance), Excluded: ptr(res.Excluded), group: group}
		if c.CIExact {
			e.stat = func(idx []int) (float64, error) {
				r, err := kde.Sharpness(notion, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx), kde.Options{Bandwidth: b.h, Exact: c.Exact, Workers: 1, Debias: debias})
				if err != nil {
					return 0, err
				}
				return r.Value, nil
			}
		} else {
			e.stat = func(idx []int) (float64, error) {
				if v := res.Resampled(idx); !math.IsNaN(v) {
					return v, nil
				}
				return 0, fmt.Errorf("sharpness: no point kept in the resample")
			}
		}

		out = append(out, e)
	}
	return out, nil
}

func (ev *evaluator) mmce() ([]*Result, error) {
	s, w := ev.set, ev.cfg.mmce
	r, cor := metric.TopR(s.Probs, s.Labels, s.K, 1)
	v, sq := metric.MMCE(r, cor, w, nil, s.Weights)
	e := &Result{Metric: "mmce", Notion: "top_label", Value: jf(v), Squared: jf(sq), Width: ptr(w), group: groupTopLabel}
	e.stat = func(idx []int) (float64, error) {
		v, _ := metric.MMCE(metric.Resample(r, 1, idx), metric.Resample(cor, 1, idx), w, nil, metric.Resample(s.Weights, 1, idx))
		return v, nil
	}
	return []*Result{e}, nil
}

// score computes brier, nll, accuracy or confidence: means of per-point
// terms.
func (ev *evaluator) score(m string) ([]*Result, error) {
	s := ev.set
	terms := make([]float64, s.N)
	for i := range terms {
		row, lab := s.Probs[i*s.K:(i+1)*s.K], s.Labels[i:i+1]
		switch m {
		case "brier":
			terms[i] = metric.Brier(row, lab, s.K, nil)
		case "nll":
			var z []float64 // the exact log-softmax from logits
			switch {
			case s.Logits != nil && s.Binary:
				z = []float64{0, s.Logits[i]} // one logit z is (0, z)
			case s.Logits != nil:
				z = s.Logits[i*s.K : (i+1)*s.K]
			}
			terms[i] = metric.NLL(row, z, lab, s.K, nil)
		case "accuracy":
			terms[i] = metric.Accuracy(row, lab, s.K, nil)
		case "confidence":
			terms[i] = metric.Confidence(row, lab, s.K, nil)
		default:
			return nil, fmt.Errorf("unknown metric %q", m)
		}
	}
	// mean is the (weighted) mean of the terms of the samples idx.
	mean := func(idx []int) float64 {
		if s.Weights == nil {
			sum := 0.0
			for _, j := range idx {
				sum += terms[j]
			}
			return sum / float64(len(idx))
		}
		sum, ws := 0.0, 0.0
		for _, j := range idx {
			sum += s.Weights[j] * terms[j]
			ws += s.Weights[j]
		}
		return sum / ws
	}
	all := make([]int, s.N)
	for i := range all {
		all[i] = i
	}
	e := &Result{Metric: m, Value: jf(mean(all)), group: groupScores}
	e.stat = func(idx []int) (float64, error) { return mean(idx), nil }
	return []*Result{e}, nil
}
