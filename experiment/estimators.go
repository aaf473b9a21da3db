package experiment

import (
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/smooth"
	"github.com/calib-dev/calib/synth"
	"github.com/calib-dev/calib/variational"
)

// The targets of EstimatorsResult rows: the canonical CE_1 = E||h - f||_1
// and CE_2^2 = E||h - f||_2^2 (h = E[y | f]); the top-label (confidence)
// errors of synth.TopLabel, with c = max_k f_k, a = h at that class and
// r(c) = E[a | c] - c: TL_1 = E|r(c)|, TL_2^2 = E r(c)^2 and KS =
// max_t |E[(a - c) 1{c <= t}]|; the population ATB_1 and ATB_2 of
// metric.ATB (the scores c against the outcomes a of a large sample) and
// the population smECE (smooth.ECE of the same).
const (
	TargetCE1   = "CE_1"
	TargetCE22  = "CE_2^2"
	TargetTL1   = "TL_1"
	TargetTL22  = "TL_2^2"
	TargetKS    = "KS"
	TargetATB1  = "ATB_1"
	TargetATB2  = "ATB_2"
	TargetSmECE = "smECE"
)

// Estimator names of the estimators experiment.
const (
	EstVariational     = "variational"             // variational.CalibrationError, AutoFamilies, the Lp (p = 1) or Brier loss
	EstVariationalTemp = "variational-temperature" // the same with temperature scaling alone
	// Other intervals of the variational CE_1 estimate (the same value):
	// the rows' normal interval given the fitted maps (calib's before
	// the maps' jackknife and optimism), and that of repeated cross-
	// fitting (3 fold seeds, DoubleML's median aggregation: the median
	// theta of the three, se = sqrt(median(se_s^2 + (theta_s -
	// theta)^2)); its value is that median) and of a bias estimate from
	// two training sizes (the chosen family refitted on 2 folds: bias
	// (v - v_2) / 0.6 for an excess risk c / m, m = 4n/5 and n/2 rows,
	// added to the upper end).
	EstVariationalConditional = "variational-conditional"
	EstVariationalRepeated    = "variational-repeated"
	EstVariationalTwoSize     = "variational-two-size"
	// The streamed estimate (variational.Sketch at its default capacity,
	// variational.DefaultSketchBytes; the maps fitted on each fold's
	// sample, the gains summed over every row): CE_1 and CE_2^2, the same
	// as variational where the samples hold every row.
	EstVariationalStreamed = "variational-streamed"
	EstWitness             = "witness"           // kde.Witness, p = 1
	EstUStatistic          = "u-statistic"       // kde.Witness, p = 2
	EstPlugIn              = "plug-in"           // kde.Estimate at the LOO bandwidth
	EstPlugInReference     = "plug-in-reference" // kde.Estimate at the reference code's bandwidth (kde.Reference)
	EstBinned              = "binned"            // metric.Canonical, 2 bins per class
	EstBinnedDoane         = "binned-doane"      // metric.Canonical, the Doane rule's bins per class
	EstBinnedSqrt          = "binned-sqrt"       // metric.Canonical, ceil(sqrt(n)) bins per class

	// Top-label (confidence) estimators, calib eval's top_label entries.
	EstECEBin         = "ece-bin"          // 15 equal-width bins, p = 1 (ece_bin), bootstrap interval
	EstECEBinMass     = "ece-bin-mass"     // 15 equal-mass bins, p = 1
	EstECEBinDoane    = "ece-bin-doane"    // equal-width bins, Doane's rule
	EstECEBinSqrt     = "ece-bin-sqrt"     // equal-mass bins, ceil(sqrt(n)) of them
	EstECEDebiased    = "ece-bin-debiased" // Kumar et al.'s debiased L2, 15 equal-width bins (ece_bin_debiased)
	EstECEDebiasedMas = "ece-bin-debiased-mass"
	EstSweep          = "ece-sweep"       // metric.SweepECE, equal mass (Roelofs et al.'s choice)
	EstSweepWidth     = "ece-sweep-width" // metric.SweepECE, equal width
	EstSmECE          = "smece"           // smooth.ECE (relplot 1.0.3)
	EstATB            = "atb"             // metric.ATB, p = 1
	EstATBDebiased    = "atb-debiased"    // metric.ATB, p = 2, less metric.ATBBias
	EstKS             = "ks"              // metric.KS, top-1, bootstrap interval
)

// EstimatorParts are the parts of Estimators (EstimatorsOptions.Parts):
// synthetic truths, the streamed estimate's sampling at many classes, and
// the variational paper's published settings.
var EstimatorParts = []string{"synthetic", "sampled", "paper"}

// AllEstimators lists the estimators of the experiment in the order of
// its rows.
var AllEstimators = []string{EstVariational, EstVariationalConditional, EstVariationalRepeated, EstVariationalTwoSize,
	EstVariationalStreamed, EstVariationalTemp, EstWitness, EstUStatistic, EstPlugIn, EstPlugInReference, EstBinned, EstBinnedDoane, EstBinnedSqrt,
	EstECEBin, EstECEBinMass, EstECEBinDoane, EstECEBinSqrt, EstECEDebiased, EstECEDebiasedMas, EstSweep, EstSweepWidth,
	EstSmECE, EstATB, EstATBDebiased, EstKS}

// EstimatorCell is one setting of the estimators experiment: a synthetic
// family at one n.
type EstimatorCell struct {
	Family synth.Family
	N      int
	// Sampled runs EstVariationalStreamed where Estimators is nil (the
	// sampled part's cells): elsewhere its samples hold every row and it
	// repeats EstVariational.
	Sampled bool
}

