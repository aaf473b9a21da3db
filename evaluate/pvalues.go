package evaluate

import (
	"math"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
)

// consistencyTest attaches to each entry of group the p-value of the
// consistency-resampling test (calibtest.ConsistencyMany) whose statistic
// is stat's column of that entry.
func (ev *evaluator) consistencyTest(group []*Result, stat calibtest.Statistics, method string) error {
	c, s := ev.cfg, ev.set
	o := calibtest.ConsistencyOptions{Resamples: c.PValueResamples, Seed: c.Seed, Workers: c.Workers}
	rs, err := calibtest.ConsistencyMany(ev.ctx, s.Probs, s.Labels, s.K, stat, o)
	if err != nil {
		return err
	}
	for i, e := range group {
		e.PValue, e.PValueMethod, e.PValueResamples = jf(rs[i].P), method, ptr(rs[i].Resamples)
	}
	return nil
}

// computedEntries returns the entries that have a value.
func computedEntries(entries []*Result) []*Result {
	var group []*Result
	for _, e := range entries {
		if e.Error == "" && e.Value != nil {
			group = append(group, e)
		}
	}
	return group
}

// recomputedPValues attaches to the entries of metric d (computed on the
// observed labels) their consistency-resampling p-values, d recomputed on
// each resample (O(n log n) each for the binned metrics and mmce), every
// entry of d from the same resamples. The statistic of each test is the
// function of the labels that gave the entry's value.
func (ev *evaluator) recomputedPValues(d *metricDef, entries []*Result) error {
	c, s := ev.cfg, ev.set
	group := computedEntries(entries)
	if len(group) == 0 {
		return nil
	}
	// The metric recomputed on a resample: the same configuration without
	// intervals, progress or p-values, on one goroutine per label vector.
	rc := *c
	rc.ci, rc.CI, rc.CIExact, rc.PValues, rc.Workers = false, false, false, false, 1
	rc.boot.Workers = 1
	stat := func(ys [][]int) ([][]float64, error) {
		out := make([][]float64, len(ys))
		parallel.For(len(ys), c.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
			if ev.ctx.Err() != nil {
				return // the caller returns the context's error
			}
			rs := *s
			rs.Labels = ys[b]
			// No shared bandwidths: the metrics of this path choose none,
			// and a map written from several goroutines would race.
			rev := &evaluator{ctx: ev.ctx, cfg: &rc, set: &rs, bandwidths: map[kde.Notion]*chosenBandwidth{}}
			got, _ := d.compute(rev) // a resample that fails counts against the model
			out[b] = make([]float64, len(group))
			for i, e := range group {
				out[b][i] = math.NaN() // as does an entry it lacks
				for _, g := range got {
					if e.Key() == g.Key() && g.Value != nil {
						out[b][i] = float64(*g.Value)
						break
					}
				}
			}
		})
		if err := ev.ctx.Err(); err != nil {
			return nil, err
		}
		return out, nil
	}
	return ev.consistencyTest(group, stat, "consistency resampling")
}
