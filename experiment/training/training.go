package training

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/train"
	"github.com/calib-dev/calib/train/tabular"
)

// Options configures Training.
type Options struct {
	// Sets are the embedded data sets (tabular.Names); nil means all five
	// (only vehicle with Quick).
	Sets []string
	// Seeds is the number of training seeds (1, 2, ...) per configuration
	// [3; 2 with Quick].
	Seeds int
	// Quick trains 8 epochs per run (2 in the timing runs).
	Quick bool
	// Dir, if not empty, caches every finished run as
	// Dir/runs/SET/CONFIG-seedS.json; a later call with the same settings
	// reads it instead of training again (resume after an interruption).
	Dir string
	// Workers is the number of runs trained at once (GoMLX's pure-Go
	// backend uses about one core per run at these sizes); 0 means
	// GOMAXPROCS. The timing runs are always sequential.
	Workers int
	// Progress, if not nil, is told each finished run and timing (a step
	// counting them; the phase names the last).
	Progress progress.Reporter
	ctx      context.Context // the call's context, its first argument
}

// Setup are the fixed settings of the study, recorded in its JSON.
type Setup struct {
	Layers, Hidden, Patience int
	LR                       float64
	Epochs                   map[string]int // maximum epochs per data set
	Batch                    map[string]int // mini-batch size per data set
	ValFrac, TestFrac        float64
	SplitSeed                uint64
	BinsTopECE               int
	TimingEpochs             int
}

// TrainConfig is one loss configuration: Loss with Param (lambda of
// kde-xe and mmce, the smoothing alpha of ls, 0 otherwise).
type TrainConfig struct {
	Loss  string  `json:"loss"`
	Param float64 `json:"param"`
}

// Name is "xe", "kde-xe 0.05", "ls 0.1", ...
func (c TrainConfig) Name() string {
	if c.Param == 0 {
		return c.Loss
	}
	return fmt.Sprintf("%s %g", c.Loss, c.Param)
}

// Configs are the configurations of the study: XE; KDE-XE with
// lambda in {0.001, 0.01, 0.05, 0.1, 0.2} (canonical, p = 1, per-batch
// LOO bandwidth); MMCE with lambda in {0.5, 1, 2, 4}; focal loss FL-53;
// label smoothing with alpha in {0.05, 0.1}.
func Configs() []TrainConfig {
	cs := []TrainConfig{{Loss: train.LossXE}}
	for _, l := range []float64{0.001, 0.01, 0.05, 0.1, 0.2} {
		cs = append(cs, TrainConfig{train.LossKDEXE, l})
	}
	for _, l := range []float64{0.5, 1, 2, 4} {
		cs = append(cs, TrainConfig{train.LossMMCE, l})
	}
	cs = append(cs, TrainConfig{Loss: train.LossFocal})
	for _, a := range []float64{0.05, 0.1} {
		cs = append(cs, TrainConfig{train.LossLS, a})
	}
	return cs
}

// TrainMetrics are the calibration and accuracy figures of one set of
// predictions.
type TrainMetrics struct {
	Accuracy float64 `json:"accuracy"`
	// ECEKDE is the canonical L1 ECE^KDE (CE_1 estimate) with the LOO
	// bandwidth of these predictions (kde.SelectBandwidth), Bandwidth.
	ECEKDE    float64 `json:"ece_kde"`
	Bandwidth float64 `json:"bandwidth"`
	// TopECE is the top-label binned ECE (L1, 15 equal-width bins).
	TopECE float64 `json:"top_ece"`
	NLL    float64 `json:"nll"`
}

// Trained is one trained model: its configuration, training record
// and the metrics on the validation split (before temperature scaling) and
// on the test split before (Pre) and after (Post) temperature scaling
// fitted on the validation logits.
type Trained struct {
	Set          string       `json:"set"`
	Config       TrainConfig  `json:"config"`
	Seed         uint64       `json:"seed"`
	Fingerprint  string       `json:"fingerprint"`
	Epochs       int          `json:"epochs"`
	BestEpoch    int          `json:"best_epoch"`
	EpochSeconds float64      `json:"epoch_seconds"` // mean; runs train concurrently, see TimingRow
	Temperature  float64      `json:"temperature"`
	Val          TrainMetrics `json:"val"`
	Pre          TrainMetrics `json:"test_pre_t"`
	Post         TrainMetrics `json:"test_post_t"`
}

