package evaluate

import (
	"encoding"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// ksDef is the KS calibration error (splines.md eq. 11) of the top-r
// scores, the within-top-r scores and each class column.
var ksDef = metricDef{
	name:  KS,
	check: func(o *Options) error { return o.KS.check() },
	options: []Option{
		{Name: "ks-r", Kind: TextOption, Default: "1,2", Stream: true, Metrics: MetricSet{KS},
			Usage: "ks: the r of top_r (and of within_top_r for r >= 2), comma-separated",
			set:   textField(func(o *StreamOptions) encoding.TextUnmarshaler { return &o.KS.R })},
		{Name: "ks-cells", Kind: IntOption, Default: strconv.Itoa(metric.DefaultKSCells), Stream: true, StreamOnly: true, Metrics: MetricSet{KS},
			Usage: "score cells of KS (the bounds' width is about 1/cells)",
			set:   intField(1, math.MaxInt32, "an integer >= 1", func(o *StreamOptions) *int { return &o.KSCells })},
	},
	compute:   (*evaluator).ks,
	interval:  centered,
	pValues:   (*evaluator).ksPValues,
	define:    func(_ *config, e *Result) { e.Estimator = "ks-cumulative" }, // max_i |cumulative (y - f) sums| over sorted scores
	sums:      []*sumsPart{ksSums},
	configure: configureKS,
	finish:    func(s *Sums, _ *KernelSums, _ *Evaluation) ([]*Result, error) { return s.finishKS(), nil },
}

// ksConfig is ks's part of a stream's configuration (streamConfig): the
// r of its top-r and within-top-r entries (Options.KS.R) and the number of
// score cells of its sums (StreamOptions.KSCells).
type ksConfig struct {
	KSR     []int `json:"ks_r"`
	KSCells int   `json:"ks_cells"`
}

// valid reports whether a decoded configuration's cells are in range.
func (c ksConfig) valid() bool { return c.KSCells >= 1 && c.KSCells <= 1<<24 }

// configureKS sets ks's part of a stream's configuration: its r, and its
// cells (0: metric.DefaultKSCells), checked.
func configureKS(c *streamConfig, o StreamOptions) error {
	c.KSR, c.KSCells = o.KS.R, o.KSCells
	if c.KSCells == 0 {
		c.KSCells = metric.DefaultKSCells
	}
	if _, err := metric.NewKSSums(c.KSCells); err != nil {
		return optionError("ks-cells", "%v", err)
	}
	return nil
}

// ksState is ksSums's part of the first pass's state (sumsState).
type ksState struct {
	KSTop   []*metric.KSSums `json:"ks_top,omitempty"`    // per r of KSR (r <= K)
	KSWith  []*metric.KSSums `json:"ks_within,omitempty"` // per r >= 2 of KSR (r <= K)
	KSClass []*metric.KSSums `json:"ks_class,omitempty"`
}

// ksSums is ks's first pass: the KS sums of the score cells of each top-r
// score (KSTop, r <= K), each within-top-r score (KSWith, 2 <= r <= K)
// and each class column (KSClass).
var ksSums = &sumsPart{
	what: "ks's",
	start: func(st *sumsState, b *data.Batch) error {
		c := st.Config
		if err := (KSOptions{R: c.KSR}).checkK(b.K); err != nil {
			return err
		}
		for _, r := range c.KSR {
			if r <= st.K {
				ks, _ := metric.NewKSSums(c.KSCells)
				st.KSTop = append(st.KSTop, ks)
			}
			if r >= 2 && r <= st.K {
				ks, _ := metric.NewKSSums(c.KSCells)
				st.KSWith = append(st.KSWith, ks)
			}
		}
		st.KSClass = make([]*metric.KSSums, st.K)
		for k := range st.KSClass {
			st.KSClass[k], _ = metric.NewKSSums(c.KSCells)
		}
		return nil
	},
	add: func(st *sumsState, b *data.Batch) error {
		p, y, k, w := b.Probs, b.Labels, b.K, b.Weights
		i, j := 0, 0
		for _, r := range st.Config.KSR {
			if r <= k {
				sc, oc := metric.TopR(p, y, k, r)
				if err := st.KSTop[i].Add(sc, oc, w); err != nil {
					return err
				}
				i++
			}
			if r >= 2 && r <= k {
				sc, oc := metric.WithinTopR(p, y, k, r)
				if err := st.KSWith[j].Add(sc, oc, w); err != nil {
					return err
				}
				j++
			}
		}
		for cl, ks := range st.KSClass {
			sc, oc := metric.ClassColumn(p, y, k, cl)
			if err := ks.Add(sc, oc, w); err != nil {
				return err
			}
		}
		return nil
	},
	merge: func(st, o *sumsState) error {
		var errs []error
		for i := range st.KSTop {
			errs = append(errs, st.KSTop[i].Merge(o.KSTop[i]))
		}
		for i := range st.KSWith {
			errs = append(errs, st.KSWith[i].Merge(o.KSWith[i]))
		}
		for i := range st.KSClass {
			errs = append(errs, st.KSClass[i].Merge(o.KSClass[i]))
		}
		return errors.Join(errs...)
	},
	check: func(st *sumsState) error {
		nTop, nWith := 0, 0
		for _, r := range st.Config.KSR {
			if r <= st.K {
				nTop++
			}
			if r >= 2 && r <= st.K {
				nWith++
			}
		}
		if len(st.KSTop) != nTop || len(st.KSWith) != nWith || len(st.KSClass) != st.K ||
			slices.Contains(st.KSTop, nil) || slices.Contains(st.KSWith, nil) || slices.Contains(st.KSClass, nil) {
			return errors.New("missing KS sums")
		}
		return nil
	},
	holds: func(st *sumsState) bool { return st.KSTop != nil || st.KSWith != nil || st.KSClass != nil },
}

// KSOptions configures ks (Options.KS). The zero value reports the top-1
// and top-2 errors and the within-top-2 error.
type KSOptions struct {
	// R lists the r of the KS top-r errors (and within-top-r for r >= 2),
	// each at most K (Options.CheckK); nil means {1, 2}.
	R Ranks
}

// check fills the default ranks and refuses an r below 1.
func (o *KSOptions) check() error {
	if o.R == nil {
		o.R = Ranks{1, 2}
	}
	for _, r := range o.R {
		if r < 1 {
			return optionError("ks-r", "ks r = %d: each r must be >= 1", r)
		}
	}
	return nil
}

// checkK refuses an r above the K of the set (Options.CheckK).
func (o KSOptions) checkK(k int) error {
	for _, r := range o.R {
		if r > k {
			return optionError("ks-r", "ks-r %d: the predictions have K = %d classes, so r must be at most %d", r, k, k)
		}
	}
	return nil
}

func (ev *evaluator) ks() ([]*Result, error) {
	s := ev.set
	var out []*Result
	add := func(nt notion.Notion, r int, sc, oc []float64) {
		v, _ := metric.KS(sc, oc, false, s.Weights)
		e := &Result{Metric: KS, Notion: nt, R: ptr(r), Value: jf(v)}
		sorted := metric.NewSortedKS(sc, oc, s.Weights)
		ev.setStat(e, func(idx []int) (float64, error) { return sorted.KSResample(metric.Counts(s.N, idx)), nil })
		out = append(out, e)
	}
	for _, r := range ev.cfg.KS.R {
		if r <= s.K {
			sc, oc := metric.TopR(s.Probs, s.Labels, s.K, r)
			add(notion.TopR, r, sc, oc)
		}
	}
	for _, r := range ev.cfg.KS.R {
		if r >= 2 && r <= s.K {
			sc, oc := metric.WithinTopR(s.Probs, s.Labels, s.K, r)
			add(notion.WithinTopR, r, sc, oc)
		}
	}
	pc := metric.ClassWiseKS(s.Probs, s.Labels, s.K, s.Weights)
	e := &Result{Metric: KS, Notion: notion.ClassWise, Value: jf(pc.Value), Sum: jf(pc.Sum)}
	for _, v := range pc.PerClass {
		e.PerClass = append(e.PerClass, data.Float(v))
	}
	sorted := make([]*metric.SortedKS, s.K)
	for k := range sorted {
		sc, oc := metric.ClassColumn(s.Probs, s.Labels, s.K, k)
		sorted[k] = metric.NewSortedKS(sc, oc, s.Weights)
	}
	ev.setStat(e, func(idx []int) (float64, error) {
		counts, sum := metric.Counts(s.N, idx), 0.0
		for _, sk := range sorted {
			sum += sk.KSResample(counts)
		}
		return sum / float64(s.K), nil
	})
	out = append(out, e)
	return out, nil
}

// finishKS reports KS from the cell sums: the value is the midpoint of the
// bounds lo <= KS <= hi, which the Result's interval holds ("bound").
func (s *Sums) finishKS() []*Result {
	c := s.st.Config
	var out []*Result
	entry := func(nt notion.Notion, r int, ks *metric.KSSums) *Result {
		lo, hi := ks.Interval()
		e := &Result{Metric: KS, Notion: nt, Value: jf((lo + hi) / 2), Interval: []data.Float{data.Float(lo), data.Float(hi)}, IntervalKind: "bound"}
		if r > 0 {
			e.R = ptr(r)
		}
		return e
	}
	i := 0
	for _, r := range c.KSR {
		if r <= s.st.K {
			out = append(out, entry(notion.TopR, r, s.st.KSTop[i]))
			i++
		}
	}
	i = 0
	for _, r := range c.KSR {
		if r >= 2 && r <= s.st.K {
			out = append(out, entry(notion.WithinTopR, r, s.st.KSWith[i]))
			i++
		}
	}
	e := &Result{Metric: KS, Notion: notion.ClassWise, IntervalKind: "bound"}
	sum, slo, shi := 0.0, 0.0, 0.0
	for _, ks := range s.st.KSClass {
		lo, hi := ks.Interval()
		e.PerClass = append(e.PerClass, data.Float((lo+hi)/2))
		sum += (lo + hi) / 2
		slo += lo
		shi += hi
	}
	k := float64(s.st.K)
	e.Value, e.Sum, e.Interval = jf(sum/k), jf(sum), []data.Float{data.Float(slo / k), data.Float(shi / k)}
	return append(out, e)
}

// ksStatistics is the ks metric's entries as statistics of the labels
// with every score column sorted once (metric.SortedKS.KSOutcomes): the
// scores of top_r, within_top_r and each class column do not depend on
// the labels, only the outcomes do. Each statistic equals the entry's
// value bit for bit on the observed labels.
func (ev *evaluator) ksStatistics(group []*Result) calibtest.Statistics {
	s, c := ev.set, ev.cfg
	type column struct {
		sorted   *metric.SortedKS
		outcomes func(y []int) []float64
	}
	cols := make([][]column, len(group)) // the columns of each entry (class_wise: K, averaged)
	for g, e := range group {
		switch e.Notion {
		case notion.TopR, notion.WithinTopR:
			r, view := *e.R, metric.TopR
			if e.Notion == notion.WithinTopR {
				view = metric.WithinTopR
			}
			sc, oc := view(s.Probs, s.Labels, s.K, r)
			cols[g] = []column{{metric.NewSortedKS(sc, oc, s.Weights), func(y []int) []float64 { _, o := view(s.Probs, y, s.K, r); return o }}}
		case notion.ClassWise:
			for k := 0; k < s.K; k++ {
				sc, oc := metric.ClassColumn(s.Probs, s.Labels, s.K, k)
				cols[g] = append(cols[g], column{metric.NewSortedKS(sc, oc, s.Weights), func(y []int) []float64 { _, o := metric.ClassColumn(s.Probs, y, s.K, k); return o }})
			}
		}
	}
	return func(ys [][]int) ([][]float64, error) {
		out := make([][]float64, len(ys))
		parallel.For(len(ys), c.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
			out[b] = make([]float64, len(group))
			if ev.ctx.Err() != nil {
				return
			}
			for g, cs := range cols {
				if len(cs) == 0 {
					out[b][g] = math.NaN()
					continue
				}
				sum := 0.0
				for _, col := range cs {
					sum += col.sorted.KSOutcomes(col.outcomes(ys[b]))
				}
				if len(cs) > 1 {
					sum /= float64(len(cs))
				}
				out[b][g] = sum
			}
		})
		return out, ev.ctx.Err()
	}
}

// ksPValues attaches to the ks entries their consistency-resampling
// p-values, every score column sorted once (ksStatistics).
func (ev *evaluator) ksPValues(_ *metricDef, entries []*Result) error {
	group := computedEntries(entries)
	if len(group) == 0 {
		return nil
	}
	return ev.consistencyTest(group, ev.ksStatistics(group), "consistency resampling, scores sorted once")
}
