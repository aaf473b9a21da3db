package recal

import (
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/metric"
)

// DefaultHistogramBins is the number of equal-mass bins of histogram
// binning.
const DefaultHistogramBins = 15

// Histogram is histogram binning (Zadrozny & Elkan 2001; method "histogram",
// input "probabilities"): equal-mass bins of the validation scores (the
// percentile edges of metric.EqualMass), each mapped to its mean outcome; a
// new score takes the value of its bin (the bins are (e_b, e_{b+1}], the
// first also holding everything below and the last everything above). An
// empty bin maps to the middle of its edges.
type Histogram struct {
	Header
	Mode   string    `json:"mode"`
	Edges  []float64 `json:"edges"`
	Values []float64 `json:"values"`
}

// FitHistogram fits histogram binning with bins equal-mass bins (0 means
// DefaultHistogramBins) in mode top_label ("" too) or binary, with sample
// weights (nil: all 1): the edges are the equal-mass edges of the weighted
// scores (metric.EqualMass: the weights taken as frequencies) and each bin
// maps to its weighted mean outcome
//
//	value_b = sum_{i in b} w_i o_i / sum_{i in b} w_i,
//
// a bin of weight 0 counting as empty. Integer weights give the map of the
// rows repeated w_i times. Malformed input (see FitSpline), a negative
// number of bins and another mode wrap ErrInput, fewer samples of weight
// > 0 than bins ErrTooFew.
func FitHistogram(probs []float64, labels []int, k, bins int, mode string, weights []float64) (*Histogram, error) {
	if mode == "" {
		mode = ModeTopLabel
	}
	if bins == 0 {
		bins = DefaultHistogramBins
	}
	if mode == ModeOneVsRest {
		return nil, fmt.Errorf("recal: histogram: %w: mode %s is for isotonic", ErrInput, mode)
	}
	if bins < 1 {
		return nil, fmt.Errorf("recal: histogram: %w: %d bins", ErrInput, bins)
	}
	var hist *Histogram
	_, err := fitViews(mode, probs, labels, k, weights, func(s, o, w []float64) (scalarMap, error) {
		if n := mathx.PositiveRows(w, len(s)); n < bins {
			if w != nil {
				return nil, fmt.Errorf("%w: %d samples of weight > 0 for %d bins", ErrTooFew, n, bins)
			}
			return nil, fmt.Errorf("%w: %d samples for %d bins", ErrTooFew, n, bins)
		}
		a, err := metric.AssignBins(s, w, metric.BinOptions{Binning: metric.EqualMass, Bins: bins})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInput, err)
		}
		b := a.Summarize(s, o, nil, w)
		hist = &Histogram{Edges: a.Edges, Values: make([]float64, bins)}
		for i := range hist.Values {
			hist.Values[i] = b.Freq[i]
			if !(b.Mass[i] > 0) {
				hist.Values[i] = (a.Edges[i] + a.Edges[i+1]) / 2
			}
		}
		return hist, nil
	})
	if err != nil {
		return nil, fmt.Errorf("recal: histogram: %w", err)
	}
	hist.Header = Header{SchemaVersion: SchemaVersion, Method: "histogram", Input: InputProbabilities, K: k}
	hist.Mode = mode
	return hist, nil
}

func (h *Histogram) apply(s float64) float64 {
	inner := h.Edges[1 : len(h.Edges)-1]
	b, _ := slices.BinarySearch(inner, s)
	return h.Values[b]
}

// Calibrate maps the probability vectors.
func (h *Histogram) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	return calibrateScalar(h.Header, h.Mode, []scalarMap{h}, probs, logits, k)
}

// valid checks the form (B + 1 edges for B >= 1 values) and the values:
// edges finite and non-decreasing (equal-mass edges repeat where scores tie),
// values probabilities (in any order: a bin's mean outcome can be below the
// previous bin's).
func (h *Histogram) valid() error {
	if h.Mode != ModeTopLabel && h.Mode != ModeBinary {
		return fmt.Errorf("mode %q", h.Mode)
	}
	if len(h.Edges) < 2 || len(h.Values) != len(h.Edges)-1 {
		return fmt.Errorf("%d edges, %d values", len(h.Edges), len(h.Values))
	}
	return firstError(checkFinite("edges", h.Edges), checkSorted("edges", h.Edges), checkProbabilities("values", h.Values))
}

