package evaluate

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/smooth"
	"github.com/calib-dev/calib/variational"
)

// OptionKind is the type of an option's value: how a flag, a JSON value or
// a keyword gives it (optionspec.Kind; its String is the type's name as
// pflag prints it).
type OptionKind = optionspec.Kind

// The kinds of OptionKind.
const (
	TextOption   = optionspec.Text   // a name, a number or a comma-separated list, parsed by the option
	BoolOption   = optionspec.Bool   // true or false
	IntOption    = optionspec.Int    // an integer
	Uint64Option = optionspec.Uint64 // an integer >= 0
	FloatOption  = optionspec.Float  // a finite number
)

// An Option declares one option of Options (or of StreamOptions) as every
// front end names it: the flag of calib eval and calib-beam (without the
// dashes), the key of the C ABI's JSON and Python's keyword (with "_" for
// "-"). The flags, the keys, the checks of options given together and the
// options table of docs/metrics.md are all read from these declarations
// (OptionSpecs): shared options in this file, a metric's own beside it
// (metricDef.options).
type Option struct {
	Name    string     // "ks-r"
	Kind    OptionKind // how its value is written
	Default string     // its default, as text ("1,2", "15", "false")
	Usage   string     // one line for the flag's help
	// StreamUsage, if not "", is the usage where every evaluation is
	// streamed (calib-beam): the defaults there differ.
	StreamUsage string
	// Metrics are the metrics that read the option: given while none of
	// them is computed, it would be ignored without a word, and Settle
	// refuses it. nil: every evaluation reads it (seed, workers, the
	// bootstrap's options).
	Metrics MetricSet
	// Stream says that a streamed evaluation honours the option (calib
	// eval --stream, calib-beam, the C ABI's accumulators); StreamOnly
	// that only a stream has it (a field of StreamOptions).
	Stream, StreamOnly bool
	// set parses text (range included) onto o; its errors are
	// OptionErrors of Name.
	set func(o *StreamOptions, text string) error
}

