// Package experiment reproduces the evidence of the ECE^KDE paper
// (Popordanoska et al., NeurIPS 2022, section 4 and appendices F, G) on
// synthetic data with known ground truth (package synth) and on real
// logits: each experiment returns its rows as plain data, writes a table and
// JSON, and draws its figures (report.Figure).
package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/synth"
)

// Setting is one synthetic setup with its ground truths CE_1 and CE_2^2.
type Setting struct {
	K      int               `json:"k"`
	T1     float64           `json:"t1"`
	T2     float64           `json:"t2"`
	Truth  synth.GroundTruth `json:"truth"`
	Truth2 synth.GroundTruth `json:"truth2"`
}

// Name is a short label of the setting.
func (s Setting) Name() string { return fmt.Sprintf("K=%d t1=%g t2=%g", s.K, s.T1, s.T2) }

// Stat is the mean of repeated estimates with its spread.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	SE   float64 `json:"se"`
	Reps int     `json:"reps"`
	// H is the mean bandwidth, for estimators that choose one.
	H float64 `json:"h,omitempty"`
	// Failed counts repetitions where the estimator returned an error
	// (left out of the mean).
	Failed int `json:"failed,omitempty"`
}

// stat summarises values (and the chosen bandwidths hs, may be nil).
func stat(vals, hs []float64, failed int) Stat {
	s := Stat{Reps: len(vals), Failed: failed, Mean: math.NaN(), SD: math.NaN(), SE: math.NaN()}
	if len(vals) == 0 {
		return s
	}
	m := 0.0
	for _, v := range vals {
		m += v
	}
	m /= float64(len(vals))
	s.Mean = m
	if len(vals) > 1 {
		ss := 0.0
		for _, v := range vals {
			ss += (v - m) * (v - m)
		}
		s.SD = math.Sqrt(ss / float64(len(vals)-1))
		s.SE = s.SD / math.Sqrt(float64(len(vals)))
	}
	if len(hs) > 0 {
		h := 0.0
		for _, v := range hs {
			h += v
		}
		s.H = h / float64(len(hs))
	}
	return s
}

// canceled returns an error wrapping ctx.Err() when ctx (may be nil) is
// done.
func canceled(ctx context.Context) error {
	if ctx != nil && ctx.Err() != nil {
		return fmt.Errorf("experiment: %w", ctx.Err())
	}
	return nil
}

// ConvergenceOptions configures Convergence. The zero value is the full
// experiment (about 10 minutes on 2 cores); Quick is a small version for CI.
type ConvergenceOptions struct {
	Quick   bool
	Seed    uint64
	Workers int
	// GroundSamples is the number of Monte Carlo samples of each ground
	// truth; 0 means 1e7 (1e5 with Quick).
	GroundSamples int
	// Progress, if not nil, is told each finished part (a step counting
	// the parts; the phase names the last).
	Progress progress.Reporter
	ctx      context.Context // the call's context, its first argument
}

// ConvRow is one estimator at one (K, n) of the convergence study. P is
// the exponent it estimates (CE_P^P; Truth is of the same power).
type ConvRow struct {
	K         int     `json:"k"`
	N         int     `json:"n"`
	Estimator string  `json:"estimator"`
	P         float64 `json:"p"`
	Stat      Stat    `json:"stat"`
	Truth     float64 `json:"truth"`
}

// SweepRow is the mean estimate at one bandwidth of the h-sweep.
type SweepRow struct {
	Setting string  `json:"setting"`
	N       int     `json:"n"`
	H       float64 `json:"h"`
	Stat    Stat    `json:"stat"`
	Truth   float64 `json:"truth"`
}

// RuleRow is one bandwidth rule (or converging estimator) at one setting
// and n; P is the exponent it estimates (CE_P^P; Truth of the same power).
type RuleRow struct {
	Setting string  `json:"setting"`
	N       int     `json:"n"`
	Rule    string  `json:"rule"`
	P       float64 `json:"p"`
	Stat    Stat    `json:"stat"`
	Truth   float64 `json:"truth"`
}

