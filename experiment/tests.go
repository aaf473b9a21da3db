package experiment

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/synth"
)

// TestsOptions configures Tests. The zero value runs the full study: sizes
// n = 100, 1,000, 10,000 and K = 2, 4, 10, 100 on the synthetic setup,
// 1,000 data sets per cell, 99 resamples per consistency or bootstrap test,
// and the power curves at n = 100 to 5,000 with 200 data sets per point.
type TestsOptions struct {
	Sizes []int // n of the size study; nil: 100, 1,000, 10,000
	Ks    []int // K of the synthetic size study; nil: 2, 4, 10, 100
	// Sets is the number of data sets per cell of the size study; 0:
	// 1,000.
	Sets int
	// Resamples is B of the consistency-resampling and bootstrap tests;
	// 0: 99 (p-values on the grid 1/100, ..., 1: P(p <= 0.05) and P(p <=
	// 0.01) are exactly 0.05 and 0.01 under H0).
	Resamples int
	// ExtraMaxN is the largest n at which the slower tests (ece_kde by
	// consistency resampling, skce_u) run in the synthetic size study, at
	// K <= 10; 0: 1,000.
	ExtraMaxN int
	// Real are real networks: their own predictions, subsampled to each
	// size (without replacement; sizes above the set are skipped, saying
	// so), with labels drawn from them.
	Real []RealSet
	// PowerSizes and PowerSets: the n of the power curves (nil: 100, 200,
	// 500, 1,000, 2,000, 5,000) and the data sets per point (0: 200), at
	// PowerK classes (0: 4).
	PowerSizes []int
	PowerSets  int
	PowerK     int
	// Tests are the tests of the size study (nil: StudyTests,
	// with ece_kde and skce_u added where ExtraMaxN allows); NoPower skips
	// the power study.
	Tests   []string
	NoPower bool
	// Quick runs a small version (n = 100 and 1,000, K = 2 and 4, 40 data
	// sets unless Sets says otherwise, power at n = 100 and 1,000 with 20
	// unless PowerSets says otherwise).
	Quick    bool
	Seed     uint64
	Workers  int
	Progress progress.Reporter
	ctx      context.Context // the call's context, its first argument
}

// SizeRow is the rejection rate of one test under H0 in one cell.
type SizeRow struct {
	Source string `json:"source"` // "synthetic" or the network
	N      int    `json:"n"`
	K      int    `json:"k"`
	Test   string `json:"test"`
	Notion string `json:"notion"`
	Sets   int    `json:"sets"` // data sets with a p-value (a test that failed on a set is left out)
	Failed int    `json:"failed,omitempty"`
	// Rate[i] is the rejection rate at Alphas[i], CI its exact 95 %
	// (Clopper-Pearson) interval, Accept the 99 % interval of the rate of
	// a test of level exactly alpha (Binomial(Sets, alpha) / Sets), and
	// Holds whether the rate is at most Accept's upper end.
	Rate   []float64    `json:"rate"`
	CI     [][2]float64 `json:"ci"`
	Accept [][2]float64 `json:"accept"`
	Holds  []bool       `json:"holds"`
}

// PowerRow is the rejection rate at alpha = 0.05 of one test against one
// miscalibration at one n.
type PowerRow struct {
	Miscalibration string     `json:"miscalibration"`
	N              int        `json:"n"`
	K              int        `json:"k"`
	Test           string     `json:"test"`
	Notion         string     `json:"notion"`
	Sets           int        `json:"sets"`
	Rate           float64    `json:"rate"`
	CI             [2]float64 `json:"ci"`
}

// TestsResult is the outcome of Tests.
type TestsResult struct {
	Alphas    []float64  `json:"alphas"`
	Resamples int        `json:"resamples"`
	Size      []SizeRow  `json:"size"`
	Power     []PowerRow `json:"power"`
	Skipped   []string   `json:"skipped,omitempty"`
	Quick     bool       `json:"quick"`
	Seed      uint64     `json:"seed"`
}

// testAlphas are the levels of the size study.
// StudyTests are the tests of the size and power studies when
// TestsOptions.Tests is nil: calibtest.DefaultTests and the SKCE block
// test (the default list, whose rows TESTS.md
// holds).
var StudyTests = []string{"ks", "kuiper", "spiegelhalter", "skce", "ece_bin", "temperature_score", "prior_score"}

var testAlphas = []float64{0.05, 0.01}

