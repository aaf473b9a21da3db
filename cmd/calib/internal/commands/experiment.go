package commands

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/cmd/calib/internal/demo"
	"github.com/calib-dev/calib/experiment"
	"github.com/calib-dev/calib/experiment/training"
	"github.com/calib-dev/calib/variational"
)

// experimentFlags are the flags shared by the experiments.
type experimentFlags struct {
	quick, progress bool
	dir             string
	seed            uint64
	workers         int
}

// command returns the experiment command use (its long help
// help/NAME.txt), with the shared flags.
func (f *experimentFlags) command(use, short string, args PositionalArgs, runE func(cmd *Command, args []string) error) *Command {
	cmd := command(use, short, args, runE)
	fs := cmd.Flags()
	fs.BoolVar(&f.quick, "quick", false, "a small version that runs in under 30 s (what CI runs)")
	fs.BoolVar(&f.progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	fs.StringVarP(&f.dir, "output", "o", "", "`DIR` for the table, the JSON and the figures (default: a new temporary directory)")
	fs.Uint64Var(&f.seed, "seed", DefaultSeed, "seed of the synthetic data and the repetitions")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	return cmd
}

// run prepares the output directory (-o, or a new temporary one), runs an
// experiment with progress on stderr, saves its outputs there with the
// command's provenance (experiment.Save), and prints its table and the
// files written.
func (f *experimentFlags) run(cmd *Command, name string, run func(dir string, ui *progressUI) (experiment.Result, error)) error {
	dir, err := outputDir(f.dir, name)
	if err != nil {
		return err
	}
	start := time.Now()
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.progress)
	res, err := run(dir, ui)
	ui.wait()
	if err != nil {
		return err
	}
	files, err := experiment.Save(dir, name, res, newProvenance(cmd, cmd.Args()))
	if err != nil {
		return err
	}
	return experiment.WriteSummary(cmd.OutOrStdout(), res, files, time.Since(start))
}

func newExperimentCmd() *Command {
	cmd := command("experiment", "Reproduce the ECE^KDE paper's experiments (convergence, sharpness, binned-vs-kde, witness, training), measure the tests' size and power (tests) and every estimator against ground truth (estimators)", nil, nil)
	cmd.addCommand(newConvergenceCmd(), newSharpnessCmd(), newBinnedVsKDECmd(), newWitnessCmd(), newTrainingCmd(), newTestsCmd(), newEstimatorsCmd(), newHeadlineCmd(), newAlarmCmd())
	return cmd
}

func newAlarmCmd() *Command {
	var ef experimentFlags
	var o experiment.AlarmOptions
	cmd := ef.command("alarm", "calib serve's calibration alarm: its false-alarm rate and run length on calibrated streams, and its delay to detect a shift beside the optimal CUSUM and a windowed ECE rule", exactArgs(0),
		func(cmd *Command, args []string) error {
			for _, f := range []struct {
				name string
				v    int
			}{{"null-runs", o.NullRuns}, {"null-rows", o.NullRows}, {"arl-runs", o.ARLRuns}, {"delay-runs", o.DelayRuns}} {
				if f.v < 0 {
					return usageErrorf("--%s %d must not be negative (0: the default)", f.name, f.v)
				}
			}
			return ef.run(cmd, "alarm", func(_ string, ui *progressUI) (experiment.Result, error) {
				o.Quick, o.Seed, o.Workers, o.Progress = ef.quick, ef.seed, ef.workers, ui
				return experiment.Alarm(cmd.Context(), o)
			})
		})
	fs := cmd.Flags()
	fs.IntVar(&o.NullRuns, "null-runs", 0, "calibrated streams of the false-alarm study (0: 1000, 100 with --quick)")
	fs.IntVar(&o.NullRows, "null-rows", 0, "rows of each (0: 20,000, 5,000 with --quick)")
	fs.IntVar(&o.ARLRuns, "arl-runs", 0, "calibrated streams of the run-length study and of the windowed ECE's threshold (0: 200, 10 with --quick)")
	fs.IntVar(&o.DelayRuns, "delay-runs", 0, "streams per shift and label delay of the delay study (0: 100, 10 with --quick)")
	return cmd
}

func newConvergenceCmd() *Command {
	var ef experimentFlags
	var groundSamples int
	cmd := ef.command("convergence", "ECE^KDE and binned ECE against n and against h, with the Monte Carlo ground truth (paper Fig. 2a)", exactArgs(0),
		func(cmd *Command, args []string) error {
			return ef.run(cmd, "convergence", func(_ string, ui *progressUI) (experiment.Result, error) {
				return experiment.Convergence(cmd.Context(), experiment.ConvergenceOptions{Quick: ef.quick, Seed: ef.seed, Workers: ef.workers,
					GroundSamples: groundSamples, Progress: ui})
			})
		})
	cmd.Flags().IntVar(&groundSamples, "ground-samples", 0, "Monte Carlo samples of each ground truth (default 1e7, 1e5 with --quick)")
	return cmd
}

