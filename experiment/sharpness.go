package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/synth"
)

// SharpnessOptions configures Sharpness. The zero value is the paper's
// Fig. 2b: h = 0.5, location 0.17, slope 2, n = 32 to 16,384, 10,000
// repetitions, a ground truth from 1e8 samples.
type SharpnessOptions struct {
	Bandwidth float64 // 0 means 0.5
	Location  float64 // 0 means 0.17
	// Slope a of the sigmoidal map f = sigmoid(a logit(s)) that turns the
	// calibrated scores s into the reported f; 0 means 2.
	Slope         float64
	Reps          int // 0 means 10,000
	GroundSamples int // 0 means 1e8
	Quick         bool
	Seed          uint64
	Workers       int
	ctx           context.Context // the call's context, its first argument
}

// SharpnessRow is eq. 7's ratio and its appendix D debiased value at one n.
type SharpnessRow struct {
	N        int     `json:"n"`
	Partial  Stat    `json:"partial"`
	Debiased Stat    `json:"debiased"`
	Truth    float64 `json:"truth"`
}

// SharpnessResult holds the setup, the ground truth and the rows.
type SharpnessResult struct {
	Bandwidth float64           `json:"bandwidth"`
	Location  float64           `json:"location"`
	Slope     float64           `json:"slope"`
	Truth     synth.GroundTruth `json:"truth"`
	Rows      []SharpnessRow    `json:"rows"`
	Quick     bool              `json:"quick"`
	Seed      uint64            `json:"seed"`
}

// sharpSample draws one sample: the calibrated score s (uniform), its label
// y ~ Bernoulli(s), the reported f = sigmoid(a logit(s)), and the Beta
// kernel k_h(x0; f) with alpha = (f/h + 1, (1-f)/h + 1) at x0 = (loc, 1-loc).
func sharpSample(rng *rand.Rand, a, h, loc float64) (s, y, k float64) {
	s = rng.Float64()
	for s == 0 {
		s = rng.Float64()
	}
	if rng.Float64() < s {
		y = 1
	}
	f := 1 / (1 + math.Exp(-a*math.Log(s/(1-s))))
	a1, a2 := f/h+1, (1-f)/h+1
	g1, _ := math.Lgamma(a1)
	g2, _ := math.Lgamma(a2)
	g, _ := math.Lgamma(a1 + a2)
	k = math.Exp((a1-1)*math.Log(loc) + (a2-1)*math.Log(1-loc) - g1 - g2 + g)
	return s, y, k
}

// Sharpness runs the sharpness-bias experiment of the paper's Fig. 2b in
// the binary setting: calibrated scores s ~ U(0, 1) with labels
// y ~ Bernoulli(s) are reported as f = sigmoid(a logit(s)); at the fixed
// location x0 the sharpness ratio (E[k y] / E[k])^2, k the Beta kernel of
// bandwidth h centred at f (eq. 7 at one evaluation point), is estimated
// from n samples by eq. 7's ratio of U-statistics and by its appendix D
// debiased version, over many repetitions, against the ground truth
// (E[k s] / E[k])^2 from streamed Monte Carlo (E[y | s] = s).
func Sharpness(ctx context.Context, o SharpnessOptions) (*SharpnessResult, error) {
	o.ctx = ctx
	h, loc, a := o.Bandwidth, o.Location, o.Slope
	if h == 0 {
		h = 0.5
	}
	if loc == 0 {
		loc = 0.17
	}
	if a == 0 {
		a = 2
	}
	if !(h > 0) || !(loc > 0 && loc < 1) || !(a > 0) {
		return nil, fmt.Errorf("experiment: sharpness: bandwidth %v, location %v, slope %v", h, loc, a)
	}
	reps, ground := o.Reps, o.GroundSamples
	sizes := []int{}
	maxN := 16384
	if reps == 0 {
		reps = 10000
	}
	if ground == 0 {
		ground = 100_000_000
	}
	if o.Quick {
		reps, ground, maxN = 300, 1_000_000, 1024
	}
	for n := 32; n <= maxN; n *= 2 {
		sizes = append(sizes, n)
	}
	res := &SharpnessResult{Bandwidth: h, Location: loc, Slope: a, Quick: o.Quick, Seed: o.Seed}

	// Ground truth: batches of 2^16 samples, each giving its own ratio;
	// the ratio of the pooled sums, with the batch ratios' spread as
	// standard error.
	const batch = 1 << 16
	nb := (ground + batch - 1) / batch
	sk, sks := make([]float64, nb), make([]float64, nb)
	if ctx == nil {
		ctx = context.Background()
	}
	stopped := parallel.ForContext(ctx, nb, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
		rng := seedOf(o.Seed, 4, b)
		for i := 0; i < min(batch, ground-b*batch); i++ {
			s, _, k := sharpSample(rng, a, h, loc)
			sk[b] += k
			sks[b] += k * s
		}
	})
	if stopped != nil {
		return nil, fmt.Errorf("experiment: %w", stopped)
	}
	tk, tks, sd := 0.0, 0.0, 0.0
	for b := range sk {
		tk, tks = tk+sk[b], tks+sks[b]
	}
	truth := (tks / tk) * (tks / tk)
	for b := range sk {
		v := (sks[b] / sk[b]) * (sks[b] / sk[b])
		sd += (v - truth) * (v - truth)
	}
	se := math.NaN()
	if nb > 1 {
		se = math.Sqrt(sd/float64(nb-1)) / math.Sqrt(float64(nb))
	}
	res.Truth = synth.GroundTruth{Value: truth, SE: se, Samples: ground}

	for _, n := range sizes {
		if err := canceled(o.ctx); err != nil {
			return nil, err
		}
		partial, full := make([]float64, reps), make([]float64, reps)
		stopped := parallel.ForContext(ctx, reps, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, r int) {
			rng := seedOf(o.Seed, 5, n, r)
			x, y := make([]float64, n), make([]float64, n)
			for i := range x {
				_, y[i], x[i] = sharpSample(rng, a, h, loc)
			}
			partial[r], full[r] = kde.SquaredRatio(x, y, nil)
		})
		if stopped != nil {
			return nil, fmt.Errorf("experiment: %w", stopped)
		}
		var ps, fs []float64
		failed := 0
		for r := range partial {
			if mathx.Finite(partial[r], full[r]) {
				ps, fs = append(ps, partial[r]), append(fs, full[r])
			} else {
				failed++
			}
		}
		res.Rows = append(res.Rows, SharpnessRow{N: n, Partial: stat(ps, nil, failed), Debiased: stat(fs, nil, failed), Truth: truth})
	}
	return res, nil
}

