package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
)

// evalFlags are the metric flags of eval and demo.
type evalFlags struct {
	mode      string
	modeSet   bool // --mode was given
	metrics   string
	p         string
	bandwidth string
	objective string
	classMean bool
	debias    bool

	bins     int
	binning  string
	binRule  string
	refBins  bool
	ksR      string
	mmceWide float64

	ci          bool
	ciExact     bool
	ciResamples int
	ciLevel     float64
	seed        uint64

	workers    int
	json       bool
	progress   bool
	calibrator string
}

func (f *evalFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.mode, "mode", "all", "ECE^KDE notions, comma-separated: canonical, marginal, top_label, binary (one-column input), or all; without --metrics it means --metrics ece_kde")
	fs.StringVar(&f.metrics, "metrics", "", "metrics, comma-separated: "+strings.Join(allMetrics, ", ")+", or all (default: all, or ece_kde when --mode is given)")
	fs.StringVar(&f.p, "p", "1,2", "exponents `p` >= 1 of every Lp metric, comma-separated")
	fs.StringVar(&f.bandwidth, "bandwidth", "auto", "kernel bandwidth h > 0, or auto (leave-one-out maximum likelihood per notion)")
	fs.StringVar(&f.objective, "bandwidth-objective", "loo", "objective of --bandwidth auto: loo, or reference (the reference code's l(h) - n log h, unrefined)")
	fs.BoolVar(&f.classMean, "class-mean", false, "ece_kde marginal: report the mean over classes instead of the sum")
	fs.BoolVar(&f.debias, "debias", false, "also report ece_kde_debiased (every kernel ratio debiased to O(n^-3), ECE^KDE paper appendix C: removes the ratio's O(1/n) bias, not the smoothing bias) and sharpness_debiased (eq. 7's ratio debiased to O(n^-2), appendix D)")
	fs.IntVar(&f.bins, "bins", metric.DefaultBins, "number of bins of the binned metrics (implies --bin-rule fixed)")
	fs.StringVar(&f.binning, "binning", "equal_width", "bin edges: equal_width, or equal_mass (percentiles, as scikit-learn's quantile strategy)")
	fs.StringVar(&f.binRule, "bin-rule", "fixed", "number of bins: fixed, doane or sqrt")
	fs.BoolVar(&f.refBins, "reference-bins", false, "binned metrics: the splines reference's (lo, hi] bins, where a score of exactly 0 falls in no bin")
	fs.StringVar(&f.ksR, "ks-r", "1,2", "ks: the r of top_r (and of within_top_r for r >= 2), comma-separated")
	fs.Float64Var(&f.mmceWide, "mmce-width", metric.DefaultMMCEWidth, "width of MMCE's Laplacian kernel")
	fs.BoolVar(&f.ci, "ci", false, "add bootstrap intervals to every metric (percentile for means, centred on the estimate for the biased estimators)")
	fs.BoolVar(&f.ciExact, "ci-exact", false, "ece_kde, ece_witness and sharpness: recompute the estimate on every resample (implies --ci; O(n^2) per resample)")
	fs.IntVar(&f.ciResamples, "ci-resamples", 200, "bootstrap resamples")
	fs.Float64Var(&f.ciLevel, "ci-level", 0.95, "bootstrap interval level")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the bootstrap and of ece_witness's cross-fitting splits (same seed, same output)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores); results are identical for any value")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.progress, "progress", true, "show progress bars on stderr when it is a terminal")
	fs.StringVar(&f.calibrator, "calibrator", "", "apply the map `MAP.json` (from calib fit) before measuring")
}

// allMetrics lists the metric names of --metrics, in output order.
var allMetrics = evaluate.Metrics

