package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/experiment"
	"github.com/calib-dev/calib/experiment/training"
	"github.com/calib-dev/calib/internal/demo"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train/tabular"
)

// experimentFlags are the flags shared by the experiments.
type experimentFlags struct {
	quick    bool
	progress bool
	dir      string
	seed     uint64
	workers  int
}

func (f *experimentFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&f.quick, "quick", false, "a small version that runs in under 30 s (what CI runs)")
	fs.BoolVar(&f.progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	fs.StringVarP(&f.dir, "output", "o", "", "`DIR` for the table, the JSON and the figures (default: a new temporary directory)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic data and the repetitions")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
}

// outDir returns the output directory, created and checked: -o, or a new
// temporary one.
func (f *experimentFlags) outDir(name string) (string, error) {
	if f.dir != "" {
		return f.dir, prepareDir("-o", f.dir)
	}
	return os.MkdirTemp("", "calib-"+name+"-")
}

func newExperimentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Reproduce the ECE^KDE paper's experiments (convergence, sharpness, binned-vs-kde, witness, training)",
		Long: `experiment runs the studies behind the ECE^KDE paper's claims: on synthetic data
with known ground truth, on real predictions, and calibration-regularized
training on real tabular data. Each writes a table (.txt), the rows as JSON and its
figures (.svg, .png) to -o DIR (default: a new temporary directory) and
prints the table; --quick runs a small version in under 30 seconds.`,
	}
	cmd.AddCommand(newConvergenceCmd(), newSharpnessCmd(), newBinnedVsKDECmd(), newWitnessCmd(), newTrainingCmd())
	return cmd
}

func newConvergenceCmd() *cobra.Command {
	var ef experimentFlags
	var groundSamples int
	cmd := &cobra.Command{
		Use:   "convergence",
		Short: "ECE^KDE and binned ECE against n and against h, with the Monte Carlo ground truth (paper Fig. 2a)",
		Long: `convergence draws the paper's synthetic setup (x uniform on the simplex,
p = softmax(log x / t1), labels from p, predictions f = softmax(log p / t2),
so E[y | f] = p and CE_1 = E||p - f||_1 is known by Monte Carlo) and reports:

 1. canonical CE_1 estimates against n (100 to 20,000; K = 4 and 8;
    t1 = t2 = 0.6): ECE^KDE with the LOO bandwidth (correct and reference
    objectives) and at h = 0.01, 0.05, 0.2, and the binned estimate with 2,
    3, 5, 10 bins per class and Doane's rule;
 2. the ECE^KDE estimate against h for n = 500, 2,000, 5,000 under three
    settings (t1, t2) = (0.6, 0.6), (0.9, 0.6), (1.0, 2.0), and the h where
    it crosses the truth;
 3. the estimate under each bandwidth rule at those points, and the
    converging estimators of calib eval's ece_witness (the cross-fitted
    witness for CE_1; the debiased U-statistic for CE_2^2, beside the
    plug-in at the LOO bandwidth);
 4. on calibrated predictions (t2 = 1, truth 0): the plug-in, the witness
    and the U-statistic against n;
 5. the same three with many classes (K = 20 and 100), n = 2,000 and 5,000.

The ground truths are CE_1 and CE_2^2 of each setting. Defaults take about
15 minutes on 2 cores.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := ef.outDir("convergence")
			if err != nil {
				return err
			}
			start := time.Now()
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
			res, err := experiment.Convergence(experiment.ConvergenceOptions{Context: cmd.Context(), Quick: ef.quick, Seed: ef.seed, Workers: ef.workers,
				GroundSamples: groundSamples, Progress: ui})
			ui.wait()
			if err != nil {
				return err
			}
			return finishExperiment(cmd, dir, "convergence", res, res.WriteTable, res.Figures(), start)
		},
	}
	ef.register(cmd)
	cmd.Flags().IntVar(&groundSamples, "ground-samples", 0, "Monte Carlo samples of each ground truth (default 1e7, 1e5 with --quick)")
	return cmd
}

func newBinnedVsKDECmd() *cobra.Command {
	var ef experimentFlags
	var classes, split string
	var reps int
	cmd := &cobra.Command{
		Use:   "binned-vs-kde [LOGIT_DIR]",
		Short: "ECE^KDE against binned ECE on subsamples of real 3-class predictions (paper appendices F, G)",
		Long: `binned-vs-kde reads LOGIT_DIR/SPLIT_logits.npy and SPLIT_labels.npy (default:
the embedded CIFAR-10 ResNet-110 set), keeps the samples whose label is one
of three classes (--classes, default 0,1,2) and renormalises those three
probabilities (a proxy for the paper's 3-class ResNet-56 models). For the
canonical, class-wise and top-label notions it computes CE_1 with ECE^KDE
(LOO bandwidth of the data at hand) and with bins (Doane's rule) on all of
them and on random subsamples of 100, 500 and 1,000 (--reps each), and fits
the slope of log mean |estimate - full-data value| against log n (the paper
reports about -0.5).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s *data.Set
			var err error
			if len(args) == 1 {
				s, err = loadLogitDir(args[0], split)
			} else {
				s, err = demo.Load(split)
			}
			if err != nil {
				return err
			}
			var cls []int
			for _, f := range strings.Split(classes, ",") {
				c, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					return usageErrorf("--classes %q: three integers a,b,c", classes)
				}
				cls = append(cls, c)
			}
			dir, err := ef.outDir("binned-vs-kde")
			if err != nil {
				return err
			}
			start := time.Now()
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
			res, err := experiment.BinnedVsKDE(s.File, s.Probs, s.Labels, s.K, experiment.BinnedVsKDEOptions{Context: cmd.Context(), Classes: cls, Reps: reps,
				Quick: ef.quick, Seed: ef.seed, Workers: ef.workers, Progress: ui})
			ui.wait()
			if err != nil {
				return usageErrorf("%v", err)
			}
			return finishExperiment(cmd, dir, "binned-vs-kde", res, res.WriteTable, res.Figures(), start)
		},
	}
	ef.register(cmd)
	cmd.Flags().StringVar(&classes, "classes", "0,1,2", "the three classes `a,b,c` kept")
	cmd.Flags().StringVar(&split, "split", "test", "the split read: test or val")
	cmd.Flags().IntVar(&reps, "reps", 100, "random subsamples per size")
	return cmd
}