func newBinnedVsKDECmd() *Command {
	var ef experimentFlags
	var classes, split string
	var reps int
	cmd := ef.command("binned-vs-kde [LOGIT_DIR]", "ECE^KDE against binned ECE on subsamples of real 3-class predictions (paper appendices F, G)", maximumArgs(1),
		func(cmd *Command, args []string) error {
			s, err := demo.Load(split)
			if len(args) == 1 {
				s, err = experiment.LoadLogitDir(args[0], split)
			}
			if err != nil {
				return err
			}
			cls, err := experiment.ParseClasses(classes)
			if err != nil {
				return usageErrorf("--%v", err)
			}
			return ef.run(cmd, "binned-vs-kde", func(_ string, ui *progressUI) (experiment.Result, error) {
				res, err := experiment.BinnedVsKDE(cmd.Context(), s.File, s.Probs, s.Labels, s.K, experiment.BinnedVsKDEOptions{Classes: cls, Reps: reps,
					Quick: ef.quick, Seed: ef.seed, Workers: ef.workers, Progress: ui})
				if err != nil {
					return nil, usageErrorf("%v", err)
				}
				return res, nil
			})
		})
	cmd.Flags().StringVar(&classes, "classes", "0,1,2", "the three classes `a,b,c` kept")
	cmd.Flags().StringVar(&split, "split", "test", "the split read: test or val")
	cmd.Flags().IntVar(&reps, "reps", 100, "random subsamples per size")
	return cmd
}

func newWitnessCmd() *Command {
	var ef experimentFlags
	var split string
	var resamples int
	cmd := ef.command("witness [LOGIT_DIR ...]", "The converging canonical estimators (ece_witness) beside the plug-in and binned ones on real predictions", nil,
		func(cmd *Command, args []string) error {
			var sets []experiment.RealSet
			for _, d := range args {
				s, err := experiment.LoadLogitDir(d, split)
				if err != nil {
					return err
				}
				sets = append(sets, experiment.RealSetOf(filepath.Base(filepath.Clean(d)), s))
			}
			if len(args) == 0 {
				s, err := demo.Load(split)
				if err != nil {
					return err
				}
				sets = append(sets, experiment.RealSetOf(demo.Name, s))
			}
			return ef.run(cmd, "witness", func(_ string, ui *progressUI) (experiment.Result, error) {
				return experiment.RealWitness(cmd.Context(), sets, experiment.RealWitnessOptions{Resamples: resamples, Quick: ef.quick, Seed: ef.seed,
					Workers: ef.workers, Progress: ui})
			})
		})
	cmd.Flags().StringVar(&split, "split", "test", "the split read: test or val")
	cmd.Flags().IntVar(&resamples, "resamples", 2, "label sets drawn from the predictions")
	return cmd
}

func newSharpnessCmd() *Command {
	var ef experimentFlags
	var o experiment.SharpnessOptions
	cmd := ef.command("sharpness", "Bias of the sharpness ratio: eq. 7 against its appendix D debiasing, with ground truth (paper Fig. 2b)", exactArgs(0),
		func(cmd *Command, args []string) error {
			return ef.run(cmd, "sharpness", func(_ string, ui *progressUI) (experiment.Result, error) {
				o.Quick, o.Seed, o.Workers = ef.quick, ef.seed, ef.workers
				defer ui.Status("sharpness experiment")()
				res, err := experiment.Sharpness(cmd.Context(), o)
				if err != nil {
					return nil, usageErrorf("%v", err)
				}
				return res, nil
			})
		})
	fs := cmd.Flags()
	fs.Float64Var(&o.Bandwidth, "bandwidth", 0.5, "Beta kernel bandwidth h")
	fs.Float64Var(&o.Location, "location", 0.17, "the evaluation point x0")
	fs.Float64Var(&o.Slope, "slope", 2, "a of the sigmoidal map f = sigmoid(a logit(s))")
	fs.IntVar(&o.Reps, "reps", 10000, "repetitions per n")
	fs.IntVar(&o.GroundSamples, "ground-samples", 100_000_000, "Monte Carlo samples of the ground truth")
	return cmd
}