func newEvalCmd() *cobra.Command {
	var in inputFlags
	var ef evalFlags
	cmd := &cobra.Command{
		Use:   "eval PRED",
		Short: "Measure the calibration of a prediction file (ECE^KDE, binned ECE, KS, MMCE, proper scores)",
		Long: `eval reads predictions (probabilities or, with --logits, logits) and labels
and prints calibration metrics grouped by notion (canonical, class-wise,
top-label, proper scores): ECE^KDE (CE_p^p and CE_p, with the bandwidth and how
it was chosen), the converging canonical estimates ece_witness (p = 1: the
cross-fitted residual witness; p = 2: the debiased kernel U-statistic), binned ECE and MCE, the debiased binned L2 error, the KS
calibration error, sharpness, MMCE, Brier score, NLL, accuracy and confidence.
--ci adds bootstrap intervals.

Formats: CSV (K columns then the label; optional header), NPY (with --labels),
NPZ (arrays probs or logits, and labels), JSON Lines ({"probs": [...],
"label": k} or {"logits": [...], "label": k}). One prediction column is a
binary problem: p1 = P(label = 1).`,
		Example: `  calib eval preds.csv
  calib eval test_logits.npy --labels test_labels.npy --logits --ci
  calib eval preds.csv --mode canonical --p 1 --bandwidth 0.02 --json
  calib eval preds.csv --metrics ece_bin,ks --bins 25 --binning equal_mass`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ef.modeSet = cmd.Flags().Changed("mode")
			if err := checkEvalFlagCombos(cmd, ef); err != nil {
				return err
			}
			if cmd.Flags().Changed("bins") {
				ef.binRule = "fixed"
			}
			if _, err := parseEvalFlags(ef, nil); err != nil {
				return err
			}
			if err := in.check(); err != nil {
				return err
			}
			prov := newProvenance(cmd, args)
			out, err := loadAndEvaluate(cmd, func() (*data.Set, error) { return in.load(args[0]) }, ef, prov, in.labels)
			if err != nil {
				return err
			}
			return writeEval(cmd.OutOrStdout(), out, ef.json)
		},
	}
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	ef.register(cmd)
	return cmd
}

