package evaluate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/variational"
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
	Metric       Metric        `json:"metric"`
	Notion       notion.Notion `json:"notion,omitempty"`
	R            *int          `json:"r,omitempty"`
	Binning      string        `json:"binning,omitempty"`
	Bins         *int          `json:"bins,omitempty"`
	P            *float64      `json:"p,omitempty"`
	Bandwidth    *float64      `json:"bandwidth,omitempty"`
	Value        *data.Float   `json:"value,omitempty"`
	Root         *data.Float   `json:"root,omitempty"`
	Sum          *data.Float   `json:"sum,omitempty"`
	PerClass     []data.Float  `json:"per_class,omitempty"`
	PerClassBins []int         `json:"per_class_bins,omitempty"` // class-wise with a data-driven bin rule
	// PerClassBandwidth: class-wise smece, each class's sigma*.
	PerClassBandwidth []float64    `json:"per_class_bandwidth,omitempty"`
	Variance          *data.Float  `json:"variance,omitempty"` // sharpness
	Squared           *data.Float  `json:"squared,omitempty"`  // mmce
	Width             *float64     `json:"width,omitempty"`    // mmce
	BandwidthMethod   string       `json:"bandwidth_method,omitempty"`
	CVBandwidth       *float64     `json:"cv_bandwidth,omitempty"` // ece_witness p = 2: h_cv (the bandwidth is h_cv / 2)
	Excluded          *int         `json:"excluded,omitempty"`
	Aggregate         string       `json:"aggregate,omitempty"` // class_wise ece_kde: "sum" or "mean" over classes
	Warnings          Warnings     `json:"warnings,omitempty"`
	CI                []data.Float `json:"ci,omitempty"` // the bootstrap interval (Options.CI) of an entry without an Interval of its own (OneInterval)
	CILevel           *float64     `json:"ci_level,omitempty"`
	CIMethod          string       `json:"ci_method,omitempty"` // "percentile" or "centered" (metric.IntervalMethod)
	CIBias            *data.Float  `json:"ci_bias,omitempty"`   // centred intervals: the bootstrap bias mean(θ*) - value`
	Seconds           *float64     `json:"seconds,omitempty"`   // on a metric's first Result: the time of the metric (all its entries), intervals included
	Error             string       `json:"error,omitempty"`

	// The estimator's own interval, which no bootstrap interval (CI)
	// joins: ece_variational's (IntervalKind "cross-fit", in memory and
	// streamed, with its SE); the streamed evaluation's (evaluate.Stream,
	// Finish) ece_kde's number of evaluation points, the standard error of
	// its estimate and its interval (IntervalKind "sampling": the sampling
	// interval at IntervalLevel; "exact": every row evaluated, width 0);
	// ks's rigorous bounds lo <= KS <= hi from the score cells
	// (IntervalKind "bound", Value their midpoint).
	EvalPoints    *int         `json:"eval_points,omitempty"`
	SE            *data.Float  `json:"se,omitempty"`
	Interval      []data.Float `json:"interval,omitempty"`
	IntervalLevel *float64     `json:"interval_level,omitempty"`
	IntervalKind  string       `json:"interval_kind,omitempty"`

	// The definition keys (see definition.go and docs/metrics.md, "What
	// exactly each number is"): with the keys above they say everything
	// needed to recompute the value.
	Estimator       string   `json:"estimator,omitempty"`  // which estimator of the metric (e.g. "plug-in", "witness-crossfit")
	Kernel          string   `json:"kernel,omitempty"`     // kernel of the kernel estimators ("dirichlet", "beta", "laplacian")
	BinRule         string   `json:"bin_rule,omitempty"`   // binned metrics: "fixed", "sqrt" or "doane" (the number of bins)
	BinEdges        string   `json:"bin_edges,omitempty"`  // binned metrics: which bin a score on an edge falls in
	Convention      string   `json:"convention,omitempty"` // whose definition the value follows ("calib", "sklearn", "relplot", ...; convention.Name)
	Threshold       *float64 `json:"threshold,omitempty"`  // ace (robustness_metrics): the probabilities kept are those above it
	VariationalKeys          // ece_variational's keys (variational.go)
	CIResamples     *int     `json:"ci_resamples,omitempty"` // with ci: bootstrap resamples
	CISeed          *uint64  `json:"ci_seed,omitempty"`      // with ci: bootstrap seed
	CIExact         bool     `json:"ci_exact,omitempty"`     // with ci: the estimator recomputed on every resample (else the per-point terms resampled)
	Seed            *uint64  `json:"seed,omitempty"`         // ece_witness: seed of the cross-fitting splits
	Weighted        bool     `json:"weighted"`               // sample weights were used (Set.Weights not nil)

	// With Options.PValues: the p-value of the test of calibration whose
	// statistic is this entry (calibtest.ConsistencyMany), its method and
	// its resamples.
	PValue          *data.Float `json:"p_value,omitempty"`
	PValueMethod    string      `json:"p_value_method,omitempty"`
	PValueResamples *int        `json:"p_value_resamples,omitempty"`
}

// EntryInterval is the one interval of an entry (Result.OneInterval).
type EntryInterval struct {
	Lo, Hi float64
	// Level is the interval's level (0.95 by default), 0 for bounds
	// (IntervalKind "bound"), which hold for certain.
	Level float64
	// Kind is the estimator's IntervalKind ("cross-fit", "sampling",
	// "bound"), or "bootstrap"; Method the bootstrap's CIMethod
	// ("percentile", "centered").
	Kind, Method string
}