func newWitnessCmd() *cobra.Command {
	var ef experimentFlags
	var split string
	var resamples int
	cmd := &cobra.Command{
		Use:   "witness [LOGIT_DIR ...]",
		Short: "The converging canonical estimators (ece_witness) beside the plug-in and binned ones on real predictions",
		Long: `witness reads LOGIT_DIR/SPLIT_logits.npy and SPLIT_labels.npy for every
LOGIT_DIR (default: the embedded CIFAR-10 ResNet-110 set) and estimates the
canonical calibration error with the plug-in ECE^KDE (LOO bandwidth), the
binned estimate (2 bins per class), the cross-fitted witness (CE_1) and the
debiased U-statistic (CE_2^2): once with the observed labels and, as a check
with known truth 0, with labels drawn from the model's own probabilities
(--resamples sets).`,
		Example: `  calib experiment witness
  calib experiment witness ../shared/data/logits/*/ -o docs/experiments`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sets []experiment.RealSet
			add := func(name string, s *data.Set) {
				sets = append(sets, experiment.RealSet{Name: name, Probs: s.Probs, Labels: s.Labels, K: s.K})
			}
			if len(args) == 0 {
				s, err := demo.Load(split)
				if err != nil {
					return err
				}
				add(demo.Name, s)
			}
			for _, d := range args {
				s, err := loadLogitDir(d, split)
				if err != nil {
					return err
				}
				add(filepath.Base(filepath.Clean(d)), s)
			}
			if resamples < 1 {
				return usageErrorf("--resamples %d: need at least 1", resamples)
			}
			dir, err := ef.outDir("witness")
			if err != nil {
				return err
			}
			start := time.Now()
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
			res, err := experiment.RealWitness(sets, experiment.RealWitnessOptions{Context: cmd.Context(), Resamples: resamples, Quick: ef.quick, Seed: ef.seed,
				Workers: ef.workers, Progress: ui})
			ui.wait()
			if err != nil {
				return err
			}
			return finishExperiment(cmd, dir, "witness", res, res.WriteTable, res.Figures(), start)
		},
	}
	ef.register(cmd)
	cmd.Flags().StringVar(&split, "split", "test", "the split read: test or val")
	cmd.Flags().IntVar(&resamples, "resamples", 2, "label sets drawn from the predictions")
	return cmd
}

// loadLogitDir reads DIR/SPLIT_logits.npy with DIR/SPLIT_labels.npy (the
// layout of the logit sets).
func loadLogitDir(dir, split string) (*data.Set, error) {
	in := inputFlags{labels: filepath.Join(dir, split+"_labels.npy"), logits: true, tolerance: data.DefaultTolerance}
	return in.load(filepath.Join(dir, split+"_logits.npy"))
}

// withProvenance returns v's JSON object with a "provenance" key added (v
// itself when it is not an object).
func withProvenance(v any, p *provenance) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return v
	}
	if pb, err := json.Marshal(p); err == nil {
		m["provenance"] = pb
	}
	return m
}