// sharedOptions are the options that are no one metric's: the metrics and
// notions, the exponents, the bootstrap's and the p-values' options, the
// seed, the workers and the stream's evaluation points.
var sharedOptions = []Option{
	{Name: "metrics", Kind: TextOption, Stream: true,
		Usage:       "metrics, comma-separated: " + strings.ReplaceAll(Metrics.String(), ",", ", ") + ", or all (default: " + DefaultMetrics.String() + ": " + Headline.String() + " to report, then the numbers to compare it with; ece_kde when --mode is given)",
		StreamUsage: "metrics, comma-separated: " + strings.ReplaceAll(Metrics.String(), ",", ", ") + ", or all (default: all but ece_witness, or ece_kde when --mode is given)",
		set:         setMetrics},
	{Name: "mode", Kind: TextOption, Default: "all", Stream: true, Metrics: MetricSet{ECEKDE, SmECE, ECEVariational},
		Usage: "ECE^KDE notions, comma-separated: canonical, class_wise (the paper's marginal), top_label, binary (one-column input), or all; without --metrics it means --metrics ece_kde",
		set:   textField(func(o *StreamOptions) encoding.TextUnmarshaler { return &o.Mode })},
	{Name: "p", Kind: TextOption, Default: "1,2", Stream: true, Metrics: MetricSet{ECEKDE, ECEWitness, ECEBin, ECESweep, ATB, ACE, ECEVariational},
		Usage: "exponents `p` >= 1 of every Lp metric, comma-separated",
		set:   setExponents},
	{Name: "convention", Kind: TextOption, Default: "calib", Metrics: MetricSet{ECEBin, MCE, ECESweep, SmECE}, // ece_sweep and smece for some values only: conflicts
		Usage: "whose definition the top-label ece_bin and mce follow: calib, sklearn, torchmetrics, netcal, relplot, hendrycks, robustness_metrics or torch_uncertainty (each entry says its convention); relplot-1.0.1 also computes smece as relplot 1.0.1 did",
		set:   setConvention},
	{Name: "ci", Kind: BoolOption, Default: "false", set: boolField(func(o *StreamOptions) *bool { return &o.CI }),
		Usage: "add bootstrap intervals to every metric without an interval of its own (percentile for means, centred on the estimate for the biased estimators; ece_variational keeps its cross-fit interval alone)"},
	{Name: "ci-exact", Kind: BoolOption, Default: "false", set: boolField(func(o *StreamOptions) *bool { return &o.CIExact }),
		Usage: "ece_kde, ece_witness and sharpness: recompute the estimate on every resample (implies --ci; O(n^2) per resample)"},
	{Name: "ci-resamples", Kind: IntOption, Default: "200", Usage: "bootstrap resamples",
		set: intField(2, maxResamples, fmt.Sprintf("an integer in [2, %d]", maxResamples), func(o *StreamOptions) *int { return &o.Resamples })},
	{Name: "ci-level", Kind: FloatOption, Default: "0.95", Usage: "bootstrap interval level",
		set: floatField(func(x float64) bool { return x > 0 && x < 1 }, "a number strictly between 0 and 1", func(o *StreamOptions) *float64 { return &o.Level })},
	{Name: "p-values", Kind: BoolOption, Default: "false", Metrics: MetricSet{ECEKDE, ECEBin, MCE, ECEBinDebiased, KS, MMCE},
		Usage: "attach to ece_kde, ece_bin, mce, ece_bin_debiased, ks and mmce the p-value of the test of calibration with that number as statistic (consistency resampling: labels redrawn from the predictions)",
		set:   boolField(func(o *StreamOptions) *bool { return &o.PValues })},
	{Name: "p-resamples", Kind: IntOption, Default: "1000", Usage: "resamples of --p-values",
		set: intField(minPValueResamples, maxPValueResamples, fmt.Sprintf("an integer in [%d, %d] (a resampled p-value is at least 1/(B+1): below %d resamples none can reach 0.05)", minPValueResamples, maxPValueResamples, minPValueResamples),
			func(o *StreamOptions) *int { return &o.PValueResamples })},
	{Name: "seed", Kind: Uint64Option, Default: strconv.Itoa(DefaultSeed), Stream: true,
		Usage:       "seed of the bootstrap, of the p-values' resamples and of ece_witness's cross-fitting splits (same seed, same output; 0 means 1)",
		StreamUsage: "seed of the sample of evaluation points (same seed, same sample)",
		set:         uint64Field(func(o *StreamOptions) *uint64 { return &o.Seed })},
	{Name: "workers", Kind: IntOption, Default: "0", Stream: true,
		Usage:       "goroutines (0: all cores); results are identical for any value",
		StreamUsage: "goroutines of the kernel sums of one shard on a worker (0: all cores); results are identical for any value",
		set:         intField(0, math.MaxInt32, "an integer >= 0", func(o *StreamOptions) *int { return &o.Workers })},
	{Name: "eval-points", Kind: TextOption, Stream: true, StreamOnly: true, Metrics: MetricSet{ECEKDE, ECEWitness, MMCE, Sharpness},
		Usage: fmt.Sprintf("the number `M` of evaluation points of ece_kde (default %d), or all (exact; at most %d rows)", DefaultEvalPoints, MaxAllPoints),
		set:   textField(func(o *StreamOptions) encoding.TextUnmarshaler { return &o.EvalPoints })},
}

// Bounds of the shared options' values.
const (
	maxResamples = 1_000_000 // ci-resamples
	// minPValueResamples is the least p-resamples: 1/(B+1) <= 0.05.
	minPValueResamples = 19
	maxPValueResamples = 1_000_000 // calibtest.MaxResamples
)

// optionSpecs lists every option: the shared ones, then each metric's own
// in the table's order.
var optionSpecs = func() []Option {
	specs := slices.Clone(sharedOptions)
	for _, d := range metricTable {
		specs = append(specs, d.options...)
	}
	return specs
}()

// OptionSpecs returns every option of Options and StreamOptions as the
// front ends name them (a copy): the shared options, then each metric's
// own, in the order of Metrics.
func OptionSpecs() []Option { return slices.Clone(optionSpecs) }

