package experiment

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/synth"
	"github.com/calib-dev/calib/variational"
)

// HeadlineOptions configures Headline. The zero value is the full grid:
// K = 2, 10, 50, 100, n = 1,000, 5,000, 20,000, the families of
// HeadlineFamilies, 40 data sets per cell, 200,000 Monte Carlo samples per
// truth.
type HeadlineOptions struct {
	Ks, Ns []int
	// Misc names the miscalibrations run (synth.Miscalibration values of
	// HeadlineFamilies); nil means all of them.
	Misc []string
	Reps int
	// GroundSamples is the number of Monte Carlo samples of each truth; 0
	// means 200,000.
	GroundSamples int
	// Family is the headline's recalibration families
	// (evaluate.VariationalOptions.Family); "" means the default.
	Family string
	// Quick runs K = 10, n = 1,000, the split and calibrated families, 4
	// data sets, 20,000 samples.
	Quick    bool
	Seed     uint64
	Workers  int
	Progress progress.Reporter
}

// HeadlineFamilies are the headline experiment's miscalibrations of truths
// h = x ~ Dir(alpha) (alpha = 1 for K <= 10, 1/K above: mean top
// probability about 0.63): three that a parametric family of the default
// holds (a temperature, label smoothing, a prior shift), three that none
// holds (a temperature that follows the entropy, the direction of the
// miscalibration changing between regions of the simplex, one class's own
// distortion) and a calibrated model.
func HeadlineFamilies(k int) []synth.Family {
	alpha := 1.0
	if k > 10 {
		alpha = 1 / float64(k)
	}
	return []synth.Family{
		{K: k, Alpha: alpha, Miscalibration: synth.Tempering, Param: 0.7},
		{K: k, Alpha: alpha, Miscalibration: synth.Smoothing, Param: 0.1},
		{K: k, Alpha: alpha, Miscalibration: synth.PriorShift, Param: 0.5, Seed: 1},
		{K: k, Alpha: alpha, Miscalibration: synth.Entropic, Param: 0.6},
		{K: k, Alpha: alpha, Miscalibration: synth.Split, Param: 0.7},
		{K: k, Alpha: alpha, Miscalibration: synth.OneClass, Param: 3},
		{K: k, Alpha: alpha, Miscalibration: synth.Calibrated},
	}
}

// HeadlineRow is one cell: the headline (evaluate.Headline, the default
// calib eval's first row) and the Brier row (ece_variational canonical
// brier) over Reps data sets against the truths CE_1 and CE_2^2.
type HeadlineRow struct {
	Family  string  `json:"family"` // the miscalibration
	Param   float64 `json:"param"`
	Alpha   float64 `json:"alpha"`
	K       int     `json:"k"`
	N       int     `json:"n"`
	Truth   float64 `json:"truth"` // CE_1
	TruthSE float64 `json:"truth_se"`
	Truth2  float64 `json:"truth2"` // CE_2^2
	// Ratio holds the 10 %, 50 % and 90 % quantiles of headline / truth
	// (of the headline itself for a calibrated model, truth 0).
	Ratio [3]float64 `json:"ratio"`
	// BrierRatio is the median of the Brier row / CE_2^2 (of the row
	// itself for a calibrated model).
	BrierRatio float64 `json:"brier_ratio"`
	// Covered counts the data sets whose headline interval held the
	// truth; ExcludesZero those whose lower end was above 0.
	Covered      int `json:"covered"`
	ExcludesZero int `json:"excludes_zero"`
	Reps         int `json:"reps"`
	Failed       int `json:"failed,omitempty"`
	// Chosen counts the families the headline reported, "name:count".
	Chosen  string  `json:"chosen"`
	Seconds float64 `json:"seconds"` // mean time of one evaluation
}