// finishExperiment saves an experiment's outputs and prints its table and
// the files written.
func finishExperiment(cmd *cobra.Command, dir, name string, v any, table func(io.Writer) error, figs map[string]report.Figure, start time.Time) error {
	files, err := experiment.Save(dir, name, withProvenance(v, newProvenance(cmd, cmd.Flags().Args())), table, figs)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if err := table(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%.0f s; wrote:\n", time.Since(start).Seconds())
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	return nil
}

func newSharpnessCmd() *cobra.Command {
	var ef experimentFlags
	var o experiment.SharpnessOptions
	cmd := &cobra.Command{
		Use:   "sharpness",
		Short: "Bias of the sharpness ratio: eq. 7 against its appendix D debiasing, with ground truth (paper Fig. 2b)",
		Long: `sharpness draws calibrated binary scores s ~ U(0, 1) with labels
y ~ Bernoulli(s), reports them as f = sigmoid(a logit(s)) (--slope a,
default 2), and estimates the sharpness ratio (E[k y] / E[k])^2 at one
location (--location, default 0.17) with the Beta kernel (--bandwidth,
default 0.5) from n = 32 to 16,384 samples (--reps repetitions each,
default 10,000): eq. 7's partially debiased ratio of U-statistics and its
appendix D debiased version, against a Monte Carlo ground truth
(--ground-samples, default 1e8, streamed).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := ef.outDir("sharpness")
			if err != nil {
				return err
			}
			start := time.Now()
			o.Quick, o.Seed, o.Workers, o.Context = ef.quick, ef.seed, ef.workers, cmd.Context()
			done := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
			stop := done.status("sharpness experiment")
			res, err := experiment.Sharpness(o)
			stop()
			done.wait()
			if err != nil {
				return usageErrorf("%v", err)
			}
			return finishExperiment(cmd, dir, "sharpness", res, res.WriteTable, res.Figures(), start)
		},
	}
	ef.register(cmd)
	fs := cmd.Flags()
	fs.Float64Var(&o.Bandwidth, "bandwidth", 0.5, "Beta kernel bandwidth h")
	fs.Float64Var(&o.Location, "location", 0.17, "the evaluation point x0")
	fs.Float64Var(&o.Slope, "slope", 2, "a of the sigmoidal map f = sigmoid(a logit(s))")
	fs.IntVar(&o.Reps, "reps", 10000, "repetitions per n")
	fs.IntVar(&o.GroundSamples, "ground-samples", 100_000_000, "Monte Carlo samples of the ground truth")
	return cmd
}

func newTrainingCmd() *cobra.Command {
	var quick bool
	var dir, sets string
	var seeds, workers int
	progress := true
	cmd := &cobra.Command{
		Use:   "training",
		Short: "Train MLPs with XE, KDE-XE, MMCE, focal loss and label smoothing on the UCI sets (paper Tables 2-4, Fig. 4)",
		Long: `training runs the analogue of the ECE^KDE paper's Tables 2 to 4 and Figure 4
on the five embedded UCI data sets (vehicle, dna, satellite, letter,
shuttle): for each loss configuration (XE; KDE-XE with lambda 0.001, 0.01,
0.05, 0.1, 0.2, canonical p = 1, per-batch LOO bandwidth; MMCE with lambda
0.5, 1, 2, 4; focal FL-53; label smoothing 0.05, 0.1) and seed it trains
an MLP (2 x 64 ReLU, Adam 1e-3, batch 128 and at most 30 epochs; batch 64
and 100 epochs on vehicle, 10 epochs on shuttle; early stopping on the
validation NLL, patience 10) on the fixed stratified
60/20/20 split, fits a temperature on the validation split, and reports on
the test split accuracy, canonical L1 ECE^KDE, top-label ECE and NLL
before and after temperature scaling (mean and sd over seeds), the
accuracy/calibration trade-off figure, and the time per epoch of XE
against KDE-XE measured sequentially.

Every finished run is cached under DIR/runs, so an interrupted run resumes
where it stopped when given the same -o DIR. The full study takes about an
hour on 2 cores; --quick trains vehicle for 8 epochs with 2 seeds (CI).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				var err error
				if dir, err = os.MkdirTemp("", "calib-training-"); err != nil {
					return err
				}
			} else if err := prepareDir("-o", dir); err != nil {
				return err
			}
			var list []string
			if sets != "" {
				for _, s := range strings.Split(sets, ",") {
					s = strings.TrimSpace(s)
					if !slices.Contains(tabular.Names, s) {
						return usageErrorf("--sets: unknown data set %q (valid: %s)", s, strings.Join(tabular.Names, ", "))
					}
					list = append(list, s)
				}
			}
			start := time.Now()
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
			res, err := training.Run(training.Options{Context: cmd.Context(), Sets: list, Seeds: seeds, Quick: quick, Dir: dir, Workers: workers, Progress: ui})
			ui.wait()
			if err != nil {
				return err
			}
			return finishExperiment(cmd, dir, "training", res, res.WriteTable, res.Figures(), start)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&quick, "quick", false, "vehicle only, 8 epochs, 2 seeds (under 30 s; what CI runs)")
	fs.StringVarP(&dir, "output", "o", "", "`DIR` for the cache of finished runs, the table, the JSON and the figure (default: a new temporary directory)")
	fs.StringVar(&sets, "sets", "", "comma-separated data sets (default: all five)")
	fs.IntVar(&seeds, "seeds", 0, "seeds per configuration (default 3, 2 with --quick)")
	fs.IntVar(&workers, "workers", 0, "runs trained at once (0: all cores)")
	fs.BoolVar(&progress, "progress", true, "show progress on stderr (bars on a terminal, else a line every 10 s)")
	return cmd
}
