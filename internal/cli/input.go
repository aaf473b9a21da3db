package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
)

// inputFlags are the flags that say how to read a prediction file.
type inputFlags struct {
	labels      string
	labelsFlag  string // the flag that names the labels file; "" means --labels
	logits      bool
	format      string
	renormalize bool
	tolerance   float64
	weights     string // --weights: the sample-weights file ("": none, or in the predictions file)
	valWeights  string // --val-weights: the validation set's
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.labels, "labels", "", "read the labels from `FILE` (.npy, or text with one label per line) instead of the last column")
	fs.BoolVar(&f.logits, "logits", false, "the prediction columns are logits (softmax; one column: sigmoid)")
	fs.StringVar(&f.format, "format", "", "input `format`: "+strings.Join(data.Formats, ", ")+" (default: by extension)")
	fs.BoolVar(&f.renormalize, "renormalize", false, "divide rows whose sum is off by more than the tolerance by their sum instead of failing")
	fs.Float64Var(&f.tolerance, "tolerance", data.DefaultTolerance, "largest accepted |row sum - 1|")
}

// weightsUsage is the help of --weights.
const weightsUsage = "read sample weights from `FILE` (.npy, or text with one number per line); without it a CSV column headed weight, a \"weight\" key in JSON Lines or an NPZ weights array is used, if present"

// registerWeights adds --weights (and, with val, --val-weights for the
// validation set).
func (f *inputFlags) registerWeights(fs *pflag.FlagSet, val bool) {
	fs.StringVar(&f.weights, "weights", "", weightsUsage)
	if val {
		fs.StringVar(&f.valWeights, "val-weights", "", "sample weights of the --val set: `FILE` as for --weights")
	}
}

// check validates the input flags (before any file is read).
func (f *inputFlags) check() error {
	if f.format != "" && !slices.Contains(data.Formats, f.format) {
		return usageErrorf("--format %q: valid formats are %s", f.format, strings.Join(data.Formats, ", "))
	}
	if !(f.tolerance > 0 && f.tolerance < 1) {
		return usageErrorf("--tolerance %v: want a number in (0, 1)", f.tolerance)
	}
	return nil
}

// load reads and validates the prediction file.
func (f *inputFlags) load(name string) (*data.Set, error) { return f.loadWith(name, false, 0) }

// loadWith reads the prediction file; unlabeled allows a file without
// labels; k (0: unknown) is the number of prediction columns expected, so
// that a CSV with k+1 columns has its labels last.
func (f *inputFlags) loadWith(name string, unlabeled bool, k int) (*data.Set, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	s, err := data.Load(name, data.Options{Format: f.format, Labels: f.labels, Weights: f.weights, Logits: f.logits, Renormalize: f.renormalize, Tolerance: f.tolerance, Unlabeled: unlabeled, K: k})
	if err != nil {
		var de *data.Error
		if !errors.As(err, &de) {
			err = inputError{err} // a file that cannot be opened is bad input too
		}
		if errors.Is(err, data.ErrNoLabels) {
			flag := f.labelsFlag
			if flag == "" {
				flag = "--labels"
			}
			err = inputError{fmt.Errorf("%w (%s FILE)", err, flag)}
		}
		return nil, err
	}
	return s, nil
}

// modeNotions parses --mode (evaluate.Notions) with a usage error.
func modeNotions(mode string, s *data.Set) ([]kde.Notion, string, error) {
	n, note, err := evaluate.Notions(mode, s)
	if err != nil {
		return nil, "", usageErrorf("--mode: %s", strings.TrimPrefix(err.Error(), evaluate.ErrOptions.Error()+": "))
	}
	return n, note, nil
}

// parsePs parses --p: a comma-separated list of exponents >= 1.
func parsePs(s string) ([]float64, error) {
	var ps []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 1 && p <= kde.MaxP) {
			return nil, usageErrorf("--p %q: each p must be a number in [1, %d]", f, kde.MaxP)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, usageErrorf("--p: no exponent given")
	}
	return ps, nil
}

// bandwidthFlag is the parsed --bandwidth: auto or a fixed value.
type bandwidthFlag struct {
	auto  bool
	value float64
}

func parseBandwidth(s string) (bandwidthFlag, error) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return bandwidthFlag{auto: true}, nil
	}
	h, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(h > 0) || math.IsInf(h, 0) {
		return bandwidthFlag{}, usageErrorf("--bandwidth %q: want auto or a positive number", s)
	}
	return bandwidthFlag{value: h}, nil
}

// exactArgs is cobra.ExactArgs with an input error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), got %d; usage: %s", cmd.Name(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// loadVal loads a validation set named by --val with the same input flags
// and its own labels file (nil when name is ""); it must have want classes
// (want 0: any).
func (f *inputFlags) loadVal(name, labels string, want int) (*data.Set, error) {
	if name == "" {
		return nil, nil
	}
	vf := *f
	vf.labels, vf.labelsFlag, vf.weights = labels, "--val-labels", f.valWeights
	vs, err := vf.load(name)
	if err != nil {
		return nil, err
	}
	if want > 0 && vs.K != want {
		return nil, usageErrorf("%s has K = %d, the predictions K = %d", vs.File, vs.K, want)
	}
	return vs, nil
}
