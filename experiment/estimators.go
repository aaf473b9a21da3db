package experiment

import (
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/synth"
	"github.com/calib-dev/calib/variational"
)

// The targets of EstimatorsResult rows: the canonical CE_1 = E||h - f||_1
// and CE_2^2 = E||h - f||_2^2 (h = E[y | f]).
const (
	TargetCE1  = "CE_1"
	TargetCE22 = "CE_2^2"
)

// Estimator names of the estimators experiment.
const (
	EstVariational     = "variational"             // variational.CalibrationError, AutoFamilies, the Lp (p = 1) or Brier loss
	EstVariationalTemp = "variational-temperature" // the same with temperature scaling alone
	EstWitness         = "witness"                 // kde.Witness, p = 1
	EstUStatistic      = "u-statistic"             // kde.Witness, p = 2
	EstPlugIn          = "plug-in"                 // kde.Estimate at the LOO bandwidth
	EstBinned          = "binned"                  // metric.Canonical, 2 bins per class
)

// EstimatorCell is one setting of the estimators experiment: a synthetic
// family at one n.
type EstimatorCell struct {
	Family synth.Family
	N      int
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
	// Parts are the parts run: "synthetic" (Cells) and "paper" (the
	// variational paper's published settings, PaperRow); nil means both.
	Parts   []string
	Quick   bool
	Seed    uint64
	Workers int
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
			cells = append(cells, EstimatorCell{fams[0], 500}, EstimatorCell{fams[4], 500})
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
				cells = append(cells, EstimatorCell{f, n})
			}
		}
	}
	for _, k := range []int{20, 50, 100} {
		for _, f := range estimatorFamilies(k, 1/float64(k)) {
			cells = append(cells, EstimatorCell{f, 5000})
		}
	}
	return cells
}

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
	Bias      float64 `json:"bias"`
	RMSE      float64 `json:"rmse"`
	// Covered counts the data sets whose 95 % interval held the truth,
	// of Intervals (0 where the estimator gives none); Below those whose
	// one-sided 95 % lower bound (value - 1.645 SE, SE the interval's
	// half-width / 1.96) was at most the truth.
	Covered   int `json:"covered"`
	Below     int `json:"below"`
	Intervals int `json:"intervals"`
	// Seconds is the mean time per data set.
	Seconds float64 `json:"seconds"`
	// Chosen counts the variational families chosen, "name:count,...".
	Chosen string `json:"chosen,omitempty"`
}

// PaperRow is one published setting of the variational paper (Berta et
// al. 2026, synthetic multiclass; synth.Distortion): its printed truth and
// estimators' means over its seeds (experiment/published), beside the
// Monte Carlo truth of the same setting and calib's variational estimates
// (canonical L1) over Reps data sets of the same n.
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

// estimateOf is one estimator's value on one data set, with the standard
// error of its 95 % normal interval value -+ 1.96 se (NaN where it has
// none).
type estimateOf struct {
	value, se float64
	chosen    string
}

