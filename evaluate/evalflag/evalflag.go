// Package evalflag holds the command-line face of evaluate.Options: the
// flags that calib eval and calib-beam share, registered once on either
// command's flag set (the standard library's flag.FlagSet and pflag's have
// the methods of FlagSet), and the text of the list and name options
// (Text), parsed by the text methods of evaluate's types (MetricSet,
// Exponents, Ranks, Bandwidth) and of kde's and metric's enumerations, so
// that every front end takes the same text by the same rules.
//
// Errors are *evaluate.OptionError values naming the option as calib eval
// spells it without the dashes; their text, after evaluate.ErrOptions's,
// starts with that name ("mode: unknown notion ...", `bandwidth "x": want
// auto or a positive number`).
package evalflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/variational"
)

// FlagSet is what Register needs of a flag set: *flag.FlagSet and
// *pflag.FlagSet both have these methods.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	IntVar(p *int, name string, value int, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
	Float64Var(p *float64, name string, value float64, usage string)
}

// Text holds, as text, the fields of evaluate.Options that calib eval
// takes as lists or names, each as its flag takes it, so that a front end
// (flags, a form, a configuration file) maps onto Options one to one: the
// other fields it sets directly. Parse reads them; Register binds them to
// flags with their defaults.
type Text struct {
	Mode      string // Options.Mode: evaluate.NotionSet; "" leaves it
	P         string // Options.P: evaluate.Exponents
	Bandwidth string // Options.Bandwidth: evaluate.Bandwidth ("auto" or h)
	Objective string // Options.Objective: kde.Objective
	Metrics   string // Options.Metrics (and Strict): evaluate.MetricSet; "" leaves them
	Binning   string // Options.Bins.Binning: metric.Binning
	BinRule   string // Options.Bins.Rule: metric.BinRule
	KSR       string // Options.KS.R: evaluate.Ranks
}

// Parse sets the fields of o that t holds, once, before the data is read;
// a list of metrics without "all" sets o.Strict too (a named metric that
// fails fails Evaluate; with all, as without a list, it is an entry with
// an error). What depends on the data is CheckSet's.
func (t Text) Parse(o *evaluate.Options) error {
	if t.Mode != "" {
		if err := o.Mode.UnmarshalText([]byte(t.Mode)); err != nil {
			return err
		}
	}
	if _, _, err := o.Mode.Resolve(nil); err != nil {
		return err
	}
	if err := o.P.UnmarshalText([]byte(t.P)); err != nil {
		return err
	}
	if err := o.Bandwidth.UnmarshalText([]byte(t.Bandwidth)); err != nil {
		return err
	}
	var err error
	if o.Objective, err = kde.ParseObjective(t.Objective); err != nil {
		return optionError("bandwidth-objective", "bandwidth-objective: %v", err)
	}
	if t.Metrics != "" {
		if err := o.Metrics.UnmarshalText([]byte(t.Metrics)); err != nil {
			return err
		}
		o.Strict = !namesAll(t.Metrics)
	}
	if o.Bins.Binning, err = metric.ParseBinning(t.Binning); err != nil {
		return optionError("binning", "binning: %v", err)
	}
	if o.Bins.Rule, err = metric.ParseBinRule(t.BinRule); err != nil {
		return optionError("bin-rule", "bin-rule: %v", err)
	}
	return o.KS.R.UnmarshalText([]byte(t.KSR))
}