// EstimatorsOptions configures Estimators. The zero value is the full
// grid (DefaultEstimatorCells) with 8 data sets per cell and 200,000
// Monte Carlo samples per ground truth.
type EstimatorsOptions struct {
	// Cells are the settings; nil means DefaultEstimatorCells(Quick).
	Cells []EstimatorCell
	// Reps is the number of data sets per cell; 0 means 8 (2 with Quick).
	Reps int
	// GroundSamples is the number of Monte Carlo samples of each truth; 0
	// means 200,000 (20,000 with Quick).
	GroundSamples int
	// KernelMaxWork skips the kernel estimators (witness, U-statistic,
	// plug-in) where n^2 K exceeds it (their cost); 0 means 2.5e9 (n =
	// 5,000 at K = 100).
	KernelMaxWork float64
	// Parts are the parts run (of EstimatorParts): "synthetic" (Cells), "sampled"
	// (SampledEstimatorCells: where a streamed estimate's samples hold
	// a part of the rows; not run by default) and "paper" (the
	// variational paper's published settings, PaperRow); nil means
	// synthetic and paper.
	Parts []string
	// Estimators are the estimators run (AllEstimators' names); nil means
	// all of them.
	Estimators []string
	Quick      bool
	Seed       uint64
	Workers    int
	// Progress, if not nil, is told each finished cell.
	Progress progress.Reporter
	ctx      context.Context
}

// Miscalibrations of the default grid: the ECE^KDE paper's temperature
// setting, four invertible miscalibrations and a calibrated model. The
// entropy-dependent temperature is outside the automatic families'
// reach (none holds it): the held-out check of the many-class choice.
func estimatorFamilies(k int, alpha float64) []synth.Family {
	return []synth.Family{
		{K: k, Alpha: alpha, Miscalibration: synth.Tempering, Param: 0.7},
		{K: k, Alpha: alpha, Miscalibration: synth.Smoothing, Param: 0.1},
		{K: k, Alpha: alpha, Miscalibration: synth.PriorShift, Param: 0.5, Seed: 1},
		{K: k, Alpha: alpha, Miscalibration: synth.Entropic, Param: 0.6},
		{K: k, Alpha: alpha, Miscalibration: synth.Calibrated},
	}
}

// DefaultEstimatorCells is the grid of the experiment:
//
//   - against n: the paper's setting (x ~ Dir(1), T1 = T2 = 0.6) and the
//     five families of estimatorFamilies on flat truths (Dir(1)), K = 2,
//     4, 10, 20, 100, n = 100, 1,000, 5,000 (and 20,000 for K <= 4);
//   - many classes on sharp truths: Dir(1/K) (mean top probability about
//     0.63), K = 20, 50, 100, n = 5,000, the five families.
//
// Quick keeps K = 4 and 20, n = 500, the temperature and calibrated
// families.
func DefaultEstimatorCells(quick bool) []EstimatorCell {
	var cells []EstimatorCell
	if quick {
		for _, k := range []int{4, 20} {
			fams := estimatorFamilies(k, 1)
			cells = append(cells, EstimatorCell{Family: fams[0], N: 500}, EstimatorCell{Family: fams[4], N: 500})
		}
		return cells
	}
	for _, k := range []int{2, 4, 10, 20, 100} {
		fams := append([]synth.Family{{K: k, Alpha: 1, T1: 0.6, Miscalibration: synth.Tempering, Param: 0.6}}, estimatorFamilies(k, 1)...)
		for _, n := range []int{100, 1000, 5000, 20000} {
			if n == 20000 && k > 4 {
				continue
			}
			for _, f := range fams {
				cells = append(cells, EstimatorCell{Family: f, N: n})
			}
		}
	}
	for _, k := range []int{20, 50, 100} {
		for _, f := range estimatorFamilies(k, 1/float64(k)) {
			cells = append(cells, EstimatorCell{Family: f, N: 5000})
		}
	}
	return cells
}

// SampledEstimatorCells is the grid of the "sampled" part: many classes
// on sharp truths (Dir(1/K)), K = 20, 50, 100, the five families at n =
// 50,000, past what a streamed estimate's samples hold at the default
// capacity (25,205, 11,700 and 6,180 rows): the cost of fitting the maps
// on a sample (EstVariationalStreamed against EstVariational). Quick: K =
// 20, the temperature family, n = 2,000 on samples of 100 rows per fold
// (sampledQuickCapacity).
func SampledEstimatorCells(quick bool) []EstimatorCell {
	if quick {
		return []EstimatorCell{{Family: estimatorFamilies(20, 1.0/20)[0], N: 2000, Sampled: true}}
	}
	var cells []EstimatorCell
	for _, k := range []int{20, 50, 100} {
		for _, f := range estimatorFamilies(k, 1/float64(k)) {
			cells = append(cells, EstimatorCell{Family: f, N: 50000, Sampled: true})
		}
	}
	return cells
}

// sampledQuickCapacity is the streamed estimate's rows per fold with
// Quick, so that the quick grid samples.
const sampledQuickCapacity = 100

// EstimatorRow is one estimator in one cell: its estimates over the data
// sets against the truth of its target.
type EstimatorRow struct {
	Setting   string  `json:"setting"`
	Family    string  `json:"family"` // the miscalibration ("paper" for the ECE^KDE paper's setting)
	Alpha     float64 `json:"alpha"`
	K         int     `json:"k"`
	N         int     `json:"n"`
	Target    string  `json:"target"` // TargetCE1 or TargetCE22
	Truth     float64 `json:"truth"`
	TruthSE   float64 `json:"truth_se"`
	Estimator string  `json:"estimator"`
	Stat      Stat    `json:"stat"`
	// Bias and RMSE are the mean's and the estimates' against the truth
	// (0 where no data set gave a value: Stat.Reps 0).
	Bias float64 `json:"bias"`
	RMSE float64 `json:"rmse"`
	// Covered counts the data sets whose 95 % interval held the truth,
	// of Intervals (0 where the estimator gives none); Below those whose
	// one-sided 95 % lower bound (value - 1.645 SE, SE the interval's
	// half-width / 1.96) was at most the truth.
	Covered   int `json:"covered"`
	Below     int `json:"below"`
	Intervals int `json:"intervals"`
	// Width is the intervals' mean width.
	Width float64 `json:"width,omitempty"`
	// Seconds is the mean time per data set.
	Seconds float64 `json:"seconds"`
	// Chosen counts the variational families chosen, "name:count,...".
	Chosen string `json:"chosen,omitempty"`
}

