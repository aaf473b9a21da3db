package evaluate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// The binned metrics: their three notions (top-label, class-wise and the
// canonical cells; ece_bin_debiased has no canonical entry) share one
// binning of the set.
var (
	eceBinDef         = binnedDef(ECEBin, "binned-plug-in")          // sum_b (n_b/n) |acc_b - conf_b|^p
	mceDef            = binnedDef(MCE, "binned-max")                 // max over occupied bins of |acc_b - conf_b|
	eceBinDebiasedDef = binnedDef(ECEBinDebiased, "binned-debiased") // Kumar et al.'s debiased L2 (squared, n_b - 1 correction)
)

// binnedDef is the binned metric m, whose entries name estimator.
func binnedDef(m Metric, estimator string) metricDef {
	return metricDef{
		name:     m,
		compute:  func(ev *evaluator) ([]*Result, error) { return ev.binned(m) },
		interval: centered,
		pValues:  (*evaluator).recomputedPValues,
		define: func(c *config, e *Result) {
			e.Estimator = estimator
			defineBins(c, e)
		},
		sums:    []*sumsPart{binnedSums},
		kernel:  []*kernelPart{binnedKernel},
		finish:  func(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) { return s.finishBinned(m, ks) },
		options: map[Metric][]Option{ECEBin: binOptions}[m],
	}
}

// maxBins bounds the bins option: more bins than this hold almost no
// sample each.
const maxBins = 10_000

// binOptions are the binned metrics' options (declared with ece_bin's).
var binOptions = []Option{
	{Name: "bins", Kind: IntOption, Default: strconv.Itoa(metric.DefaultBins), Stream: true, Metrics: binnedMetrics,
		Usage:       "number of bins of the binned metrics (implies --bin-rule fixed)",
		StreamUsage: "number of bins of the binned metrics (the fixed rule)",
		set:         intField(1, maxBins, fmt.Sprintf("an integer in [1, %d]", maxBins), func(o *StreamOptions) *int { return &o.Bins.Bins })},
	{Name: "binning", Kind: TextOption, Default: "equal_width", Stream: true, Metrics: binnedMetrics,
		Usage: "bin edges: equal_width, or equal_mass (percentiles, as scikit-learn's quantile strategy)",
		set: func(o *StreamOptions, text string) (err error) {
			if o.Bins.Binning, err = metric.ParseBinning(text); err != nil {
				return optionError("binning", "binning: %v", err)
			}
			return nil
		}},
	{Name: "bin-rule", Kind: TextOption, Default: "fixed", Stream: true, Metrics: binnedMetrics,
		Usage: "number of bins: fixed, doane or sqrt",
		set: func(o *StreamOptions, text string) (err error) {
			if o.Bins.Rule, err = metric.ParseBinRule(text); err != nil {
				return optionError("bin-rule", "bin-rule: %v", err)
			}
			return nil
		}},
	{Name: "reference-bins", Kind: BoolOption, Default: "false", Stream: true, Metrics: binnedMetrics,
		Usage: "binned metrics: the splines reference's (lo, hi] bins, where a score of exactly 0 falls in no bin",
		set:   boolField(func(o *StreamOptions) *bool { return &o.Bins.OpenLow })},
	{Name: "max-cells", Kind: IntOption, Default: "0", Stream: true, StreamOnly: true, Metrics: MetricSet{ECEBin, MCE},
		Usage: "the most occupied cells the canonical ece_bin and mce may keep (0: 2^20 / (2K + 2), 47,662 at K = 10, about 14 MB; each cell about (2K + 2) x 14 bytes); past it those two entries are errors",
		set:   intField(0, math.MaxInt32, "an integer >= 0", func(o *StreamOptions) *int { return &o.MaxCells })},
}

// binnedMetrics are the metrics that read the bins' options.
var binnedMetrics = MetricSet{ECEBin, MCE, ECEBinDebiased}