// MeanSD is a mean and sample standard deviation over seeds.
type MeanSD struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// MetricStats are TrainMetrics aggregated over seeds.
type MetricStats struct {
	Accuracy, ECEKDE, TopECE, NLL MeanSD
}

// Summary aggregates the seeds of one data set and configuration.
type Summary struct {
	Set         string
	Config      TrainConfig
	Seeds       int
	Epochs      float64 // mean epochs run
	BestEpoch   float64 // mean best epoch
	Temperature MeanSD
	Val         MetricStats
	Pre, Post   MetricStats
}

// TimingRow is the training time per epoch of one data set, measured in
// sequential runs (nothing else training), at the study's batch size: XE, KDE-XE with the
// per-batch LOO bandwidth (the study's setting), KDE-XE at a fixed
// bandwidth 0.1 (the kernel term alone) and MMCE.
type TimingRow struct {
	Set                         string
	Train, K, Batch, Batches    int
	XE, KDEXE, KDEXEFixed, MMCE float64 // seconds per epoch
	OverheadLOO, OverheadFixed  float64 // KDE-XE / XE - 1
	OverheadMMCE                float64
	KernelPerBatch, LOOPerBatch float64 // ms of the kernel term and of the LOO choice per batch
}

// DataSummary describes one data set of the study.
type DataSummary struct {
	Set                  string
	N, D, K              int
	Train, Val, Test     int
	SmallestClass, Major int
}

// Result is the outcome of Training.
type Result struct {
	Quick     bool
	Setup     Setup
	Data      []DataSummary
	Configs   []TrainConfig
	Runs      []Trained
	Summaries []Summary
	Timing    []TimingRow
}

// trainingVersion changes when the meaning of a cached run changes.
const trainingVersion = 1

// Training runs the analogue of the ECE^KDE paper's Tables 2 to 4 and
// Figure 4 on the embedded UCI tabular sets: for every data set,
// configuration (Configs) and seed it trains the MLP (2 hidden
// layers of 64 ReLU units, Adam 1e-3, batch 128 (64 on vehicle), early
// stopping on the validation NLL with patience 10) on the fixed stratified 60/20/20 split
// (seed 1), fits a temperature on the validation logits, and measures
// accuracy, canonical L1 ECE^KDE, top-label ECE and NLL on the test split
// before and after temperature scaling. Runs are independent and
// reproducible (seeded), trained Workers at a time and cached in Dir.
// Then it times an epoch of XE, KDE-XE and MMCE per data set sequentially.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.ctx = ctx
	sets := o.Sets
	if sets == nil {
		sets = tabular.Names()
		if o.Quick {
			sets = []string{"vehicle"}
		}
	}
	seeds := o.Seeds
	if seeds == 0 {
		seeds = 3
		if o.Quick {
			seeds = 2
		}
	}
	setup := Setup{Layers: 2, Hidden: 64, Patience: 10, LR: 1e-3, ValFrac: 0.2, TestFrac: 0.2, SplitSeed: 1,
		BinsTopECE: 15, TimingEpochs: 3, Epochs: map[string]int{}, Batch: map[string]int{}}
	for _, s := range sets {
		setup.Epochs[s], setup.Batch[s] = 30, 128
		switch s {
		case "vehicle":
			// 507 training rows: batches of 64 (as the paper for its
			// small medical sets) and more epochs for enough steps.
			setup.Epochs[s], setup.Batch[s] = 100, 64
		case "shuttle":
			setup.Epochs[s] = 10 // 34,800 training rows: converges in a few epochs
		}
		if o.Quick {
			setup.Epochs[s] = 8
		}
	}
	if o.Quick {
		setup.TimingEpochs = 2
	}
	res := &Result{Quick: o.Quick, Setup: setup, Configs: Configs()}
	type job struct {
		set string
		tb  *train.Table
		sp  *train.Split
		cfg TrainConfig
		rep uint64
	}
	var jobs []job
	tables := map[string]*train.Table{}
	splits := map[string]*train.Split{}
	for _, s := range sets {
		tb, err := tabular.Load(s)
		if err != nil {
			return nil, err
		}
		sp, err := train.StratifiedSplit(tb.Labels, tb.K, setup.ValFrac, setup.TestFrac, setup.SplitSeed)
		if err != nil {
			return nil, fmt.Errorf("experiment: %s: %w", s, err)
		}
		tables[s], splits[s] = tb, sp
		res.Data = append(res.Data, DataSummary{Set: s, N: tb.N, D: tb.D, K: tb.K, Train: len(sp.Train), Val: len(sp.Val), Test: len(sp.Test),
			SmallestClass: slices.Min(tb.Counts), Major: slices.Max(tb.Counts)})
		for _, c := range res.Configs {
			for r := 1; r <= seeds; r++ {
				jobs = append(jobs, job{s, tb, sp, c, uint64(r)})
			}
		}
	}
	parts := progress.NewParts(o.Progress, "training runs", len(jobs)+len(sets))
	defer parts.End()
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	kdeWorkers := 0
	if workers > 1 {
		kdeWorkers = 1 // the runs already use the cores
	}
	res.Runs = make([]Trained, len(jobs))
	errs := make([]error, len(jobs))
	var mu sync.Mutex
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := canceled(o.ctx); err != nil {
					errs[i] = err // the remaining runs are skipped
					continue
				}
				j := jobs[i]
				cfg := trainConfig(setup, j.set, j.cfg, j.rep)
				run, err := cachedRun(o.Dir, j.set, j.cfg, j.rep, fingerprint(setup, j.set, cfg), func() (*Trained, error) {
					run, err := trainRun(o.ctx, j.tb, j.sp, cfg, kdeWorkers, setup.BinsTopECE)
					if run != nil {
						run.Set, run.Config, run.Seed = j.set, j.cfg, j.rep
					}
					return run, err
				})
				if err != nil {
					errs[i] = fmt.Errorf("experiment: %s, %s, seed %d: %w", j.set, j.cfg.Name(), j.rep, err)
				} else {
					run.Set, run.Config, run.Seed = j.set, j.cfg, j.rep
					res.Runs[i] = *run
				}
				mu.Lock()
				done++
				parts.Finished(fmt.Sprintf("%s %s seed %d", j.set, j.cfg.Name(), j.rep))
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := canceled(o.ctx); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.Summaries = summarize(res.Runs)
	for _, s := range sets {
		row, err := timeEpochs(tables[s], splits[s], setup, s)
		if err != nil {
			return nil, err
		}
		res.Timing = append(res.Timing, *row)
		parts.Finished("timing " + s)
	}
	return res, nil
}

