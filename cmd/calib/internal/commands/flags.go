package commands

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/experiment"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train"
)

// Bounds of the numeric flags, stated in the messages of flagRules.
const (
	maxBins = 10_000 // --bins of fit and plot (eval's: evaluate.OptionSpecs): more bins than this hold almost no sample each
	// DefaultSeed is the --seed of every command that has one (report.DefaultSeed).
	DefaultSeed = report.DefaultSeed
)

// flagRule checks the value of a flag; the message says the valid range in
// the user's terms (the flag name is added by validateFlags).
type flagRule func(v string) error

func intRule(lo, hi int, what string) flagRule {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q: want %s", v, what)
		}
		return nil
	}
}

func floatRule(ok func(x float64) bool, what string) flagRule {
	return func(v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || !ok(x) {
			return fmt.Errorf("%q: want %s", v, what)
		}
		return nil
	}
}

func listRule(each flagRule) flagRule {
	return func(v string) error {
		n := 0
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n++
			if err := each(f); err != nil {
				return err
			}
		}
		if n == 0 {
			return fmt.Errorf("%q: no value given", v)
		}
		return nil
	}
}

// oneOf accepts the names in valid; what lists them.
func oneOf(what string, valid ...string) flagRule {
	return func(v string) error {
		if !slices.Contains(valid, v) {
			return fmt.Errorf("%q: %s", v, what)
		}
		return nil
	}
}

// positiveDuration accepts a duration above 0 (30s, 2m).
func positiveDuration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q: want a duration above 0, with its unit (30s, 2m)", v)
	}
	return nil
}

var (
	nonNegative  = intRule(0, math.MaxInt32, "an integer >= 0")
	positiveInt  = intRule(1, math.MaxInt32, "an integer >= 1")
	positiveReal = floatRule(func(x float64) bool { return x > 0 }, "a finite number > 0")
	nonNegReal   = floatRule(func(x float64) bool { return x >= 0 }, "a finite number >= 0")
	fraction     = floatRule(func(x float64) bool { return x > 0 && x < 1 }, "a number strictly between 0 and 1")
	exponent     = floatRule(func(x float64) bool { return x >= 1 && x <= kde.MaxP },
		fmt.Sprintf("a number p in [1, %g] (above it |e|^p underflows float64 for errors below 2^(-1074/p) and the estimate would read 0)", float64(kde.MaxP)))
)

// namesFlags are the flags that name metrics, notions, tests, methods or
// conventions: given, an empty value names nothing (it never means the
// default).
var namesFlags = map[string]bool{"metrics": true, "mode": true, "p": true, "ks-r": true, "tests": true, "methods": true,
	"convention": true, "variational-family": true, "binning": true, "bin-rule": true, "bandwidth": true, "bandwidth-objective": true,
	"format": true, "grid": true, "classes": true, "split": true, "optimizer": true, "eval-points": true, "scalar-mode": true,
	"sizes": true, "ks": true, "sets": true, "parts": true, "estimators": true}

// flagRules validates the numeric flags by name, for every command that has
// them, before any data is read (root's PersistentPreRunE). A key
// "command/flag" overrides the rule of "flag" for one command.
var flagRules = map[string]flagRule{
	"format":              oneOf("valid formats are "+strings.Join(data.Formats(), ", "), data.Formats()...),
	"method":              oneOf("valid methods are "+strings.Join(recal.MethodNames(), ", "), append([]string{""}, recal.MethodNames()...)...), // "": fit says it is required
	"loss":                oneOf("valid losses are "+strings.Join(train.Losses(), ", "), train.Losses()...),
	"grid":                oneOf("want default or full", "default", "full"),
	"scalar-mode":         oneOf("valid modes are top_label, binary and one_vs_rest (isotonic)", recal.ModeTopLabel, recal.ModeBinary, recal.ModeOneVsRest),
	"split":               oneOf("want test or val", "test", "val"),
	"optimizer":           oneOf("valid optimizers are "+strings.Join(train.Optimizers(), ", "), train.Optimizers()...),
	"estimators/parts":    listRule(oneOf("valid parts are "+strings.Join(experiment.EstimatorParts, ", "), experiment.EstimatorParts...)),
	"workers":             nonNegative,
	"max-rows":            positiveInt,
	"max-body-mib":        intRule(1, 1<<20, "an integer number of MiB in [1, 1048576]"),
	"read-timeout":        positiveDuration,
	"write-timeout":       positiveDuration,
	"idle-timeout":        positiveDuration,
	"per-class":           nonNegative,
	"bins":                intRule(1, maxBins, fmt.Sprintf("an integer in [1, %d]", maxBins)),
	"train/p":             exponent, // eval's, report's and demo's --p: evaluate.OptionSpecs
	"tolerance":           floatRule(func(x float64) bool { return x > 0 && x < 1 }, "a number in (0, 1)"),
	"knots":               intRule(2, 1000, "an integer in [2, 1000]"),
	"lambda":              nonNegReal,
	"mu":                  nonNegReal,
	"class":               intRule(-1, math.MaxInt32, "a class index >= 0 (or -1: the top-label confidence)"),
	"reps":                positiveInt,
	"seeds":               positiveInt,
	"resamples":           positiveInt,
	"ground-samples":      positiveInt,
	"epochs":              positiveInt,
	"batch":               intRule(2, math.MaxInt32, "an integer >= 2"),
	"layers":              nonNegative,
	"hidden":              positiveInt,
	"patience":            positiveInt,
	"dropout":             floatRule(func(x float64) bool { return x >= 0 && x < 1 }, "a number in [0, 1)"),
	"smoothing":           floatRule(func(x float64) bool { return x >= 0 && x < 1 }, "a number in [0, 1)"),
	"momentum":            floatRule(func(x float64) bool { return x >= 0 && x < 1 }, "a number in [0, 1)"),
	"lr":                  positiveReal,
	"train/bandwidth":     nonNegReal,
	"sharpness/bandwidth": positiveReal,
	"train/val":           fraction,
	"train/test":          fraction,
	"location":            fraction,
	"slope":               positiveReal,
}

