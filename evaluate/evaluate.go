// Package evaluate is calib's main job as a library: every calibration
// metric of a prediction set, grouped by notion, each with one interval
// (its estimator's own, or with Options.CI a bootstrap interval), warnings
// where a number means little, and the renderers of `calib eval`
// (WriteText, WriteJSON). The CLI is a thin shell over it:
//
//	s, err := data.Load("preds.npz", data.Options{})
//	ev, err := evaluate.Evaluate(ctx, s, evaluate.Options{CI: true})
//	evaluate.WriteJSON(os.Stdout, ev)
//
// Every metric is defined in docs/metrics.md ("The other metrics" and "How the
// estimator is defined"); the JSON keys of a Result are calib's frozen
// contract.
package evaluate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/smooth"
)

// ErrOptions is wrapped by the errors of options that cannot be used (an
// unknown metric, p outside [1, kde.MaxP], ...): the caller's input.
var ErrOptions = errors.New("evaluate: bad options")

// DefaultSeed is the seed that Options.Seed 0 stands for: the --seed
// default of every calib command, so that the zero Options evaluates
// exactly as `calib eval` without flags (the same bits).
const DefaultSeed = 1

// Options configures Evaluate. The zero value evaluates as `calib eval`
// does without flags, seed included.
type Options struct {
	// Metrics names the metrics (see Metrics), each computed once, in the
	// order of Metrics; nil means DefaultMetrics.
	Metrics MetricSet
	// Strict makes a failing metric fail Evaluate; otherwise its Result
	// has Error and the rest go on (calib eval: strict when --metrics or
	// --mode is given).
	Strict bool
	// Mode lists the ECE^KDE notions of ece_kde and sharpness (which
	// DefaultMetrics leave out: name them in Metrics); the zero value
	// means all that apply: canonical, class_wise and top_label when
	// K <= 20, canonical and top_label above (class_wise costs K times
	// canonical), binary and top_label for one-column input (see
	// NotionSet).
	Mode NotionSet
	// P lists the exponents p in [1, kde.MaxP] of every Lp metric; nil
	// means {1, 2}.
	P Exponents
	// Bandwidth is a fixed kernel bandwidth h > 0; 0 chooses it per notion
	// by leave-one-out likelihood (Objective), shared by ece_kde and
	// sharpness.
	Bandwidth Bandwidth
	// NoBandwidthCheck skips the check that a fixed Bandwidth is within a
	// factor 10 of what the data support (a leave-one-out sweep at h/10,
	// h and 10h, which warns); for callers that chose h on other data on
	// purpose (compare: one h for every recalibrated set).
	NoBandwidthCheck bool
	// Witness configures ece_witness (witness.go).
	Witness   WitnessOptions
	Objective kde.Objective
	// Exact computes the one-dimensional ECE^KDE notions (top_label,
	// binary, class_wise) of ece_kde and sharpness, and their bandwidths, by
	// the exact O(n^2) sweeps instead of the tree of series
	// (kde.Options.Exact; the series' kernel sums are within about 1e-13
	// relative of the exact ones).
	Exact     bool
	ClassMean bool // ece_kde class_wise: the mean over classes instead of the sum
	Debias    bool // add ece_kde_debiased and sharpness_debiased
	// Bins are the binned metrics' bins (the zero value: 15 equal-width,
	// fixed).
	Bins metric.BinOptions
	// KS configures ks (ks.go): the r of its top-r errors.
	KS KSOptions
	// MMCE configures mmce (mmce.go): its kernel's width.
	MMCE MMCEOptions
	// SmECE configures smece: the zero value is relplot 1.0.3's smECE at
	// its fixed point sigma*; Sigma fixes the bandwidth (relplot's
	// smECE_sigma), Convention smooth.Relplot101 is relplot 1.0.1's.
	SmECE smooth.Options
	// Convention is the library whose definition the top-label (or, where
	// the library measures p1, binary) entries of ece_bin and mce follow
	// (package convention; "" and convention.Calib are calib's own). The
	// class-wise and canonical entries are calib's whatever it is.
	Convention convention.Name
	// ACE configures ace (ace.go): its number of bins.
	ACE ACEOptions
	// Variational configures ece_variational (variational.go): its
	// recalibration families.
	Variational VariationalOptions
	// CI adds bootstrap intervals (Resamples, 0 meaning 200; Level, 0
	// meaning 0.95) to the entries whose estimator has no interval of its
	// own (ece_variational's entries keep their cross-fit Interval alone:
	// one interval per number, Result.OneInterval): centred on the
	// estimate for the estimators whose
	// resampled values are biased upward (the binned metrics, the plug-in
	// ECE^KDE, KS, MMCE, sharpness), so that the interval always contains
	// the estimate; the percentile interval for the means of per-point
	// terms (the scores, and ece_witness, whose interval resamples its
	// per-point terms). CIExact recomputes ece_kde, ece_witness and
	// sharpness on every resample (and implies CI; the witness's interval
	// is then centred, since a resample's repeated points push it up).
	CI, CIExact bool
	Resamples   int
	Level       float64
	// PValues attaches to every computed entry (no Error) of ece_kde (not
	// ece_kde_debiased), ece_bin, mce, ece_bin_debiased, ks and mmce the
	// p-value of the test of
	// calibration with that entry as statistic, by consistency resampling
	// (package calibtest: PValueResamples label vectors drawn from the
	// predictions, 0 meaning calibtest.DefaultResamples, seeded by Seed).
	// ece_witness gets none (one witness estimate per resample: calib
	// test --tests ece_witness), nor do the scores and sharpness, which
	// are not calibration errors.
	PValues         bool
	PValueResamples int
	// Seed seeds the bootstrap, the p-values' resamples and ece_witness's
	// cross-fitting splits. 0 means DefaultSeed (1), so seed 0 itself
	// cannot be asked for.
	Seed    uint64
	Workers int // goroutines; 0 means all cores; results are the same for any value
	// Progress, if not nil, is told what runs.
	Progress progress.Reporter
	// Bandwidths, if not nil, shares the LOO selections with other
	// computations on the same set.
	Bandwidths bandwidth.Cache
}