// trainConfig is the train.Config of one run.
func trainConfig(setup Setup, set string, c TrainConfig, seed uint64) train.Config {
	cfg := train.Config{Loss: c.Loss, Layers: setup.Layers, Hidden: setup.Hidden, Epochs: setup.Epochs[set], Batch: setup.Batch[set],
		LR: setup.LR, Patience: setup.Patience, Seed: seed}
	switch c.Loss {
	case train.LossKDEXE, train.LossMMCE:
		cfg.Lambda = c.Param
	case train.LossLS:
		cfg.Smoothing = c.Param
	}
	return cfg
}

// fingerprint identifies what a cached run was computed from: the
// settings of the study and of train.Config that change a run (a field
// added to train.Config later joins the list only when it is set, so that
// existing caches stay valid).
func fingerprint(setup Setup, set string, cfg train.Config) string {
	type fields struct {
		Loss                            string
		Lambda, Smoothing, Bandwidth, P float64
		Layers, Hidden                  int
		Dropout                         float64
		Epochs, Batch                   int
		LR                              float64
		Patience                        int
		Seed                            uint64
	}
	s := fmt.Sprintf("v%d %s split %g/%g/%d topbins %d %+v", trainingVersion, set, setup.ValFrac, setup.TestFrac, setup.SplitSeed,
		setup.BinsTopECE, fields{cfg.Loss, cfg.Lambda, cfg.Smoothing, cfg.Bandwidth, cfg.P, cfg.Layers, cfg.Hidden, cfg.Dropout,
			cfg.Epochs, cfg.Batch, cfg.LR, cfg.Patience, cfg.Seed})
	if cfg.Optimizer != "" && cfg.Optimizer != train.OptimizerAdam {
		s += fmt.Sprintf(" optimizer %s momentum %g", cfg.Optimizer, cfg.Momentum)
	}
	if cfg.Loss == train.LossKDEXE {
		// Version 2 of the KDE term's gradient (written out, not automatic
		// differentiation): the same derivative, other rounding.
		s += " kde-gradient 2"
	}
	return s
}