// Miscalibrations are the alternatives of the power study, on the paper's
// synthetic setup (x uniform on the simplex, true probabilities p =
// softmax(log x / 0.6)):
//
//	temperature      f = softmax(log p / 0.6) (overconfident; the paper's model), y ~ p
//	label_smoothing  f = 0.8 p + 0.2 / K (underconfident), y ~ p
//	prior_shift      f = p, y ~ q with q_k proportional to pi_k p_k, pi = (2, 1, ..., 1)
var Miscalibrations = []string{"temperature", "label_smoothing", "prior_shift"}

// Tests measures the size and the power of calibtest's tests:
//
//   - Size: on calibrated data (labels drawn from the predictions), the
//     rejection rate of every test at alpha = 0.05 and 0.01 over Sets data
//     sets per cell: the synthetic setup at every n and K, and every real
//     network's own predictions at every n up to its size; the default
//     tests of calibtest.Run everywhere, ece_kde and skce_u on the
//     synthetic cells with n <= ExtraMaxN and K <= 10. A test holds its
//     level in a cell when its rate is within or below the 99 % binomial
//     interval of alpha.
//   - Power: the rejection rate at alpha = 0.05 of the default tests
//     against each of Miscalibrations at each of PowerSizes.
//
// Every data set has its own seed (Seed, the cell, the set), so the result
// is the same for any Workers.
func Tests(ctx context.Context, o TestsOptions) (*TestsResult, error) {
	o.ctx = ctx
	sizes, ks, sets, B, extraMax := o.Sizes, o.Ks, o.Sets, o.Resamples, o.ExtraMaxN
	psizes, psets, pk := o.PowerSizes, o.PowerSets, o.PowerK
	if o.Quick { // the small version's defaults; what is given is kept
		sizes, ks, psizes = cmpOr(sizes, []int{100, 1000}), cmpOr(ks, []int{2, 4}), cmpOr(psizes, []int{100, 1000})
		sets, psets = cmp.Or(sets, 40), cmp.Or(psets, 20)
	}
	sizes = cmpOr(sizes, []int{100, 1000, 10000})
	ks = cmpOr(ks, []int{2, 4, 10, 100})
	psizes = cmpOr(psizes, []int{100, 200, 500, 1000, 2000, 5000})
	sets, B, extraMax, psets, pk = cmp.Or(sets, 1000), cmp.Or(B, 99), cmp.Or(extraMax, 1000), cmp.Or(psets, 200), cmp.Or(pk, 4)
	for _, v := range append(append(slices.Clone(sizes), psizes...), ks...) {
		if v < 2 {
			return nil, fmt.Errorf("experiment: tests: size or K %d (at least 2)", v)
		}
	}
	if sets < 1 || psets < 1 || B < 1 || pk < 2 {
		return nil, fmt.Errorf("experiment: tests: %d sets, %d power sets, %d resamples, K = %d", sets, psets, B, pk)
	}
	if least := calibtest.MinResamples(testAlphas[len(testAlphas)-1]); B < least {
		return nil, fmt.Errorf("experiment: tests: %d resamples: a resampled p-value is at least 1/(B+1), so none could reach alpha = %g; want at least %d", B, testAlphas[len(testAlphas)-1], least)
	}
	res := &TestsResult{Alphas: testAlphas, Resamples: B, Quick: o.Quick, Seed: o.Seed}
	type cell struct {
		source string
		n, k   int
		real   *RealSet
		extra  bool
	}
	var cells []cell
	for _, k := range ks {
		for _, n := range sizes {
			cells = append(cells, cell{source: "synthetic", n: n, k: k, extra: n <= extraMax && n <= calibtest.MaxBootstrapSamples && k <= 10})
		}
	}
	for i := range o.Real {
		rs := &o.Real[i]
		for _, n := range sizes {
			if n > len(rs.Labels) {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s at n = %d (it has %d rows)", rs.Name, n, len(rs.Labels)))
				continue
			}
			cells = append(cells, cell{source: rs.Name, n: n, k: rs.K, real: rs})
		}
	}
	for ci, c := range cells {
		tests := StudyTests
		if o.Tests != nil {
			tests = o.Tests
		} else if c.extra {
			tests = append(slices.Clone(tests), "ece_kde", "skce_u")
		}
		draw := func(rng *rand.Rand) ([]float64, []int) {
			var f []float64
			if c.real != nil {
				idx := rng.Perm(len(c.real.Labels))[:c.n]
				f = make([]float64, c.n*c.k)
				for j, i := range idx {
					copy(f[j*c.k:(j+1)*c.k], c.real.Probs[i*c.k:(i+1)*c.k])
				}
			} else {
				f, _, _ = synth.Paper(c.k).Draw(c.n, rng)
			}
			return f, synth.Labels(nil, f, c.k, rng)
		}
		step := fmt.Sprintf("size: %s n = %d K = %d", c.source, c.n, c.k)
		reps, err := runSets(o, step, sets, tests, B, func(s int) *rand.Rand { return seedOf(o.Seed, 1, ci, s) }, draw)
		if err != nil {
			return nil, err
		}
		for _, key := range reps.keys {
			ps := reps.p[key]
			row := SizeRow{Source: c.source, N: c.n, K: c.k, Test: key[0], Notion: key[1], Sets: len(ps), Failed: reps.failed[key]}
			for _, a := range testAlphas {
				r := rejections(ps, a)
				rate := float64(r) / float64(max(1, len(ps)))
				lo, hi := acceptance(len(ps), a)
				row.Rate = append(row.Rate, rate)
				row.CI = append(row.CI, clopperPearson(r, len(ps)))
				row.Accept = append(row.Accept, [2]float64{lo, hi})
				row.Holds = append(row.Holds, rate <= hi)
			}
			res.Size = append(res.Size, row)
		}
	}
	for mi, m := range Miscalibrations {
		if o.NoPower {
			break
		}
		for ni, n := range psizes {
			draw := func(rng *rand.Rand) ([]float64, []int) { return miscalibrated(m, n, pk, rng) }
			step := fmt.Sprintf("power: %s n = %d", m, n)
			reps, err := runSets(o, step, psets, StudyTests, B, func(s int) *rand.Rand { return seedOf(o.Seed, 2, mi, ni, s) }, draw)
			if err != nil {
				return nil, err
			}
			for _, key := range reps.keys {
				ps := reps.p[key]
				r := rejections(ps, 0.05)
				res.Power = append(res.Power, PowerRow{Miscalibration: m, N: n, K: pk, Test: key[0], Notion: key[1], Sets: len(ps),
					Rate: float64(r) / float64(max(1, len(ps))), CI: clopperPearson(r, len(ps))})
			}
		}
	}
	return res, nil
}