// loadAndEvaluate loads a set and evaluates it; Seconds covers both. prov
// records the input (whose labels file is labels) and the map applied.
func loadAndEvaluate(cmd *cobra.Command, load func() (*data.Set, error), ef evalFlags, prov *provenance, labels string) (*evaluate.Evaluation, error) {
	start := time.Now()
	var c recal.Calibrator
	if ef.calibrator != "" {
		// The map is read (and checked) before the data.
		var err error
		if c, err = loadMap(ef.calibrator); err != nil {
			return nil, err
		}
	}
	s, err := load()
	if err != nil {
		return nil, err
	}
	kind := evaluate.InputKind(s)
	prov.input("", s, labels)
	if c != nil {
		if s, err = applyMap(c, s); err != nil {
			return nil, err
		}
		prov.Mapping = &mapInfo{File: ef.calibrator, Method: c.Info().Method}
	}
	o, err := parseEvalFlags(ef, s)
	if err != nil {
		return nil, err
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
	o.Progress = ui
	out, err := evaluate.Evaluate(cmd.Context(), s, o)
	ui.wait()
	if err != nil {
		return nil, evalError(err)
	}
	out.Seconds = time.Since(start).Seconds()
	out.Provenance, out.Input = prov, kind
	if prov.Mapping != nil {
		out.Calibrated = fmt.Sprintf("the %s map %s", prov.Mapping.Method, prov.Mapping.File)
	}
	return out, nil
}

// evalError classifies evaluate's errors: bad options are usage errors.
func evalError(err error) error {
	if errors.Is(err, evaluate.ErrOptions) {
		return inputError{err}
	}
	return err
}

// writeEval prints the evaluation as JSON or as the table.
func writeEval(w io.Writer, out *evaluate.Evaluation, asJSON bool) error {
	if asJSON {
		return evaluate.WriteJSON(w, out)
	}
	return evaluate.WriteText(w, out)
}

// checkEvalFlagCombos refuses flags that the other flags make meaningless
// (they would be ignored without a word).
func checkEvalFlagCombos(cmd *cobra.Command, ef evalFlags) error {
	fs := cmd.Flags()
	if !ef.ci && !ef.ciExact {
		for _, f := range []string{"ci-level", "ci-resamples"} {
			if fs.Changed(f) {
				return usageErrorf("--%s applies to the bootstrap intervals: add --ci", f)
			}
		}
	}
	if fs.Changed("bins") && fs.Changed("bin-rule") && ef.binRule != "fixed" {
		return usageErrorf("--bins %d sets the number of bins of --bin-rule fixed; --bin-rule %s chooses it from the data", ef.bins, ef.binRule)
	}
	return nil
}

// parseEvalFlags parses the metric flags into evaluate.Options (their
// ranges are checked once, by flagRules, before it runs; evaluate checks
// the options again for library callers); with s nil (before the data is
// read) it checks what does not depend on the data, with the set it also
// checks what does (--ks-r against K, --mode binary against the columns).
func parseEvalFlags(ef evalFlags, s *data.Set) (evaluate.Options, error) {
	o := evaluate.Options{Mode: ef.mode, ClassMean: ef.classMean, Debias: ef.debias, CI: ef.ci, CIExact: ef.ciExact,
		Resamples: ef.ciResamples, Level: ef.ciLevel, Seed: ef.seed, Workers: ef.workers, MMCEWidth: ef.mmceWide}
	var err error
	if _, _, err := modeNotions(ef.mode, s); err != nil {
		return o, err
	}
	if o.P, err = parsePs(ef.p); err != nil {
		return o, err
	}
	bw, err := parseBandwidth(ef.bandwidth)
	if err != nil {
		return o, err
	}
	o.Bandwidth = bw.value
	if o.Objective, err = kde.ParseObjective(ef.objective); err != nil {
		return o, usageErrorf("--bandwidth-objective: %v", err)
	}
	switch {
	case ef.metrics != "":
		o.Strict = true
		seen := map[string]bool{}
		for _, m := range strings.Split(ef.metrics, ",") {
			m = strings.TrimSpace(m)
			switch {
			case m == "":
			case m == "all":
				for _, a := range allMetrics {
					seen[a] = true
				}
			case slices.Contains(allMetrics, m):
				seen[m] = true
			default:
				return o, usageErrorf("--metrics: unknown metric %q (valid: %s, all)", m, strings.Join(allMetrics, ", "))
			}
		}
		if len(seen) == 0 {
			return o, usageErrorf("--metrics: no metric given")
		}
		o.Metrics = []string{}
		for _, m := range allMetrics {
			if seen[m] {
				o.Metrics = append(o.Metrics, m)
			}
		}
	case ef.modeSet:
		// --mode alone keeps the foundation's behaviour: ece_kde only,
		// and its failure fails eval.
		o.Metrics, o.Strict = []string{"ece_kde"}, true
	}
	if o.Bins.Binning, err = metric.ParseBinning(ef.binning); err != nil {
		return o, usageErrorf("--binning: %v", err)
	}
	if o.Bins.Rule, err = metric.ParseBinRule(ef.binRule); err != nil {
		return o, usageErrorf("--bin-rule: %v", err)
	}
	o.Bins.Bins, o.Bins.OpenLow = ef.bins, ef.refBins
	wantKS := ef.metrics == "" && !ef.modeSet || slices.Contains(o.Metrics, "ks")
	for _, f := range strings.Split(ef.ksR, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r < 1 {
			return o, usageErrorf("--ks-r %q: each r must be an integer >= 1", f)
		}
		if s != nil && r > s.K && wantKS {
			return o, usageErrorf("--ks-r %d: the predictions have K = %d classes, so r must be at most %d", r, s.K, s.K)
		}
		o.KSR = append(o.KSR, r)
	}
	if o.KSR == nil {
		o.KSR = []int{}
	}
	return o, nil
}

// oneLineError is err's message on one line.
func oneLineError(err error) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
}