// cachedRun returns the run cached under dir with the fingerprint, or
// computes it with fn and caches it.
func cachedRun(dir, set string, c TrainConfig, seed uint64, fp string, fn func() (*Trained, error)) (*Trained, error) {
	var path string
	if dir != "" {
		path = filepath.Join(dir, "runs", set, fmt.Sprintf("%s_%g-seed%d.json", c.Loss, c.Param, seed))
		if b, err := os.ReadFile(path); err == nil {
			var run Trained
			if json.Unmarshal(b, &run) == nil && run.Fingerprint == fp {
				return &run, nil
			}
		}
	}
	run, err := fn()
	if err != nil {
		return nil, err
	}
	run.Fingerprint = fp
	if path != "" {
		b, err := json.MarshalIndent(run, "", " ")
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		// Write then rename, so that an interrupted run leaves no partial file.
		if err := os.WriteFile(path+".tmp", append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// trainRun trains one model and measures it.
func trainRun(ctx context.Context, tb *train.Table, sp *train.Split, cfg train.Config, workers, bins int) (*Trained, error) {
	fit, err := train.Fit(tb, sp, cfg)
	if err != nil {
		return nil, err
	}
	labelsOf := func(rows []int) []int {
		y := make([]int, len(rows))
		for j, i := range rows {
			y[j] = tb.Labels[i]
		}
		return y
	}
	yv, yt := labelsOf(sp.Val), labelsOf(sp.Test)
	k := tb.K
	run := &Trained{Epochs: fit.Epochs, BestEpoch: fit.BestEpoch}
	for _, s := range fit.EpochTime {
		run.EpochSeconds += s / float64(len(fit.EpochTime))
	}
	if run.Val, err = trainMetrics(ctx, fit.ValLogits, yv, k, workers, bins); err != nil {
		return nil, fmt.Errorf("validation metrics: %w", err)
	}
	if run.Pre, err = trainMetrics(ctx, fit.TestLogits, yt, k, workers, bins); err != nil {
		return nil, fmt.Errorf("test metrics: %w", err)
	}
	temp, err := recal.FitTemperature(fit.ValLogits, yv, k, nil)
	if err != nil {
		return nil, err
	}
	run.Temperature = temp.Temperature
	scaled := make([]float64, len(fit.TestLogits))
	for i, z := range fit.TestLogits {
		scaled[i] = z / temp.Temperature
	}
	if run.Post, err = trainMetrics(ctx, scaled, yt, k, workers, bins); err != nil {
		return nil, fmt.Errorf("test metrics after temperature scaling: %w", err)
	}
	return run, nil
}

// trainMetrics measures logits (n×k) against labels with evaluate (the one
// definition of every metric): accuracy, NLL (exact log-softmax), the
// canonical ECE^KDE p = 1 at its LOO bandwidth and the top-label binned
// ECE_1 (bins equal-width bins).
func trainMetrics(ctx context.Context, logits []float64, labels []int, k, workers, bins int) (TrainMetrics, error) {
	var m TrainMetrics
	s, err := data.New(logits, k, labels, true, data.Options{})
	if err != nil {
		return m, err
	}
	ev, err := evaluate.Evaluate(ctx, s, evaluate.Options{
		Metrics: evaluate.MetricSet{evaluate.ECEKDE, evaluate.ECEBin, evaluate.NLL, evaluate.Accuracy}, Strict: true,
		Mode: evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical}}, P: []float64{1}, Bins: metric.BinOptions{Bins: bins}, Workers: workers,
	})
	if err != nil {
		return m, err
	}
	value := func(k evaluate.Key) float64 {
		if e := ev.Lookup(k); e != nil && e.Value != nil {
			return float64(*e.Value)
		}
		return math.NaN() // refused below
	}
	m.ECEKDE = value(evaluate.Key{Metric: evaluate.ECEKDE, Notion: notion.Canonical, P: 1})
	m.TopECE = value(evaluate.Key{Metric: evaluate.ECEBin, Notion: notion.TopLabel, P: 1})
	m.NLL = value(evaluate.Key{Metric: evaluate.NLL})
	m.Accuracy = value(evaluate.Key{Metric: evaluate.Accuracy})
	if e := ev.Lookup(evaluate.Key{Metric: evaluate.ECEKDE, Notion: notion.Canonical, P: 1}); e != nil && e.Bandwidth != nil {
		m.Bandwidth = *e.Bandwidth
	}
	for _, v := range []float64{m.Accuracy, m.NLL, m.ECEKDE, m.TopECE} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return m, fmt.Errorf("a metric is %v", v)
		}
	}
	return m, nil
}