// PaperRow is one published setting of the variational paper (Berta et
// al. 2026, synthetic multiclass; synth.Distortion): its printed truth and
// estimators' means over its seeds (experiment/published), beside the
// Monte Carlo truth of the same setting and calib's estimates over Reps
// data sets of the same n (every estimator, as in the synthetic cells).
type PaperRow struct {
	H          string  `json:"h_func"`
	K          int     `json:"k"`
	N          int     `json:"n"`
	PaperTruth float64 `json:"paper_truth"`
	PaperRuns  int     `json:"paper_runs"`
	Truth      float64 `json:"truth"`
	TruthSE    float64 `json:"truth_se"`
	// Variational (AutoFamilies) and VariationalTemp (temperature alone):
	// calib's estimates; Covered and Below count the auto estimate's 95 %
	// intervals holding the truth and its one-sided lower bounds below it.
	Variational     Stat `json:"variational"`
	VariationalTemp Stat `json:"variational_temperature"`
	Covered         int  `json:"covered"`
	Below           int  `json:"below"`
	// Witness is ece_witness's CE_1 estimate; Rows holds every
	// estimator's row, as EstimatorsResult.Rows (Family the setting's h).
	Witness Stat           `json:"witness"`
	Rows    []EstimatorRow `json:"rows"`
	// Published holds the paper's estimators' mean and sd over its seeds:
	// TSPredictor (temperature scaling), IsotonicPredictor,
	// BetterCatBoost, Binning_Classic.
	Published map[string][2]float64 `json:"published"`
}

//go:embed published/variational_paper.csv
var variationalPaperCSV string

// publishedRows parses experiment/published/variational_paper.csv.
func publishedRows() ([]PaperRow, error) {
	recs, err := csv.NewReader(strings.NewReader(variationalPaperCSV)).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, fmt.Errorf("experiment: the published table: %v", err)
	}
	head := recs[0]
	var out []PaperRow
	for _, r := range recs[1:] {
		num := func(i int) float64 { v, _ := strconv.ParseFloat(r[i], 64); return v }
		row := PaperRow{H: r[0], K: int(num(1)), N: int(num(2)), PaperRuns: int(num(3)), PaperTruth: num(4), Published: map[string][2]float64{}}
		for i := 5; i+1 < len(r); i += 2 {
			row.Published[strings.TrimSuffix(head[i], "_mean")] = [2]float64{num(i), num(i + 1)}
		}
		out = append(out, row)
	}
	return out, nil
}

// EstimatorsResult holds the rows.
type EstimatorsResult struct {
	Paper         []PaperRow     `json:"paper,omitempty"`
	Rows          []EstimatorRow `json:"rows"`
	Reps          int            `json:"reps"`
	GroundSamples int            `json:"ground_samples"`
	Quick         bool           `json:"quick"`
	Seed          uint64         `json:"seed"`
}

// familyName is the row's family label.
func familyName(f synth.Family) string {
	if f.T1 == 0.6 && f.Miscalibration == synth.Tempering && f.Param == 0.6 {
		return "paper"
	}
	return string(f.Miscalibration)
}

// estimateOf is one estimator's value on one data set with its 95 %
// interval [lo, hi] and one-sided 95 % lower bound (NaN where it has
// none), and the variational family chosen.
type estimateOf struct {
	value, lo, hi, lower float64
	chosen               string
}

// normal is the estimate with the normal interval value -+ 1.96 se and
// the lower bound value - 1.645 se (NaN for a NaN se).
func normal(value, se float64, chosen string) estimateOf {
	return estimateOf{value, value - 1.959963984540054*se, value + 1.959963984540054*se, value - 1.6448536269514722*se, chosen}
}

// interval is a variational estimate with its interval [Lo, Hi] and the
// lower bound Value - 1.645 SE.
func interval(r variational.Result) estimateOf {
	return estimateOf{r.Value, r.Lo, r.Hi, r.Value - 1.6448536269514722*r.SE, r.Family}
}