// HeadlineResult holds the cells.
type HeadlineResult struct {
	Rows          []HeadlineRow `json:"rows"`
	Reps          int           `json:"reps"`
	GroundSamples int           `json:"ground_samples"`
	Family        string        `json:"variational_family,omitempty"`
	Seed          uint64        `json:"seed"`
}

// Headline measures what `calib eval` prints first against ground truth:
// on each cell (a family of HeadlineFamilies, K, n) it draws Reps data
// sets (data set r from seedOf(Seed, 17, cell, r)), evaluates each with
// the default metrics' ece_variational entries and compares the headline
// and its interval with the Monte Carlo truth.
func Headline(ctx context.Context, o HeadlineOptions) (*HeadlineResult, error) {
	ks, ns, reps, samples := o.Ks, o.Ns, o.Reps, o.GroundSamples
	misc := o.Misc
	if o.Quick {
		ks, ns, reps, samples = []int{10}, []int{1000}, 4, 20000
		if misc == nil {
			misc = []string{string(synth.Split), string(synth.Calibrated)}
		}
	}
	if ks == nil {
		ks = []int{2, 10, 50, 100}
	}
	if ns == nil {
		ns = []int{1000, 5000, 20000}
	}
	if reps == 0 {
		reps = 40
	}
	if samples == 0 {
		samples = 200000
	}
	if reps < 1 || samples < 2 {
		return nil, fmt.Errorf("experiment: headline: %d data sets, %d ground samples", reps, samples)
	}
	valid := make([]string, 0, 7)
	for _, fa := range HeadlineFamilies(2) {
		valid = append(valid, string(fa.Miscalibration))
	}
	for _, m := range misc {
		if !slices.Contains(valid, m) {
			return nil, fmt.Errorf("experiment: headline: unknown miscalibration %q (valid: %s)", m, strings.Join(valid, ", "))
		}
	}
	for _, v := range append(slices.Clone(ks), ns...) {
		if v < 2 {
			return nil, fmt.Errorf("experiment: headline: K and n must be at least 2, got %d", v)
		}
	}
	if _, err := variational.ParseFamilies(o.Family); err != nil {
		return nil, fmt.Errorf("experiment: headline: %w", err)
	}
	type cell struct {
		fa synth.Family
		n  int
	}
	var cells []cell
	for _, k := range ks {
		for _, n := range ns {
			for _, fa := range HeadlineFamilies(k) {
				if misc == nil || slices.Contains(misc, string(fa.Miscalibration)) {
					cells = append(cells, cell{fa, n})
				}
			}
		}
	}
	res := &HeadlineResult{Reps: reps, GroundSamples: samples, Family: o.Family, Seed: o.Seed}
	parts := progress.NewParts(o.Progress, "headline", len(cells))
	defer parts.End()
	brierKey := evaluate.Key{Metric: evaluate.ECEVariational, Notion: notion.Canonical, P: 2, Variant: string(variational.Brier)}
	gseed := o.Seed ^ 0x9e3779b97f4a7c15
	for ci, c := range cells {
		t1, err := c.fa.GroundTruth(ctx, 1, samples, gseed, o.Workers)
		if err != nil {
			return nil, err
		}
		t2, err := c.fa.GroundTruth(ctx, 2, samples, gseed, o.Workers)
		if err != nil {
			return nil, err
		}
		type one struct {
			v, lo, hi, b float64
			family       string
			secs         float64
			err          error
		}
		out := make([]one, reps)
		err = parallel.ForContext(ctx, reps, o.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, r int) {
			f, y, _ := c.fa.Draw(c.n, seedOf(o.Seed, 17, ci, r))
			s, err := data.New(f, c.fa.K, y, false, data.Options{})
			if err != nil {
				out[r].err = err
				return
			}
			t0 := time.Now()
			// The canonical notion alone: the headline and the Brier row (not
			// the top-label and class-wise maps, which read nothing here).
			ev, err := evaluate.Evaluate(ctx, s, evaluate.Options{Metrics: evaluate.MetricSet{evaluate.ECEVariational},
				Mode: evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical}}, Variational: evaluate.VariationalOptions{Family: o.Family}, Workers: 1})
			if err != nil {
				out[r].err = err
				return
			}
			h, b := ev.Lookup(evaluate.Headline), ev.Lookup(brierKey)
			if h == nil || h.Value == nil || len(h.Interval) != 2 || b == nil || b.Value == nil {
				out[r].err = fmt.Errorf("no headline or Brier row")
				return
			}
			out[r] = one{v: float64(*h.Value), lo: float64(h.Interval[0]), hi: float64(h.Interval[1]), b: float64(*b.Value), family: h.Family, secs: time.Since(t0).Seconds()}
		})
		if err != nil {
			return nil, err
		}
		row := HeadlineRow{Family: string(c.fa.Miscalibration), Param: c.fa.Param, Alpha: c.fa.Alpha, K: c.fa.K, N: c.n,
			Truth: t1.Value, TruthSE: t1.SE, Truth2: t2.Value, Reps: reps}
		var ratio, bratio []float64
		chosen := map[string]int{}
		for _, x := range out {
			if x.err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				row.Failed++
				continue
			}
			ratio = append(ratio, over(x.v, t1.Value))
			bratio = append(bratio, over(x.b, t2.Value))
			if x.lo <= t1.Value && t1.Value <= x.hi {
				row.Covered++
			}
			if x.lo > 0 {
				row.ExcludesZero++
			}
			chosen[x.family]++
			row.Seconds += x.secs / float64(reps)
		}
		if len(ratio) > 0 {
			slices.Sort(ratio)
			slices.Sort(bratio)
			row.Ratio = [3]float64{mathx.Quantile(ratio, 0.1), mathx.Quantile(ratio, 0.5), mathx.Quantile(ratio, 0.9)}
			row.BrierRatio = mathx.Quantile(bratio, 0.5)
		}
		var cs []string
		for _, name := range slices.Sorted(maps.Keys(chosen)) {
			cs = append(cs, fmt.Sprintf("%s:%d", name, chosen[name]))
		}
		row.Chosen = strings.Join(cs, ",")
		res.Rows = append(res.Rows, row)
		parts.Finished(fmt.Sprintf("%v, n = %d", c.fa, c.n))
	}
	return res, nil
}