// LookupOption returns the option named name ("_" may stand for "-"), and
// whether there is one.
func LookupOption(name string) (Option, bool) {
	name = strings.ReplaceAll(name, "_", "-")
	for _, s := range optionSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return Option{}, false
}

// Set sets the option name (an Option of OptionSpecs, "_" for "-") of o
// from its text, as the flag of calib eval takes it ("ks-r", "1,3"): a
// bad value, or an option only a stream has, is an OptionError naming it.
// The rules between options given together are Settle's.
func (o *Options) Set(name, text string) error {
	spec, err := lookupSpec(name)
	if err != nil {
		return err
	}
	if spec.StreamOnly {
		return optionError(spec.Name, "%s applies to a streamed evaluation (StreamOptions)", spec.Name)
	}
	so := StreamOptions{Options: *o}
	if err := spec.setText(&so, text); err != nil {
		return err
	}
	*o = so.Options
	return nil
}

// Set sets the option name of o from its text, as Options.Set does, the
// stream's own options included; "metrics all" names every metric a
// stream computes (StreamableMetrics).
func (o *StreamOptions) Set(name, text string) error {
	spec, err := lookupSpec(name)
	if err != nil {
		return err
	}
	if err := spec.setText(o, text); err != nil {
		return err
	}
	if spec.Name == "metrics" && namesAll(text) {
		o.Metrics = StreamableMetrics()
	}
	return nil
}

// lookupSpec is LookupOption with an OptionError for a name that is none.
func lookupSpec(name string) (Option, error) {
	spec, ok := LookupOption(name)
	if !ok {
		return Option{}, optionError(name, "unknown option %q", name)
	}
	return spec, nil
}

// ParseOptions returns the options of an evaluation in memory written as
// text, keyed by option name ("_" may stand for "-"): as calib eval reads
// its flags, each option absent from text takes its Default, each is Set
// in the order of OptionSpecs, then the options given (the keys of text)
// are settled (Settle, with defaults). An unknown key, or one only a
// stream has, is an OptionError naming it.
func ParseOptions(text map[string]string, defaults MetricSet) (Options, error) {
	so, given, err := parseText(text, false)
	if err != nil {
		return so.Options, err
	}
	o := so.Options
	return o, o.Settle(given, defaults)
}

// ParseStreamOptions is ParseOptions for a streamed evaluation: the
// options a stream honours (Option.Stream) take their defaults, those it
// does not are Set only where given (Settle then refuses them).
func ParseStreamOptions(text map[string]string) (StreamOptions, error) {
	o, given, err := parseText(text, true)
	if err != nil {
		return o, err
	}
	return o, o.Settle(given)
}

// parseText sets the options of text (with their defaults, as
// ParseOptions and ParseStreamOptions say) and returns which were given.
func parseText(text map[string]string, stream bool) (StreamOptions, func(string) bool, error) {
	var o StreamOptions
	given, keys := map[string]string{}, map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(text)) {
		spec, err := lookupSpec(name)
		if err != nil {
			return o, nil, err
		}
		if key, twice := keys[spec.Name]; twice {
			return o, nil, optionError(spec.Name, "%s given twice (as %q and %q)", spec.Name, key, name)
		}
		keys[spec.Name] = name
		if spec.StreamOnly && !stream {
			return o, nil, optionError(spec.Name, "%s applies to a streamed evaluation (StreamOptions)", spec.Name)
		}
		given[spec.Name] = text[name]
	}
	for _, spec := range optionSpecs {
		t, ok := given[spec.Name]
		switch {
		case ok:
		case spec.StreamOnly && !stream, stream && !spec.Stream, spec.Default == "":
			continue
		default:
			t = spec.Default
		}
		if err := spec.setText(&o, t); err != nil {
			return o, nil, err
		}
		if spec.Name == "metrics" && namesAll(t) && stream {
			o.Metrics = StreamableMetrics()
		}
	}
	return o, func(name string) bool { _, ok := given[name]; return ok }, nil
}