// documentVersion is the version of the evaluation document's form
// (Evaluation.Version): 3 since p means CE_p^p in every entry (the
// ece_variational Brier entry is p = 2; version 2 wrote it without p and
// wrote lp entries at p = 2 whose value was the mean L2 norm, which
// readers drop); 2 since ece_kde's class-wise entries are spelled
// class_wise, as the binned and KS ones (version 1, without the key,
// spelled them marginal; Result.Notion reads either).
const documentVersion = 3

// Evaluation is the result of Evaluate: what `calib eval --json` prints.
type Evaluation struct {
	// Version is the version of the document's form (3 since ece_variational's
	// Brier entry is p = 2; a decoded older document reads as this one).
	Version      int       `json:"version"`
	N            int       `json:"n"`
	K            int       `json:"k"`
	Results      []*Result `json:"results"`
	File         string    `json:"file,omitempty"`
	Binary       bool      `json:"binary,omitempty"`
	Renormalized int       `json:"renormalized,omitempty"`
	Rounded      int       `json:"rounded,omitempty"` // rows rescaled because their values were rounded to few decimals (data.Set.Rounded)
	// WeightSum is the sum of the sample weights when the set has them
	// (every Result then says "weighted": true); 0 without weights.
	WeightSum data.Float `json:"weight_sum,omitempty"`
	// Headline names the entry to report (evaluate.Headline) where the
	// evaluation has it, so that a reader of the JSON (the Python
	// package's Evaluation.headline) finds it without its own definition;
	// PaperNumber the number papers print (evaluate.PaperNumber).
	Headline    *EntryRef `json:"headline,omitempty"`
	PaperNumber *EntryRef `json:"paper_number,omitempty"`
	// Warnings about the input as a whole (not one metric).
	Warnings Warnings `json:"warnings,omitempty"`
	Modes    string   `json:"modes,omitempty"`
	Seconds  float64  `json:"seconds"`
	// Provenance is the caller's record of how the evaluation was made
	// (calib writes the tool version, command, options and inputs); not
	// read here.
	Provenance *data.Provenance `json:"provenance,omitempty"`

	// Input says what was read: "logits", "probabilities" or "binary"
	// (the table's header); Calibrated names the map applied, if any.
	Input      string `json:"-"`
	Calibrated string `json:"-"`
}