// summarize aggregates runs over seeds, in the order of first appearance.
func summarize(runs []Trained) []Summary {
	type key struct {
		set string
		c   TrainConfig
	}
	var order []key
	groups := map[key][]Trained{}
	for _, r := range runs {
		k := key{r.Set, r.Config}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Summary
	for _, k := range order {
		g := groups[k]
		s := Summary{Set: k.set, Config: k.c, Seeds: len(g)}
		pick := func(f func(Trained) float64) MeanSD {
			xs := make([]float64, len(g))
			for i, r := range g {
				xs[i] = f(r)
			}
			return meanSD(xs)
		}
		stats := func(m func(Trained) TrainMetrics) MetricStats {
			return MetricStats{
				Accuracy: pick(func(r Trained) float64 { return m(r).Accuracy }),
				ECEKDE:   pick(func(r Trained) float64 { return m(r).ECEKDE }),
				TopECE:   pick(func(r Trained) float64 { return m(r).TopECE }),
				NLL:      pick(func(r Trained) float64 { return m(r).NLL }),
			}
		}
		s.Val = stats(func(r Trained) TrainMetrics { return r.Val })
		s.Pre = stats(func(r Trained) TrainMetrics { return r.Pre })
		s.Post = stats(func(r Trained) TrainMetrics { return r.Post })
		s.Epochs = pick(func(r Trained) float64 { return float64(r.Epochs) }).Mean
		s.BestEpoch = pick(func(r Trained) float64 { return float64(r.BestEpoch) }).Mean
		s.Temperature = pick(func(r Trained) float64 { return r.Temperature })
		out = append(out, s)
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (0 for one
// value).
func meanSD(xs []float64) MeanSD {
	m := 0.0
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return MeanSD{Mean: m}
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return MeanSD{Mean: m, SD: math.Sqrt(ss / float64(len(xs)-1))}
}

// timeEpochs trains XE, KDE-XE (LOO and fixed bandwidth) and MMCE for
// setup.TimingEpochs epochs each, one after the other, and reports the
// mean seconds per epoch after the first (which also compiles the graph).
func timeEpochs(tb *train.Table, sp *train.Split, setup Setup, set string) (*TimingRow, error) {
	row := &TimingRow{Set: set, Train: len(sp.Train), K: tb.K, Batch: setup.Batch[set], Batches: len(sp.Train) / setup.Batch[set]}
	for _, v := range []struct {
		loss string
		h    float64
		out  *float64
	}{{train.LossXE, 0, &row.XE}, {train.LossKDEXE, 0, &row.KDEXE}, {train.LossKDEXE, 0.1, &row.KDEXEFixed}, {train.LossMMCE, 0, &row.MMCE}} {
		cfg := train.Config{Loss: v.loss, Lambda: 0.1, Bandwidth: v.h, Layers: setup.Layers, Hidden: setup.Hidden, Epochs: setup.TimingEpochs,
			Batch: setup.Batch[set], LR: setup.LR, Patience: setup.TimingEpochs + 1, Seed: 1}
		fit, err := train.Fit(tb, sp, cfg)
		if err != nil {
			return nil, fmt.Errorf("experiment: timing %s %s: %w", set, v.loss, err)
		}
		// The first epoch also compiles the graph: leave it out.
		times := fit.EpochTime[1:]
		for _, s := range times {
			*v.out += s / float64(len(times))
		}
	}
	row.OverheadLOO, row.OverheadFixed, row.OverheadMMCE = row.KDEXE/row.XE-1, row.KDEXEFixed/row.XE-1, row.MMCE/row.XE-1
	b := float64(max(row.Batches, 1))
	row.KernelPerBatch = 1e3 * (row.KDEXEFixed - row.XE) / b
	row.LOOPerBatch = 1e3 * (row.KDEXE - row.KDEXEFixed) / b
	return row, nil
}

// canceled returns an error wrapping ctx.Err() when ctx (may be nil) is
// done.
func canceled(ctx context.Context) error {
	if ctx != nil && ctx.Err() != nil {
		return fmt.Errorf("experiment: %w", ctx.Err())
	}
	return nil
}