func newTrainingCmd() *Command {
	var ef experimentFlags
	var sets string
	var seeds int
	cmd := command("training", "Train MLPs with XE, KDE-XE, MMCE, focal loss and label smoothing on the UCI sets (paper Tables 2-4, Fig. 4)", exactArgs(0), func(cmd *Command, args []string) error {
		list, err := training.ParseSets(sets)
		if err != nil {
			return usageErrorf("--sets: %v", err)
		}
		return ef.run(cmd, "training", func(dir string, ui *progressUI) (experiment.Result, error) {
			return training.Run(cmd.Context(), training.Options{Sets: list, Seeds: seeds, Quick: ef.quick, Dir: dir, Workers: ef.workers, Progress: ui})
		})
	})
	fs := cmd.Flags()
	fs.BoolVar(&ef.quick, "quick", false, "vehicle only, 8 epochs, 2 seeds (under 30 s; what CI runs)")
	fs.StringVarP(&ef.dir, "output", "o", "", "`DIR` for the cache of finished runs, the table, the JSON and the figure (default: a new temporary directory)")
	fs.StringVar(&sets, "sets", "", "comma-separated data sets (default: all five)")
	fs.IntVar(&seeds, "seeds", 0, "seeds per configuration (default 3, 2 with --quick)")
	fs.IntVar(&ef.workers, "workers", 0, "runs trained at once (0: all cores)")
	fs.BoolVar(&ef.progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	return cmd
}

func newTestsCmd() *Command {
	var ef experimentFlags
	var split, sizes, ks, tests string
	var power bool
	var o experiment.TestsOptions
	cmd := ef.command("tests [LOGIT_DIR ...]", "Size and power of calib test's tests: rejection rates on calibrated synthetic and real predictions, and against miscalibrated ones", nil,
		func(cmd *Command, args []string) error {
			if o.Sets < 0 || o.Resamples < 0 || o.PowerSets < 0 {
				return usageErrorf("--sets, --resamples and --power-sets must not be negative (0: the default)")
			}
			if least := calibtest.MinResamples(0.01); o.Resamples != 0 && o.Resamples < least {
				return usageErrorf("--resamples %d: a resampled p-value is at least 1/(B+1), so none could reach the study's alpha = 0.01; want at least %d", o.Resamples, least)
			}
			if cmd.Flags().Changed("power-sets") && !power {
				return usageErrorf("--power-sets applies to the power study, which --power=false leaves out")
			}
			if cmd.Flags().Changed("split") && len(args) == 0 {
				return usageErrorf("--split applies to the LOGIT_DIR arguments, and none is given")
			}
			var err error
			if o.Sizes, err = intList("--sizes", sizes); err != nil {
				return err
			}
			if o.Ks, err = intList("--ks", ks); err != nil {
				return err
			}
			if tests != "" {
				o.Tests = strings.Split(tests, ",")
				if err := (calibtest.Options{Tests: o.Tests}).Validate(); err != nil {
					return usageErrorf("--tests: %v", err)
				}
			}
			o.NoPower = !power
			for _, d := range args {
				s, err := experiment.LoadLogitDir(d, split)
				if err != nil {
					return err
				}
				o.Real = append(o.Real, experiment.RealSetOf(filepath.Base(filepath.Clean(d)), s))
			}
			return ef.run(cmd, "tests", func(_ string, ui *progressUI) (experiment.Result, error) {
				o.Quick, o.Seed, o.Workers, o.Progress = ef.quick, ef.seed, ef.workers, ui
				return experiment.Tests(cmd.Context(), o)
			})
		})
	fs := cmd.Flags()
	fs.StringVar(&split, "split", "test", "the split of each LOGIT_DIR read: test or val")
	fs.IntVar(&o.Sets, "sets", 0, "calibrated data sets per cell of the size study (0: 1000, 40 with --quick)")
	fs.IntVar(&o.Resamples, "resamples", 0, "resamples of the consistency-resampling and bootstrap tests (0: 99, so that the levels 0.05 and 0.01 are exact)")
	fs.IntVar(&o.PowerSets, "power-sets", 0, "data sets per point of the power curves (0: 200, 10 with --quick)")
	fs.StringVar(&sizes, "sizes", "", "n of the size study, comma-separated (default 100,1000,10000)")
	fs.StringVar(&ks, "ks", "", "K of the synthetic size study, comma-separated (default 2,4,10,100)")
	fs.StringVar(&tests, "tests", "", "tests of the size study, comma-separated (default: calib test's, with ece_kde and skce_u at n <= 1,000, K <= 10)")
	fs.BoolVar(&power, "power", true, "run the power study (--power=false: the size study only)")
	return cmd
}

// intList parses a comma-separated list of integers >= 2 ("" gives nil).
func intList(flag, s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 2 {
			return nil, usageErrorf("%s: %q is not an integer >= 2", flag, f)
		}
		out = append(out, v)
	}
	return out, nil
}