// config is Options resolved for one set.
type config struct {
	Options
	notions  []kde.Notion
	note     string
	metrics  MetricSet
	ps       []float64
	bin      metric.BinOptions
	boot     metric.BootstrapOptions
	explicit bool
	ci       bool
	// defaulted: Metrics was nil (DefaultMetrics): ece_variational computes
	// the headline alone (its notion and loss) and the canonical binned metrics are
	// left out where their cells are too sparse to mean anything.
	defaulted bool
}

// seed is the seed of every random choice: Seed, or DefaultSeed for 0.
func (o Options) seed() uint64 { return cmp.Or(o.Seed, DefaultSeed) }

// OptionError is an option that cannot be used. Option names it as calib
// eval spells it without the dashes ("metrics", "p", "ks-r", "bandwidth",
// "mode", "eval-points", ...); Err says what is wrong with it, in words
// that name the option where a reader needs it ("p \"x\": each p must be
// a number in [1, 8]"). It wraps ErrOptions and Err; its text is
// ErrOptions's, then Err's.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return ErrOptions.Error() + ": " + e.Err.Error() }

// Unwrap returns ErrOptions and Err.
func (e *OptionError) Unwrap() []error { return []error{ErrOptions, e.Err} }

// optionError returns the OptionError of option with the formatted text.
func optionError(option, format string, args ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// resolve checks o and fills its defaults for the set s.
func (o Options) resolve(s *data.Set) (*config, error) {
	o.Seed = o.seed()
	c := &config{Options: o, explicit: o.Strict, bin: o.Bins}
	var err error
	if c.notions, c.note, err = o.Mode.Resolve(s); err != nil {
		return nil, err
	}
	if c.ps = o.P; c.ps == nil {
		c.ps = []float64{1, 2}
	}
	for _, p := range c.ps {
		if !(p >= 1 && p <= kde.MaxP) {
			return nil, optionError("p", "p = %v: each p must be a number in [1, %d]", p, kde.MaxP)
		}
	}
	if !(o.Bandwidth >= 0) || math.IsInf(float64(o.Bandwidth), 0) {
		return nil, optionError("bandwidth", "bandwidth %v: want a finite h > 0, or 0 (chosen by leave-one-out likelihood)", o.Bandwidth)
	}
	ms := o.Metrics
	if ms == nil {
		ms, c.defaulted = DefaultMetrics, true
	}
	for _, m := range ms {
		if lookupDef(m) == nil {
			return nil, optionError("metrics", "unknown metric %q (valid: %s)", m, Metrics.words())
		}
		if !c.metrics.Has(m) {
			c.metrics = append(c.metrics, m)
		}
	}
	if len(c.metrics) == 0 {
		return nil, optionError("metrics", "no metric given")
	}
	if c.bin.Bins == 0 {
		c.bin.Bins = metric.DefaultBins
	}
	if err := c.Options.checkMetrics(); err != nil {
		return nil, err
	}
	if cv, err := convention.Parse(string(o.Convention)); err != nil {
		return nil, optionError("convention", "%v", err)
	} else {
		c.Convention = cv
	}
	c.ci = o.CI || o.CIExact
	if o.PValueResamples < 0 {
		return nil, optionError("p-resamples", "%d p-value resamples", o.PValueResamples)
	}
	if o.PValues && s != nil && s.Labels == nil {
		return nil, optionError("p-values", "p-values need labels")
	}
	c.boot = metric.BootstrapOptions{Seed: o.Seed, Workers: o.Workers}
	c.boot.Resamples, c.boot.Level = mathx.ResampleDefaults(o.Resamples, o.Level)
	if c.boot.Resamples < 2 || !(c.boot.Level > 0 && c.boot.Level < 1) {
		return nil, optionError("ci-resamples", "%d resamples at level %v: need at least 2 resamples and a level in (0, 1)", c.boot.Resamples, c.boot.Level)
	}
	return c, nil
}

// Evaluate computes every requested metric on s, grouped by notion
// (canonical, class-wise, top-label, binary, proper scores), with intervals
// when o asks for them. A cancelled ctx stops it within a fraction of a
// second (every O(n^2) sweep and bootstrap checks it) and Evaluate returns
// ctx.Err(). The results are the same for any o.Workers.
func Evaluate(ctx context.Context, s *data.Set, o Options) (*Evaluation, error) {
	start := time.Now()
	c, err := o.resolve(s)
	if err != nil {
		return nil, err
	}
	s = s.ScaledWeights()
	out := &Evaluation{Version: documentVersion, N: s.N, K: s.K, File: s.File, Binary: s.Binary, Renormalized: s.Renormalized, Rounded: s.Rounded, Input: s.Kind()}
	if s.Weights != nil {
		out.WeightSum = data.Float(s.GivenWeightSum())
	}
	if c.metrics.Has(ECEKDE) {
		out.Modes = c.note
	}
	if w := roundedZerosWarning(s); w != "" {
		out.Warnings = append(out.Warnings, warn(RoundedZeros, w))
	}
	ev := &evaluator{ctx: ctx, cfg: c, set: s, progress: o.Progress, bandwidths: map[kde.Notion]*chosenBandwidth{}, shared: o.Bandwidths}
	var todo []*metricDef
	for _, d := range metricTable {
		if c.metrics.Has(d.name) {
			todo = append(todo, d)
		}
	}
	for i, d := range todo {
		progress.Phasef(o.Progress, "metric %d of %d: %s", i+1, len(todo), d.name)
		entries, err := ev.metric(d)
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, entries...)
	}
	sortByGroup(out.Results)
	setHeadline(out)
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// metric computes the entries of d with their times, their intervals
// and p-values where asked, and their definition keys. A failure is the
// entry's (the metric's error, or a warning for its p-values), except
// where it fails the evaluation: a metric named in an explicit list, or a
// cancelled context.
func (ev *evaluator) metric(d *metricDef) ([]*Result, error) {
	c, ctx := ev.cfg, ev.ctx
	start := time.Now()
	entries, err := d.compute(ev)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		if c.explicit {
			return nil, err
		}
		if eo := (*OptionError)(nil); errors.As(err, &eo) {
			err = eo.Err // the entry says what, without "bad options"
		}
		entries = []*Result{{Metric: d.name, Error: oneLineError(err)}}
	}
	// Each entry's time is its own: a metric that times its parts
	// (ece_kde: each notion) has set them; otherwise the first entry
	// carries the computation shared by all. The intervals add each
	// entry's own bootstrap.
	timed := false
	for _, e := range entries {
		timed = timed || e.Seconds != nil
	}
	if len(entries) > 0 && !timed {
		entries[0].Seconds = ptr(time.Since(start).Seconds())
	}
	if c.ci {
		for _, e := range entries {
			t0 := time.Now()
			err := ev.interval(d, e)
			if e.Seconds == nil {
				e.Seconds = ptr(0.0)
			}
			*e.Seconds += time.Since(t0).Seconds()
			if err != nil {
				if c.explicit {
					return nil, err
				}
				e.Error = oneLineError(err)
			}
		}
	}
	if c.PValues && d.pValues != nil {
		if err := ev.pValues(d, entries); err != nil {
			return nil, err
		}
	}
	for _, e := range entries {
		c.define(d, e, ev.set.Weights != nil)
	}
	return entries, nil
}