// binnedState is binnedSums's part of the first pass's state (sumsState).
type binnedState struct {
	Top   *metric.BinSums   `json:"top,omitempty"`
	Class []*metric.BinSums `json:"class,omitempty"`
	Cells *metric.CellSums  `json:"cells,omitempty"`
	// TopSketch and ClassSketch replace Top and Class for data-dependent
	// bins; Pooled holds the moments of all n x K probabilities for the
	// canonical cells' Doane rule.
	TopSketch   *metric.ScoreSketch   `json:"top_sketch,omitempty"`
	ClassSketch []*metric.ScoreSketch `json:"class_sketch,omitempty"`
	Pooled      *metric.Moments       `json:"pooled,omitempty"`
}

// binnedSums is the binned metrics' first pass: with fixed bins the bin
// sums of the top-label score and of each class column (Top, Class), with
// data-dependent bins their score sketches (TopSketch, ClassSketch); for
// ece_bin and mce the canonical cells' sums (Cells), or with
// data-dependent cells the moments of the n x K probabilities (Pooled)
// and the cells in the second pass.
var binnedSums = &sumsPart{
	what: "the binned metrics'",
	start: func(st *sumsState, _ *data.Batch) error {
		c := st.Config
		var err error
		switch {
		case c.sketched():
			st.TopSketch = metric.NewScoreSketch()
			st.ClassSketch = make([]*metric.ScoreSketch, st.K)
			for k := range st.ClassSketch {
				st.ClassSketch[k] = metric.NewScoreSketch()
			}
		default:
			if st.Top, err = metric.NewBinSums(c.Bins); err != nil {
				return err
			}
			st.Class = make([]*metric.BinSums, st.K)
			for k := range st.Class {
				st.Class[k], _ = metric.NewBinSums(c.Bins)
			}
		}
		switch {
		case c.dataCells():
			st.Pooled = new(metric.Moments)
		case c.cells():
			if st.Cells, err = metric.NewCellSums(st.K, c.Bins.Bins); err != nil {
				return err
			}
			st.Cells.SetLimit(c.cellLimit(st.K))
		}
		return nil
	},
	add: func(st *sumsState, b *data.Batch) error {
		p, y, k, w := b.Probs, b.Labels, b.K, b.Weights
		if st.Top != nil {
			if err := addScores(st.Top, st.Class, p, y, k, w); err != nil {
				return err
			}
		}
		if st.Cells != nil {
			if err := st.Cells.Add(p, y, w); err != nil {
				return err
			}
		}
		if st.TopSketch != nil {
			if err := addScores(st.TopSketch, st.ClassSketch, p, y, k, w); err != nil {
				return err
			}
		}
		if st.Pooled != nil {
			for i, v := range p {
				st.Pooled.Add(mathx.Weight(w, i/k), v, 0, 0)
			}
		}
		return nil
	},
	merge: func(st, o *sumsState) error {
		var errs []error
		if st.Top != nil {
			errs = append(errs, st.Top.Merge(o.Top))
			for k := range st.Class {
				errs = append(errs, st.Class[k].Merge(o.Class[k]))
			}
		}
		if st.Cells != nil {
			errs = append(errs, st.Cells.Merge(o.Cells))
		}
		if st.TopSketch != nil {
			errs = append(errs, st.TopSketch.Merge(o.TopSketch))
			for k := range st.ClassSketch {
				errs = append(errs, st.ClassSketch[k].Merge(o.ClassSketch[k]))
			}
		}
		if st.Pooled != nil {
			st.Pooled.Merge(*o.Pooled)
		}
		return errors.Join(errs...)
	},
	check: func(st *sumsState) error {
		c := st.Config
		switch {
		case c.sketched() && (st.TopSketch == nil || len(st.ClassSketch) != st.K || slices.Contains(st.ClassSketch, nil)):
			return errors.New("missing score sketches")
		case !c.sketched() && (st.Top == nil || len(st.Class) != st.K || slices.Contains(st.Class, nil)):
			return errors.New("missing bin sums")
		case c.dataCells() && st.Pooled == nil:
			return errors.New("missing moments")
		case c.cells() && !c.dataCells() && st.Cells == nil:
			return errors.New("missing cell sums")
		}
		return nil
	},
	secondPass: func(c *streamConfig) bool { return c.sketched() || c.dataCells() },
	holds: func(st *sumsState) bool {
		return st.Top != nil || st.Class != nil || st.TopSketch != nil || st.ClassSketch != nil || st.Cells != nil || st.Pooled != nil
	},
}

