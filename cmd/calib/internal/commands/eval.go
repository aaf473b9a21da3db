package commands

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/evaluate/evaltext"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/smooth"
	"github.com/calib-dev/calib/variational"
)

// evalFlags are the metric flags of eval, report and demo: they map onto
// evaluate.Options, o, and the text of its lists and names, text.
type evalFlags struct {
	o              evaluate.Options
	text           evalflag.Text
	modeSet        bool // eval's --mode was given: it means --metrics ece_kde
	calibrator     string
	convention     string
	json, progress bool

	// The options parsed from the flags (options), once.
	parsed        bool
	parsedOptions evaluate.Options
	parseErr      error
}

func (f *evalFlags) register(cmd *Command) {
	fs := cmd.Flags()
	evalflag.Register(fs, &f.text, &f.o, evalflag.Eval)
	fs.StringVar(&f.text.Objective, "bandwidth-objective", "loo", "objective of --bandwidth auto: loo, or reference (the reference code's l(h) - n log h, unrefined)")
	fs.BoolVar(&f.o.Exact, "exact", false, "ece_kde and sharpness: compute top_label, binary and class_wise (and their bandwidths) by the exact O(n^2) sweeps instead of the tree of series, whose kernel sums are within about 1e-13 relative")
	fs.BoolVar(&f.o.Debias, "debias", false, "also report ece_kde_debiased (every kernel ratio debiased to O(n^-3), ECE^KDE paper appendix C: removes the ratio's O(1/n) bias, not the smoothing bias) and sharpness_debiased (eq. 7's ratio debiased to O(n^-2), appendix D)")
	fs.StringVar(&f.convention, "convention", "calib", "whose definition the top-label ece_bin and mce follow: calib, sklearn, torchmetrics, netcal, relplot, hendrycks, robustness_metrics or torch_uncertainty (each entry says its convention); relplot-1.0.1 also computes smece as relplot 1.0.1 did")
	fs.IntVar(&f.o.ACE.Bins, "ace-bins", metric.DefaultBins, "bins of ace (robustness_metrics' registered ace uses 30; torch-uncertainty and netcal default to 10)")
	fs.BoolVar(&f.o.CI, "ci", false, "add bootstrap intervals to every metric without an interval of its own (percentile for means, centred on the estimate for the biased estimators; ece_variational keeps its cross-fit interval alone)")
	fs.BoolVar(&f.o.CIExact, "ci-exact", false, "ece_kde, ece_witness and sharpness: recompute the estimate on every resample (implies --ci; O(n^2) per resample)")
	fs.IntVar(&f.o.Resamples, "ci-resamples", 200, "bootstrap resamples")
	fs.Float64Var(&f.o.Level, "ci-level", 0.95, "bootstrap interval level")
	fs.BoolVar(&f.o.PValues, "p-values", false, "attach to ece_kde, ece_bin, mce, ece_bin_debiased, ks and mmce the p-value of the test of calibration with that number as statistic (consistency resampling: labels redrawn from the predictions)")
	fs.IntVar(&f.o.PValueResamples, "p-resamples", 1000, "resamples of --p-values")
	fs.Uint64Var(&f.o.Seed, "seed", DefaultSeed, "seed of the bootstrap, of the p-values' resamples and of ece_witness's cross-fitting splits (same seed, same output; 0 means 1)")
	fs.IntVar(&f.o.Workers, "workers", 0, "goroutines (0: all cores); results are identical for any value")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.progress, "progress", true, "show progress bars on stderr when it is a terminal")
	fs.StringVar(&f.calibrator, "calibrator", "", "apply the map `MAP.json` (from calib fit) before measuring")
}