// validateFlags applies flagRules to the flags of cmd that the user set (a
// default may be a sentinel, such as --lr 0 for "the optimiser's default",
// that the user may not give).
func validateFlags(cmd *Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if _, spec := f.Annotations[specAnnotation]; err != nil || !f.Changed || spec {
			return // a package's option: its Parse checks it
		}
		if namesFlags[f.Name] {
			if e := listItems(f.Name, strings.Trim(f.Value.String(), "[]")); e != nil {
				err = e
				return
			}
		}
		rule, ok := flagRules[cmd.Name()+"/"+f.Name]
		if !ok {
			rule, ok = flagRules[f.Name]
		}
		if !ok {
			return
		}
		if e := rule(f.Value.String()); e != nil {
			err = usageErrorf("--%s %v", f.Name, e)
		}
	})
	if err != nil {
		return err
	}
	// Logits are not rows on the simplex: nothing reads these then.
	if fs := cmd.Flags(); fs.Lookup("logits") != nil && fs.Lookup("logits").Value.String() == "true" {
		for _, name := range []string{"tolerance", "renormalize"} {
			if fs.Changed(name) {
				return usageErrorf("--%s applies to probabilities (their row sums), not to --logits", name)
			}
		}
	}
	return nil
}

// specAnnotation marks the flags registerSpecs defines: the package that
// declares their options checks them (validateFlags leaves them alone).
const specAnnotation = "calib-optionspec"

// registerSpecs defines the flags of a package's options (a
// calibtest.OptionSpecs, ...) on fs, marked as the package's to check.
func registerSpecs(fs *pflag.FlagSet, opts []optionspec.Option) *optionspec.Flags {
	f := optionspec.Register(fs, opts)
	for _, o := range opts {
		_ = fs.SetAnnotation(o.Name, specAnnotation, nil) // the flag was just defined
	}
	return f
}

// listItems checks the value v of a flag that names things (namesFlags):
// at least one name, none empty between commas, none twice.
func listItems(flag, v string) error {
	if strings.TrimSpace(v) == "" {
		return usageErrorf("--%s %q: names nothing; leave the flag out for its default", flag, v)
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			return usageErrorf("--%s %q: an empty name between commas", flag, v)
		case seen[item]:
			return usageErrorf("--%s %q: %s given twice", flag, v, item)
		}
		seen[item] = true
	}
	return nil
}

// refuseUnread refuses a flag of readers (a flag and the choices of
// option that read it) given while no choice of chosen reads it: it would
// be ignored without a word. The flags are tried in name order.
func refuseUnread(fs *pflag.FlagSet, readers map[string][]string, option string, chosen []string) error {
	for _, flag := range slices.Sorted(maps.Keys(readers)) {
		if !fs.Changed(flag) || slices.ContainsFunc(chosen, func(c string) bool { return slices.Contains(readers[flag], c) }) {
			continue
		}
		return usageErrorf("--%s applies to %s %s, not %s", flag, option, strings.Join(readers[flag], ", "), strings.Join(chosen, ", "))
	}
	return nil
}