// CalibratedRow is one estimator on perfectly calibrated predictions
// (t2 = 1, truth 0) at one (K, n).
type CalibratedRow struct {
	K         int     `json:"k"`
	N         int     `json:"n"`
	Estimator string  `json:"estimator"`
	P         float64 `json:"p"`
	Stat      Stat    `json:"stat"`
}

// Crossing is where the mean estimate of the h-sweep crosses the truth:
// Down where it falls below it (from the noise-dominated small h), Up where
// it rises above it again (NaN when it does not); log-linear interpolation
// between grid points.
type Crossing struct {
	Setting string  `json:"setting"`
	N       int     `json:"n"`
	Down    float64 `json:"down"`
	Up      float64 `json:"up"`
}

// LargeKRow is the plug-in (LOO bandwidth), the witness and the
// U-statistic at one setting with many classes and one n.
type LargeKRow struct {
	Setting string  `json:"setting"`
	N       int     `json:"n"`
	Truth   float64 `json:"truth"`  // CE_1
	Truth2  float64 `json:"truth2"` // CE_2^2
	PlugIn  Stat    `json:"plugin_p1"`
	Witness Stat    `json:"witness_p1"`
	U       Stat    `json:"ustat_p2"`
}

// ConvergenceResult holds the five parts of the experiment.
type ConvergenceResult struct {
	Settings    []Setting       `json:"settings"`
	Convergence []ConvRow       `json:"convergence"`
	Sweep       []SweepRow      `json:"sweep"`
	Rules       []RuleRow       `json:"rules"`
	Crossings   []Crossing      `json:"crossings"`
	Calibrated  []CalibratedRow `json:"calibrated"`
	LargeK      []LargeKRow     `json:"large_k"`
	Quick       bool            `json:"quick"`
	Seed        uint64          `json:"seed"`
}

// plan is the size of the experiment.
type plan struct {
	ks        []int
	ns        []int
	reps      func(n int) int
	fixed     []float64
	bins      []int
	sweepNs   []int
	sweepReps int
	hs        []float64
	settings  [][2]float64
	ground    int
	calNs     []int
	calReps   int
	large     []synth.Setup
	largeNs   []int
	largeReps int
}

func convergencePlan(o ConvergenceOptions) plan {
	p := plan{
		ks: []int{4, 8}, ns: []int{100, 200, 500, 1000, 2000, 5000, 10000, 20000},
		reps: func(n int) int {
			switch {
			case n <= 1000:
				return 10
			case n <= 5000:
				return 4
			}
			return 2
		},
		fixed:   []float64{0.01, 0.05, 0.2},
		bins:    []int{2, 3, 5, 10},
		sweepNs: []int{500, 2000, 5000}, sweepReps: 3,
		settings: [][2]float64{{0.6, 0.6}, {0.9, 0.6}, {1.0, 2.0}},
		ground:   10_000_000,
		calNs:    []int{500, 1000, 2000, 5000}, calReps: 4,
		large:   []synth.Setup{{K: 20, T1: 0.6, T2: 0.6}, {K: 100, T1: 0.6, T2: 0.6}, {K: 100, T1: 1, T2: 2}, {K: 100, T1: 0.6, T2: 1}},
		largeNs: []int{2000, 5000}, largeReps: 3,
	}
	p.hs = mathx.LogSpace(0.003, 1, 14)
	if o.Quick {
		p.ks, p.ns = []int{4}, []int{100, 300, 1000}
		p.reps = func(int) int { return 3 }
		p.sweepNs, p.sweepReps = []int{300}, 2
		p.hs = mathx.LogSpace(0.003, 1, 6)
		p.ground = 100_000
		p.calNs, p.calReps = []int{300}, 2
		p.large, p.largeNs, p.largeReps = []synth.Setup{{K: 20, T1: 0.6, T2: 0.6}}, []int{300}, 2
	}
	if o.GroundSamples > 0 {
		p.ground = o.GroundSamples
	}
	return p
}

