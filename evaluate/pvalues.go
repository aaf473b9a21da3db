package evaluate

import (
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
)

// pValueMetrics are the metrics Options.PValues tests.
var pValueMetrics = []string{"ece_kde", "ece_bin", "mce", "ece_bin_debiased", "ks", "mmce"}

// pValues attaches to the entries of metric d (computed on the observed
// labels) their consistency-resampling p-values. ECE^KDE shares its kernel
// between the resamples (kde.Relabel: one sweep per notion for every
// exponent, at the entry's bandwidth, which the LOO objective chose
// without the labels); the other metrics are recomputed on each resample
// by d itself (O(n log n) each), every entry of d from the same resamples.
// The statistic of each test is the function of the labels that gave the
// entry's value (for ECE^KDE recomputed by Relabel, to about 1e-15).
func (ev *evaluator) pValues(d metricDef, entries []*Result) error {
	c, s := ev.cfg, ev.set
	if !slices.Contains(pValueMetrics, d.name) {
		return nil
	}
	o := calibtest.ConsistencyOptions{Resamples: c.PValueResamples, Seed: c.Seed, Workers: c.Workers}
	test := func(group []*Result, stat calibtest.Statistics, method string) error {
		rs, err := calibtest.ConsistencyMany(s.Probs, s.Labels, s.K, stat, o)
		if err != nil {
			return err
		}
		for i, e := range group {
			e.PValue, e.PValueMethod, e.PValueResamples = jf(rs[i].P), method, ptr(rs[i].Resamples)
		}
		return nil
	}
	if d.name == "ece_kde" {
		var notions []string
		for _, e := range entries {
			if e.Metric == "ece_kde" && e.Error == "" && !slices.Contains(notions, e.Notion) {
				notions = append(notions, e.Notion)
			}
		}
		for _, name := range notions {
			var group []*Result
			var ps []float64
			for _, e := range entries {
				if e.Metric == "ece_kde" && e.Notion == name && e.Error == "" {
					group, ps = append(group, e), append(ps, *e.P)
				}
			}
			notion, err := kde.ParseNotion(name)
			if err != nil {
				return err
			}
			rl, err := kde.NewRelabel(notion, s.Probs, s.K, s.Weights, kde.Options{Bandwidth: *group[0].Bandwidth, P: ps, ClassMean: c.ClassMean, Workers: c.Workers, Context: ev.ctx})
			if err != nil {
				return fmt.Errorf("%s p-values: %w", name, err)
			}
			if err := test(group, rl.Estimates, "consistency resampling, kernel shared"); err != nil {
				return fmt.Errorf("%s p-values: %w", name, err)
			}
		}
		return nil
	}
	var group []*Result
	for _, e := range entries {
		if e.Error == "" && e.Value != nil {
			group = append(group, e)
		}
	}
	if len(group) == 0 {
		return nil
	}
	if d.name == "ks" {
		return test(group, ev.ksStatistics(group), "consistency resampling, scores sorted once")
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
					if sameEntry(e, g) && g.Value != nil {
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
	return test(group, stat, "consistency resampling")
}

// sameEntry reports whether two entries of one metric are the same entry
// (metric, notion, p, r).
func sameEntry(a, b *Result) bool {
	eq := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqi := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Metric == b.Metric && a.Notion == b.Notion && eq(a.P, b.P) && eqi(a.R, b.R)
}