// scoreEps keeps the logs of Platt and beta calibration finite.
const scoreEps = 1e-12

// Platt is Platt scaling (method "platt", input "probabilities"):
// q = mathx.Sigmoid(a logit(s) + b) with s clipped to [1e-12, 1 - 1e-12], a and b
// fitted by maximum likelihood (no target smoothing).
type Platt struct {
	Header
	Mode string  `json:"mode"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
}

// FitPlatt fits Platt scaling in mode top_label ("" too) or binary by
// weighted maximum likelihood (see fitLogistic): a and b minimise
//
//	sum_i w_i [log(1 + e^{z_i}) - o_i z_i] / sum_i w_i,  z_i = a logit(s_i) + b,
//
// nil weights meaning all 1. Malformed input (see FitSpline) and another
// mode wrap ErrInput; outcomes of weight > 0 that are all 0 or all 1, and
// scores that separate them (every clipped score of outcome 0 at or below
// every one of outcome 1, or at or above: in top-label mode every wrong
// prediction's confidence below every right one's), have no finite
// maximum-likelihood fit and wrap ErrSeparable (a kind of ErrTooFew).
func FitPlatt(probs []float64, labels []int, k int, mode string, weights []float64) (*Platt, error) {
	if mode == "" {
		mode = ModeTopLabel
	}
	if mode == ModeOneVsRest {
		return nil, fmt.Errorf("recal: platt: %w: mode %s is for isotonic", ErrInput, mode)
	}
	var c *Platt
	_, err := fitViews(mode, probs, labels, k, weights, func(s, o, sw []float64) (scalarMap, error) {
		x := make([][]float64, len(s))
		for i, v := range s {
			v = math.Min(1-scoreEps, math.Max(scoreEps, v))
			x[i] = []float64{math.Log(v / (1 - v))}
		}
		if err := separated(x, o, sw, mode); err != nil {
			return nil, err
		}
		w, err := fitLogistic(x, o, sw)
		if err != nil {
			return nil, err
		}
		c = &Platt{A: w[0], B: w[1]}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("recal: platt: %w", err)
	}
	c.Header = Header{SchemaVersion: SchemaVersion, Method: "platt", Input: InputProbabilities, K: k}
	c.Mode = mode
	return c, nil
}

func (c *Platt) apply(s float64) float64 {
	s = math.Min(1-scoreEps, math.Max(scoreEps, s))
	return mathx.Sigmoid(c.A*math.Log(s/(1-s)) + c.B)
}

// Calibrate maps the probability vectors.
func (c *Platt) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	return calibrateScalar(c.Header, c.Mode, []scalarMap{c}, probs, logits, k)
}

func (c *Platt) valid() error {
	if c.Mode != ModeTopLabel && c.Mode != ModeBinary {
		return fmt.Errorf("mode %q", c.Mode)
	}
	return firstError(checkNumber("a", c.A, math.Inf(-1)), checkNumber("b", c.B, math.Inf(-1)))
}

// Beta is beta calibration (Kull, Silva Filho & Flach 2017; method "beta",
// input "probabilities"): q = mathx.Sigmoid(a ln s - b ln(1 - s) + c) with a, b >= 0,
// s clipped to [1e-12, 1 - 1e-12]. As the betacal package, the logistic
// regression on (ln s, -ln(1 - s)) is refitted without the feature whose
// coefficient came out negative.
type Beta struct {
	Header
	Mode string  `json:"mode"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	C    float64 `json:"c"`
}

