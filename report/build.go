package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/recal"
)

// ErrOptions is wrapped by the errors of Options that cannot be used (an
// unknown recalibration method, a bad grid, two equal simplex classes, a
// simplex class outside 0..K-1, ...): the caller's input. Bad metric
// options are evaluate.ErrOptions.
var ErrOptions = errors.New("report: bad options")

// ReportMetrics returns the metrics of the report's table (Options.Evaluate
// Metrics nil): every metric but ace and tce, which are other libraries'
// definitions whose bootstrap intervals cost seconds (calib eval
// --metrics ace,tce computes them).
func ReportMetrics() evaluate.MetricSet { return slices.Clone(reportMetrics) }

var reportMetrics = slices.DeleteFunc(slices.Clone(evaluate.Metrics), func(m evaluate.Metric) bool {
	return m == evaluate.ACE || m == evaluate.TCE
})

// OptionError is an option of the report that cannot be used: Err says
// what is wrong, its text naming the option ("grid \"x\": want default or
// full"). It wraps ErrOptions and Err; its text is ErrOptions's, then
// Err's.
type OptionError struct {
	Err error
}

func (e *OptionError) Error() string { return ErrOptions.Error() + ": " + e.Err.Error() }

// Unwrap returns ErrOptions and Err.
func (e *OptionError) Unwrap() []error { return []error{ErrOptions, e.Err} }

func optionsError(format string, args ...any) error {
	return &OptionError{Err: fmt.Errorf(format, args...)}
}

// DefaultSeed is the seed that Options.Seed 0 stands for: calib's --seed
// default (evaluate.DefaultSeed).
const DefaultSeed = evaluate.DefaultSeed

// DefaultPerClass is the number of per-class reliability diagrams that
// FigureOptions.PerClass 0 stands for: calib's --per-class default.
const DefaultPerClass = 10

// Options configures Build. The zero value builds the report that `calib
// report` writes without flags: every metric with one interval, its
// estimator's own (ece_variational's cross-fit interval) or a 95 %
// bootstrap interval (200 resamples), ECE^KDE canonical and top-label,
// every recalibration method (with a validation set) on the default grid,
// seed 1, all cores.
// Every result is the same for any number of workers.
type Options struct {
	// Eval configures the table of metrics (evaluate.Evaluate). Where its
	// zero value differs from the report's, Build reads it so: Mode's zero
	// value means canonical and top_label (evaluate: all notions; Mode.All
	// asks for them), Metrics nil ReportMetrics (evaluate:
	// DefaultMetrics); CI is ignored (intervals are on unless NoIntervals;
	// Eval.CIExact still implies them); Seed, Workers, Progress and
	// Bandwidths are set by Build from the fields below.
	Eval evaluate.Options
	// NoIntervals turns the bootstrap intervals off (calib report
	// --ci=false); the estimators' own intervals stay.
	NoIntervals bool
	// NoTests leaves out the section "Is it calibrated?" (calibtest.Run's
	// default tests at level 0.05 with the report's seed; calib report
	// --tests=false).
	NoTests bool
	// Methods lists the recalibration methods compared when Build has a
	// validation set; nil means every method (recal.Methods).
	Methods []recal.Method
	// Grid is the ODIR methods' cross-validation grid: "" (or "default")
	// or "full".
	Grid string
	// Figures configures the figures.
	Figures FigureOptions
	// Seed seeds the bootstrap intervals and bands, ece_witness's
	// cross-fitting splits, the recalibration's cross-validation folds and
	// the figures' subsamples (same seed, same report). 0 means
	// DefaultSeed (1), so seed 0 itself cannot be asked for.
	Seed uint64
	// Workers is the number of goroutines; 0 means all cores.
	Workers int
	// Progress, if not nil, is told what runs: the evaluation's and the
	// comparison's phases and steps, then the phase "figures" with one
	// step per group of figures. A Progress with a method Status(name
	// string) func() is told of those steps, which have no measure of
	// progress, through it instead of Step (calib shows a spinner).
	Progress progress.Reporter
	// Provenance is the caller's record of how the report was made
	// (calib: the version, command, options and inputs). Build does not
	// read it; it is copied to Document.Evaluation.Provenance and
	// Document.Comparison.Provenance, whose JSON holds it.
	Provenance *data.Provenance
	// Facts are added at the end of the data summary (calib adds who made
	// the report).
	Facts []Fact
}

