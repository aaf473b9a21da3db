package evaluate

import (
	"errors"
	"fmt"
	"math"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
)

// Finish returns the Evaluation of the sums of both passes (ks nil when no
// metric needs the second pass, see Sums.KernelPass; joined first when cut
// into blocks): what Evaluate gives for the exact metrics (binned, with
// data-dependent bins too, scores), KS bounds, and for ece_kde, sharpness,
// mmce and ece_witness the estimates from the sampled evaluation points
// with their intervals and standard errors (the Result's "interval" and
// "se"), at the bandwidth chosen on the grid (or the fixed one).
func Finish(s *Sums, ks *KernelSums) (*Evaluation, error) {
	if !s.started || s.st.N == 0 {
		return nil, &data.StreamError{Err: data.ErrEmpty}
	}
	if s.st.Weighted && !(s.st.W > 0) {
		return nil, &data.StreamError{Err: fmt.Errorf("%w: all %d weights are zero", data.ErrWeights, s.st.N)}
	}
	if s.st.Weighted && math.IsInf(s.st.W, 0) {
		return nil, &data.StreamError{Err: fmt.Errorf("%w: the weights sum past the float64 range (1.8e308); a stream accumulates them as given: divide them by a common factor (every number is the same)", data.ErrWeights)}
	}
	c := s.st.Config
	if ks != nil {
		if ks.st.Blocks > 1 {
			return nil, fmt.Errorf("evaluate: kernel sums of block %d of %d: join the blocks first (ConcatKernelSums)", ks.st.Block, ks.st.Blocks)
		}
		if ks.st.Rows != s.st.N {
			return nil, fmt.Errorf("evaluate: the second pass saw %d rows, the first %d: the second pass is incomplete", ks.st.Rows, s.st.N)
		}
		for _, p := range allKernelParts() {
			if p.complete == nil || !p.holds(&ks.st) {
				continue
			}
			if err := p.complete(&ks.st, s.st.N); err != nil {
				return nil, err
			}
		}
	}
	out := &Evaluation{Version: documentVersion, N: int(s.st.N), K: s.st.K, Binary: s.st.Binary, Renormalized: s.st.Renormalized, Rounded: s.st.Rounded, Input: s.st.Input}
	if s.st.Weighted {
		out.WeightSum = data.Float(s.st.W)
	}
	if s.st.ZeroRounded {
		out.Warnings = append(out.Warnings, warn(RoundedZeros, "some rows were rounded to few decimals and hold exact zeros: a small probability written as 0.000000 is a zero coordinate to the Dirichlet kernel (see calib eval without --stream for the counts)"))
	}
	cfg := &config{bin: c.Bins, ps: c.P, boot: metric.BootstrapOptions{Seed: c.Seed}}
	cfg.Options.Bins = c.Bins
	c.smeceConfig.apply(&cfg.Options)
	var results []*Result
	for _, d := range metricTable {
		if !c.has(d.name) {
			continue
		}
		rs, err := d.finish(s, ks, out)
		if err != nil {
			if c.Strict {
				var de *data.StreamError
				if errors.As(err, &de) {
					return nil, &data.StreamError{Source: de.Source, Row: de.Row, Err: fmt.Errorf("%s: %w", d.name, de.Err)}
				}
				return nil, fmt.Errorf("evaluate: %s: %w", d.name, err)
			}
			rs = []*Result{{Metric: d.name, Error: oneLineError(err)}}
		}
		for _, e := range rs {
			cfg.define(d, e, s.st.Weighted)
		}
		results = append(results, rs...)
	}
	sortByGroup(results)
	out.Results = results
	setHeadline(out)
	return out, nil
}

// sampled sets the keys of an estimate from m evaluation points: the
// points, its SE and interval [lo, hi] at the stream's level, of kind
// "sampling", or "exact" with every row a point.
func (s *Sums) sampled(e *Result, m int, se float64, lo, hi data.Float) *Result {
	e.EvalPoints, e.SE, e.Interval, e.IntervalLevel = ptr(m), jf(se), []data.Float{lo, hi}, ptr(s.st.Config.Level)
	e.IntervalKind = "sampling"
	if int64(m) >= s.st.N {
		e.IntervalKind = "exact"
	}
	return e
}