// FitBeta fits beta calibration in mode top_label ("" too) or binary by
// weighted maximum likelihood as FitPlatt, with z_i = a ln s_i - b ln(1 -
// s_i) + c (nil weights: all 1). Malformed input (see FitSpline) and
// another mode wrap ErrInput; outcomes of weight > 0 that are all 0 or all
// 1 ErrTooFew.
func FitBeta(probs []float64, labels []int, k int, mode string, weights []float64) (*Beta, error) {
	if mode == "" {
		mode = ModeTopLabel
	}
	if mode == ModeOneVsRest {
		return nil, fmt.Errorf("recal: beta: %w: mode %s is for isotonic", ErrInput, mode)
	}
	var c *Beta
	_, err := fitViews(mode, probs, labels, k, weights, func(s, o, sw []float64) (scalarMap, error) {
		f1, f2 := make([]float64, len(s)), make([]float64, len(s))
		for i, v := range s {
			v = math.Min(1-scoreEps, math.Max(scoreEps, v))
			f1[i], f2[i] = math.Log(v), -math.Log(1-v)
		}
		cols := func(fs ...[]float64) [][]float64 {
			x := make([][]float64, len(s))
			for i := range x {
				for _, f := range fs {
					x[i] = append(x[i], f[i])
				}
			}
			return x
		}
		w, err := fitLogistic(cols(f1, f2), o, sw)
		if err != nil {
			return nil, err
		}
		c = &Beta{A: w[0], B: w[1], C: w[2]}
		switch {
		case c.A < 0:
			if w, err = fitLogistic(cols(f2), o, sw); err != nil {
				return nil, err
			}
			c = &Beta{A: 0, B: w[0], C: w[1]}
		case c.B < 0:
			if w, err = fitLogistic(cols(f1), o, sw); err != nil {
				return nil, err
			}
			c = &Beta{A: w[0], B: 0, C: w[1]}
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("recal: beta: %w", err)
	}
	c.Header = Header{SchemaVersion: SchemaVersion, Method: "beta", Input: InputProbabilities, K: k}
	c.Mode = mode
	return c, nil
}

func (c *Beta) apply(s float64) float64 {
	s = math.Min(1-scoreEps, math.Max(scoreEps, s))
	return mathx.Sigmoid(c.A*math.Log(s) - c.B*math.Log(1-s) + c.C)
}

// Calibrate maps the probability vectors.
func (c *Beta) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	return calibrateScalar(c.Header, c.Mode, []scalarMap{c}, probs, logits, k)
}

func (c *Beta) valid() error {
	if c.Mode != ModeTopLabel && c.Mode != ModeBinary {
		return fmt.Errorf("mode %q", c.Mode)
	}
	return firstError(checkNumber("a", c.A, 0), checkNumber("b", c.B, 0), checkNumber("c", c.C, math.Inf(-1)))
}

// separated returns an error wrapping ErrSeparable when the one feature
// x[i][0] separates the outcomes of weight > 0: all of one outcome, or
// max x over outcome 0 <= min x over outcome 1 (or the reverse), where
// the log-likelihood of sigmoid(a x + b) grows without bound in |a|.
func separated(x [][]float64, o, sw []float64, mode string) error {
	lo0, hi0, lo1, hi1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, v := range o {
		if sw != nil && !(sw[i] > 0) {
			continue
		}
		if v == 1 {
			lo1, hi1 = math.Min(lo1, x[i][0]), math.Max(hi1, x[i][0])
		} else {
			lo0, hi0 = math.Min(lo0, x[i][0]), math.Max(hi0, x[i][0])
		}
	}
	// How the messages name the outcomes: top-label outcomes say
	// whether the predicted class is right.
	all1, all0, right, wrong := "every outcome is 1", "every outcome is 0", "outcome 1", "outcome 0"
	if mode == ModeTopLabel {
		all1, all0, right, wrong = "every prediction is right (the classifier separates the classes on these data)", "every prediction is wrong", "right prediction", "wrong prediction"
	}
	switch {
	case math.IsInf(lo0, 1) && math.IsInf(lo1, 1):
		return nil // no rows: fitLogistic says so
	case math.IsInf(lo0, 1):
		return fmt.Errorf("%w: %s: a logistic map needs both outcomes", ErrSeparable, all1)
	case math.IsInf(lo1, 1):
		return fmt.Errorf("%w: %s: a logistic map needs both outcomes", ErrSeparable, all0)
	case hi0 <= lo1:
		return fmt.Errorf("%w: every %s's score is at or below every %s's (the scores separate the outcomes): the logistic fit has no finite optimum", ErrSeparable, wrong, right)
	case hi1 <= lo0:
		return fmt.Errorf("%w: every %s's score is at or below every %s's (the scores separate the outcomes, reversed): the logistic fit has no finite optimum", ErrSeparable, right, wrong)
	}
	return nil
}

// fitLogistic fits P(y = 1 | x) = mathx.Sigmoid(w . x + w_d) by Newton's method
// with a backtracking line search on the weighted mean log-loss sum_i
// sw_i l_i / sum_i sw_i (sw nil: all 1; a ridge of 1e-8 on the weights keeps
// separable data finite). It returns (w, w_d) or an error when it does not
// converge in 200 steps; outcomes of weight > 0 that are all equal (the
// intercept's optimum is infinite) are an error wrapping ErrTooFew.
func fitLogistic(x [][]float64, y, sw []float64) ([]float64, error) {
	n := len(x)
	if mathx.PositiveRows(sw, n) == 0 {
		return nil, fmt.Errorf("%w: no samples", ErrTooFew)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range y {
		if sw == nil || sw[i] > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo == hi {
		return nil, fmt.Errorf("%w: every outcome is %v, a logistic map needs both outcomes", ErrTooFew, lo)
	}
	wsum := mathx.WeightSum(sw, n)
	d := len(x[0]) + 1
	const ridge = 1e-8
	feat := func(i, j int) float64 {
		if j == d-1 {
			return 1
		}
		return x[i][j]
	}
	loss := func(w []float64) float64 {
		l := 0.0
		for i := 0; i < n; i++ {
			z := 0.0
			for j := 0; j < d; j++ {
				z += w[j] * feat(i, j)
			}
			// log(1 + e^z) - y z, stably
			li := math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) - y[i]*z
			if sw != nil {
				li *= sw[i]
			}
			l += li
		}
		r := 0.0
		for j := 0; j < d-1; j++ {
			r += w[j] * w[j]
		}
		return l/wsum + ridge*r
	}
	w := make([]float64, d)
	cur := loss(w)
	for iter := 0; iter < 200; iter++ {
		g := make([]float64, d)
		h := make([]float64, d*d)
		for i := 0; i < n; i++ {
			z := 0.0
			for j := 0; j < d; j++ {
				z += w[j] * feat(i, j)
			}
			p := mathx.Sigmoid(z)
			r, c := p-y[i], p*(1-p)
			if sw != nil {
				r, c = sw[i]*r, sw[i]*c
			}
			for a := 0; a < d; a++ {
				g[a] += r * feat(i, a)
				for b := 0; b < d; b++ {
					h[a*d+b] += c * feat(i, a) * feat(i, b)
				}
			}
		}
		for a := 0; a < d; a++ {
			g[a] /= wsum
			for b := 0; b < d; b++ {
				h[a*d+b] /= wsum
			}
			if a < d-1 {
				g[a] += 2 * ridge * w[a]
				h[a*d+a] += 2 * ridge
			}
			h[a*d+a] += 1e-12
		}
		step, err := solveSmall(h, g, d)
		if err != nil {
			return nil, err
		}
		t := 1.0
		next := make([]float64, d)
		for ; t > 1e-10; t /= 2 {
			for j := range next {
				next[j] = w[j] - t*step[j]
			}
			if l := loss(next); l <= cur {
				cur = l
				break
			}
		}
		size := 0.0
		for j := range w {
			size = math.Max(size, math.Abs(w[j]-next[j]))
			w[j] = next[j]
		}
		if size < 1e-10 || t <= 1e-10 {
			return w, nil
		}
	}
	return nil, fmt.Errorf("%w: the logistic fit did not converge in 200 Newton steps: the scores separate the outcomes (confidences of exactly 0 or 1, or every wrong prediction below every right one), so the fit has no finite optimum", ErrInput)
}

// solveSmall solves the d×d system h x = g by Gaussian elimination with
// partial pivoting.
func solveSmall(h, g []float64, d int) ([]float64, error) {
	a := slices.Clone(h)
	b := slices.Clone(g)
	for c := 0; c < d; c++ {
		p := c
		for r := c + 1; r < d; r++ {
			if math.Abs(a[r*d+c]) > math.Abs(a[p*d+c]) {
				p = r
			}
		}
		if a[p*d+c] == 0 {
			return nil, fmt.Errorf("singular Newton system")
		}
		for j := 0; j < d; j++ {
			a[c*d+j], a[p*d+j] = a[p*d+j], a[c*d+j]
		}
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < d; r++ {
			f := a[r*d+c] / a[c*d+c]
			for j := c; j < d; j++ {
				a[r*d+j] -= f * a[c*d+j]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, d)
	for r := d - 1; r >= 0; r-- {
		s := b[r]
		for j := r + 1; j < d; j++ {
			s -= a[r*d+j] * x[j]
		}
		x[r] = s / a[r*d+r]
	}
	return x, nil
}