// FigureOptions configures the figures of a report (and the figure
// functions ReliabilityOf, SimplexOf, ...). The zero value draws them as
// `calib report` does without flags.
type FigureOptions struct {
	// Bins are the bins of the reliability diagrams. The zero value means
	// the number of bins and the binning of Options.Eval.Bins (15
	// equal-width when those are zero as well) with the fixed rule.
	Bins metric.BinOptions
	// PerClass is the number of per-class reliability diagrams (of the
	// first classes; a binary problem has the one of p_1); 0 means
	// DefaultPerClass (10), a negative number none.
	PerClass int
	// Classes are the two classes the simplex view keeps when K > 3 (the
	// others are merged into "other"; K = 3 draws the third as the third
	// corner); nil means the pair the model confuses most (MostConfused).
	// Ignored for K < 3.
	Classes []int
	// Names are the class names of the captions and corners, or nil
	// ("class i").
	Names []string
}

// Validate checks o without the data: what Build would refuse whatever the
// prediction sets (the checks against K are Build's). Its errors wrap
// ErrOptions, or evaluate.ErrOptions for the metric options.
func (o Options) Validate() error {
	if err := o.evalOptions(nil).Validate(); err != nil {
		return err
	}
	for _, m := range o.Methods {
		if !slices.Contains(recal.Methods(), m) {
			names := make([]string, len(recal.Methods()))
			for i, v := range recal.Methods() {
				names[i] = string(v)
			}
			return optionsError("unknown recalibration method %q (valid: %s)", m, strings.Join(names, ", "))
		}
	}
	if o.Grid != "" && o.Grid != "default" && o.Grid != "full" {
		return optionsError("grid %q: want default or full", o.Grid)
	}
	return o.Figures.validate()
}

func (f FigureOptions) validate() error {
	b := f.Bins
	if b.Bins < 0 || b.Binning != metric.EqualWidth && b.Binning != metric.EqualMass ||
		b.Rule != metric.Fixed && b.Rule != metric.Doane && b.Rule != metric.Sqrt {
		return optionsError("figure bins %+v: want Bins >= 0 and a known binning and rule", b)
	}
	if c := f.Classes; c != nil {
		switch {
		case len(c) != 2:
			return optionsError("simplex classes %v: want two classes a, b", c)
		case c[0] < 0 || c[1] < 0:
			return optionsError("simplex classes %v: classes are integers >= 0", c)
		case c[0] == c[1]:
			return optionsError("simplex classes %v: need two different classes", c)
		}
	}
	return nil
}

// checkK checks the options that depend on the number of classes of s.
func (f FigureOptions) checkK(s *data.Set) error {
	if f.Classes != nil && s.K >= 3 {
		for _, c := range f.Classes {
			if c >= s.K {
				return optionsError("simplex classes %v: %s has K = %d, so classes are 0..%d", f.Classes, s.File, s.K, s.K-1)
			}
		}
	}
	return nil
}

// seed is the seed of every random choice.
func (o Options) seed() uint64 {
	if o.Seed == 0 {
		return DefaultSeed
	}
	return o.Seed
}

// evalOptions returns the options of evaluate.Evaluate.
func (o Options) evalOptions(curves bandwidth.Cache) evaluate.Options {
	e := o.Eval
	if e.Mode.IsZero() {
		e.Mode = evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}
	}
	if e.Metrics == nil {
		e.Metrics = reportMetrics // the report's table
	}
	e.CI = !o.NoIntervals
	e.Seed, e.Workers, e.Progress, e.Bandwidths = o.seed(), o.Workers, o.Progress, curves
	return e
}

// CompareOptions returns the options of the recalibration comparison that
// Build runs with a validation set (compare.Compare): o's methods, grid,
// seed, workers and progress.
func (o Options) CompareOptions() compare.Options {
	methods := o.Methods
	if methods == nil {
		methods = recal.Methods()
	}
	return compare.Options{Methods: methods, Grid: o.Grid, Seed: o.seed(), Workers: o.Workers, Progress: o.Progress}
}