// pValues attaches the p-values of d to its entries (the time to the
// first entry's); a failure is a warning on each entry, unless the list is
// explicit or the context cancelled.
func (ev *evaluator) pValues(d *metricDef, entries []*Result) error {
	t0 := time.Now()
	if err := d.pValues(ev, d, entries); err != nil {
		if ev.ctx.Err() != nil {
			return ev.ctx.Err()
		}
		if ev.cfg.explicit {
			return err
		}
		for _, e := range entries {
			e.Warnings = append(slices.Clip(e.Warnings), warn(EstimatorWarning, "no p-value: "+oneLineError(err)))
		}
	}
	if len(entries) > 0 && entries[0].Seconds != nil {
		*entries[0].Seconds += time.Since(t0).Seconds()
	}
	return nil
}

// roundedZerosWarning warns when a file whose values were rounded to few
// decimals (s.Rounded > 0) holds probabilities that are exactly 0: a small
// probability written as 0.000000 is a zero coordinate to the Dirichlet
// kernel, which gives no mass to points with a positive coordinate there,
// so the kernel estimates can move far (a golden set written with %.6f
// moves canonical ECE^KDE from 0.40 to 0.26).
func roundedZerosWarning(s *data.Set) string {
	if s.Rounded == 0 {
		return ""
	}
	zeros := 0
	for _, v := range s.Probs {
		if v == 0 {
			zeros++
		}
	}
	if zeros == 0 {
		return ""
	}
	return fmt.Sprintf("%d probabilities are exactly 0 in a file whose values were rounded to a few decimals: if they were small positive numbers written as 0, the kernel estimates (ece_kde, ece_witness, sharpness) treat them as zero coordinates and can differ much from the unrounded file's; write more digits (e.g. %%.17g) or logits", zeros)
}