// CheckSet checks the parsed options o against the set s, once it is
// read: the mode against the set's columns (evaluate.NotionSet.Resolve),
// the KS r against K (evaluate.Options.CheckK).
func CheckSet(o evaluate.Options, s *data.Set) error {
	if _, _, err := o.Mode.Resolve(s); err != nil {
		return err
	}
	return o.CheckK(s.K)
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

func optionError(option, format string, args ...any) error {
	return &evaluate.OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// BandwidthNotion parses the mode of a bandwidth selection
// (bandwidth.Select, calib bandwidth --mode), which must name one
// notion (see evaluate.NotionSet); "" means canonical, or binary for
// one-column input. With s nil (before the data is read) it checks the
// names and their number only, "all" then counting as one.
func BandwidthNotion(mode string, s *data.Set) (kde.Notion, error) {
	if mode == "" {
		if s != nil && s.Binary {
			return kde.Binary, nil
		}
		return kde.Canonical, nil
	}
	var set evaluate.NotionSet
	if err := set.UnmarshalText([]byte(mode)); err != nil {
		return "", err
	}
	ns, _, err := set.Resolve(s)
	if err != nil {
		return "", err
	}
	if len(ns) != 1 {
		return "", optionError("mode", "mode: bandwidth takes one notion, got %d", len(ns))
	}
	return ns[0], nil
}

// Command says which command registers the flags, for their usage texts:
// the defaults differ where a stream's do.
type Command int

const (
	// Eval is calib eval (in memory, or streamed with --stream).
	Eval Command = iota
	// Beam is calib-beam: always streamed.
	Beam
)

// Register defines on fs the flags of evaluate.Options that calib eval and
// calib-beam share, with calib eval's defaults: --mode, --metrics, --p,
// --bandwidth, --binning, --bin-rule and --ks-r (t),
// --class-mean (o.ClassMean) and --bins (o.Bins.Bins). The values are read
// when fs is parsed; t.Parse turns the text ones into o's fields.
func Register(fs FlagSet, t *Text, o *evaluate.Options, cmd Command) {
	metricsDefault := evaluate.DefaultMetrics.String() + ": " + evaluate.Headline.String() + " to report, then the numbers to compare it with; ece_kde when --mode is given"
	auto := "leave-one-out maximum likelihood per notion"
	bins := "number of bins of the binned metrics (implies --bin-rule fixed)"
	if cmd == Beam {
		metricsDefault = "all but ece_witness, or ece_kde when --mode is given"
		auto = "leave-one-out choice on a grid"
		bins = "number of bins of the binned metrics (the fixed rule)"
	}
	fs.StringVar(&t.Mode, "mode", "all", "ECE^KDE notions, comma-separated: canonical, class_wise (the paper's marginal), top_label, binary (one-column input), or all; without --metrics it means --metrics ece_kde")
	fs.StringVar(&t.Metrics, "metrics", "", "metrics, comma-separated: "+strings.ReplaceAll(evaluate.Metrics.String(), ",", ", ")+", or all (default: "+metricsDefault+")")
	fs.StringVar(&t.P, "p", "1,2", "exponents `p` >= 1 of every Lp metric, comma-separated")
	fs.StringVar(&t.Bandwidth, "bandwidth", "auto", "kernel bandwidth h > 0, or auto ("+auto+")")
	fs.BoolVar(&o.ClassMean, "class-mean", false, "ece_kde class_wise: report the mean over classes instead of the sum")
	fs.IntVar(&o.Bins.Bins, "bins", metric.DefaultBins, bins)
	fs.StringVar(&t.Binning, "binning", "equal_width", "bin edges: equal_width, or equal_mass (percentiles, as scikit-learn's quantile strategy)")
	fs.StringVar(&t.BinRule, "bin-rule", "fixed", "number of bins: fixed, doane or sqrt")
	fs.StringVar(&t.KSR, "ks-r", "1,2", "ks: the r of top_r (and of within_top_r for r >= 2), comma-separated")
	fs.BoolVar(&o.Bins.OpenLow, "reference-bins", false, "binned metrics: the splines reference's (lo, hi] bins, where a score of exactly 0 falls in no bin")
	fs.Float64Var(&o.MMCE.Width, "mmce-width", metric.DefaultMMCEWidth, "width of MMCE's Laplacian kernel")
	fs.StringVar(&o.Variational.Family, "variational-family", variational.Auto, "ece_variational: the recalibration families whose cross-fitted gain it is, comma-separated (calib fit methods: temperature, vector, log-spline, boost, dirichlet-odir, isotonic, ...; log-spline-shared; auto = temperature,log-spline-shared,log-spline,boost); each entry reports the simplest family unless a richer one's per-row gains beat it significantly (one-sided paired z > 1.645)")
	fs.Float64Var(&o.SmECE.Sigma, "smece-sigma", 0, "smece: the bandwidth `sigma` in [0.0001, 1] (relplot's smECE_sigma); 0: the fixed point sigma* = smECE(sigma*) (relplot's smECE)")
}

// StreamText holds the options of a streamed evaluation of its own
// (evaluate.StreamOptions) as flags take them.
type StreamText struct {
	EvalPoints string // EvalPoints: a number >= 1, "all" (evaluate.AllPoints) or "" (the default)
	KSCells    int    // KSCells
	MaxCells   int    // MaxCells
}

// RegisterStream defines on fs the flags of a stream's own options:
// --eval-points, --ks-cells and --max-cells (with prefix before each
// usage text: "with --stream: " for calib eval).
func RegisterStream(fs FlagSet, t *StreamText, prefix string) {
	fs.StringVar(&t.EvalPoints, "eval-points", "", prefix+fmt.Sprintf("the number `M` of evaluation points of ece_kde (default %d), or all (exact; at most %d rows)", evaluate.DefaultEvalPoints, evaluate.MaxAllPoints))
	fs.IntVar(&t.KSCells, "ks-cells", metric.DefaultKSCells, prefix+"score cells of KS (the bounds' width is about 1/cells)")
	fs.IntVar(&t.MaxCells, "max-cells", 0, prefix+"the most occupied cells the canonical ece_bin and mce may keep (0: 2^20 / (2K + 2), 47,662 at K = 10, about 14 MB; each cell about (2K + 2) x 14 bytes); past it those two entries are errors")
}

// Points parses EvalPoints into StreamOptions.EvalPoints
// (evaluate.EvalPoints' text: "" is 0, the default; "all"
// evaluate.AllPoints; else a number >= 1). Its error is an OptionError of
// "eval-points": `eval-points "x": want a number >= 1, or all`.
func (t StreamText) Points() (evaluate.EvalPoints, error) {
	var m evaluate.EvalPoints
	err := m.UnmarshalText([]byte(t.EvalPoints))
	return m, err
}

// FlagMessage is the message of err for a command line: an
// evaluate.OptionError as its option's flag and the reason, without the
// library's "bad options" ("--ci: bootstrap intervals need ...", or
// "--p: ..." where the reason begins with the option's name); any other
// error's own text.
func FlagMessage(err error) string {
	var oe *evaluate.OptionError
	if !errors.As(err, &oe) {
		return err.Error()
	}
	msg := oe.Err.Error()
	if oe.Option != "" && !strings.HasPrefix(msg, oe.Option) {
		return "--" + oe.Option + ": " + msg
	}
	return "--" + msg
}