// binnedKernelState is binnedKernel's part of the second pass's state
// (kernelSumsState): the scores near the edges of data-dependent bins
// (see metric.ScoreSketch) and the canonical cells when their number
// depends on the data.
type binnedKernelState struct {
	TopEdges   *metric.EdgeValues   `json:"top_edges,omitempty"`
	ClassEdges []*metric.EdgeValues `json:"class_edges,omitempty"`
	Cells      *metric.CellSums     `json:"cells,omitempty"`
}

// binnedKernel is the binned metrics' part of the second pass (block 0):
// with data-dependent bins the scores near the edges the first pass's
// sketches need (TopEdges, ClassEdges), and the canonical cells of the
// pooled coordinates' bins (Cells).
var binnedKernel = &kernelPart{
	what:      "the binned entries' edges and cells",
	blockZero: true,
	holds:     func(st *kernelSumsState) bool { return st.TopEdges != nil || st.Cells != nil },
	start: func(ks *KernelSums, kb *kernelBlock) error {
		s := kb.s
		if s.st.TopSketch != nil {
			top, err := s.st.TopSketch.Needed(s.st.Config.Bins, s.st.Weighted)
			if err != nil {
				return fmt.Errorf("evaluate: top-label bins: %w", err)
			}
			ks.st.TopEdges = metric.NewEdgeValues(top, edgeLimit(s.st.K))
			for k, sk := range s.st.ClassSketch {
				keys, err := sk.Needed(s.st.Config.Bins, s.st.Weighted)
				if err != nil {
					return fmt.Errorf("evaluate: class %d bins: %w", k, err)
				}
				ks.st.ClassEdges = append(ks.st.ClassEdges, metric.NewEdgeValues(keys, edgeLimit(s.st.K)))
			}
		}
		if s.st.Pooled != nil {
			// The pooled coordinates' rule: the rows of positive weight
			// (Sqrt), their K values each (Doane).
			bins, err := s.st.Config.Bins.MergedBins(*s.st.Pooled, float64(s.st.Pos), float64(s.st.Pos)*float64(s.st.K))
			if err != nil {
				return err
			}
			if ks.st.Cells, err = metric.NewCellSums(s.st.K, bins); err != nil {
				return err
			}
			ks.st.Cells.SetLimit(s.st.Config.cellLimit(s.st.K))
		}
		return nil
	},
	add: func(ks *KernelSums, _ context.Context, b *data.Batch, _ []int, _ int) error {
		if ks.st.TopEdges != nil {
			if err := addScores(ks.st.TopEdges, ks.st.ClassEdges, b.Probs, b.Labels, b.K, b.Weights); err != nil {
				return b.RowsError(err)
			}
		}
		if ks.st.Cells != nil {
			if err := ks.st.Cells.Add(b.Probs, b.Labels, b.Weights); err != nil {
				return b.RowsError(err)
			}
		}
		return nil
	},
	merge: func(ks, o *KernelSums) error {
		if (ks.st.TopEdges == nil) != (o.st.TopEdges == nil) || len(ks.st.ClassEdges) != len(o.st.ClassEdges) || (ks.st.Cells == nil) != (o.st.Cells == nil) {
			return fmt.Errorf("evaluate: merging second-pass sums of different set-ups")
		}
		if ks.st.TopEdges != nil {
			if err := ks.st.TopEdges.Merge(o.st.TopEdges); err != nil {
				return err
			}
			for k := range ks.st.ClassEdges {
				if err := ks.st.ClassEdges[k].Merge(o.st.ClassEdges[k]); err != nil {
					return err
				}
			}
		}
		if ks.st.Cells != nil {
			return ks.st.Cells.Merge(o.st.Cells)
		}
		return nil
	},
	concat: func(out *KernelSums, bs []*KernelSums) error {
		out.st.TopEdges, out.st.ClassEdges, out.st.Cells = bs[0].st.TopEdges, bs[0].st.ClassEdges, bs[0].st.Cells
		return nil
	},
	check: func(st *kernelSumsState) error {
		if (st.TopEdges == nil && st.ClassEdges != nil) || (st.TopEdges != nil && (len(st.ClassEdges) != st.K || slices.Contains(st.ClassEdges, nil))) {
			return fmt.Errorf("%d class edge sums for K = %d", len(st.ClassEdges), st.K)
		}
		return nil
	},
}