// seedOf derives the stream of one repetition from the experiment seed.
func seedOf(seed uint64, parts ...int) *rand.Rand {
	h := uint64(1469598103934665603)
	for _, p := range parts {
		h = (h ^ uint64(p)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// Convergence runs the convergence study of the paper's Fig. 2a and the
// bandwidth study behind it:
//
//  1. Convergence: the paper's setup (t1 = t2 = 0.6), K = 4 and 8, n from
//     100 to 20,000; canonical ECE^KDE (CE_1) with the LOO bandwidth (the
//     correct objective and the reference code's; the former also with the
//     appendix C debiasing), at fixed bandwidths, and
//     the binned canonical estimate with 2, 3, 5, 10 bins per class and
//     Doane's rule, and the converging estimators of kde.Witness (the
//     witness for CE_1; for CE_2^2 the U-statistic beside the plug-in at
//     the LOO bandwidth), each averaged over repetitions, against the
//     ground truth.
//  2. Sweep: for (t1, t2) in (0.6, 0.6), (0.9, 0.6), (1.0, 2.0), K = 4 and
//     8 and n = 500, 2,000, 5,000: the estimate against h, and where it
//     crosses the truth.
//  3. Rules: at the same points, the estimate under the correct LOO rule,
//     the reference rule and h = 0.05, and the witness (CE_1); the plug-in
//     at the LOO bandwidth and the U-statistic (CE_2^2).
//  4. Calibrated: t1 = 0.6, t2 = 1 (f = p, truth 0), K = 4 and 8, n = 500
//     to 5,000: the plug-in at the LOO bandwidth, the witness and the
//     U-statistic.
//  5. Many classes: K = 20 and 100 (t1, t2 = (0.6, 0.6), (1.0, 2.0) and the
//     calibrated (0.6, 1)), n = 2,000 and 5,000: the same three estimators.
func Convergence(ctx context.Context, o ConvergenceOptions) (*ConvergenceResult, error) {
	o.ctx = ctx
	p := convergencePlan(o)
	res := &ConvergenceResult{Quick: o.Quick, Seed: o.Seed}
	parts := progress.NewParts(o.Progress, "convergence", 0)
	defer parts.End()
	progress := parts.Finished
	truth := map[string]Setting{}
	for _, k := range p.ks {
		for _, tt := range p.settings {
			s := Setting{K: k, T1: tt[0], T2: tt[1]}
			su := synth.Setup{K: k, T1: tt[0], T2: tt[1]}
			var err error
			if s.Truth, err = su.GroundTruthContext(o.ctx, 1, p.ground, o.Seed+1000, o.Workers); err != nil {
				return nil, err
			}
			if s.Truth2, err = su.GroundTruthContext(o.ctx, 2, p.ground, o.Seed+1000, o.Workers); err != nil {
				return nil, err
			}
			truth[s.Name()] = s
			res.Settings = append(res.Settings, s)
			progress("ground truth " + s.Name())
			if err := canceled(o.ctx); err != nil {
				return nil, err
			}
		}
	}
	kdeEst := func(f []float64, y []int, k int, h float64, debias bool) (float64, error) {
		r, err := kde.Estimate(o.ctx, kde.Canonical, f, y, k, nil, kde.Options{Bandwidth: h, Workers: o.Workers, Debias: debias})
		if err != nil {
			return 0, err
		}
		return r.Values[0].Value, nil
	}
	kdeAt := func(f []float64, y []int, k int, h float64) (float64, error) { return kdeEst(f, y, k, h, false) }
	witness := func(f []float64, y []int, k int, seed uint64) (*kde.WitnessResult, error) {
		return kde.Witness(o.ctx, f, y, k, nil, kde.WitnessOptions{Seed: seed, Workers: o.Workers})
	}
	// loo returns the plug-in CE_1 and CE_2^2 (one sweep: the ratios do
	// not depend on p) at the bandwidth chosen by obj, and that bandwidth.
	loo := func(f []float64, y []int, k int, obj kde.Objective) (v1, v2, h float64, err error) {
		cv, err := kde.SelectBandwidth(o.ctx, kde.Canonical, f, y, k, nil, kde.BandwidthOptions{Objective: obj, Workers: o.Workers})
		if err != nil {
			return 0, 0, 0, err
		}
		r, err := kde.Estimate(o.ctx, kde.Canonical, f, y, k, nil, kde.Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}, Workers: o.Workers})
		if err != nil {
			return 0, 0, 0, err
		}
		return r.Values[0].Value, r.Values[1].Value, cv.Bandwidth, nil
	}

	// 1. Convergence.
	for _, k := range p.ks {
		s := truth[Setting{K: k, T1: 0.6, T2: 0.6}.Name()]
		setup := synth.Setup{K: k, T1: 0.6, T2: 0.6}
		for _, n := range p.ns {
			type acc struct {
				vals, hs []float64
				failed   int
			}
			names := []string{"kde loo", "kde loo debiased", "kde reference"}
			for _, h := range p.fixed {
				names = append(names, fmt.Sprintf("kde h=%g", h))
			}
			for _, b := range p.bins {
				names = append(names, fmt.Sprintf("binned %d", b))
			}
			names = append(names, "binned doane", "witness p=1", "kde loo p=2", "u-statistic p=2")
			accs := make(map[string]*acc, len(names))
			for _, nm := range names {
				accs[nm] = &acc{}
			}
			add := func(name string, v, h float64, err error) {
				a := accs[name]
				if err != nil || !mathx.Finite(v) {
					a.failed++
					return
				}
				a.vals = append(a.vals, v)
				if h > 0 {
					a.hs = append(a.hs, h)
				}
			}
			for r := 0; r < p.reps(n); r++ {
				f, y, _ := setup.Draw(n, seedOf(o.Seed, 1, k, n, r))
				v, v2, h, err := loo(f, y, k, kde.LOO)
				add("kde loo", v, h, err)
				add("kde loo p=2", v2, h, err)
				if err == nil {
					v, err = kdeEst(f, y, k, h, true)
				}
				add("kde loo debiased", v, h, err)
				wr, err := witness(f, y, k, uint64(r))
				if err != nil {
					add("witness p=1", 0, 0, err)
					add("u-statistic p=2", 0, 0, err)
				} else {
					add("witness p=1", wr.Values[0].Value, wr.Values[0].Bandwidth, nil)
					add("u-statistic p=2", wr.Values[1].Value, wr.Values[1].Bandwidth, nil)
				}
				v, _, h, err = loo(f, y, k, kde.Reference)
				add("kde reference", v, h, err)
				for _, h := range p.fixed {
					v, err := kdeAt(f, y, k, h)
					add(fmt.Sprintf("kde h=%g", h), v, 0, err)
				}
				for _, b := range p.bins {
					c, err := metric.Canonical(f, y, k, 1, nil, metric.BinOptions{Bins: b})
					v := math.NaN()
					if err == nil {
						v = c.Value
					}
					add(fmt.Sprintf("binned %d", b), v, 0, err)
				}
				c, err := metric.Canonical(f, y, k, 1, nil, metric.BinOptions{Rule: metric.Doane})
				v = math.NaN()
				if err == nil {
					v = c.Value
				}
				add("binned doane", v, 0, err)
			}
			for _, nm := range names {
				a := accs[nm]
				row := ConvRow{K: k, N: n, Estimator: nm, P: 1, Stat: stat(a.vals, a.hs, a.failed), Truth: s.Truth.Value}
				if strings.HasSuffix(nm, "p=2") {
					row.P, row.Truth = 2, s.Truth2.Value
				}
				res.Convergence = append(res.Convergence, row)
			}
			progress(fmt.Sprintf("convergence K=%d n=%d", k, n))
			if err := canceled(o.ctx); err != nil {
				return nil, err
			}
		}
	}

	// 2 and 3. Sweep and rules.
	for _, k := range p.ks {
		for _, tt := range p.settings {
			s := truth[Setting{K: k, T1: tt[0], T2: tt[1]}.Name()]
			setup := synth.Setup{K: k, T1: tt[0], T2: tt[1]}
			for _, n := range p.sweepNs {
				vals := make([][]float64, len(p.hs))
				var rules = map[string][]float64{}
				var ruleH = map[string][]float64{}
				failed := map[string]int{}
				for r := 0; r < p.sweepReps; r++ {
					f, y, _ := setup.Draw(n, seedOf(o.Seed, 2, k, n, r, int(tt[0]*100), int(tt[1]*100)))
					for i, h := range p.hs {
						if v, err := kdeAt(f, y, k, h); err == nil {
							vals[i] = append(vals[i], v)
						}
					}
					for _, rule := range []struct {
						name string
						obj  kde.Objective
					}{{"loo", kde.LOO}, {"reference", kde.Reference}} {
						v, v2, h, err := loo(f, y, k, rule.obj)
						if err != nil {
							failed[rule.name]++
							if rule.obj == kde.LOO {
								failed["loo p=2"]++
							}
							continue
						}
						rules[rule.name] = append(rules[rule.name], v)
						ruleH[rule.name] = append(ruleH[rule.name], h)
						if rule.obj == kde.LOO {
							rules["loo p=2"] = append(rules["loo p=2"], v2)
							ruleH["loo p=2"] = append(ruleH["loo p=2"], h)
						}
					}
					if v, err := kdeAt(f, y, k, 0.05); err == nil {
						rules["h=0.05"] = append(rules["h=0.05"], v)
					} else {
						failed["h=0.05"]++
					}
					if wr, err := witness(f, y, k, uint64(r)); err == nil {
						for i, name := range []string{"witness", "u-statistic p=2"} {
							rules[name] = append(rules[name], wr.Values[i].Value)
							ruleH[name] = append(ruleH[name], wr.Values[i].Bandwidth)
						}
					} else {
						failed["witness"]++
						failed["u-statistic p=2"]++
					}
				}
				means := make([]float64, len(p.hs))
				for i, h := range p.hs {
					st := stat(vals[i], nil, p.sweepReps-len(vals[i]))
					means[i] = st.Mean
					res.Sweep = append(res.Sweep, SweepRow{Setting: s.Name(), N: n, H: h, Stat: st, Truth: s.Truth.Value})
				}
				for _, name := range ruleNames {
					row := RuleRow{Setting: s.Name(), N: n, Rule: name, P: 1, Stat: stat(rules[name], ruleH[name], failed[name]), Truth: s.Truth.Value}
					if strings.HasSuffix(name, "p=2") {
						row.P, row.Truth = 2, s.Truth2.Value
					}
					res.Rules = append(res.Rules, row)
				}
				down, up := crossings(p.hs, means, s.Truth.Value)
				res.Crossings = append(res.Crossings, Crossing{Setting: s.Name(), N: n, Down: down, Up: up})
				progress(fmt.Sprintf("sweep %s n=%d", s.Name(), n))
				if err := canceled(o.ctx); err != nil {
					return nil, err
				}
			}
		}
	}

	// 4. Calibrated predictions.
	for _, k := range p.ks {
		setup := synth.Setup{K: k, T1: 0.6, T2: 1}
		for _, n := range p.calNs {
			names := []string{"kde loo", "witness p=1", "u-statistic p=2"}
			vals, hs, failed := map[string][]float64{}, map[string][]float64{}, map[string]int{}
			for r := 0; r < p.calReps; r++ {
				f, y, _ := setup.Draw(n, seedOf(o.Seed, 4, k, n, r))
				if v, _, h, err := loo(f, y, k, kde.LOO); err == nil {
					vals["kde loo"], hs["kde loo"] = append(vals["kde loo"], v), append(hs["kde loo"], h)
				} else {
					failed["kde loo"]++
				}
				wr, err := witness(f, y, k, uint64(r))
				for i, nm := range names[1:] {
					if err != nil {
						failed[nm]++
						continue
					}
					vals[nm], hs[nm] = append(vals[nm], wr.Values[i].Value), append(hs[nm], wr.Values[i].Bandwidth)
				}
			}
			for i, nm := range names {
				row := CalibratedRow{K: k, N: n, Estimator: nm, P: 1, Stat: stat(vals[nm], hs[nm], failed[nm])}
				if i == 2 {
					row.P = 2
				}
				res.Calibrated = append(res.Calibrated, row)
			}
			progress(fmt.Sprintf("calibrated K=%d n=%d", k, n))
			if err := canceled(o.ctx); err != nil {
				return nil, err
			}
		}
	}

	// 5. Many classes.
	for si, su := range p.large {
		s := Setting{K: su.K, T1: su.T1, T2: su.T2}
		g1, err := su.GroundTruthContext(o.ctx, 1, p.ground/10, o.Seed+1000, o.Workers)
		if err != nil {
			return nil, err
		}
		g2, err := su.GroundTruthContext(o.ctx, 2, p.ground/10, o.Seed+1000, o.Workers)
		if err != nil {
			return nil, err
		}
		t1, t2 := g1.Value, g2.Value
		for _, n := range p.largeNs {
			var plug, wit, u, hs, hw, hu []float64
			failed := 0
			for r := 0; r < p.largeReps; r++ {
				f, y, _ := su.Draw(n, seedOf(o.Seed, 5, si, n, r))
				v, _, h, err := loo(f, y, su.K, kde.LOO)
				if err != nil {
					failed++
					continue
				}
				wr, err := witness(f, y, su.K, uint64(r))
				if err != nil {
					failed++
					continue
				}
				plug, hs = append(plug, v), append(hs, h)
				wit, hw = append(wit, wr.Values[0].Value), append(hw, wr.Values[0].Bandwidth)
				u, hu = append(u, wr.Values[1].Value), append(hu, wr.Values[1].Bandwidth)
			}
			res.LargeK = append(res.LargeK, LargeKRow{Setting: s.Name(), N: n, Truth: t1, Truth2: t2,
				PlugIn: stat(plug, hs, failed), Witness: stat(wit, hw, failed), U: stat(u, hu, failed)})
			progress(fmt.Sprintf("large K %s n=%d", s.Name(), n))
			if err := canceled(o.ctx); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// ruleNames are the rules of part 3, in table order.
var ruleNames = []string{"loo", "reference", "h=0.05", "witness", "loo p=2", "u-statistic p=2"}

// crossings finds the first h where the means fall from above the truth to
// below it, and the first h after that where they rise above it again
// (log-linear interpolation; NaN when there is none).
func crossings(hs, means []float64, truth float64) (down, up float64) {
	down, up = math.NaN(), math.NaN()
	at := func(i int) float64 {
		a, b := means[i]-truth, means[i+1]-truth
		t := a / (a - b)
		return math.Exp(math.Log(hs[i]) + t*(math.Log(hs[i+1])-math.Log(hs[i])))
	}
	i := 0
	for ; i+1 < len(hs); i++ {
		if mathx.Finite(means[i], means[i+1]) && means[i] > truth && means[i+1] <= truth {
			down = at(i)
			break
		}
	}
	for i++; i+1 < len(hs); i++ {
		if !math.IsNaN(down) && mathx.Finite(means[i], means[i+1]) && means[i] <= truth && means[i+1] > truth {
			up = at(i)
			break
		}
	}
	return down, up
}

// nullable returns v, or nil for NaN and ±Inf (JSON null).
func nullable(v float64) *float64 {
	if !mathx.Finite(v) {
		return nil
	}
	return &v
}

// MarshalJSON writes NaN fields (no spread from one repetition, no
// repetition at all) as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mean   *float64 `json:"mean"`
		SD     *float64 `json:"sd"`
		SE     *float64 `json:"se"`
		Reps   int      `json:"reps"`
		H      float64  `json:"h,omitempty"`
		Failed int      `json:"failed,omitempty"`
	}{nullable(s.Mean), nullable(s.SD), nullable(s.SE), s.Reps, s.H, s.Failed})
}

// MarshalJSON writes a missing crossing as null.
func (c Crossing) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Setting string   `json:"setting"`
		N       int      `json:"n"`
		Down    *float64 `json:"down"`
		Up      *float64 `json:"up"`
	}{c.Setting, c.N, nullable(c.Down), nullable(c.Up)})
}