// variational adds the variational estimates of one data set: CE_1 with
// each interval (EstVariational and the other intervals of the same
// estimate) and CE_2^2, timing EstVariational (the cross-fit and both
// estimates) and the others' extra work apart.
func (run estimatorsRun) variational(ctx context.Context, s *data.Set, add func(est, target string, e estimateOf, err error), secs map[string]float64) error {
	t0 := time.Now()
	rc, err := variational.CrossFit(ctx, s, variational.Options{Seed: run.seed})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		for _, est := range []string{EstVariational, EstVariationalConditional, EstVariationalRepeated, EstVariationalTwoSize} {
			add(est, TargetCE1, estimateOf{}, err)
		}
		add(EstVariational, TargetCE22, estimateOf{}, err)
		return nil
	}
	r1, err1 := rc.Error(variational.Options{})
	r2, err2 := rc.Error(variational.Options{Loss: variational.Brier})
	secs[EstVariational] += time.Since(t0).Seconds()
	add(EstVariational, TargetCE1, interval(r1), err1)
	add(EstVariational, TargetCE22, interval(r2), err2)
	if err1 != nil {
		return nil
	}
	// The rows' standard error given the maps.
	rowsSE := func(r variational.Result) float64 { return math.Sqrt(max(0, r.SE*r.SE-r.MapSE*r.MapSE)) }
	s1 := rowsSE(r1)
	add(EstVariationalConditional, TargetCE1, normal(r1.Value, s1, r1.Family), nil)
	if run.wants(EstVariationalRepeated) {
		t0 = time.Now()
		thetas, ses := []float64{r1.Value}, []float64{s1}
		for i := uint64(1); i < 3; i++ {
			r, err := variational.CalibrationError(ctx, s, variational.Options{Seed: run.seed + i})
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				continue
			}
			thetas, ses = append(thetas, r.Value), append(ses, rowsSE(r))
		}
		theta := mathx.Quantile(slices.Sorted(slices.Values(thetas)), 0.5)
		v := make([]float64, len(ses))
		for i := range ses {
			v[i] = ses[i]*ses[i] + (thetas[i]-theta)*(thetas[i]-theta)
		}
		slices.Sort(v)
		add(EstVariationalRepeated, TargetCE1, normal(theta, math.Sqrt(mathx.Quantile(v, 0.5)), r1.Family), nil)
		secs[EstVariationalRepeated] += time.Since(t0).Seconds()
	}
	if run.wants(EstVariationalTwoSize) {
		t0 = time.Now()
		fam, err := variational.FamilyOf(r1.Family)
		var r variational.Result
		if err == nil {
			r, err = variational.CalibrationError(ctx, s, variational.Options{Families: []variational.Family{fam}, Folds: 2, Seed: run.seed})
		}
		if err != nil && ctx.Err() != nil {
			return err
		}
		e := normal(r1.Value, s1, r1.Family)
		e.hi += max(0, (r1.Value-r.Value)/0.6)
		add(EstVariationalTwoSize, TargetCE1, e, err)
		secs[EstVariationalTwoSize] += time.Since(t0).Seconds()
	}
	return nil
}

// streamed returns the streamed variational estimates of CE_1 and CE_2^2
// of s read as one shard: each fold's sample at the default capacity
// (sampledQuickCapacity with Quick), the maps fitted on the samples, the
// gains summed over every row.
func (run estimatorsRun) streamed(ctx context.Context, s *data.Set) (r1, r2 variational.Result, err error) {
	capacity := 0
	if run.quick {
		capacity = sampledQuickCapacity
	}
	o := variational.Options{Seed: run.seed}
	sk, err := variational.NewSketch(o, s.K, capacity)
	if err != nil {
		return r1, r2, err
	}
	if err := sk.Add(s, 0, 0); err != nil {
		return r1, r2, err
	}
	ft, err := sk.FitFreeing(ctx, o)
	if err != nil {
		return r1, r2, err
	}
	sums := ft.NewSums()
	if err := ft.Add(sums, s, 0, 0); err != nil {
		return r1, r2, err
	}
	if r1, err = ft.Error(sums, variational.Options{}); err != nil {
		return r1, r2, err
	}
	r2, err = ft.Error(sums, variational.Options{Loss: variational.Brier})
	return r1, r2, err
}

// point is an estimate without an interval.
func point(value float64) estimateOf {
	return estimateOf{value, math.NaN(), math.NaN(), math.NaN(), ""}
}

// bootstrapped is the estimate with calib's bootstrap percentile
// intervals (metric.Bootstrap, 200 resamples of the rows): the 95 % one
// and, from the same resamples, the 5 % quantile as the lower bound.
func bootstrapped(ctx context.Context, value float64, n int, seed uint64, workers int, stat func(idx []int) (float64, error)) (estimateOf, error) {
	var mu sync.Mutex
	var vals []float64
	iv, err := metric.Bootstrap(ctx, n, func(idx []int) (float64, error) {
		v, err := stat(idx)
		mu.Lock()
		vals = append(vals, v)
		mu.Unlock()
		return v, err
	}, metric.BootstrapOptions{Seed: seed, Workers: workers})
	if err != nil {
		return estimateOf{}, err
	}
	slices.Sort(vals)
	one := 0.9 // the lower quantile of a 90 % interval, in Bootstrap's float64 arithmetic
	return estimateOf{value, iv.Lo, iv.Hi, mathx.Quantile(vals, (1-one)/2), ""}, nil
}

// holds reports whether the interval holds the truth and whether the
// lower bound is at most the truth.
func (e estimateOf) holds(truth float64) (interval, lower bool) {
	return e.lo <= truth && truth <= e.hi, e.lower <= truth
}