// binned says whether the configuration has a binned metric.
func (c *streamConfig) binned() bool { return c.has(ECEBin) || c.has(MCE) || c.has(ECEBinDebiased) }

// cells says whether the configuration has a metric of the canonical
// cells: ece_bin and mce (ece_bin_debiased has no canonical entry).
func (c *streamConfig) cells() bool { return c.has(ECEBin) || c.has(MCE) }

// cellLimit is the bound on the canonical cells for K classes.
func (c *streamConfig) cellLimit(k int) int {
	if c.MaxCells > 0 {
		return c.MaxCells
	}
	return max(1, maxCellFloats/(2*k+2))
}

// sketched says whether the bins depend on the data (equal-mass edges, the
// Doane and Sqrt rules): the first pass then sketches the scores and the
// second collects the scores near the edges (metric.ScoreSketch).
func (c *streamConfig) sketched() bool {
	return c.binned() && (c.Bins.Binning == metric.EqualMass || c.Bins.Rule != metric.Fixed)
}

// dataCells says whether the canonical cells' number depends on the data
// (the Doane and Sqrt rules): the cells are then summed in the second pass.
func (c *streamConfig) dataCells() bool { return c.cells() && c.Bins.Rule != metric.Fixed }

// defineBins sets the bin rule, edge rule and convention of a binned
// entry: the canonical cells are always the fixed equal-width grid; an
// entry of another library's convention says its edge rule.
func defineBins(c *config, e *Result) {
	e.BinRule = c.bin.Rule.String()
	e.BinEdges = "(lo, hi], first bin [0, hi]"
	if c.bin.OpenLow {
		e.BinEdges = "(lo, hi], a score of 0 in no bin"
	}
	if e.Convention == "" {
		e.Convention = string(convention.Calib)
	} else if n := convention.Name(e.Convention); n != convention.Calib {
		e.BinRule, e.BinEdges = metric.Fixed.String(), n.Edges()
	}
	if e.Notion == notion.Canonical {
		e.BinRule = metric.Fixed.String()
	}
}

// binned computes the binned metric m: for each p its top-label,
// class-wise and canonical entries (ece_bin_debiased: p = 2 and no
// canonical entry; mce: no p).
func (ev *evaluator) binned(m Metric) ([]*Result, error) {
	v, err := newBinnedViews(ev.set, ev.cfg.bin, m)
	if err != nil {
		return nil, err
	}
	ps := ev.cfg.ps
	switch m {
	case ECEBinDebiased:
		ps = []float64{2}
	case MCE:
		ps = []float64{math.NaN()} // one Result, no p
	}
	var out []*Result
	for _, p := range ps {
		top, err := ev.binnedTop(m, v, p)
		if err != nil {
			return nil, err
		}
		cw, err := ev.binnedClassWise(m, v, p)
		if err != nil {
			return nil, err
		}
		out = append(out, top, cw)
		if m == ECEBinDebiased { // no canonical entry
			continue
		}
		cn, err := ev.binnedCanonical(m, v, p)
		if err != nil {
			return nil, err
		}
		if cn != nil {
			out = append(out, cn)
		}
	}
	return out, nil
}

// binnedViews are a set's views for a binned metric: the top-label score
// and each class column with their outcomes, and their bins and the
// canonical cells assigned once where a resample can reuse them (bins
// that do not depend on the data; with weights the sqrt rule depends on a
// resample's total weight).
type binnedViews struct {
	s           *data.Set
	o           metric.BinOptions
	val         func(b *metric.Bins, p float64) float64
	top, topY   []float64
	cols, colsY [][]float64
	topA        *metric.Assignment
	colA        []*metric.Assignment
	cells       *metric.Cells
}