// WriteTable prints the rows.
func (r *SharpnessResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Sharpness ratio (E[k y]/E[k])^2 at x0 = %g, Beta kernel h = %g, f = sigmoid(%g logit(s)), s ~ U(0,1), y ~ Bernoulli(s)\n", r.Location, r.Bandwidth, r.Slope)
	fmt.Fprintf(w, "ground truth %s\n\n", r.Truth)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "n\treps\teq. 7 mean\tbias\tSE\tappendix D mean\tbias\tSE\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%d\t%.5f\t%+.2e\t%.1e\t%.5f\t%+.2e\t%.1e\t\n", row.N, row.Partial.Reps, row.Partial.Mean, row.Partial.Mean-row.Truth, row.Partial.SE,
			row.Debiased.Mean, row.Debiased.Mean-row.Truth, row.Debiased.SE)
	}
	return tw.Flush()
}

// Figures returns the estimate against n and the absolute bias against n
// (log-log).
func (r *SharpnessResult) Figures() map[string]report.Figure {
	return map[string]report.Figure{"n": &sharpFigure{r}}
}

type sharpFigure struct{ r *SharpnessResult }

func (f *sharpFigure) Size() (vg.Length, vg.Length) { return 12 * vg.Inch, 4.8 * vg.Inch }

func (f *sharpFigure) Draw(c draw.Canvas) {
	r := f.r
	est := report.NewPlot("n (log scale)", "mean estimate (±SE)")
	est.Title.Text = fmt.Sprintf("sharpness ratio at x0 = %g (h = %g)", r.Location, r.Bandwidth)
	report.LogAxis(&est.X)
	bias := report.NewPlot("n (log scale)", "|mean - truth| (log scale)")
	bias.Title.Text = "|bias| against n"
	report.LogAxis(&bias.X)
	report.LogAxis(&bias.Y)
	for _, p := range []*plot.Plot{est, bias} {
		p.Legend.Top, p.Legend.Left = true, false
		p.Legend.TextStyle.Font.Size = vg.Points(9)
	}
	var xs, pm, ps, fm, fse, pb, fb, zero []float64
	for _, row := range r.Rows {
		xs = append(xs, float64(row.N))
		pm, ps = append(pm, row.Partial.Mean), append(ps, row.Partial.SE)
		fm, fse = append(fm, row.Debiased.Mean), append(fse, row.Debiased.SE)
		pb, fb = append(pb, positive(math.Abs(row.Partial.Mean-row.Truth))), append(fb, positive(math.Abs(row.Debiased.Mean-row.Truth)))
		zero = append(zero, 0)
	}
	addSeries(est, "partially debiased (eq. 7)", report.SeriesColor(0), xs, pm, ps, false)
	addSeries(est, "fully debiased (appendix D)", report.SeriesColor(1), xs, fm, fse, false)
	if len(xs) > 0 {
		truthLine(est, xs[0], xs[len(xs)-1], r.Truth.Value)
	}
	addSeries(bias, "eq. 7", report.SeriesColor(0), xs, pb, zero, false)
	addSeries(bias, "appendix D", report.SeriesColor(1), xs, fb, zero, false)
	report.DrawGrid(c, [][]*plot.Plot{{est, bias}})
}

// positive maps 0 to NaN (left out of a log axis).
func positive(v float64) float64 {
	if v > 0 {
		return v
	}
	return math.NaN()
}