func oneLineError(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
}

// interval adds the bootstrap interval of an entry that has a statistic
// and no interval of its own: an entry whose estimator gives its interval
// (Interval: ece_variational's cross-fit interval) keeps that one alone,
// so that every number has one interval (Result.OneInterval).
func (ev *evaluator) interval(d *metricDef, e *Result) error {
	stat := ev.stats[e]
	if stat == nil || e.Error != "" || e.Interval != nil {
		return nil
	}
	o := ev.cfg.boot
	progress, done := ev.step(strings.TrimSpace("bootstrap " + string(e.Metric) + " " + string(e.Notion)))
	o.Progress, o.Method = progress, d.interval(ev.cfg.CIExact)
	if e.Value != nil {
		o.Estimate = float64(*e.Value)
	}
	iv, err := metric.Bootstrap(ev.ctx, ev.set.N, stat, o)
	done()
	if err != nil {
		return fmt.Errorf("%s %s: %w", e.Metric, e.Notion, err)
	}
	e.CI = []data.Float{data.Float(iv.Lo), data.Float(iv.Hi)}
	e.CILevel, e.CIMethod = &iv.Level, iv.Method.String()
	if iv.Method == metric.Centered {
		e.CIBias = jf(iv.Bias)
	}
	return nil
}

// variants lists the plain estimate and, with Debias, the debiased one.
func (c *config) variants() []bool {
	if c.Debias {
		return []bool{false, true}
	}
	return []bool{false}
}

// evaluator computes the metrics of one set.
type evaluator struct {
	ctx        context.Context
	cfg        *config
	set        *data.Set
	progress   progress.Reporter
	bandwidths map[kde.Notion]*chosenBandwidth
	// shared, if not nil, shares LOO bandwidth selections with other
	// users of the same set (report: the comparison and the bandwidth view).
	shared bandwidth.Cache
	// stats holds, for the entries that have one, the function that
	// recomputes the entry's value on a bootstrap resample (the rows idx).
	stats map[*Result]func(idx []int) (float64, error)
}

// setStat records the bootstrap statistic of the entry e.
func (ev *evaluator) setStat(e *Result, stat func(idx []int) (float64, error)) {
	if ev.stats == nil {
		ev.stats = map[*Result]func(idx []int) (float64, error){}
	}
	ev.stats[e] = stat
}

// step starts a progress step (nothing without Options.Progress).
func (ev *evaluator) step(name string) (kde.Progress, func()) {
	if ev.progress == nil {
		return nil, func() {}
	}
	return ev.progress.Step(name)
}