func newHeadlineCmd() *Command {
	var ef experimentFlags
	var o experiment.HeadlineOptions
	var ks, ns string
	cmd := ef.command("headline", "calib eval's headline and its interval against the Monte Carlo truth: K = 2 to 100, n = 1,000 to 20,000, miscalibrations inside and outside the recalibration families", exactArgs(0),
		func(cmd *Command, args []string) error {
			if o.Reps < 0 || o.GroundSamples < 0 {
				return usageErrorf("--reps and --ground-samples must not be negative (0: the default)")
			}
			var err error
			for _, f := range []struct {
				name, v string
				dst     *[]int
			}{{"ks", ks, &o.Ks}, {"ns", ns, &o.Ns}} {
				if cmd.Flags().Changed(f.name) && strings.TrimSpace(f.v) == "" {
					return usageErrorf("--%s: an empty list (leave the flag out for the default)", f.name)
				}
				if *f.dst, err = intList("--"+f.name, f.v); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("misc") && len(o.Misc) == 0 {
				return usageErrorf("--misc: an empty list (leave the flag out for all)")
			}
			valid := []string{}
			for _, fa := range experiment.HeadlineFamilies(2) {
				valid = append(valid, string(fa.Miscalibration))
			}
			for _, m := range o.Misc {
				if !slices.Contains(valid, m) {
					return usageErrorf("--misc: unknown miscalibration %q (valid: %s)", m, strings.Join(valid, ", "))
				}
			}
			if _, err := variational.ParseFamilies(o.Family); err != nil {
				return usageErrorf("--variational-family: %v", err)
			}
			return ef.run(cmd, "headline", func(_ string, ui *progressUI) (experiment.Result, error) {
				o.Quick, o.Seed, o.Workers, o.Progress = ef.quick, ef.seed, ef.workers, ui
				return experiment.Headline(cmd.Context(), o)
			})
		})
	fs := cmd.Flags()
	fs.StringVar(&ks, "ks", "", "K of the grid, comma-separated (default 2,10,50,100)")
	fs.StringVar(&ns, "ns", "", "n of the grid, comma-separated (default 1000,5000,20000)")
	fs.StringSliceVar(&o.Misc, "misc", nil, "the miscalibrations run (default all: temperature, smoothing, prior_shift, entropic, split, one_class, calibrated)")
	fs.StringVar(&o.Family, "variational-family", "", "the headline's recalibration families (calib eval --variational-family; default auto)")
	fs.IntVar(&o.Reps, "reps", 0, "data sets per cell (default 40)")
	fs.IntVar(&o.GroundSamples, "ground-samples", 0, "Monte Carlo samples of each ground truth (default 200,000)")
	return cmd
}

func newEstimatorsCmd() *Command {
	var ef experimentFlags
	var o experiment.EstimatorsOptions
	cmd := ef.command("estimators", "Every canonical calibration-error estimator against the Monte Carlo truth: bias, spread, RMSE and interval coverage, K = 2 to 100", exactArgs(0),
		func(cmd *Command, args []string) error {
			if o.Reps < 0 || o.GroundSamples < 0 {
				return usageErrorf("--reps and --ground-samples must not be negative (0: the default)")
			}
			for _, e := range o.Estimators {
				if !slices.Contains(experiment.AllEstimators, e) {
					return usageErrorf("--estimators: unknown estimator %q (valid: %s)", e, strings.Join(experiment.AllEstimators, ", "))
				}
			}
			return ef.run(cmd, "estimators", func(_ string, ui *progressUI) (experiment.Result, error) {
				o.Quick, o.Seed, o.Workers, o.Progress = ef.quick, ef.seed, ef.workers, ui
				return experiment.Estimators(cmd.Context(), o)
			})
		})
	cmd.Flags().StringSliceVar(&o.Parts, "parts", nil, "the parts run: synthetic, sampled, paper (default synthetic and paper)")
	cmd.Flags().StringSliceVar(&o.Estimators, "estimators", nil, "the estimators run, e.g. variational,variational-conditional (default all: "+strings.Join(experiment.AllEstimators, ", ")+")")
	cmd.Flags().IntVar(&o.Reps, "reps", 0, "data sets per cell (default 8, 2 with --quick)")
	cmd.Flags().IntVar(&o.GroundSamples, "ground-samples", 0, "Monte Carlo samples of each ground truth (default 200,000, 20,000 with --quick)")
	return cmd
}