// over returns v / truth, or v itself for a truth of 0.
func over(v, truth float64) float64 {
	if truth == 0 {
		return v
	}
	return v / truth
}

// WriteTable writes one line per cell: the truth, the headline's median
// ratio to it with its 10-90 % range, the interval's coverage, the share
// of intervals above 0, the Brier row's median ratio to CE_2^2 and the
// families reported.
func (r *HeadlineResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "The headline (ece_variational canonical p=1) against the true CE_1: %d data sets per cell, truths from %d Monte Carlo samples; ratios are estimate / truth (the estimate itself where the truth is 0).\n", r.Reps, r.GroundSamples)
	if r.Family != "" {
		fmt.Fprintf(w, "Families: %s.\n", r.Family)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tK\tn\tCE_1\tmedian\t10-90 %\tcovered\t> 0\tbrier / CE_2^2\tchosen\ts")
	for _, x := range r.Rows {
		name := x.Family
		if x.Family != string(synth.Calibrated) {
			name = fmt.Sprintf("%s %g", x.Family, x.Param)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.3f\t%.3f to %.3f\t%d/%d\t%d\t%.3f\t%s\t%.2f\n", name, x.K, x.N, x.Truth, x.Ratio[1], x.Ratio[0], x.Ratio[2],
			x.Covered, x.Reps-x.Failed, x.ExcludesZero, x.BrierRatio, x.Chosen, x.Seconds)
	}
	return tw.Flush()
}

// Figures returns none.
func (r *HeadlineResult) Figures() map[string]report.Figure { return nil }