func newEvalCmd() *Command {
	var in inputFlags
	var ef evalFlags
	var sf streamFlags
	cmd := command("eval PRED", "Measure the calibration of a prediction file (ECE^KDE, binned ECE, KS, MMCE, proper scores)", exactArgs(1), func(cmd *Command, args []string) error {
		if err := ef.evalOnly(cmd.Flags()); err != nil {
			return err
		}
		o, err := ef.options()
		if err != nil {
			return err
		}
		var out *evaluate.Evaluation
		var stream bool
		var names []string
		if _, ok := cmd.arraysOf(args[0]); ok {
			// Arrays in memory: evaluated whole, whatever a file of
			// that name would be.
			if err = sf.inMemory(cmd.Flags(), args[0]); err == nil {
				err = unread(cmd.Flags(), o, o.Metrics)
			}
		} else {
			// The options, before the file is looked at: the stream's
			// with --stream, else the in-memory evaluation's (the
			// stream's own flags are left to decide, which says to add
			// --stream).
			fs := cmd.Flags()
			if sf.on {
				_, err = ef.streamUnread(fs, &sf)
			} else {
				err = unreadGiven(func(name string) bool { return fs.Changed(name) && !streamOnly[name] }, o, o.Metrics)
			}
			if err != nil {
				return err
			}
			stream, names, err = sf.decide(cmd, args[0])
			if err == nil && stream && !sf.on { // streamed for its size or shards
				_, err = ef.streamUnread(fs, &sf)
			}
		}
		if err != nil {
			return err
		}
		switch {
		case stream:
			out, err = ef.stream(cmd, &in, &sf, args, names)
		case names != nil: // a glob or directory of one file
			out, err = ef.evaluate(cmd, &in, names)
		default:
			out, err = ef.evaluate(cmd, &in, args)
		}
		var de *data.Error
		if err != nil && !stream && names != nil && errors.As(err, &de) && de.File != args[0] {
			// Say why that file was read: PRED named a directory or glob.
			err = fmt.Errorf("%w (read as a prediction file because %s names it)", err, args[0])
		}
		if err != nil {
			return err
		}
		if ef.json {
			return evaluate.WriteJSON(cmd.OutOrStdout(), out)
		}
		return evaltext.WriteText(cmd.OutOrStdout(), out)
	})
	registerEval(cmd, &in, &ef, &sf)
	return cmd
}

// registerEval registers calib eval's flags on cmd: the input's, the
// metrics' and the stream's (eval itself and the accumulators'
// StreamOptions).
func registerEval(cmd *Command, in *inputFlags, ef *evalFlags, sf *streamFlags) {
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	ef.register(cmd)
	sf.register(cmd.Flags())
}

// evalOnly applies the rules of eval's flags that report and demo do not
// have: --mode alone means --metrics ece_kde, --bins implies --bin-rule
// fixed, and flags that the other flags make meaningless (they would be
// ignored without a word) are refused.
func (f *evalFlags) evalOnly(fs *pflag.FlagSet) error {
	f.modeSet = fs.Changed("mode")
	if err := f.paired(fs); err != nil {
		return err
	}
	if fs.Changed("bins") && fs.Changed("bin-rule") && f.text.BinRule != "fixed" {
		return usageErrorf("--bins %d sets the number of bins of --bin-rule fixed; --bin-rule %s chooses it from the data", f.o.Bins.Bins, f.text.BinRule)
	}
	if fs.Changed("bins") {
		f.text.BinRule = "fixed"
	}
	return nil
}

// unread refuses an option that no metric of ms (the parsed options';
// nil: the defaults) reads (evalflag.Readers), or that the values of the
// other options o leave unread (evalflag.Conflicts).
func unread(fs *pflag.FlagSet, o evaluate.Options, ms evaluate.MetricSet) error {
	return unreadGiven(fs.Changed, o, ms)
}

// unreadGiven is unread with given saying which flags were given.
func unreadGiven(given func(name string) bool, o evaluate.Options, ms evaluate.MetricSet) error {
	if err := evalflag.Unread(given, ms); err != nil {
		return optionError("", err)
	}
	if err := evalflag.Conflicts(given, o, ms, given("mode")); err != nil {
		return optionError("", err)
	}
	return nil
}