func cmpOr(a, b []int) []int {
	if a == nil {
		return b
	}
	return a
}

// setReps holds the p-values of every (test, notion) over the data sets of
// a cell, in the order of the sets, and the sets where a test failed.
type setReps struct {
	keys   [][2]string
	p      map[[2]string][]float64
	failed map[[2]string]int
}

// runSets runs the tests on sets data sets drawn by draw with the seed of
// rngOf(s), in parallel over the sets (calibtest.Run on one goroutine
// each), and collects the p-values in set order.
func runSets(o TestsOptions, step string, sets int, tests []string, B int, rngOf func(s int) *rand.Rand, draw func(*rand.Rand) ([]float64, []int)) (*setReps, error) {
	progress.Phasef(o.Progress, "%s", step)
	move, done := progress.Start(o.Progress, step)
	defer done()
	reports := make([]*calibtest.Report, sets)
	var mu sync.Mutex
	finished := int64(0)
	err := parallel.ForContext(o.ctx, sets, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, s int) {
		rng := rngOf(s)
		f, y := draw(rng)
		reports[s] = runOne(o.ctx, f, y, len(f)/len(y), tests, B, rng.Uint64())
		if move != nil {
			mu.Lock()
			finished++
			move(finished, int64(sets))
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("experiment: tests: %w", err)
	}
	out := &setReps{p: map[[2]string][]float64{}, failed: map[[2]string]int{}}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, t := range r.Tests {
			key := [2]string{t.Test, t.Notion}
			if _, ok := out.p[key]; !ok {
				out.keys = append(out.keys, key)
				out.p[key] = nil
			}
			if math.IsNaN(t.PValue) {
				out.failed[key]++
				continue
			}
			out.p[key] = append(out.p[key], t.PValue)
		}
	}
	return out, nil
}

// runOne runs the tests on one data set on one goroutine, with no bound
// on their estimated run time (the experiment chose them): all at once (ks
// and kuiper share their sorts), or, when that fails, one by one, so that
// a test that fails (e.g. Spiegelhalter when a column has no variance)
// leaves NaN rows and not the set.
func runOne(ctx context.Context, f []float64, y []int, k int, tests []string, B int, seed uint64) *calibtest.Report {
	if r, err := calibtest.Run(ctx, f, y, k, nil, calibtest.Options{Tests: tests, Resamples: B, Seed: seed, Workers: 1, MaxSeconds: math.Inf(1)}); err == nil {
		return r
	}
	all := &calibtest.Report{}
	for _, t := range tests {
		r, err := calibtest.Run(ctx, f, y, k, nil, calibtest.Options{Tests: []string{t}, Resamples: B, Seed: seed, Workers: 1, MaxSeconds: math.Inf(1)})
		if err != nil {
			for _, nt := range testNotions(t) {
				all.Tests = append(all.Tests, calibtest.Result{Test: t, Notion: string(nt), PValue: math.NaN()})
			}
			continue
		}
		all.Tests = append(all.Tests, r.Tests...)
	}
	return all
}