// Settle applies the rules between the options that a front end gave by
// name (given reports which: the flags set, the JSON keys), once they are
// all Set, and checks o (Validate):
//
//   - mode without metrics means metrics ece_kde, strictly (a failure of
//     it fails the evaluation);
//   - bins means the fixed bin rule (and is refused beside a rule that
//     chooses the number from the data);
//   - ci-level and ci-resamples need ci (or ci-exact), p-resamples needs
//     p-values;
//   - an option that no computed metric reads (Option.Metrics), or that
//     the values of the others leave unread (conflicts), is refused: it
//     would be ignored without a word. defaults are the metrics that
//     Metrics nil stands for (nil: DefaultMetrics; a report's are
//     report.ReportMetrics).
//
// Its errors are OptionErrors naming the option.
func (o *Options) Settle(given func(name string) bool, defaults MetricSet) error {
	if err := o.settleGiven(given); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ms := o.Metrics
	if ms == nil {
		ms = defaults
	}
	return o.checkRead(given, ms)
}

// Settle is Options.Settle for a stream: its checks are NewSums's, and
// Metrics nil are the stream's defaults.
func (o *StreamOptions) Settle(given func(name string) bool) error {
	if err := o.Options.settleGiven(given); err != nil {
		return err
	}
	if _, err := o.resolve(); err != nil {
		return err
	}
	return o.checkRead(given, o.Metrics)
}

// settleGiven applies the first three rules of Settle.
func (o *Options) settleGiven(given func(name string) bool) error {
	if !o.CI && !o.CIExact {
		for _, name := range []string{"ci-level", "ci-resamples"} {
			if given(name) {
				return optionError(name, "%s applies to the bootstrap intervals: add --ci", name)
			}
		}
	}
	if !o.PValues && given("p-resamples") {
		return optionError("p-resamples", "p-resamples applies to the p-values: add --p-values")
	}
	if given("bins") {
		if given("bin-rule") && o.Bins.Rule != metric.Fixed {
			return optionError("bins", "bins %d sets the number of bins of --bin-rule fixed; --bin-rule %s chooses it from the data", o.Bins.Bins, o.Bins.Rule)
		}
		o.Bins.Rule = metric.Fixed
	}
	if given("mode") && !given("metrics") {
		o.Metrics, o.Strict = MetricSet{ECEKDE}, true
	}
	return nil
}

// checkRead refuses, of the options given, one that no metric of ms (nil:
// DefaultMetrics, a stream's too) reads, in the order of OptionSpecs, then
// one that the other options' values leave unread (conflicts).
func (o Options) checkRead(given func(name string) bool, ms MetricSet) error {
	if ms == nil {
		ms = DefaultMetrics
	}
	for _, spec := range optionSpecs {
		if spec.Metrics == nil || !given(spec.Name) || slices.ContainsFunc(spec.Metrics, ms.Has) {
			continue
		}
		return optionError(spec.Name, "%s applies to %s, and none is computed (metrics: %s): add one to the metrics or leave the option out",
			spec.Name, spec.Metrics.words(), ms)
	}
	return o.conflicts(given, ms)
}

// conflicts returns an OptionError for an option given that the values of
// the other options leave unread although a metric that reads it is
// computed: class-mean without the class_wise notion, exact with only the
// canonical notion and no sharpness, bandwidth-objective with a fixed
// bandwidth, and a convention that only ece_sweep (robustness_metrics) or
// smece (relplot-1.0.1) read without them.
func (o Options) conflicts(given func(name string) bool, ms MetricSet) error {
	explicitMode := given("mode")
	// Exactly "all" counts as every notion (which ones it holds depends on
	// K and on streaming); with names besides it, the names count.
	has := func(n kde.Notion) bool {
		return !explicitMode || o.Mode.Has(n) || (o.Mode.All && len(o.Mode.Notions) == 0)
	}
	switch {
	case given("class-mean") && explicitMode && !has(kde.ClassWise):
		return optionError("class-mean", "class-mean applies to ece_kde's class_wise notion, which --mode %s leaves out", o.Mode)
	case given("exact") && explicitMode && !has(kde.TopLabel) && !has(kde.Binary) && !has(kde.ClassWise) && !ms.Has(Sharpness):
		return optionError("exact", "exact applies to the one-dimensional notions (top_label, binary, class_wise) and sharpness; --mode %s computes the canonical notion only", o.Mode)
	case given("bandwidth-objective") && o.Bandwidth != 0:
		return optionError("bandwidth-objective", "bandwidth-objective chooses the bandwidth, which --bandwidth %s fixes", o.Bandwidth)
	}
	if given("convention") && !ms.Has(ECEBin) && !ms.Has(MCE) {
		sweep := o.Convention == convention.RobustnessMetrics && ms.Has(ECESweep)
		sm := o.SmECE.Convention == smooth.Relplot101 && ms.Has(SmECE)
		if !sweep && !sm {
			return optionError("convention", "convention %s applies to ece_bin and mce (robustness_metrics to ece_sweep too, relplot-1.0.1 to smece), and none is computed (metrics: %s)", o.Convention, ms)
		}
	}
	return nil
}

