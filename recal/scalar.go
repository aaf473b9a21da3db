package recal

import (
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"

	"github.com/calib-dev/calib/metric"
)

// Modes of the scalar-score maps (isotonic, histogram, platt, beta).
const (
	// ModeTopLabel recalibrates the top-label confidence against the
	// correctness; the vector keeps the arg max (as Spline).
	ModeTopLabel = "top_label"
	// ModeBinary recalibrates p1 = f_1 of a K = 2 set against [y = 1];
	// the vector is (1 - q, q).
	ModeBinary = "binary"
	// ModeOneVsRest (isotonic only) recalibrates every class column
	// against [y = k] and renormalises the row (a row whose maps are all 0
	// keeps its input).
	ModeOneVsRest = "one_vs_rest"
)

// scalarFit fits one scalar map to scores, outcomes and sample weights
// (nil: all 1; checked).
type scalarFit func(scores, outcomes, weights []float64) (scalarMap, error)

// scalarMap is a fitted scalar recalibration.
type scalarMap interface {
	apply(s float64) float64
	valid() error
}

// views returns the (scores, outcomes) to fit for a mode: one view for
// top_label and binary, K views for one_vs_rest. Each view has one score
// per row, so the rows' sample weights are the views' weights.
func views(mode string, probs []float64, labels []int, k int) ([][2][]float64, error) {
	switch mode {
	case ModeTopLabel:
		s, c := metric.TopR(probs, labels, k, 1)
		return [][2][]float64{{s, c}}, nil
	case ModeBinary:
		if k != 2 {
			return nil, fmt.Errorf("%w: mode binary needs K = 2, got %d", ErrInput, k)
		}
		s, c := metric.ClassColumn(probs, labels, k, 1)
		return [][2][]float64{{s, c}}, nil
	case ModeOneVsRest:
		v := make([][2][]float64, k)
		for c := range v {
			s, o := metric.ClassColumn(probs, labels, k, c)
			v[c] = [2][]float64{s, o}
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: unknown mode %q (valid: %s, %s, %s)", ErrInput, mode, ModeTopLabel, ModeBinary, ModeOneVsRest)
}

// calibrateScalar is the Calibrate of the scalar-score maps: the input
// checked against the map's header, probabilities (softmax of the logits if
// only they are given) mapped in the map's mode.
func calibrateScalar(h Header, mode string, maps []scalarMap, probs, logits []float64, k int) ([]float64, error) {
	if _, err := h.checkInput(probs, logits, k); err != nil {
		return nil, err
	}
	return applyScalar(mode, maps, probsOf(probs, logits, k), k), nil
}

// applyScalar maps probability vectors with the fitted maps of a mode.
func applyScalar(mode string, maps []scalarMap, probs []float64, k int) []float64 {
	n := len(probs) / k
	out := make([]float64, len(probs))
	for i := 0; i < n; i++ {
		row, dst := probs[i*k:(i+1)*k], out[i*k:(i+1)*k]
		switch mode {
		case ModeBinary:
			q := clamp01(maps[0].apply(row[1]))
			dst[0], dst[1] = 1-q, q
		case ModeOneVsRest:
			sum := 0.0
			for c, v := range row {
				dst[c] = clamp01(maps[c].apply(v))
				sum += dst[c]
			}
			if sum > 0 {
				for c := range dst {
					dst[c] /= sum
				}
			} else {
				copy(dst, row)
			}
		default:
			top := 0
			for c, v := range row {
				if v > row[top] {
					top = c
				}
			}
			s := math.Min(1, math.Max(1/float64(k)+1e-9, maps[0].apply(row[top])))
			spread(dst, row, top, s)
		}
	}
	return out
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// Isotonic is isotonic regression by pool-adjacent-violators (method
// "isotonic", input "probabilities"). Each map is a non-decreasing function
// given by points (X, Y), evaluated by linear interpolation and constant
// outside [X_0, X_last], as scikit-learn's IsotonicRegression(out_of_bounds=
// "clip"): every pooled block contributes its lowest and highest score with
// the block's mean outcome.
type Isotonic struct {
	Header
	Mode string      `json:"mode"`
	Maps []*PointMap `json:"maps"`
}

// PointMap is a piecewise-linear map through points (X, Y), X increasing
// (equal X allowed: the later point wins from the right).
type PointMap struct {
	X []float64 `json:"x"`
	Y []float64 `json:"y"`
}

func (m *PointMap) apply(s float64) float64 {
	x, y := m.X, m.Y
	i := upperBound(x, s)
	switch {
	case i == 0:
		return y[0]
	case i == len(x):
		return y[len(y)-1]
	}
	return y[i-1] + (y[i]-y[i-1])*(s-x[i-1])/(x[i]-x[i-1])
}

// valid checks the form of the map (as many x as y, at least one) and its
// values: x finite and non-decreasing, y probabilities, non-decreasing (as
// pool-adjacent-violators makes them).
func (m *PointMap) valid() error {
	if len(m.X) == 0 || len(m.X) != len(m.Y) {
		return fmt.Errorf("point map with %d x and %d y", len(m.X), len(m.Y))
	}
	return firstError(checkFinite("x", m.X), checkSorted("x", m.X), checkProbabilities("y", m.Y), checkSorted("y", m.Y))
}

// fitIsotonic is weighted pool-adjacent-violators on the samples sorted by
// score; equal scores are pooled first (they must get one value). A block
// of samples B has the value sum_{i in B} w_i o_i / sum_{i in B} w_i;
// samples of weight 0 are left out.
func fitIsotonic(scores, outcomes, weights []float64) (scalarMap, error) {
	if n := mathx.PositiveRows(weights, len(scores)); n < 2 {
		if weights != nil {
			return nil, fmt.Errorf("%w: %d samples of weight > 0, need at least 2", ErrTooFew, n)
		}
		return nil, fmt.Errorf("%w: %d samples, need at least 2", ErrTooFew, n)
	}
	idx := sortedOrder(scores)
	type block struct {
		sum, w, lo, hi float64
	}
	var bs []block
	for _, j := range idx {
		s := scores[j]
		o, w := outcomes[j], 1.0
		if weights != nil {
			if w = weights[j]; !(w > 0) {
				continue
			}
			o *= w
		}
		if len(bs) > 0 && bs[len(bs)-1].hi == s {
			b := &bs[len(bs)-1]
			b.sum += o
			b.w += w
		} else {
			bs = append(bs, block{sum: o, w: w, lo: s, hi: s})
		}
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/a.w < b.sum/b.w {
				break
			}
			bs = bs[:len(bs)-2]
			bs = append(bs, block{sum: a.sum + b.sum, w: a.w + b.w, lo: a.lo, hi: b.hi})
		}
	}
	m := &PointMap{}
	for _, b := range bs {
		v := b.sum / b.w
		m.X, m.Y = append(m.X, b.lo), append(m.Y, v)
		if b.hi != b.lo {
			m.X, m.Y = append(m.X, b.hi), append(m.Y, v)
		}
	}
	return m, nil
}

// FitIsotonic fits isotonic maps in the given mode ("" means top_label) by
// weighted pool-adjacent-violators: each map is the non-decreasing q
// minimising
//
//	sum_i w_i (o_i - q(s_i))^2
//
// over the views' scores s_i and outcomes o_i, nil weights meaning all 1;
// a block's value is its weighted mean outcome, and samples of weight 0 are
// left out (integer weights give the map of the rows repeated w_i times).
// Malformed input (see FitSpline) and an unknown mode wrap ErrInput, fewer
// than 2 samples of weight > 0 ErrTooFew.
func FitIsotonic(probs []float64, labels []int, k int, mode string, weights []float64) (*Isotonic, error) {
	if mode == "" {
		mode = ModeTopLabel
	}
	maps, err := fitViews(mode, probs, labels, k, weights, fitIsotonic)
	if err != nil {
		return nil, fmt.Errorf("recal: isotonic: %w", err)
	}
	c := &Isotonic{Header: Header{SchemaVersion: SchemaVersion, Method: "isotonic", Input: InputProbabilities, K: k}, Mode: mode}
	for _, m := range maps {
		c.Maps = append(c.Maps, m.(*PointMap))
	}
	return c, nil
}

// fitViews checks the input and fits one scalar map per view of the mode,
// each with the sample weights.
func fitViews(mode string, probs []float64, labels []int, k int, weights []float64, fit scalarFit) ([]scalarMap, error) {
	if err := checkFitInput(probs, nil, labels, k, false, weights); err != nil {
		return nil, err
	}
	vs, err := views(mode, probs, labels, k)
	if err != nil {
		return nil, err
	}
	maps := make([]scalarMap, len(vs))
	for i, v := range vs {
		if maps[i], err = fit(v[0], v[1], weights); err != nil {
			if len(vs) > 1 {
				return nil, fmt.Errorf("class %d: %w", i, err)
			}
			return nil, err
		}
	}
	return maps, nil
}

// Calibrate maps the probability vectors.
func (c *Isotonic) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	maps := make([]scalarMap, len(c.Maps))
	for i, m := range c.Maps {
		maps[i] = m
	}
	return calibrateScalar(c.Header, c.Mode, maps, probs, logits, k)
}

func (c *Isotonic) valid() error {
	want := 1
	if c.Mode == ModeOneVsRest {
		want = c.K
	} else if c.Mode != ModeTopLabel && c.Mode != ModeBinary {
		return fmt.Errorf("mode %q", c.Mode)
	}
	if len(c.Maps) != want {
		return fmt.Errorf("%d maps for mode %s", len(c.Maps), c.Mode)
	}
	for i, m := range c.Maps {
		if m == nil {
			return fmt.Errorf("maps[%d] is null", i)
		}
		if err := m.valid(); err != nil {
			return within(fmt.Sprintf("maps[%d]", i), err)
		}
	}
	return nil
}

// upperBound returns the first index i with x[i] > v in the sorted x
// (len(x) when there is none), so among equal values the last is at i-1.
func upperBound(x []float64, v float64) int {
	i, _ := slices.BinarySearchFunc(x, v, func(e, t float64) int {
		if e <= t {
			return -1
		}
		return 1
	})
	return i
}

// probsOf returns probabilities for a probabilities-input map.
func probsOf(probs, logits []float64, k int) []float64 {
	if len(probs) == 0 && len(logits) > 0 {
		return softmaxRows(logits, k)
	}
	return probs
}