// figureBins returns the bins of the reliability diagrams.
func (o Options) figureBins() metric.BinOptions {
	if o.Figures.Bins != (metric.BinOptions{}) {
		return o.Figures.Bins
	}
	return metric.BinOptions{Bins: o.Eval.Bins.Bins, Binning: o.Eval.Bins.Binning}
}

// FigureError is a figure that could not be made. Build leaves it out of
// the report, says so in the notes and adds the error to
// Document.Warnings.
type FigureError struct {
	Figure string // e.g. "top-label reliability diagram"
	Err    error
}

func (e *FigureError) Error() string { return e.Figure + ": " + e.Err.Error() }
func (e *FigureError) Unwrap() error { return e.Err }

// statuser is the optional method of a Progress that shows a step without
// a measure of progress.
type statuser interface {
	Status(name string) (done func())
}

// status starts a step without a measure of progress and returns the
// function that ends it.
func status(p progress.Reporter, name string) func() {
	switch p := p.(type) {
	case nil:
		return func() {}
	case statuser:
		return p.Status(name)
	default:
		_, done := p.Step(name)
		return done
	}
}

// Build evaluates the test set (evaluate.Evaluate), compares the
// recalibration methods fitted on val and measured on test
// (compare.Compare; val may be nil: no comparison) and assembles the
// report: the data summary, the table of every metric with its interval,
// the figures as data (drawn by the renderers: Document.WriteHTML, Write),
// with captions, and the notes. A figure that cannot be made is left out
// and reported in Document.Warnings and the notes. A cancelled ctx stops
// Build, which then returns an error wrapping ctx.Err(). The options are
// checked (Validate, then against K) before any work.
func Build(ctx context.Context, test, val *data.Set, o Options) (*Document, error) {
	start := time.Now()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := test.ScaledWeights()
	if val != nil {
		val = val.ScaledWeights()
	}
	if val != nil && val.K != s.K {
		return nil, fmt.Errorf("%w: %s has K = %d, %s has K = %d", recal.ErrInput, val.File, val.K, s.File, s.K)
	}
	if err := o.Figures.checkK(s); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	curves := bandwidth.Cache{}
	ev, err := evaluate.Evaluate(ctx, s, o.evalOptions(curves))
	if err != nil {
		return nil, err
	}
	ev.Seconds = time.Since(start).Seconds()
	ev.Provenance = o.Provenance
	doc := &Document{
		Title:      "Calibration report: " + s.File,
		Subtitle:   fmt.Sprintf("n = %d predictions of K = %d classes. Made by calib on %s.", s.N, s.K, time.Now().UTC().Format("2006-01-02")),
		Footer:     "Made by calib, a Go toolkit for measuring and fixing the calibration of probabilistic classifiers. The file is self-contained: figures are inline SVG.",
		Evaluation: ev,
	}
	if val != nil {
		co := o.CompareOptions()
		co.Bandwidths = curves // the evaluation's canonical selection, shared
		if doc.Comparison, err = compare.Compare(ctx, val, s, co); err != nil {
			return nil, err
		}
		doc.Comparison.Provenance = o.Provenance
	}
	doc.Summary = append(summaryFacts(s, val, ev), o.Facts...)
	doc.Metrics = metricsTable(ev)
	if !o.NoTests && s.Labels != nil {
		done := status(o.Progress, "testing calibration")
		tr, err := calibtest.Run(ctx, s.Probs, s.Labels, s.K, s.Weights, calibtest.Options{Seed: o.seed(), Workers: o.Workers})
		done()
		if err != nil {
			doc.Warnings = append(doc.Warnings, &FigureError{Figure: "hypothesis tests", Err: err})
		} else {
			doc.Tests = tr
			doc.Sections = append(doc.Sections, testsSection(tr))
		}
	}
	doc.Answer = answerFacts(ev, doc.Tests)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := &builder{ctx: ctx, doc: doc, o: o, s: s, val: val, curves: curves}
	if err := b.figures(); err != nil {
		return nil, err
	}
	doc.Notes = reportNotes(ev)
	for _, w := range doc.Warnings {
		doc.Notes = append(doc.Notes, "Not drawn: "+oneLine(w))
	}
	return doc, nil
}

// builder assembles the sections of figures of one report.
type builder struct {
	ctx    context.Context
	doc    *Document
	o      Options
	s, val *data.Set
	curves bandwidth.Cache
}