// holds reports whether the 95 % normal interval value -+ 1.96 se holds
// the truth, and whether the one-sided 95 % lower bound value - 1.645 se
// is at most the truth.
func holds(value, se, truth float64) (interval, lower bool) {
	return value-1.959963984540054*se <= truth && truth <= value+1.959963984540054*se, value-1.6448536269514722*se <= truth
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
	res := &EstimatorsResult{Reps: reps, GroundSamples: samples, Quick: o.Quick, Seed: o.Seed}
	runParts := o.Parts
	if runParts == nil {
		runParts = []string{"synthetic", "paper"}
	}
	for _, p := range runParts {
		if p != "synthetic" && p != "paper" {
			return nil, fmt.Errorf("experiment: estimators: unknown part %q (valid: synthetic, paper)", p)
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
	parts := progress.NewParts(o.Progress, "estimators", len(cells)+len(paper))
	defer parts.End()
	temp, _ := variational.FamilyOf("temperature")
	for pi, row := range paper {
		d := synth.Distortion{K: row.K, Alpha: 0.5, H: row.H}
		truth, err := d.GroundTruth(ctx, 1, samples, o.Seed^0x9e3779b97f4a7c15, o.Workers)
		if err != nil {
			return nil, err
		}
		row.Truth, row.TruthSE = truth.Value, truth.SE
		var auto, tv []float64
		for r := range reps {
			f, y, _ := d.Draw(row.N, seedOf(o.Seed, 13, pi, r))
			s, err := data.New(f, row.K, y, false, data.Options{})
			if err != nil {
				return nil, err
			}
			a, err := variational.CalibrationError(ctx, s, variational.Options{Seed: o.Seed})
			if err != nil {
				return nil, fmt.Errorf("experiment: %s K = %d n = %d: %w", row.H, row.K, row.N, err)
			}
			auto = append(auto, a.Value)
			in, below := holds(a.Value, a.SE, truth.Value)
			row.Covered += boolCount(in)
			row.Below += boolCount(below)
			t, err := variational.CalibrationError(ctx, s, variational.Options{Families: []variational.Family{temp}, Seed: o.Seed})
			if err != nil {
				return nil, fmt.Errorf("experiment: %s K = %d n = %d: %w", row.H, row.K, row.N, err)
			}
			tv = append(tv, t.Value)
			if err := canceled(ctx); err != nil {
				return nil, err
			}
		}
		row.Variational, row.VariationalTemp = stat(auto, nil, 0), stat(tv, nil, 0)
		res.Paper = append(res.Paper, row)
		parts.Finished(fmt.Sprintf("%s, K = %d, n = %d", row.H, row.K, row.N))
	}
	for ci, c := range cells {
		fam, n, k := c.Family, c.N, c.Family.K
		truth1, err := fam.GroundTruth(ctx, 1, samples, o.Seed^0x9e3779b97f4a7c15, o.Workers)
		if err != nil {
			return nil, err
		}
		truth2, err := fam.GroundTruth(ctx, 2, samples, o.Seed^0x9e3779b97f4a7c15, o.Workers)
		if err != nil {
			return nil, err
		}
		kernel := float64(n)*float64(n)*float64(k) <= maxWork
		type key struct{ est, target string }
		vals := map[key][]estimateOf{}
		secs := map[string]float64{}
		failed := map[key]int{}
		var order []key
		add := func(est, target string, e estimateOf, err error) {
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
		for r := range reps {
			f, y, _ := fam.Draw(n, seedOf(o.Seed, 11, ci, r))
			s, err := data.New(f, k, y, false, data.Options{})
			if err != nil {
				return nil, fmt.Errorf("experiment: %v, n = %d: %w", fam, n, err)
			}
			t0 := time.Now()
			rc, err := variational.CrossFit(ctx, s, variational.Options{Seed: o.Seed})
			if err == nil {
				r1, err1 := rc.Error(variational.Options{})
				add(EstVariational, TargetCE1, estimateOf{r1.Value, r1.SE, r1.Family}, err1)
				r2, err2 := rc.Error(variational.Options{Loss: variational.Brier})
				add(EstVariational, TargetCE22, estimateOf{r2.Value, r2.SE, r2.Family}, err2)
			} else {
				add(EstVariational, TargetCE1, estimateOf{}, err)
				add(EstVariational, TargetCE22, estimateOf{}, err)
			}
			secs[EstVariational] += time.Since(t0).Seconds()
			t0 = time.Now()
			rt, err := variational.CalibrationError(ctx, s, variational.Options{Families: []variational.Family{temp}, Seed: o.Seed})
			add(EstVariationalTemp, TargetCE1, estimateOf{rt.Value, rt.SE, ""}, err)
			secs[EstVariationalTemp] += time.Since(t0).Seconds()
			if kernel {
				t0 = time.Now()
				w, err := kde.Witness(ctx, f, y, k, nil, kde.WitnessOptions{Seed: o.Seed, Workers: o.Workers})
				for i, est := range []string{EstWitness, EstUStatistic} {
					target := []string{TargetCE1, TargetCE22}[i]
					if err != nil {
						add(est, target, estimateOf{}, err)
						continue
					}
					v := w.Values[i]
					add(est, target, estimateOf{v.Value, termsSE(v.Terms, v.Kept), ""}, nil)
				}
				secs[EstWitness] += time.Since(t0).Seconds()
				t0 = time.Now()
				var pe *kde.Result
				cv, err := kde.SelectBandwidth(ctx, kde.Canonical, f, y, k, nil, kde.BandwidthOptions{Workers: o.Workers})
				if err == nil {
					pe, err = kde.Estimate(ctx, kde.Canonical, f, y, k, nil, kde.Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}, Workers: o.Workers})
				}
				for i, target := range []string{TargetCE1, TargetCE22} {
					if err != nil {
						add(EstPlugIn, target, estimateOf{}, err)
					} else {
						add(EstPlugIn, target, estimateOf{pe.Values[i].Value, math.NaN(), ""}, nil)
					}
				}
				secs[EstPlugIn] += time.Since(t0).Seconds()
			}
			if k <= 20 {
				t0 = time.Now()
				b, err := metric.Canonical(f, y, k, 1, nil, metric.BinOptions{Bins: 2})
				if err == nil {
					add(EstBinned, TargetCE1, estimateOf{b.Value, math.NaN(), ""}, nil)
				} else {
					add(EstBinned, TargetCE1, estimateOf{}, err)
				}
				secs[EstBinned] += time.Since(t0).Seconds()
			}
			if err := canceled(ctx); err != nil {
				return nil, err
			}
		}
		for _, kk := range order {
			truth := truth1
			if kk.target == TargetCE22 {
				truth = truth2
			}
			row := EstimatorRow{Setting: fmt.Sprintf("%v, n = %d", fam, n), Family: familyName(fam), Alpha: fam.Alpha, K: k, N: n,
				Target: kk.target, Truth: truth.Value, TruthSE: truth.SE, Estimator: kk.est}
			var xs []float64
			chosen := map[string]int{}
			sq := 0.0
			for _, e := range vals[kk] {
				xs = append(xs, e.value)
				sq += (e.value - truth.Value) * (e.value - truth.Value)
				if !math.IsNaN(e.se) {
					row.Intervals++
					in, below := holds(e.value, e.se, truth.Value)
					row.Covered += boolCount(in)
					row.Below += boolCount(below)
				}
				if e.chosen != "" {
					chosen[e.chosen]++
				}
			}
			row.Stat = stat(xs, nil, failed[kk])
			row.Bias = row.Stat.Mean - truth.Value
			if len(xs) > 0 {
				row.RMSE = math.Sqrt(sq / float64(len(xs)))
			}
			est := kk.est
			if est == EstUStatistic {
				est = EstWitness // timed together
			}
			row.Seconds = secs[est] / float64(reps)
			var cs []string
			for _, name := range slices.Sorted(maps.Keys(chosen)) {
				cs = append(cs, name+":"+strconv.Itoa(chosen[name]))
			}
			row.Chosen = strings.Join(cs, ",")
			res.Rows = append(res.Rows, row)
		}
		parts.Finished(fmt.Sprintf("%v, n = %d", fam, n))
	}
	return res, nil
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
	fmt.Fprintf(w, "Canonical calibration-error estimators against the Monte Carlo truth (%d data sets per cell, %d samples per truth).\n", r.Reps, r.GroundSamples)
	fmt.Fprintf(w, "ratio: mean / truth; cover: data sets whose 95 %% interval held the truth; lower: whose one-sided 95 %% lower bound\n")
	fmt.Fprintf(w, "(value - 1.645 SE) was at most the truth; s: seconds per data set.\n\n")
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
	fmt.Fprintf(w, "cover / lower: calib's auto estimate's 95 %% intervals holding the truth / one-sided lower bounds below it.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "h\tK\tn\tpaper truth\ttruth\tcalib auto\tsd\tcalib temperature\tpaper TS\tpaper isotonic\tpaper CatBoost\tpaper binning\tcover\tlower\t")
	for _, p := range r.Paper {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%d/%d\t%d/%d\t\n", p.H, p.K, p.N, p.PaperTruth, p.Truth,
			p.Variational.Mean, p.Variational.SD, p.VariationalTemp.Mean, p.Published["TSPredictor"][0], p.Published["IsotonicPredictor"][0],
			p.Published["BetterCatBoost"][0], p.Published["Binning_Classic"][0], p.Covered, p.Variational.Reps, p.Below, p.Variational.Reps)
	}
	return tw.Flush()
}

// Figures returns "ratio": mean / truth of the CE_1 estimators against
// K at n = 5,000, one panel per miscalibrated family on flat truths and
// one per family on sharp truths (the many-class cells), and "calibrated":
// the CE_1 estimates of the calibrated model against K (truth 0).
func (r *EstimatorsResult) Figures() map[string]report.Figure {
	if len(r.Rows) == 0 {
		return nil
	}
	return map[string]report.Figure{"ratio": &estFigure{r, false}, "calibrated": &estFigure{r, true}}
}

type estFigure struct {
	r          *EstimatorsResult
	calibrated bool
}

func (f *estFigure) Size() (vg.Length, vg.Length) {
	if f.calibrated {
		return 6 * vg.Inch, 4.5 * vg.Inch
	}
	return 14 * vg.Inch, 8 * vg.Inch
}

// estimatorOrder is the order (and colour) of the estimators in the
// figures.
var estimatorOrder = []string{EstVariational, EstVariationalTemp, EstWitness, EstPlugIn, EstBinned}

func (f *estFigure) Draw(c draw.Canvas) {
	type panelKey struct {
		family string
		sharp  bool
	}
	var keys []panelKey
	byPanel := map[panelKey][]EstimatorRow{}
	for _, row := range f.r.Rows {
		if row.Target != TargetCE1 || row.N != 5000 || (row.Family == "calibrated") != f.calibrated {
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
			title, ylabel = "calibrated (truth 0), n = 5,000", "mean CE_1 estimate (±SE)"
		}
		p := logXPlot(title, "K (log scale)", ylabel)
		for i, est := range estimatorOrder {
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
			addSeries(p, est, report.Palette[i%len(report.Palette)], xs, ys, se, false)
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