// OneInterval returns the entry's one interval, as every front end shows
// it (calib eval's table, calib demo, the report, the Python package's
// Entry.lo and hi): its estimator's own (Interval, IntervalKind) where it
// has one, else its bootstrap interval (CI, with Options.CI). ok is false
// when it has neither, or when its own is "exact" (a stream that evaluated
// every row: the value itself, width 0). Evaluate never gives an entry
// both; of a document from before that rule the estimator's is taken.
func (e *Result) OneInterval() (iv EntryInterval, ok bool) {
	switch {
	case len(e.Interval) == 2 && e.IntervalKind == "exact":
		return EntryInterval{}, false
	case len(e.Interval) == 2:
		iv = EntryInterval{Lo: float64(e.Interval[0]), Hi: float64(e.Interval[1]), Kind: e.IntervalKind}
		if e.IntervalLevel != nil {
			iv.Level = *e.IntervalLevel
		}
		return iv, true
	case len(e.CI) == 2:
		iv = EntryInterval{Lo: float64(e.CI[0]), Hi: float64(e.CI[1]), Kind: "bootstrap", Method: e.CIMethod}
		if e.CILevel != nil {
			iv.Level = *e.CILevel
		}
		return iv, true
	}
	return EntryInterval{}, false
}

func ptr[T any](v T) *T { return &v }

func jf(v float64) *data.Float { return ptr(data.Float(v)) }

// group is the output group of an entry, from its notion: canonical;
// class-wise; top-label (top_label,
// and KS's top_r and within_top_r); binary; the proper scores and basics
// (no notion, with a value). An entry of a metric that failed as a whole
// has no notion and no value, and is listed first, with the canonical
// group.
func (e *Result) group() int {
	switch e.Notion {
	case notion.Canonical:
		return groupCanonical
	case notion.ClassWise:
		return groupClassWise
	case notion.TopLabel, notion.TopR, notion.WithinTopR:
		return groupTopLabel
	case notion.Binary:
		return groupBinary
	case notion.None:
		if e.Error == "" || e.Value != nil { // a score (its interval may have failed)
			return groupScores
		}
	}
	return groupCanonical
}

// Group is the name of the entry's output group, in the order of
// `calib eval`'s tables: "canonical", "class-wise", "top-label", "binary" or
// "proper scores and basics" (see group).
func (e *Result) Group() string { return groupNames[e.group()] }

// sortByGroup orders the entries by group, keeping the order within groups.
func sortByGroup(es []*Result) {
	slices.SortStableFunc(es, func(a, b *Result) int { return cmp.Compare(a.group(), b.group()) })
}

// Key identifies one entry of an Evaluation: its metric, its notion
// (notion.None for the proper scores), its exponent p (0: the entry
// has none, as mce and ks), its KS r (0: none) and, for the metrics that
// report several entries of one notion and p, its variant: the binning
// of ece_sweep ("equal_width", "equal_mass") and tce ("pava",
// "equal_mass"); the convention of ace ("robustness_metrics",
// "torch_uncertainty", "netcal"), with "/tace" for robustness_metrics'
// threshold 0.01; the loss of ece_variational ("lp", "log", "brier").
type Key struct {
	Metric  Metric
	Notion  notion.Notion
	P       float64
	R       int
	Variant string
}

// Key returns the key of the entry.
func (e *Result) Key() Key {
	k := Key{Metric: e.Metric, Notion: e.Notion}
	if e.P != nil {
		k.P = *e.P
	}
	if e.R != nil {
		k.R = *e.R
	}
	if d := variantOf[e.Metric]; d != nil {
		k.Variant = d(e)
	}
	return k
}

// Lookup returns the entry of the evaluation whose key is k, or nil when
// there is none (not asked for, or not defined for the set: a KS r above
// K, the class_wise ECE^KDE above K = 20 by default). An entry that failed is
// returned with its Error set and no Value.
func (ev *Evaluation) Lookup(k Key) *Result {
	for _, e := range ev.Results {
		if e.Key() == k {
			return e
		}
	}
	return nil
}

// UnmarshalJSON reads an evaluation document of any version up to
// documentVersion into today's form: Version is documentVersion and the
// notions have today's spellings (Result.Notion reads "marginal" as
// class_wise). A newer document is refused.
func (ev *Evaluation) UnmarshalJSON(b []byte) error {
	type plain Evaluation
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("evaluate.Evaluation: %w", err)
	}
	if v.Version > documentVersion {
		return fmt.Errorf("evaluate.Evaluation: version %d, newer than this calib reads (1 to %d)", v.Version, documentVersion)
	}
	*ev = Evaluation(v)
	if ev.Version < 3 {
		ev.Results = upgradeVariational(ev.Results)
		setHeadline(ev)
	}
	ev.Version = documentVersion
	return nil
}

// upgradeVariational turns the ece_variational entries of a document of
// version 1 or 2 into today's: the Brier entry gets p = 2 (its value was
// CE_2^2 already), the lp entry at p = 1 its root, and lp entries at p !=
// 1, whose value was the mean norm E||E[y | f] - f||_p and not CE_p^p, are
// dropped. The caller names the headline (setHeadline).
func upgradeVariational(rs []*Result) []*Result {
	out := rs[:0]
	for _, e := range rs {
		if e.Metric == ECEVariational {
			switch {
			case e.Loss == string(variational.Brier) && e.P == nil:
				e.P = ptr(2.0)
			case e.Loss == string(variational.Lp) && e.P != nil && *e.P != 1:
				continue
			case e.Loss == string(variational.Lp) && e.Value != nil && e.Root == nil:
				e.Root = jf(math.Max(0, float64(*e.Value)))
			}
		}
		out = append(out, e)
	}
	return out
}