// Estimators runs every canonical calibration-error estimator on data
// sets drawn from each cell and compares it with the Monte Carlo truth of
// its target: bias, spread, RMSE and how often its interval covered the
// truth.
func Estimators(ctx context.Context, o EstimatorsOptions) (*EstimatorsResult, error) {
	o.ctx = ctx
	cells := o.Cells
	if cells == nil {
		cells = DefaultEstimatorCells(o.Quick)
	}
	reps, samples, maxWork := o.Reps, o.GroundSamples, o.KernelMaxWork
	if reps == 0 {
		reps = 8
		if o.Quick {
			reps = 2
		}
	}
	if samples == 0 {
		samples = 200000
		if o.Quick {
			samples = 20000
		}
	}
	if maxWork == 0 {
		maxWork = 2.5e9
	}
	if reps < 1 || samples < 2 {
		return nil, fmt.Errorf("experiment: estimators: %d data sets, %d ground samples", reps, samples)
	}
	for _, e := range o.Estimators {
		if !slices.Contains(AllEstimators, e) {
			return nil, fmt.Errorf("experiment: estimators: unknown estimator %q (valid: %s)", e, strings.Join(AllEstimators, ", "))
		}
	}
	res := &EstimatorsResult{Reps: reps, GroundSamples: samples, Quick: o.Quick, Seed: o.Seed}
	runParts := o.Parts
	if runParts == nil {
		runParts = []string{"synthetic", "paper"}
	}
	for _, p := range runParts {
		if !slices.Contains(EstimatorParts, p) {
			return nil, fmt.Errorf("experiment: estimators: unknown part %q (valid: %s)", p, strings.Join(EstimatorParts, ", "))
		}
	}
	var paper []PaperRow
	if slices.Contains(runParts, "paper") {
		var err error
		if paper, err = publishedRows(); err != nil {
			return nil, err
		}
		if o.Quick {
			paper = slices.DeleteFunc(paper, func(r PaperRow) bool { return r.K != 3 || r.N != 1069 })
		}
	}
	if !slices.Contains(runParts, "synthetic") {
		cells = nil
	}
	if slices.Contains(runParts, "sampled") {
		cells = append(cells, SampledEstimatorCells(o.Quick)...)
	}
	parts := progress.NewParts(o.Progress, "estimators", len(cells)+len(paper))
	defer parts.End()
	run := estimatorsRun{seed: o.Seed, workers: o.Workers, reps: reps, samples: samples, maxWork: maxWork, only: o.Estimators, quick: o.Quick}
	for pi, row := range paper {
		d := synth.Distortion{K: row.K, Alpha: 0.5, H: row.H}
		rows, err := run.setting(ctx, d, row.K, row.N, 13, pi, EstimatorRow{Setting: fmt.Sprintf("%s, K = %d, n = %d", row.H, row.K, row.N),
			Family: row.H, Alpha: d.Alpha, K: row.K, N: row.N})
		if err != nil {
			return nil, fmt.Errorf("experiment: %s K = %d n = %d: %w", row.H, row.K, row.N, err)
		}
		row.Rows = rows
		for _, x := range rows {
			switch {
			case x.Estimator == EstVariational && x.Target == TargetCE1:
				row.Truth, row.TruthSE, row.Variational, row.Covered, row.Below = x.Truth, x.TruthSE, x.Stat, x.Covered, x.Below
			case x.Estimator == EstVariationalTemp:
				row.VariationalTemp = x.Stat
			case x.Estimator == EstWitness:
				row.Witness = x.Stat
			}
		}
		res.Paper = append(res.Paper, row)
		parts.Finished(fmt.Sprintf("%s, K = %d, n = %d", row.H, row.K, row.N))
	}
	for ci, c := range cells {
		fam, n := c.Family, c.N
		cr := run
		cr.sampled = c.Sampled
		rows, err := cr.setting(ctx, fam, fam.K, n, 11, ci, EstimatorRow{Setting: fmt.Sprintf("%v, n = %d", fam, n), Family: familyName(fam),
			Alpha: fam.Alpha, K: fam.K, N: n})
		if err != nil {
			return nil, fmt.Errorf("experiment: %v, n = %d: %w", fam, n, err)
		}
		res.Rows = append(res.Rows, rows...)
		parts.Finished(fmt.Sprintf("%v, n = %d", fam, n))
	}
	return res, nil
}

// estimatorsRun holds what every setting of a run shares.
type estimatorsRun struct {
	seed          uint64
	workers, reps int
	samples       int
	maxWork       float64
	only          []string // EstimatorsOptions.Estimators
	quick         bool
	sampled       bool // the cell's EstimatorCell.Sampled
}

// wants reports whether any of the estimators named is run.
func (run estimatorsRun) wants(est ...string) bool {
	if run.only == nil {
		return true
	}
	for _, e := range est {
		if slices.Contains(run.only, e) {
			return true
		}
	}
	return false
}

// setting is a synthetic setting whose truths are known: synth.Family or
// synth.Distortion.
type setting interface {
	Draw(n int, rng *rand.Rand) (f []float64, labels []int, h []float64)
	GroundTruth(ctx context.Context, q float64, samples int, seed uint64, workers int) (synth.GroundTruth, error)
	Confidence(ctx context.Context, samples int, seed uint64, workers int) (conf, acc []float64, err error)
}