// testNotions lists the rows a test gives (for a failed test's NaN rows).
func testNotions(t string) []notion.Notion {
	switch t {
	case "ks", "kuiper", "spiegelhalter":
		return []notion.Notion{notion.TopLabel, notion.ClassWise}
	case "ece_kde":
		return []notion.Notion{notion.Canonical, notion.TopLabel, notion.ClassWise}
	case "ece_bin", "ks_error", "mmce":
		return []notion.Notion{notion.TopLabel}
	}
	return []notion.Notion{notion.Canonical}
}

// miscalibrated draws n predictions and labels of the miscalibration m
// (see Miscalibrations) with K classes.
func miscalibrated(m string, n, k int, rng *rand.Rand) ([]float64, []int) {
	p := synth.Temperature(nil, synth.UniformSimplex(make([]float64, n*k), k, rng), k, 0.6)
	switch m {
	case "temperature":
		return synth.Temperature(nil, p, k, 0.6), synth.Labels(nil, p, k, rng)
	case "label_smoothing":
		f := make([]float64, len(p))
		for i, v := range p {
			f[i] = 0.8*v + 0.2/float64(k)
		}
		return f, synth.Labels(nil, p, k, rng)
	}
	q := make([]float64, len(p)) // prior shift
	for i := 0; i < n; i++ {
		s := 0.0
		for c := 0; c < k; c++ {
			w := 1.0
			if c == 0 {
				w = 2
			}
			q[i*k+c] = w * p[i*k+c]
			s += q[i*k+c]
		}
		for c := 0; c < k; c++ {
			q[i*k+c] /= s
		}
	}
	return p, synth.Labels(nil, q, k, rng)
}

// rejections counts the p-values at or below alpha.
func rejections(ps []float64, alpha float64) int {
	r := 0
	for _, p := range ps {
		if p <= alpha {
			r++
		}
	}
	return r
}

// acceptance returns the central 99 % interval of Binomial(n, alpha) / n:
// the rate of a test of level exactly alpha lies in it with probability at
// least 0.99 (the 0.5 % and 99.5 % quantiles).
func acceptance(n int, alpha float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	b := distuv.Binomial{N: float64(n), P: alpha}
	l, h := 0, n
	for r := 0; r <= n; r++ {
		if b.CDF(float64(r)) >= 0.005 {
			l = r
			break
		}
	}
	for r := 0; r <= n; r++ {
		if b.CDF(float64(r)) >= 0.995 {
			h = r
			break
		}
	}
	return float64(l) / float64(n), float64(h) / float64(n)
}

// clopperPearson returns the exact 95 % interval of a rate of r in n.
func clopperPearson(r, n int) [2]float64 {
	if n == 0 {
		return [2]float64{0, 1}
	}
	lo, hi := 0.0, 1.0
	if r > 0 {
		lo = distuv.Beta{Alpha: float64(r), Beta: float64(n - r + 1)}.Quantile(0.025)
	}
	if r < n {
		hi = distuv.Beta{Alpha: float64(r + 1), Beta: float64(n - r)}.Quantile(0.975)
	}
	return [2]float64{lo, hi}
}