// fail records a figure that could not be made.
func (b *builder) fail(what string, err error) {
	b.doc.Warnings = append(b.doc.Warnings, &FigureError{Figure: what, Err: err})
}

// step runs one group of figures under a progress status and then checks
// the context.
func (b *builder) step(name string, fn func()) error {
	done := status(b.o.Progress, name)
	fn()
	done()
	return b.ctx.Err()
}

// figures adds the sections of figures, in order.
func (b *builder) figures() error {
	if b.o.Progress != nil {
		b.o.Progress.Phase("figures")
	}
	if err := b.step("drawing reliability diagrams", b.reliability); err != nil {
		return err
	}
	if err := b.step("drawing KS calibration graphs", b.ks); err != nil {
		return err
	}
	if b.s.K >= 3 {
		if err := b.step("drawing the simplex view", b.simplex); err != nil {
			return err
		}
	}
	if err := b.step("drawing the bandwidth view", b.bandwidth); err != nil {
		return err
	}
	if c := b.doc.Comparison; c != nil {
		b.doc.Sections = append(b.doc.Sections, Section{ID: "recalibration", Title: "Recalibration methods",
			Text:    fmt.Sprintf("Each method was fitted on %s (n = %d) and applied to this set. Lower is better for every metric but accuracy; green marks the method that is strictly best on a metric (none where the best value is tied), grey the uncalibrated predictions; each value is printed after the method's name, and where the values are close the axis starts near them (its label says where) rather than at 0. Temperature scaling fixes the top-label confidence but, as the ECE^KDE paper observes, not necessarily canonical calibration.", b.val.File, b.val.N),
			Figures: []Captioned{{Figure: ComparisonOf(c), Caption: "Test metrics before and after each method."}}, Table: ComparisonTableOf(c)})
	}
	return nil
}

// reliability adds the top-label and per-class reliability diagrams.
func (b *builder) reliability() {
	s, names := b.s, b.o.Figures.Names
	rel := Section{ID: "reliability", Title: "Reliability diagrams",
		Text: "Each diagram sorts the predictions into bins by confidence and compares, per bin, the share that was right (bars) with the mean confidence (the diagonal is perfect calibration). Orange marks the gap, grey whiskers the bootstrap interval of each bin's accuracy, and the green curve is the bin-free kernel estimate of P(correct | confidence) (Beta kernel, bandwidth by cross-validation) with its bootstrap band (the same resamples, the bandwidth held fixed). The strip underneath counts the samples per bin: read the bars where the counts are large."}
	if r, err := ReliabilityOf(b.ctx, s, -1, b.o); err != nil {
		b.fail("top-label reliability diagram", err)
	} else {
		rel.Figures = append(rel.Figures, Captioned{Figure: r, Title: "Top-label confidence",
			Caption: strings.TrimSpace(fmt.Sprintf("Confidence of the predicted class against accuracy. Binned ECE %.2f%%; bars below the diagonal mean over-confidence, above it under-confidence. %s", 100*r.ECE, r.BandwidthWarning()))})
	}
	if r, err := SmoothReliabilityOf(b.ctx, s, -1, b.o); err != nil {
		b.fail("smooth top-label reliability diagram", err)
	} else {
		rel.Figures = append(rel.Figures, Captioned{Figure: r, Title: "Top-label confidence, smoothed",
			Caption: fmt.Sprintf("The smooth reliability diagram of Błasiok and Nakkiran (relplot's): P(correct | confidence) smoothed by a Gaussian reflected at 0 and 1 whose width sigma = %.3g is the fixed point of the smooth ECE (smECE %.2f%%, as relplot 1.0.3 computes it), drawn wider where confidences are denser, with its bootstrap band; the strip shows the density of the confidences.", r.Curve.Sigma, 100*r.Curve.Value)})
	}
	b.doc.Sections = append(b.doc.Sections, rel)
	per := b.o.Figures.PerClass
	if per == 0 {
		per = DefaultPerClass
	}
	np := min(per, s.K)
	if np <= 0 {
		return
	}
	pc := Section{ID: "per-class", Title: "Per-class reliability", Grid: true,
		Text: "The same diagram for each class's own probability p_k (one-vs-rest: outcome 1 when the label is k), for every sample. Most probabilities of a class are near 0, so look at the count strip before reading the right-hand bins."}
	first := 0
	if s.K == 2 {
		first, np = 1, 2 // p1 of a binary problem
	}
	for c := first; c < np; c++ {
		r, err := ReliabilityOf(b.ctx, s, c, b.o)
		if err != nil {
			b.fail(className(c, names)+" reliability diagram", err)
			continue
		}
		r.Compact = true
		pc.Figures = append(pc.Figures, Captioned{Figure: r, Caption: strings.TrimSpace(fmt.Sprintf("%s: binned ECE %.2f%%. %s", className(c, names), 100*r.ECE, r.BandwidthWarning()))})
	}
	b.doc.Sections = append(b.doc.Sections, pc)
}