// gridReaders names the methods that read --grid (the ODIR methods'
// cross-validation), for fit, compare, report and plot.
var gridReaders = map[string][]string{"grid": {recal.MethodVector, recal.MethodMatrix, recal.MethodDirichlet}}

// methodNames returns the names of ms; nil means every method.
func methodNames(ms []recal.Method) []string {
	if ms == nil {
		ms = recal.Methods()
	}
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	return names
}

// checkOutput checks, before any work, that the file name of flag can be
// written (atomicfile.Check: one of exts, if any, in a writable
// directory); the file itself is written later, atomically.
func checkOutput(flag, name string, exts ...string) error {
	if err := atomicfile.Check(name, exts...); err != nil {
		return usageErrorf("%s %v", flag, err)
	}
	return nil
}

// requireOutput checks -o, which the command needs (what names it in the
// message, e.g. "MAP.json"), as checkOutput does.
func requireOutput(name, what string, exts ...string) error {
	if name == "" {
		return usageErrorf("-o %s is required", what)
	}
	return checkOutput("-o", name, exts...)
}

// outputDir returns the output directory of a command that writes several
// files: dir (-o), created and checked, or, when dir is "", a new
// temporary directory calib-NAME-*.
func outputDir(dir, name string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "calib-"+name+"-")
	}
	if err := atomicfile.PrepareDir(dir); err != nil {
		return "", usageErrorf("-o %v", err)
	}
	return dir, nil
}

// inputFlags are the flags that say how to read a prediction file: o is
// what they map onto.
type inputFlags struct {
	o          data.Options
	labelsFlag string // the flag that names the labels file; "" means --labels
	valWeights string // --val-weights: the validation set's sample weights
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.o.Labels, "labels", "", "read the labels from `FILE` (.npy, or text with one label per line) instead of the last column; for a stream of several shards, a glob or directory of one labels file per shard, paired in sorted order")
	fs.BoolVar(&f.o.Logits, "logits", false, "the prediction columns are logits (softmax; one column: sigmoid)")
	fs.StringVar(&f.o.Format, "format", "", "input `format`: "+strings.Join(data.Formats(), ", ")+" (default: by extension)")
	fs.BoolVar(&f.o.Renormalize, "renormalize", false, "divide rows whose sum is off by more than the tolerance by their sum instead of failing")
	fs.Float64Var(&f.o.Tolerance, "tolerance", data.DefaultTolerance, "largest accepted |row sum - 1|")
}

// registerWeights adds --weights (and, with val, --val-weights for the
// validation set).
func (f *inputFlags) registerWeights(fs *pflag.FlagSet, val bool) {
	fs.StringVar(&f.o.Weights, "weights", "", "read sample weights from `FILE` (.npy, or text with one number per line); without it a CSV column headed weight, a \"weight\" key in JSON Lines or an NPZ weights array is used, if present")
	if val {
		fs.StringVar(&f.valWeights, "val-weights", "", "sample weights of the --val set: `FILE` as for --weights")
	}
}

// load reads and validates the prediction file.
func (f *inputFlags) load(cmd *Command, name string) (*data.Set, error) {
	return f.loadWith(cmd, name, false, 0)
}

// loadWith reads the prediction file (data.Load); unlabeled allows a file
// without labels; k (0: unknown) is the number of prediction columns
// expected, so that a CSV with k+1 columns has its labels last. Every
// error is the input's (a file that cannot be opened too); a missing
// labels column names the flag that gives them.
func (f *inputFlags) loadWith(cmd *Command, name string, unlabeled bool, k int) (*data.Set, error) {
	o := f.o
	o.Unlabeled, o.K = unlabeled, k
	s, err := data.Load(name, o)
	if errors.Is(err, data.ErrNoLabels) {
		err = fmt.Errorf("%w (%s FILE)", err, cmp.Or(f.labelsFlag, "--labels"))
	}
	if err != nil {
		return nil, inputError{err}
	}
	return s.ScaledWeights(), nil // weights in their normalised form: the same answer for any common factor
}

// loadVal loads a validation set named by --val with the same input flags
// and its own labels file (nil when name is ""); it must have want classes
// (want 0: any).
func (f *inputFlags) loadVal(cmd *Command, name, labels string, want int) (*data.Set, error) {
	if name == "" {
		return nil, nil
	}
	vf := *f
	vf.o.Labels, vf.labelsFlag, vf.o.Weights = labels, "--val-labels", f.valWeights
	vs, err := vf.load(cmd, name)
	if err != nil {
		return nil, err
	}
	if want > 0 && vs.K != want {
		return nil, usageErrorf("%s has K = %d, the predictions K = %d", vs.File, vs.K, want)
	}
	return vs, nil
}