// WriteTable prints the size table (rates at 0.05 and 0.01 with the upper
// end of the 99 % acceptance interval; "NO" where a test exceeds it) and
// the power table.
func (r *TestsResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Size: rejection rate on calibrated data (labels drawn from the predictions), %d resamples per resampling test\n", r.Resamples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\tn\tK\ttest\tnotion\tsets\trate 0.05\t95% CI\t99% accept\tholds\trate 0.01\t95% CI\t99% accept\tholds\t")
	for _, s := range r.Size {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d", s.Source, s.N, s.K, s.Test, s.Notion, s.Sets)
		for i := range s.Rate {
			fmt.Fprintf(tw, "\t%.3f\t[%.3f, %.3f]\t<= %.3f\t%s", s.Rate[i], s.CI[i][0], s.CI[i][1], s.Accept[i][1], yesNo(s.Holds[i]))
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var bad []string
	for _, s := range r.Size {
		for i, ok := range s.Holds {
			if !ok {
				bad = append(bad, fmt.Sprintf("%s %s at alpha %g on %s n = %d K = %d (%.3f)", s.Test, s.Notion, r.Alphas[i], s.Source, s.N, s.K, s.Rate[i]))
			}
		}
	}
	checks := len(r.Size) * len(r.Alphas)
	chance := fmt.Sprintf("%d checks; a test of exact level exceeds the upper end with probability at most 0.5 %% per check, so up to %.1f exceedances are expected by chance alone", checks, 0.005*float64(checks))
	if bad == nil {
		fmt.Fprintf(w, "\nEvery test holds its level in every cell (rate within or below the 99 %% binomial interval of alpha; %s).\n", chance)
	} else {
		fmt.Fprintf(w, "\nNot holding its level (rate above the 99 %% binomial interval; %s): %s\n", chance, strings.Join(bad, "; "))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	fmt.Fprintln(w, "\nPower: rejection rate at alpha = 0.05 against the miscalibrations of the synthetic setup")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "miscalibration\tn\tK\ttest\tnotion\tsets\trate\t95% CI\t")
	for _, p := range r.Power {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%.3f\t[%.3f, %.3f]\t\n", p.Miscalibration, p.N, p.K, p.Test, p.Notion, p.Sets, p.Rate, p.CI[0], p.CI[1])
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// Figures returns the power curves (one panel per miscalibration) and the
// synthetic size at alpha = 0.05 against n (one panel per K).
func (r *TestsResult) Figures() map[string]report.Figure {
	figs := map[string]report.Figure{}
	if len(r.Power) > 0 {
		figs["power"] = &testsFigure{r: r, power: true}
	}
	for _, row := range r.Size {
		if row.Source == "synthetic" {
			figs["size"] = &testsFigure{r: r}
			break
		}
	}
	return figs
}

type testsFigure struct {
	r     *TestsResult
	power bool
}

func (f *testsFigure) Size() (vg.Length, vg.Length) { return 12 * vg.Inch, 4.5 * vg.Inch }

func (f *testsFigure) Draw(c draw.Canvas) {
	type series struct {
		name   string
		xs, ys []float64
	}
	var panels []*plot.Plot
	add := func(title string, ss []*series, level bool) {
		if len(ss) == 0 {
			return // no data: a log axis without values cannot be drawn
		}
		p := report.NewPlot("n (log scale)", "rejection rate at alpha = 0.05")
		p.Title.Text = title
		report.LogAxis(&p.X)
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(6)
		for i, s := range ss {
			addSeries(p, s.name, report.SeriesColor(i), s.xs, s.ys, make([]float64, len(s.xs)), i >= len(report.Palette()))
		}
		if level && len(ss) > 0 {
			xs := ss[0].xs
			line, err := plotter.NewLine(plotter.XYs{{X: xs[0], Y: 0.05}, {X: xs[len(xs)-1], Y: 0.05}})
			if err == nil {
				line.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
				p.Add(line)
			}
		}
		panels = append(panels, p)
	}
	find := func(ss []*series, name string) *series {
		for _, s := range ss {
			if s.name == name {
				return s
			}
		}
		return nil
	}
	if f.power {
		for _, m := range Miscalibrations {
			var ss []*series
			k := 0
			for _, row := range f.r.Power {
				if row.Miscalibration != m {
					continue
				}
				k = row.K
				name := row.Test + " " + row.Notion
				s := find(ss, name)
				if s == nil {
					s = &series{name: name}
					ss = append(ss, s)
				}
				s.xs, s.ys = append(s.xs, float64(row.N)), append(s.ys, row.Rate)
			}
			add(fmt.Sprintf("%s (K = %d)", m, k), ss, false)
		}
	} else {
		var ks []int
		for _, row := range f.r.Size {
			if row.Source == "synthetic" && !slices.Contains(ks, row.K) {
				ks = append(ks, row.K)
			}
		}
		for _, k := range ks {
			var ss []*series
			for _, row := range f.r.Size {
				if row.Source != "synthetic" || row.K != k {
					continue
				}
				name := row.Test + " " + row.Notion
				s := find(ss, name)
				if s == nil {
					s = &series{name: name}
					ss = append(ss, s)
				}
				s.xs, s.ys = append(s.xs, float64(row.N)), append(s.ys, row.Rate[0])
			}
			add(fmt.Sprintf("size on calibrated data, K = %d (dashed: 0.05)", k), ss, true)
		}
	}
	report.DrawGrid(c, [][]*plot.Plot{panels})
}