// The setters of the option kinds, on StreamOptions.
var (
	textField   = optionspec.SetText[StreamOptions]
	boolField   = optionspec.SetBool[StreamOptions]
	intField    = optionspec.SetInt[StreamOptions]
	uint64Field = optionspec.SetUint64[StreamOptions]
	floatField  = optionspec.SetFloat[StreamOptions]
)

// setText runs the option's setter on text: its plain errors (a number
// out of range) become OptionErrors of the option, and a list or name
// given empty, or with an empty item or one twice, is refused (it names
// nothing: it never means the default).
func (spec Option) setText(o *StreamOptions, text string) error {
	if spec.Kind == TextOption {
		if err := listItems(spec.Name, text); err != nil {
			return err
		}
	}
	if err := spec.set(o, text); err != nil {
		if _, ok := err.(*OptionError); ok {
			return err
		}
		return optionError(spec.Name, "%s %v", spec.Name, err)
	}
	return nil
}

// listItems checks the value v of a text option (optionspec.ListItems),
// its refusal an OptionError.
func listItems(name, v string) error {
	if err := optionspec.ListItems(name, v); err != nil {
		return &OptionError{Option: name, Err: errors.Unwrap(err)}
	}
	return nil
}

// setMetrics sets Metrics; a list without "all" sets Strict too (a named
// metric that fails fails Evaluate; with all, as without a list, it is an
// entry with an error).
func setMetrics(o *StreamOptions, text string) error {
	if err := o.Metrics.UnmarshalText([]byte(text)); err != nil {
		return err
	}
	o.Strict = !namesAll(text)
	return nil
}

// namesAll reports whether a list of metrics names "all".
func namesAll(list string) bool {
	for _, m := range strings.Split(list, ",") {
		if strings.TrimSpace(m) == "all" {
			return true
		}
	}
	return false
}

// setExponents sets P, each p in [1, kde.MaxP].
func setExponents(o *StreamOptions, text string) error {
	for _, f := range strings.Split(text, ",") {
		f = strings.TrimSpace(f)
		if x, err := strconv.ParseFloat(f, 64); f != "" && (err != nil || !(x >= 1 && x <= kde.MaxP)) {
			return optionError("p", "p %q: want a number p in [1, %g] (above it |e|^p underflows float64 for errors below 2^(-1074/p) and the estimate would read 0)", f, float64(kde.MaxP))
		}
	}
	return o.P.UnmarshalText([]byte(text))
}

// setConvention sets Convention ("relplot-1.0.1" sets relplot's for the
// binned entries and relplot 1.0.1's smece).
func setConvention(o *StreamOptions, text string) error {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(text)), "_", "-") {
	case "relplot-1.0.1", "relplot-1.0":
		o.Convention, o.SmECE.Convention = convention.Relplot, smooth.Relplot101
		return nil
	}
	n, err := convention.Parse(text)
	if err != nil {
		return optionError("convention", "convention %q: %v", text, pkgerr.Reason(err))
	}
	o.Convention = n
	return nil
}

// setFamilies sets Variational.Family, checked.
func setFamilies(o *StreamOptions, text string) error {
	if _, err := variational.ParseFamilies(text); err != nil {
		return optionError("variational-family", "variational-family %q: %v", text, err)
	}
	o.Variational.Family = text
	return nil
}