// setting runs every estimator on the run's data sets of n rows drawn
// from set (data set r from seedOf(seed, tag, index, r)) and returns a row
// per estimator and target, labelled as base, against the truths of set.
func (run estimatorsRun) setting(ctx context.Context, set setting, k, n, tag, index int, base EstimatorRow) ([]EstimatorRow, error) {
	gseed := run.seed ^ 0x9e3779b97f4a7c15
	truth1, err := set.GroundTruth(ctx, 1, run.samples, gseed, run.workers)
	if err != nil {
		return nil, err
	}
	truth2, err := set.GroundTruth(ctx, 2, run.samples, gseed, run.workers)
	if err != nil {
		return nil, err
	}
	truths := map[string]synth.GroundTruth{}
	topLabel := run.wants(EstECEBin, EstECEBinMass, EstECEBinDoane, EstECEBinSqrt, EstECEDebiased, EstECEDebiasedMas,
		EstSweep, EstSweepWidth, EstSmECE, EstATB, EstATBDebiased, EstKS)
	if topLabel {
		if truths, err = topLabelTruths(ctx, set, run.samples, gseed, run.workers); err != nil {
			return nil, err
		}
	}
	truths[TargetCE1], truths[TargetCE22] = truth1, truth2
	kernel := float64(n)*float64(n)*float64(k) <= run.maxWork
	type key struct{ est, target string }
	vals := map[key][]estimateOf{}
	secs := map[string]float64{}
	failed := map[key]int{}
	var order []key
	add := func(est, target string, e estimateOf, err error) {
		if _, ok := truths[target]; !ok {
			panic("experiment: no truth for " + target)
		}
		if !run.wants(est) {
			return
		}
		kk := key{est, target}
		if !slices.Contains(order, kk) {
			order = append(order, kk)
		}
		if err != nil {
			failed[kk]++
			return
		}
		vals[kk] = append(vals[kk], e)
	}
	temp, _ := variational.FamilyOf("temperature")
	for r := range run.reps {
		f, y, _ := set.Draw(n, seedOf(run.seed, tag, index, r))
		s, err := data.New(f, k, y, false, data.Options{})
		if err != nil {
			return nil, err
		}
		if run.wants(EstVariational, EstVariationalConditional, EstVariationalRepeated, EstVariationalTwoSize) {
			if err := run.variational(ctx, s, add, secs); err != nil {
				return nil, err
			}
		}
		if run.wants(EstVariationalStreamed) && (run.only != nil || run.sampled) {
			t0 := time.Now()
			r1, r2, err := run.streamed(ctx, s)
			if err != nil && ctx.Err() != nil {
				return nil, err
			}
			add(EstVariationalStreamed, TargetCE1, interval(r1), err)
			add(EstVariationalStreamed, TargetCE22, interval(r2), err)
			secs[EstVariationalStreamed] += time.Since(t0).Seconds()
		}
		if run.wants(EstVariationalTemp) {
			t0 := time.Now()
			rt, err := variational.CalibrationError(ctx, s, variational.Options{Families: []variational.Family{temp}, Seed: run.seed})
			add(EstVariationalTemp, TargetCE1, interval(rt), err)
			secs[EstVariationalTemp] += time.Since(t0).Seconds()
		}
		kernel := kernel && run.wants(EstWitness, EstUStatistic, EstPlugIn, EstPlugInReference)
		if kernel {
			t0 := time.Now()
			w, err := kde.Witness(ctx, f, y, k, nil, kde.WitnessOptions{Seed: run.seed, Workers: run.workers})
			for i, est := range []string{EstWitness, EstUStatistic} {
				target := []string{TargetCE1, TargetCE22}[i]
				if err != nil {
					add(est, target, estimateOf{}, err)
					continue
				}
				v := w.Values[i]
				add(est, target, normal(v.Value, termsSE(v.Terms, v.Kept), ""), nil)
			}
			secs[EstWitness] += time.Since(t0).Seconds()
			for _, b := range []struct {
				est string
				kde.Objective
			}{{EstPlugIn, kde.LOO}, {EstPlugInReference, kde.Reference}} {
				t0 = time.Now()
				var pe *kde.Result
				cv, err := kde.SelectBandwidth(ctx, kde.Canonical, f, y, k, nil, kde.BandwidthOptions{Objective: b.Objective, Workers: run.workers})
				if err == nil {
					pe, err = kde.Estimate(ctx, kde.Canonical, f, y, k, nil, kde.Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}, Workers: run.workers})
				}
				for i, target := range []string{TargetCE1, TargetCE22} {
					if err != nil {
						add(b.est, target, estimateOf{}, err)
					} else {
						add(b.est, target, point(pe.Values[i].Value), nil)
					}
				}
				secs[b.est] += time.Since(t0).Seconds()
			}
		}
		if k <= 20 && run.wants(EstBinned, EstBinnedDoane, EstBinnedSqrt) {
			for _, b := range []struct {
				est string
				metric.BinOptions
			}{{EstBinned, metric.BinOptions{Bins: 2}}, {EstBinnedDoane, metric.BinOptions{Rule: metric.Doane}}, {EstBinnedSqrt, metric.BinOptions{Rule: metric.Sqrt}}} {
				t0 := time.Now()
				v, err := metric.Canonical(f, y, k, 1, nil, b.BinOptions)
				if err == nil {
					add(b.est, TargetCE1, point(v.Value), nil)
				} else {
					add(b.est, TargetCE1, estimateOf{}, err)
				}
				secs[b.est] += time.Since(t0).Seconds()
			}
		}
		if topLabel {
			if err := topLabelEstimates(ctx, f, y, k, seedOf(run.seed, tag+6, index, r).Uint64(), run.workers, add, secs); err != nil {
				return nil, err
			}
		}
		if err := canceled(ctx); err != nil {
			return nil, err
		}
	}
	var rows []EstimatorRow
	for _, kk := range order {
		truth := truths[kk.target]
		row := base
		row.Target, row.Truth, row.TruthSE, row.Estimator = kk.target, truth.Value, truth.SE, kk.est
		var xs []float64
		chosen := map[string]int{}
		sq := 0.0
		for _, e := range vals[kk] {
			xs = append(xs, e.value)
			sq += (e.value - truth.Value) * (e.value - truth.Value)
			if !math.IsNaN(e.lo) {
				row.Width += e.hi - e.lo
				row.Intervals++
				in, below := e.holds(truth.Value)
				row.Covered += boolCount(in)
				row.Below += boolCount(below)
			}
			if e.chosen != "" {
				chosen[e.chosen]++
			}
		}
		if row.Intervals > 0 {
			row.Width /= float64(row.Intervals)
		}
		row.Stat = stat(xs, nil, failed[kk])
		if len(xs) > 0 {
			row.Bias, row.RMSE = row.Stat.Mean-truth.Value, math.Sqrt(sq/float64(len(xs)))
		}
		est := kk.est
		if est == EstUStatistic {
			est = EstWitness // timed together
		}
		row.Seconds = secs[est] / float64(run.reps)
		var cs []string
		for _, name := range slices.Sorted(maps.Keys(chosen)) {
			cs = append(cs, name+":"+strconv.Itoa(chosen[name]))
		}
		row.Chosen = strings.Join(cs, ",")
		rows = append(rows, row)
	}
	return rows, nil
}

// topLabelTruths returns the truths of the top-label targets of the
// setting: synth.TopLabelTruth of a confidence sample of the given size,
// and metric.ATB and smooth.ECE of that sample's confidences against the
// probabilities a of their class (the population values, the sample
// standing for the population; their SE is left 0).
func topLabelTruths(ctx context.Context, set setting, samples int, seed uint64, workers int) (map[string]synth.GroundTruth, error) {
	conf, acc, err := set.Confidence(ctx, samples, seed, workers)
	if err != nil {
		return nil, err
	}
	tl, err := synth.TopLabelTruth(conf, acc)
	if err != nil {
		return nil, err
	}
	out := map[string]synth.GroundTruth{TargetTL1: tl.L1, TargetTL22: tl.L2, TargetKS: tl.KS}
	for _, t := range []struct {
		p      float64
		target string
	}{{1, TargetATB1}, {2, TargetATB2}} {
		v, err := metric.ATB(conf, acc, nil, t.p)
		if err != nil {
			return nil, err
		}
		out[t.target] = synth.GroundTruth{Value: v, Samples: samples}
	}
	sm, err := smooth.ECE(ctx, conf, acc, nil, smooth.Options{})
	if err != nil {
		return nil, err
	}
	out[TargetSmECE] = synth.GroundTruth{Value: sm.Value, Samples: samples}
	return out, nil
}