// evaluate reads the map of --calibrator (before the data), loads the set
// args[0], applies the map and evaluates the set with progress on stderr;
// Seconds covers it all, the provenance records the input and the map.
func (f *evalFlags) evaluate(cmd *Command, in *inputFlags, args []string) (*evaluate.Evaluation, error) {
	start, prov := time.Now(), newProvenance(cmd, args)
	var c recal.Calibrator
	var err error
	if f.calibrator != "" {
		if c, err = recal.LoadFile(f.calibrator); err != nil {
			return nil, err
		}
	}
	s, err := in.load(cmd, args[0])
	if err != nil {
		return nil, err
	}
	kind := s.Kind()
	prov.AddInput("", s, in.o.Labels)
	if c != nil {
		if s, err = recal.Apply(c, s); err != nil {
			return nil, err
		}
		prov.Mapping = &data.Mapping{File: f.calibrator, Method: c.Info().Method}
	}
	o, err := f.options()
	if err == nil {
		err = f.checkSet(o, s)
	}
	if err != nil {
		return nil, err
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.progress)
	o.Progress = ui
	out, err := evaluate.Evaluate(cmd.Context(), s, o)
	ui.wait()
	if err != nil {
		return nil, err
	}
	out.Seconds, out.Provenance, out.Input = time.Since(start).Seconds(), prov, kind
	if c != nil {
		out.Calibrated = prov.Mapping.String()
	}
	return out, nil
}

// paired refuses the flags that only apply with another one, given
// without it (they would be ignored without a word): --ci-level and
// --ci-resamples without --ci, --p-resamples without --p-values.
func (f *evalFlags) paired(fs *pflag.FlagSet) error {
	if !f.o.CI && !f.o.CIExact {
		for _, name := range []string{"ci-level", "ci-resamples"} {
			if fs.Changed(name) {
				return usageErrorf("--%s applies to the bootstrap intervals: add --ci", name)
			}
		}
	}
	if !f.o.PValues && fs.Changed("p-resamples") {
		return usageErrorf("--p-resamples applies to the p-values: add --p-values")
	}
	return nil
}

// options parses the metric flags into evaluate.Options, once, before
// the data is read (their ranges were checked by flagRules; evaluate
// checks the options again for library callers): later calls return the
// same options, or the same error. What depends on the data (--ks-r
// against K, --mode binary against the columns) is checkSet's.
func (f *evalFlags) options() (evaluate.Options, error) {
	if !f.parsed {
		f.parsed = true
		f.parsedOptions, f.parseErr = f.parse()
	}
	return f.parsedOptions, f.parseErr
}

// checkSet checks the parsed options o against the set s once it is read
// (evalflag.CheckSet).
func (f *evalFlags) checkSet(o evaluate.Options, s *data.Set) error {
	if err := evalflag.CheckSet(o, s); err != nil {
		return optionError("", err)
	}
	return nil
}

// parse is options' one parse of the flags.
func (f *evalFlags) parse() (evaluate.Options, error) {
	o := f.o
	if f.modeSet && f.text.Metrics == "" { // --mode alone: ece_kde only, and its failure fails eval
		o.Metrics, o.Strict = evaluate.MetricSet{evaluate.ECEKDE}, true
	}
	if err := f.text.Parse(&o); err != nil {
		return o, optionError("", err)
	}
	if _, err := variational.ParseFamilies(o.Variational.Family); err != nil {
		return o, usageErrorf("--variational-family %q: %v", o.Variational.Family, err)
	}
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(f.convention)), "_", "-") {
	case "relplot-1.0.1", "relplot-1.0":
		o.Convention, o.SmECE.Convention = convention.Relplot, smooth.Relplot101
	default:
		n, err := convention.Parse(f.convention)
		if err != nil {
			return o, usageErrorf("--convention %q: %v", f.convention, pkgerr.Reason(err))
		}
		o.Convention = n
	}
	// Every option's range, checked once, by its metric's check
	// (evaluate.Options.Validate), before the data is read.
	if err := o.Validate(); err != nil {
		return o, optionError("", err)
	}
	return o, nil
}