// ks adds the KS calibration graphs.
func (b *builder) ks() {
	ks := Section{ID: "ks", Title: "KS calibration graphs",
		Text: "The binning-free view of Gupta et al. (ICLR 2021): sort the samples by confidence and plot the running sums of confidence and of correctness against the fraction of samples seen (a). The largest vertical gap between the two curves is the KS calibration error. In (b) the horizontal axis is the cumulative confidence, so the confidence is the diagonal; (c) and (d) show the confidence and the estimated probability of being right (the slope of a spline fitted to the cumulative curve) against the fractile and against the confidence."}
	kg, err := KSGraphsOf(b.s, b.val)
	if err != nil {
		b.fail("KS graphs", err)
	}
	if kg != nil {
		ks.Figures = append(ks.Figures, Captioned{Figure: kg,
			Caption: "Top-1 calibration graphs; with a validation set, the second row shows this set after the spline map fitted on validation."})
	}
	b.doc.Sections = append(b.doc.Sections, ks)
}

// simplex adds the simplex view (K >= 3).
func (b *builder) simplex() {
	s := b.s
	sx, err := SimplexOf(b.ctx, s, b.o)
	if err != nil {
		b.fail("simplex view", err)
		return
	}
	text := "Canonical calibration asks whether the whole probability vector is right. For three classes the vectors live in a triangle (each corner is certainty in one class)."
	if s.K > 3 {
		text += fmt.Sprintf(" Here %s and %s are kept (the pair the model confuses most, unless --classes says otherwise) and the other %d classes are merged into \"other\".", sx.Corners[0], sx.Corners[1], s.K-2)
	}
	text += " The colour is the calibration error ||E[y | f] - f||_1 at each point: left estimated by triangle bins, right by the Dirichlet kernel regression of ECE^KDE (Popordanoska et al., NeurIPS 2022, Fig. 1). Dots are samples, coloured by label."
	b.doc.Sections = append(b.doc.Sections, Section{ID: "simplex", Title: "Calibration on the simplex", Text: text,
		Figures: []Captioned{{Figure: sx, Caption: strings.TrimSpace(fmt.Sprintf("Binned (8 bins per side, the count of samples printed in each bin) and kernel (h = %.3g, by cross-validation) estimates of the error field; grey marks cells without data, hatching bins with fewer than %d samples. %s", sx.Bandwidth, sx.MinCount, sx.Warning()))}}})
}

// bandwidth adds the bandwidth view of the canonical (binary: binary)
// notion, sharing the evaluation's bandwidth selection.
func (b *builder) bandwidth() {
	s := b.s
	notion := kde.Canonical
	if s.Binary {
		notion = kde.Binary
	}
	bv, err := bandwidthView(b.ctx, s, notion, b.curves, b.doc.Evaluation, b.o.Workers)
	if err != nil {
		b.fail("bandwidth view", err)
		return
	}
	b.doc.Sections = append(b.doc.Sections, Section{ID: "bandwidth", Title: "Bandwidth of ECE^KDE",
		Text:    "ECE^KDE smooths the labels with a kernel of bandwidth h. Too small an h follows single labels and inflates the error; too large an h blurs the predictions together. calib picks h by maximising the leave-one-out likelihood of the predictions (left); the right panel shows how the estimate moves with h.",
		Figures: []Captioned{{Figure: bv, Caption: strings.TrimSpace(fmt.Sprintf("%s notion: chosen h = %.4g, CE_1 there %.4f. %s", notion, bv.Selection.Bandwidth, bv.Chosen, bv.Warning()))}}})
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
}