func newBinnedViews(s *data.Set, o metric.BinOptions, m Metric) (*binnedViews, error) {
	v := &binnedViews{s: s, o: o, val: binnedValue(m)}
	v.top, v.topY = metric.TopR(s.Probs, s.Labels, s.K, 1)
	v.cols, v.colsY = make([][]float64, s.K), make([][]float64, s.K)
	for k := range v.cols {
		v.cols[k], v.colsY[k] = metric.ClassColumn(s.Probs, s.Labels, s.K, k)
	}
	reuse := s.Weights == nil || o.Rule == metric.Fixed
	var err error
	if o.DataIndependent() && reuse {
		if v.topA, err = metric.AssignBins(v.top, s.Weights, o); err != nil {
			return nil, err
		}
		v.colA = make([]*metric.Assignment, s.K)
		for k := range v.cols {
			if v.colA[k], err = metric.AssignBins(v.cols[k], s.Weights, o); err != nil {
				return nil, err
			}
		}
	}
	if o.Rule != metric.Doane && m != ECEBinDebiased && reuse {
		if v.cells, err = metric.AssignCells(s.Probs, s.Labels, s.K, s.Weights, o); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// bins summarises the view sc (outcomes y, bins a if assigned) on a
// resample (idx nil: all samples).
func (v *binnedViews) bins(sc, y []float64, a *metric.Assignment, idx []int) (*metric.Bins, error) {
	if a != nil {
		return a.Summarize(sc, y, idx, v.s.Weights), nil
	}
	w := v.s.Weights
	if idx != nil {
		sc, y, w = metric.Resample(sc, 1, idx), metric.Resample(y, 1, idx), metric.Resample(w, 1, idx)
	}
	return metric.BinScores(sc, y, w, v.o)
}

// topBins are the top-label view's bins on a resample.
func (v *binnedViews) topBins(idx []int) (*metric.Bins, error) {
	return v.bins(v.top, v.topY, v.topA, idx)
}

// classWise is the class-wise value at p on a resample, with each class's
// bins.
func (v *binnedViews) classWise(p float64, idx []int) (metric.PerClass, []*metric.Bins, error) {
	cb := make([]*metric.Bins, v.s.K)
	for k := range cb {
		var a *metric.Assignment
		if v.colA != nil {
			a = v.colA[k]
		}
		var err error
		if cb[k], err = v.bins(v.cols[k], v.colsY[k], a, idx); err != nil {
			return metric.PerClass{}, nil, fmt.Errorf("class %d: %w", k, err)
		}
	}
	return metric.ClassWise(cb, func(b *metric.Bins) float64 { return v.val(b, p) }), cb, nil
}

// canonical is the canonical cells' estimate at p on a resample.
func (v *binnedViews) canonical(p float64, idx []int) (*metric.CanonicalBinned, error) {
	s := v.s
	if v.cells != nil {
		return v.cells.Estimate(p, idx), nil
	}
	if idx == nil {
		return metric.Canonical(s.Probs, s.Labels, s.K, p, s.Weights, v.o)
	}
	return metric.Canonical(metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, p, metric.Resample(s.Weights, 1, idx), v.o)
}

// binnedTop is the top-label entry of m at p (or another library's:
// Options.Convention).
func (ev *evaluator) binnedTop(m Metric, v *binnedViews, p float64) (*Result, error) {
	var e *Result
	if ev.cfg.Convention != convention.Calib && m != ECEBinDebiased {
		e = ev.conventionEntry(m, p)
	} else {
		tb, err := v.topBins(nil)
		if err != nil {
			return nil, err
		}
		e = &Result{Metric: m, Notion: notion.TopLabel, Binning: v.o.Binning.String(), Bins: ptr(len(tb.Count)), Value: jf(v.val(tb, p))}
		ev.setStat(e, func(idx []int) (float64, error) {
			b, err := v.topBins(idx)
			if err != nil {
				return 0, err
			}
			return v.val(b, p), nil
		})
	}
	if e.Error == "" {
		finishBinnedEntry(m, e, p)
	} else if m != MCE {
		e.P = ptr(p)
	}
	return e, nil
}

// binnedClassWise is the class-wise entry of m at p: the mean over
// classes, with the sum and the terms.
func (ev *evaluator) binnedClassWise(m Metric, v *binnedViews, p float64) (*Result, error) {
	pc, cb, err := v.classWise(p, nil)
	if err != nil {
		return nil, err
	}
	e := classWiseEntry(m, v.o.Binning.String(), p, pc, cb, v.o.Rule)
	ev.setStat(e, func(idx []int) (float64, error) {
		pc, _, err := v.classWise(p, idx)
		return pc.Value, err
	})
	return e, nil
}

// binnedCanonical is the canonical cells' entry of m at p; nil where the
// default evaluation leaves out what its own warning would call
// meaningless (--metrics ece_bin computes it, with the warning).
func (ev *evaluator) binnedCanonical(m Metric, v *binnedViews, p float64) (*Result, error) {
	s := v.s
	pp := cellP(m, p)
	cn, err := v.canonical(pp, nil)
	if err != nil {
		return nil, err
	}
	pick := func(c *metric.CanonicalBinned) float64 {
		if m == MCE {
			return c.MCE
		}
		return c.Value
	}
	if ev.cfg.defaulted && sparseCellsWarning(s.N, cn.Cells, s.K, cn.B) != "" {
		return nil, nil
	}
	e := &Result{Metric: m, Notion: notion.Canonical, Binning: "equal_width", Bins: ptr(cn.B), Value: jf(pick(cn))}
	e.Warnings = canonicalWarnings(m, s.N, s.K, cn)
	finishBinnedEntry(m, e, p)
	ev.setStat(e, func(idx []int) (float64, error) {
		c, err := v.canonical(pp, idx)
		if err != nil {
			return 0, err
		}
		return pick(c), nil
	})
	return e, nil
}

// binnedValue returns the value of the binned metric m for one bins
// summary and exponent p.
func binnedValue(m Metric) func(b *metric.Bins, p float64) float64 {
	return func(b *metric.Bins, p float64) float64 {
		switch m {
		case MCE:
			return b.MCE()
		case ECEBinDebiased:
			return b.DebiasedL2()
		}
		return b.ECE(p)
	}
}

// classWiseEntry is the class-wise entry of the binned metric m for
// exponent p: the mean over classes of the per-class values pc of the
// class bins cb (rule: their bin rule), with the sum and the terms.
func classWiseEntry(m Metric, binning string, p float64, pc metric.PerClass, cb []*metric.Bins, rule metric.BinRule) *Result {
	e := &Result{Metric: m, Notion: notion.ClassWise, Binning: binning, Value: jf(pc.Value), Sum: jf(pc.Sum)}
	maxBins := 0
	for k, b := range cb {
		e.PerClass = append(e.PerClass, data.Float(pc.PerClass[k]))
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
func cellP(m Metric, p float64) float64 {
	if m == MCE {
		return 1
	}
	return p
}

// finishBinnedEntry sets the p and root of a binned metric's entry from its
// value.
func finishBinnedEntry(m Metric, e *Result, p float64) {
	v := float64(*e.Value)
	switch m {
	case MCE:
		e.Root = jf(v) // the max norm has no power form: root = value
	case ECEBin:
		e.P, e.Root = ptr(p), jf(math.Pow(v, 1/p))
	case ECEBinDebiased:
		e.P, e.Root = ptr(p), jf(math.Sqrt(math.Max(0, v)))
	}
}

// canonicalWarnings returns the warnings of the canonical binned metric m
// on n samples: sparse cells, or an MCE attained in a cell of few samples.
func canonicalWarnings(m Metric, n, k int, cn *metric.CanonicalBinned) Warnings {
	if w := sparseCellsWarning(n, cn.Cells, k, cn.B); w != "" {
		return Warnings{warn(SparseCells, w)}
	}
	if m == MCE && cn.MCECount < minPerCell {
		return Warnings{warn(SmallCellMCE, fmt.Sprintf("the largest cell error is attained in a cell of %d sample(s) (%d bins per coordinate, K = %d): it is the label noise of single samples, near 1 by construction, not miscalibration; meaningless at this n: read "+Headline.String()+" or the canonical ece_bin instead", cn.MCECount, cn.B, k))}
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
	return fmt.Sprintf("n = %d samples fall in %d occupied cells (%d bins per coordinate, K = %d; %.1f samples per cell): most cells hold one or two samples, so the canonical binned values measure label noise, not miscalibration (the MCE is then near its maximum by construction); meaningless at this n: read "+Headline.String()+" instead",
		n, cells, b, k, float64(n)/float64(cells))
}

// bins returns the top-label and class-wise bins: from the sums of fixed
// equal-width bins, or from the sketches and the scores near their edges
// with the bounds of edges taken at bucket ends (zero when exact).
func (s *Sums) bins(ks *KernelSums) (top *metric.Bins, tb metric.SketchBound, cb []*metric.Bins, cbb []metric.SketchBound, err error) {
	cb = make([]*metric.Bins, s.st.K)
	cbb = make([]metric.SketchBound, s.st.K)
	if s.st.TopSketch == nil {
		for k := range cb {
			cb[k] = s.st.Class[k].Bins()
		}
		return s.st.Top.Bins(), tb, cb, cbb, nil
	}
	if ks == nil || ks.st.TopEdges == nil || len(ks.st.ClassEdges) != s.st.K {
		return nil, tb, nil, nil, errors.New("the second pass (the scores near the bin edges) is missing")
	}
	if top, tb, err = s.st.TopSketch.Bins(s.st.Config.Bins, s.st.Weighted, ks.st.TopEdges); err != nil {
		return nil, tb, nil, nil, err
	}
	for k, sk := range s.st.ClassSketch {
		if cb[k], cbb[k], err = sk.Bins(s.st.Config.Bins, s.st.Weighted, ks.st.ClassEdges[k]); err != nil {
			return nil, tb, nil, nil, fmt.Errorf("class %d: %w", k, err)
		}
	}
	return top, tb, cb, cbb, nil
}

// edgeBound sets the warning and, for ece_bin with p = 1, the bound
// interval of a binned entry whose edges were taken at sketch bucket ends:
// moving rows of total mass M and sum w |s - o| = A (shares of W) between
// bins moves ECE_1 by at most 2 A (metric.SketchBound).
func edgeBound(m Metric, e *Result, p float64, mass, abs float64) {
	if mass == 0 {
		return
	}
	e.Warnings = append(e.Warnings, warn(ApproximateEdges, fmt.Sprintf("too many distinct scores near the data-dependent bin edges for the second pass: edges taken at the ends of sketch buckets, which holds up to %.3g%% of the weight in other bins than exact edges would", 100*mass)))
	if m == ECEBin && p == 1 {
		v := float64(*e.Value)
		e.Interval, e.IntervalKind = []data.Float{data.Float(math.Max(0, v-2*abs)), data.Float(v + 2*abs)}, "bound"
	}
}

// finishBinned reports a binned metric as evaluate.binned does, from the
// sums of the bins (fixed equal-width, or data-dependent from the sketches).
func (s *Sums) finishBinned(m Metric, ks *KernelSums) ([]*Result, error) {
	c := s.st.Config
	ps := c.P
	if m == ECEBinDebiased {
		ps = []float64{2}
	}
	if m == MCE {
		ps = []float64{math.NaN()}
	}
	val := binnedValue(m)
	binning := c.Bins.Binning.String()
	top, tb, cb, cbb, err := s.bins(ks)
	if err != nil {
		return nil, err
	}
	cells := s.st.Cells
	if cells == nil && ks != nil {
		cells = ks.st.Cells
	}
	if cells == nil && m != ECEBinDebiased {
		return nil, errors.New("the canonical cell sums are missing")
	}
	var out []*Result
	for _, p := range ps {
		e := &Result{Metric: m, Notion: notion.TopLabel, Binning: binning, Bins: ptr(len(top.Count)), Value: jf(val(top, p))}
		finishBinnedEntry(m, e, p)
		edgeBound(m, e, p, tb.Mass, tb.Abs)
		out = append(out, e)
		pc := metric.ClassWise(cb, func(b *metric.Bins) float64 { return val(b, p) })
		e = classWiseEntry(m, binning, p, pc, cb, c.Bins.Rule)
		mass, abs := 0.0, 0.0
		for _, b := range cbb {
			mass, abs = max(mass, b.Mass), abs+b.Abs/float64(s.st.K)
		}
		edgeBound(m, e, p, mass, abs)
		out = append(out, e)
		if m == ECEBinDebiased {
			continue
		}
		if cells.Overflowed() && c.Defaulted {
			// The default leaves out what it cannot compute in the
			// stream's memory (--metrics ece_bin and --max-cells can).
			continue
		}
		if cells.Overflowed() {
			err := fmt.Errorf("more than %d occupied canonical cells (%d bins per coordinate, K = %d): their sums would pass the stream's memory bound (MaxCells; calib: --max-cells, each cell about %d bytes); use fewer bins or a larger bound", cells.Limit(), cells.B(), s.st.K, cellBytes(s.st.K))
			if c.Strict {
				return nil, &data.StreamError{Err: err}
			}
			out = append(out, &Result{Metric: m, Notion: notion.Canonical, Binning: "equal_width", Bins: ptr(cells.B()), Error: err.Error()})
			continue
		}
		pp := cellP(m, p)
		cn := cells.Estimate(pp)
		v := cn.Value
		if m == MCE {
			v = cn.MCE
		}
		if c.Defaulted && sparseCellsWarning(int(s.st.N), cn.Cells, s.st.K, cn.B) != "" {
			continue // as Evaluate's default
		}
		e = &Result{Metric: m, Notion: notion.Canonical, Binning: "equal_width", Bins: ptr(cn.B), Value: jf(v)}
		e.Warnings = canonicalWarnings(m, int(s.st.N), s.st.K, cn)
		finishBinnedEntry(m, e, p)
		out = append(out, e)
	}
	return out, nil
}

// conventionEntry is the top-label (or binary) entry of ece_bin (at p) or
// mce under Options.Convention: that library's curve of the scores it
// bins (convention.ViewOf, decided once on the whole set), with the set's
// bins and binning. What the library cannot do (weights, equal-mass bins)
// is the entry's error; calib's other entries stand.
func (ev *evaluator) conventionEntry(m Metric, p float64) *Result {
	c, s := ev.cfg, ev.set
	n, o := c.Convention, c.bin
	failed := func(err error) *Result {
		return &Result{Metric: m, Notion: notion.TopLabel, Convention: string(n), Error: oneLineError(fmt.Errorf("%s: %w", m, err))}
	}
	if o.Rule != metric.Fixed {
		return failed(fmt.Errorf("convention %s: the %v bin rule is calib's; the libraries take a number of bins", n, o.Rule))
	}
	value := func(cv *convention.Curve) float64 {
		if m == MCE {
			return cv.MCE()
		}
		return cv.ECE(p)
	}
	view, err := convention.ViewOf(n, s.Labels, s.K, s.Binary)
	if err != nil {
		return failed(err)
	}
	cv, nt, err := view.Curve(n, s.Probs, s.Labels, s.K, s.Weights, o.Bins, o.Binning)
	if err != nil {
		return failed(err)
	}
	binning := o.Binning.String()
	if n == convention.Hendrycks {
		binning = "equal_count"
	}
	e := &Result{Metric: m, Notion: nt, Binning: binning, Bins: ptr(len(cv.Bins)), Convention: string(n), Value: jf(value(cv))}
	ev.setStat(e, func(idx []int) (float64, error) {
		cv, _, err := view.Curve(n, metric.Resample(s.Probs, s.K, idx), metric.Resample(s.Labels, 1, idx), s.K, metric.Resample(s.Weights, 1, idx), o.Bins, o.Binning)
		if err != nil {
			return 0, err
		}
		return value(cv), nil
	})
	return e
}