// topLabelEstimates adds the top-label estimators' values on one data set
// (calib eval's top_label entries: scores the confidences, outcomes
// whether the label is the predicted class), timing each in secs.
func topLabelEstimates(ctx context.Context, f []float64, y []int, k int, seed uint64, workers int,
	add func(est, target string, e estimateOf, err error), secs map[string]float64) error {
	scores, outcomes := metric.TopR(f, y, k, 1)
	n := len(scores)
	timed := func(est string, run func()) {
		t0 := time.Now()
		run()
		secs[est] += time.Since(t0).Seconds()
	}
	bins := func(idx []int, o metric.BinOptions) (*metric.Bins, error) {
		if idx == nil {
			return metric.BinScores(scores, outcomes, nil, o)
		}
		return metric.BinScores(metric.Resample(scores, 1, idx), metric.Resample(outcomes, 1, idx), nil, o)
	}
	for _, b := range []struct {
		est, target string
		metric.BinOptions
		debiased bool
	}{
		{EstECEBin, TargetTL1, metric.BinOptions{}, false},
		{EstECEBinMass, TargetTL1, metric.BinOptions{Binning: metric.EqualMass}, false},
		{EstECEBinDoane, TargetTL1, metric.BinOptions{Rule: metric.Doane}, false},
		{EstECEBinSqrt, TargetTL1, metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Sqrt}, false},
		{EstECEDebiased, TargetTL22, metric.BinOptions{}, true},
		{EstECEDebiasedMas, TargetTL22, metric.BinOptions{Binning: metric.EqualMass}, true},
	} {
		timed(b.est, func() {
			bs, err := bins(nil, b.BinOptions)
			if err != nil {
				add(b.est, b.target, estimateOf{}, err)
				return
			}
			if b.debiased {
				add(b.est, b.target, point(bs.DebiasedL2()), nil)
				return
			}
			e := point(bs.ECE(1))
			if b.est == EstECEBin {
				e, err = bootstrapped(ctx, e.value, n, seed, workers, func(idx []int) (float64, error) {
					bs, err := bins(idx, b.BinOptions)
					if err != nil {
						return 0, err
					}
					return bs.ECE(1), nil
				})
			}
			add(b.est, b.target, e, err)
		})
		if err := canceled(ctx); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		est string
		metric.Binning
	}{{EstSweep, metric.EqualMass}, {EstSweepWidth, metric.EqualWidth}} {
		timed(b.est, func() {
			v, _, err := metric.SweepECE(scores, outcomes, nil, b.Binning, 1)
			add(b.est, TargetTL1, point(v), err)
		})
	}
	timed(EstSmECE, func() {
		sm, err := smooth.ECE(ctx, scores, outcomes, nil, smooth.Options{})
		add(EstSmECE, TargetTL1, point(sm.Value), err)
		add(EstSmECE, TargetSmECE, point(sm.Value), err)
	})
	timed(EstATB, func() {
		a, err := metric.NewSortedATB(scores, outcomes)
		var v1, v2 float64
		if err == nil {
			v1, err = a.Value(nil, 1)
		}
		if err == nil {
			v2, err = a.Value(nil, 2)
		}
		add(EstATB, TargetATB1, point(v1), err)
		add(EstATBDebiased, TargetATB2, point(v2-metric.ATBBias(scores, nil)), err)
	})
	timed(EstKS, func() {
		v, _ := metric.KS(scores, outcomes, false, nil)
		e, err := bootstrapped(ctx, v, n, seed, workers, func(idx []int) (float64, error) {
			v, _ := metric.KS(metric.Resample(scores, 1, idx), metric.Resample(outcomes, 1, idx), false, nil)
			return v, nil
		})
		add(EstKS, TargetKS, e, err)
	})
	return canceled(ctx)
}

// termsSE returns the standard error sd / sqrt(kept) of the mean of the
// kept terms (NaN below 2).
func termsSE(terms []float64, kept []bool) float64 {
	var m, ss float64
	n := 0
	for i, t := range terms {
		if kept != nil && !kept[i] {
			continue
		}
		n++
		d := t - m
		m += d / float64(n)
		ss += d * (t - m)
	}
	if n < 2 {
		return math.NaN()
	}
	return math.Sqrt(ss / float64(n-1) / float64(n))
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteTable prints one line per cell, target and estimator.
func (r *EstimatorsResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Calibration-error estimators against the Monte Carlo truth of their targets (%d data sets per cell, %d samples per truth).\n", r.Reps, r.GroundSamples)
	fmt.Fprintf(w, "ratio: mean / truth; cover: data sets whose 95 %% interval held the truth; lower: whose one-sided 95 %% lower bound\n")
	fmt.Fprintf(w, "(value - 1.645 SE; bootstrap: the 5 %% quantile) was at most the truth; s: seconds per data set.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "family\talpha\tK\tn\ttarget\ttruth\testimator\tmean\tsd\tratio\trmse\tcover\tlower\ts\tchosen\t")
	for _, row := range r.Rows {
		ratio, cover, lower := "-", "-", "-"
		if row.Truth > 1e-9 {
			ratio = fmt.Sprintf("%.2f", row.Stat.Mean/row.Truth)
		}
		if row.Intervals > 0 {
			cover = fmt.Sprintf("%d/%d", row.Covered, row.Intervals)
			lower = fmt.Sprintf("%d/%d", row.Below, row.Intervals)
		}
		fmt.Fprintf(tw, "%s\t%.3g\t%d\t%d\t%s\t%.4f\t%s\t%.4f\t%.4f\t%s\t%.4f\t%s\t%s\t%.2f\t%s\t\n", row.Family, row.Alpha, row.K, row.N, row.Target,
			row.Truth, row.Estimator, row.Stat.Mean, row.Stat.SD, ratio, row.RMSE, cover, lower, row.Seconds, row.Chosen)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Paper) > 0 {
		return r.writePaper(w)
	}
	return nil
}

// writePaper prints the published settings' table.
func (r *EstimatorsResult) writePaper(w io.Writer) error {
	fmt.Fprintf(w, "\nThe variational paper's published settings (f ~ Dir(0.5), canonical L1; its means over its seeds beside calib's over %d data sets).\n", r.Reps)
	fmt.Fprintf(w, "cover / lower: calib's auto estimate's 95 %% intervals holding the truth / one-sided lower bounds below it.\n")
	fmt.Fprintf(w, "Every estimator's row on these settings (the top-label ones against their own truths) is in the JSON's paper[].rows.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "h\tK\tn\tpaper truth\ttruth\tcalib auto\tsd\tcalib temperature\tcalib witness\tpaper TS\tpaper isotonic\tpaper CatBoost\tpaper binning\tcover\tlower\t")
	for _, p := range r.Paper {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%d/%d\t%d/%d\t\n", p.H, p.K, p.N, p.PaperTruth, p.Truth,
			p.Variational.Mean, p.Variational.SD, p.VariationalTemp.Mean, p.Witness.Mean, p.Published["TSPredictor"][0], p.Published["IsotonicPredictor"][0],
			p.Published["BetterCatBoost"][0], p.Published["Binning_Classic"][0], p.Covered, p.Variational.Reps, p.Below, p.Variational.Reps)
	}
	return tw.Flush()
}

// Figures returns "ratio": mean / truth of the CE_1 estimators against
// K at n = 5,000, one panel per miscalibrated family on flat truths and
// one per family on sharp truths (the many-class cells), and "calibrated":
// the CE_1 estimates of the calibrated model against K (truth 0);
// "toplabel" and "toplabel-calibrated" are the same for the top-label
// estimators, each against the truth of its own target (TL_1, KS or
// ATB_1).
func (r *EstimatorsResult) Figures() map[string]report.Figure {
	if len(r.Rows) == 0 {
		return nil
	}
	canonical := []string{TargetCE1}
	top := []string{TargetTL1, TargetKS, TargetATB1}
	return map[string]report.Figure{
		"ratio":               &estFigure{r, false, canonical, estimatorOrder},
		"calibrated":          &estFigure{r, true, canonical, estimatorOrder},
		"toplabel":            &estFigure{r, false, top, topLabelOrder},
		"toplabel-calibrated": &estFigure{r, true, top, topLabelOrder},
	}
}

// estFigure draws the rows of the targets at n = 5,000, a series per
// estimator of order.
type estFigure struct {
	r          *EstimatorsResult
	calibrated bool
	targets    []string
	order      []string
}

func (f *estFigure) Size() (vg.Length, vg.Length) {
	if f.calibrated {
		return 6 * vg.Inch, 4.5 * vg.Inch
	}
	return 14 * vg.Inch, 8 * vg.Inch
}

// estimatorOrder and topLabelOrder are the order (and colour) of the
// estimators in the figures.
var (
	estimatorOrder = []string{EstVariational, EstVariationalTemp, EstWitness, EstPlugIn, EstBinned}
	topLabelOrder  = []string{EstECEBin, EstECEBinMass, EstSweep, EstSmECE, EstKS, EstATB}
)

func (f *estFigure) Draw(c draw.Canvas) {
	type panelKey struct {
		family string
		sharp  bool
	}
	var keys []panelKey
	byPanel := map[panelKey][]EstimatorRow{}
	for _, row := range f.r.Rows {
		if !slices.Contains(f.targets, row.Target) || row.N != 5000 || (row.Family == "calibrated") != f.calibrated {
			continue
		}
		k := panelKey{row.Family, row.Alpha < 1}
		if f.calibrated {
			k.sharp = false
		}
		if _, ok := byPanel[k]; !ok {
			keys = append(keys, k)
		}
		byPanel[k] = append(byPanel[k], row)
	}
	var plots []*plot.Plot
	for _, k := range keys {
		title := k.family + ", Dir(1), n = 5,000"
		if k.sharp {
			title = k.family + ", Dir(1/K), n = 5,000"
		}
		ylabel := "mean / truth (±SE)"
		if f.calibrated {
			title, ylabel = "calibrated (truth 0), n = 5,000", "mean "+f.targets[0]+" estimate (±SE)"
		}
		p := logXPlot(title, "K (log scale)", ylabel)
		for i, est := range f.order {
			var xs, ys, se []float64
			for _, row := range byPanel[k] {
				if row.Estimator != est || (f.calibrated && row.Alpha < 1) {
					continue
				}
				scale := 1.0
				if !f.calibrated {
					scale = row.Truth
				}
				xs, ys, se = append(xs, float64(row.K)), append(ys, row.Stat.Mean/scale), append(se, row.Stat.SE/scale)
			}
			addSeries(p, est, report.SeriesColor(i), xs, ys, se, false)
		}
		if !f.calibrated {
			truthLine(p, 2, 100, 1)
			p.Y.Min, p.Y.Max = 0, 2
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return
	}
	const cols = 4
	var grid [][]*plot.Plot
	for i := 0; i < len(plots); i += cols {
		row := plots[i:min(i+cols, len(plots))]
		for len(row) < cols && len(plots) > cols {
			row = append(row, nil)
		}
		grid = append(grid, row)
	}
	report.DrawGrid(c, grid)
}
