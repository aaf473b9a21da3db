package recal

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"

	"gonum.org/v1/gonum/mat"

	"github.com/calib-dev/calib/metric"
)

// DefaultKnots is the number of spline knots (the splines reference's
// default).
const DefaultKnots = 6

// SplineCurve is one fitted spline recalibration of a scalar score (Gupta et
// al., ICLR 2021, section 4 and appendix C, as the authors' code does it).
//
// The validation samples are sorted by score (stable); sample i of N sits at
// the fractile x_i = i/(N-1). A natural cubic spline with Knots knots evenly
// spaced on [0, 1] is fitted by least squares to
//
//	y_i = (1/N) sum_{m<=i} outcome_m - (1/N) sum_{m<=i} score_m,
//
// and the recalibrated score of sample i is score_i + y'(x_i). A new score is
// mapped by linear interpolation of the recalibrated scores over the sorted
// validation scores (the value of the nearest end outside their range) and
// clipped to [0, 1]: the map needs every validation score (the empirical
// distribution of the scores places a new score among the fractiles), but
// not the recalibrated ones, which follow from the scores and the knot
// values.
//
// With sample weights w_i the samples of weight 0 are left out, the others
// sorted as above, and with C_i = sum_{m<=i} w_m, W = C_{N-1}:
//
//	x_i = (C_i - w_0) / (W - w_0),
//	y_i = (1/W) sum_{m<=i} w_m outcome_m - (1/W) sum_{m<=i} w_m score_m,
//
// the spline fitted by weighted least squares, minimising sum_i w_i
// (y(x_i) - y_i)^2. x_i is the share of the weight after the first sample
// up to sample i (i/(N-1) for unit weights), so the fit does not depend on
// the scale of the weights, and weights of 0 and 1 give the fit of the
// samples of weight 1. It is not the fit of rows repeated w_i times: the
// copies of a row would sit at w_i fractiles of their own, the points of
// a weighted sample at one (the end of its weight). These fractiles are
// stored in Fractiles when they differ from i/(N-1).
//
// JSON: knots, knot_values, second_derivatives, scores, fractiles (weighted
// fits only) and the two flags; MarshalJSON leaves Calibrated out and
// UnmarshalJSON computes it (a "calibrated" array, written by earlier
// versions, is read and kept).
type SplineCurve struct {
	Knots             int       `json:"knots"`
	KnotValues        []float64 `json:"knot_values"`          // the fitted y at the knots
	SecondDerivatives []float64 `json:"second_derivatives"`   // y'' at the knots (0 at both ends)
	Scores            []float64 `json:"scores"`               // sorted validation scores
	Calibrated        []float64 `json:"calibrated,omitempty"` // recalibrated score of each (not clipped)
	// Fractiles holds the fractile x_i of each score, non-decreasing from
	// 0 to 1, when a weighted fit placed them other than at i/(N-1); nil
	// means i/(N-1).
	Fractiles []float64 `json:"fractiles,omitempty"`
	// ReferenceInterpolation reproduces the reference code's interpolation,
	// whose two weights are swapped: (beta y[i] + alpha y[i-1]) / (alpha +
	// beta) with alpha = x - x[i-1], beta = x[i] - x. Not the default.
	ReferenceInterpolation bool `json:"reference_interpolation,omitempty"`
	// Constrained records that the fit kept 0 <= score_i + y'(x_i) <= 1 at
	// every validation point (SplineOptions.Constrained).
	Constrained bool `json:"constrained,omitempty"`
}

// SplineOptions configures FitSplineCurve.
type SplineOptions struct {
	Knots int // 0 means DefaultKnots
	// ReferenceInterpolation: see SplineCurve.
	ReferenceInterpolation bool
	// Constrained fits the knot values under the constraint of the paper's
	// section 4.1, 0 <= score_i + y'(x_i) <= 1 at every validation point
	// (y' is linear in the knot values, so this is a small quadratic
	// program, solved by an active-set method). When the least-squares fit
	// already meets it the two fits are identical. The scores must lie in
	// [0, 1].
	Constrained bool
}

// FitSplineCurve fits the spline of scores, outcomes and sample weights (nil:
// all 1; see SplineCurve for the weighted fit). With fewer distinct scores
// than knots + 1 it uses that many knots minus 1 (at least 2, a straight
// line: the recalibration is then the score plus a constant slope). Fewer
// than 3 samples (of weight > 0) is an error wrapping ErrTooFew; scores and
// outcomes of different lengths or not finite, bad weights (wrapping
// data.ErrWeights too), fewer than 2 knots, or (Constrained) a score
// outside [0, 1] one wrapping ErrInput.
func FitSplineCurve(scores, outcomes, weights []float64, o SplineOptions) (*SplineCurve, error) {
	if err := checkScores(scores, outcomes, weights); err != nil {
		return nil, fmt.Errorf("recal: spline: %w", err)
	}
	if weights != nil {
		return fitWeightedCurve(scores, outcomes, weights, o)
	}
	n := len(scores)
	if n < 3 {
		return nil, fmt.Errorf("recal: spline: %w: %d samples, need at least 3", ErrTooFew, n)
	}
	idx := sortedOrder(scores)
	s, y := make([]float64, n), make([]float64, n)
	cs, co := 0.0, 0.0
	for i, j := range idx {
		s[i] = scores[j]
		cs += scores[j]
		co += outcomes[j]
		y[i] = co/float64(n) - cs/float64(n)
	}
	return fitSorted(s, y, nil, nil, o)
}

// fitWeightedCurve is FitSplineCurve with weights (see SplineCurve).
func fitWeightedCurve(scores, outcomes, weights []float64, o SplineOptions) (*SplineCurve, error) {
	var idx []int
	for _, j := range sortedOrder(scores) {
		if weights[j] > 0 {
			idx = append(idx, j)
		}
	}
	n := len(idx)
	if n < 3 {
		return nil, fmt.Errorf("recal: spline: %w: %d samples of weight > 0, need at least 3", ErrTooFew, n)
	}
	W := 0.0
	for _, j := range idx {
		W += weights[j]
	}
	w0 := weights[idx[0]]
	s, y, x, w := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	cw, cs, co := 0.0, 0.0, 0.0
	for i, j := range idx {
		s[i], w[i] = scores[j], weights[j]
		cw += weights[j]
		cs += weights[j] * scores[j]
		co += weights[j] * outcomes[j]
		y[i] = co/W - cs/W
		x[i] = (cw - w0) / (W - w0)
	}
	x[n-1] = 1 // (W - w0) / (W - w0), whatever the rounding of the sum
	return fitSorted(s, y, x, w, o)
}

// fitSorted fits the spline to the differences y of the sorted scores s at
// the fractiles x (nil: i/(n-1)) by least squares weighted by lsw (nil: all
// 1).
func fitSorted(s, y, x, lsw []float64, o SplineOptions) (*SplineCurve, error) {
	n := len(s)
	m := o.Knots
	if m == 0 {
		m = DefaultKnots
	}
	if m < 2 {
		return nil, fmt.Errorf("recal: spline: %w: %d knots, need at least 2", ErrInput, m)
	}
	distinct := 1
	for i := 1; i < n; i++ {
		if s[i] != s[i-1] {
			distinct++
		}
	}
	m = max(2, min(m, distinct-1))
	sp := newNaturalSpline(m)
	var fractiles []float64 // stored only when they are not i/(n-1)
	if x != nil {
		for i, v := range x {
			if v != float64(i)/float64(n-1) {
				fractiles = x
				break
			}
		}
	} else {
		x = make([]float64, n)
		for i := range x {
			x[i] = float64(i) / float64(n-1)
		}
	}
	d := mat.NewDense(n, m, nil)
	yw := y
	if lsw != nil {
		yw = make([]float64, n)
	}
	for i := range x {
		row := sp.valueRow(x[i])
		if lsw != nil {
			// Weighted least squares: the rows of D and y scaled by
			// sqrt(w_i).
			r := math.Sqrt(lsw[i])
			for k := range row {
				row[k] *= r
			}
			yw[i] = r * y[i]
		}
		d.SetRow(i, row)
	}
	var v mat.VecDense
	if err := v.SolveVec(d, mat.NewVecDense(n, yw)); err != nil {
		return nil, fmt.Errorf("recal: spline least squares: %w", err)
	}
	c := &SplineCurve{Knots: m, KnotValues: make([]float64, m), Scores: s, Fractiles: fractiles,
		ReferenceInterpolation: o.ReferenceInterpolation, Constrained: o.Constrained}
	for k := range c.KnotValues {
		c.KnotValues[k] = v.AtVec(k)
	}
	if o.Constrained {
		kv, err := constrainSlopes(sp, d, x, s, yw, c.KnotValues)
		if err != nil {
			return nil, err
		}
		c.KnotValues = kv
	}
	c.SecondDerivatives = sp.secondDerivatives(c.KnotValues)
	c.Calibrated = recalibrated(sp, s, c.KnotValues, c.Fractiles)
	return c, nil
}

// recalibrated returns the recalibrated validation scores s_i + y'(x_i)
// at the fractiles x (nil: x_i = i/(n-1)) of the spline sp with knot
// values v (the one computation of them, for the fit and for a loaded map,
// so that both hold the same bits).
func recalibrated(sp *naturalSpline, s, v, x []float64) []float64 {
	n := len(s)
	out := make([]float64, n)
	for i := range out {
		xi := float64(i) / float64(n-1)
		if x != nil {
			xi = x[i]
		}
		out[i] = s[i] + dot(sp.slopeRow(xi), v)
	}
	return out
}

// constrainSlopes returns the least-squares knot values v (design d, targets
// y, both scaled by the square roots of the weights of a weighted fit)
// under 0 <= s_i + spline'(x_i) <= 1: v itself when it already meets the
// constraint, else the solution of the quadratic program started from the
// knot values 0 (feasible: the slope is then 0 and s_i is in [0, 1]).
func constrainSlopes(sp *naturalSpline, d *mat.Dense, x, s, y, v []float64) ([]float64, error) {
	n, m := len(x), sp.m
	g := mat.NewDense(n, m, nil)
	lo, hi := make([]float64, n), make([]float64, n)
	feasible := true
	for i := range x {
		if !(s[i] >= 0 && s[i] <= 1) {
			return nil, fmt.Errorf("recal: constrained spline: %w: score %v outside [0, 1]", ErrInput, s[i])
		}
		row := sp.slopeRow(x[i])
		g.SetRow(i, row)
		lo[i], hi[i] = -s[i], 1-s[i]
		if sl := dot(row, v); sl < lo[i] || sl > hi[i] {
			feasible = false
		}
	}
	if feasible {
		return v, nil
	}
	kv, _, err := boundedLeastSquares(d, y, g, lo, hi, make([]float64, m))
	if err != nil {
		return nil, fmt.Errorf("recal: constrained spline: %w", err)
	}
	return kv, nil
}

// sortedOrder returns the indices of scores in increasing order of score
// (stable: equal scores keep their input order).
func sortedOrder(scores []float64) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	return idx
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Map returns the recalibrated value of a score: linear interpolation over
// the sorted validation scores, the end values outside their range, clipped
// to [0, 1]. Among equal validation scores the last one is the left end.
func (c *SplineCurve) Map(score float64) float64 {
	s, v := c.Scores, c.Calibrated
	i := upperBound(s, score)
	var r float64
	switch {
	case i == 0:
		r = v[0]
	case i == len(s):
		r = v[len(s)-1]
	default:
		alpha, beta := score-s[i-1], s[i]-score
		if c.ReferenceInterpolation {
			r = (beta*v[i] + alpha*v[i-1]) / (alpha + beta)
		} else {
			r = v[i-1] + (v[i]-v[i-1])*alpha/(alpha+beta)
		}
	}
	return math.Min(1, math.Max(0, r))
}

// MarshalJSON writes the curve without Calibrated (see SplineCurve).
func (c SplineCurve) MarshalJSON() ([]byte, error) {
	type plain SplineCurve
	c.Calibrated = nil
	return json.Marshal(plain(c))
}

// UnmarshalJSON reads a curve (no unknown keys) and, when it has no
// "calibrated" array and the right form, computes Calibrated from Scores
// and KnotValues.
func (c *SplineCurve) UnmarshalJSON(b []byte) error {
	type plain SplineCurve
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*c = SplineCurve(p)
	if c.Calibrated == nil && c.shapeError() == nil {
		c.Calibrated = recalibrated(newNaturalSpline(c.Knots), c.Scores, c.KnotValues, c.Fractiles)
	}
	return nil
}

// shapeError checks the lengths: Knots knot values and second derivatives,
// 2 <= Knots < number of scores (as every fit has), as many calibrated
// values and fractiles as scores if any.
func (c *SplineCurve) shapeError() error {
	n := len(c.Scores)
	if c.Knots < 2 || c.Knots >= n || len(c.KnotValues) != c.Knots || len(c.SecondDerivatives) != c.Knots || (c.Calibrated != nil && len(c.Calibrated) != n) || (c.Fractiles != nil && len(c.Fractiles) != n) {
		return fmt.Errorf("%d knots, %d knot values, %d second derivatives, %d scores, %d calibrated, %d fractiles", c.Knots, len(c.KnotValues), len(c.SecondDerivatives), n, len(c.Calibrated), len(c.Fractiles))
	}
	return nil
}

// valid checks the form (shapeError) and the values of a loaded curve:
// finite knot values; second derivatives those of the knot values; finite
// scores in non-decreasing order (not necessarily in [0, 1]: a
// within-top-2 score p1 + p2 can round to just above 1); Calibrated the
// recalibrated scores of the knot values (to 1e-9: a file written with
// another floating-point contraction may differ in the last bits).
func (c *SplineCurve) valid() error {
	if err := c.shapeError(); err != nil {
		return err
	}
	if err := firstError(checkFinite("knot_values", c.KnotValues), checkFinite("second_derivatives", c.SecondDerivatives),
		checkFinite("scores", c.Scores), checkSorted("scores", c.Scores), checkProbabilities("fractiles", c.Fractiles), checkSorted("fractiles", c.Fractiles)); err != nil {
		return err
	}
	sp := newNaturalSpline(c.Knots)
	d := sp.secondDerivatives(c.KnotValues)
	scale := 1.0
	for _, v := range d {
		scale = math.Max(scale, math.Abs(v))
	}
	for i, v := range d {
		if !(math.Abs(c.SecondDerivatives[i]-v) <= 1e-9*scale) {
			return badValue("second_derivatives[%d] = %v, want %v, the second derivative of the natural spline through the knot values", i, c.SecondDerivatives[i], v)
		}
	}
	for i, v := range recalibrated(sp, c.Scores, c.KnotValues, c.Fractiles) {
		if !(math.Abs(c.Calibrated[i]-v) <= 1e-9) {
			return badValue("calibrated[%d] = %v, want %v, the score plus the spline's slope at its fractile", i, c.Calibrated[i], v)
		}
	}
	return nil
}

// naturalSpline is a natural cubic spline with m knots evenly spaced on
// [0, 1] (splines paper appendix C): its value at x is a(x)^T M v for the
// knot values v, with M = [0; A^-1 B; 0; I] (the second derivatives at the
// knots, zero at both ends, then the values).
type naturalSpline struct {
	m int
	h float64
	s *mat.Dense // m×m: second derivatives at the knots = s v
}

func newNaturalSpline(m int) *naturalSpline {
	sp := &naturalSpline{m: m, h: 1 / float64(m-1), s: mat.NewDense(m, m, nil)}
	if m < 3 {
		return sp
	}
	// A (m-2 square): 4 on the diagonal, 1 beside it; B ((m-2)×m):
	// 6/h^2 (1, -2, 1) on each row.
	a := mat.NewDense(m-2, m-2, nil)
	b := mat.NewDense(m-2, m, nil)
	for i := 0; i < m-2; i++ {
		a.Set(i, i, 4)
		if i > 0 {
			a.Set(i, i-1, 1)
		}
		if i < m-3 {
			a.Set(i, i+1, 1)
		}
		c := 6 / (sp.h * sp.h)
		b.Set(i, i, c)
		b.Set(i, i+1, -2*c)
		b.Set(i, i+2, c)
	}
	var ab mat.Dense
	if err := ab.Solve(a, b); err != nil {
		panic("recal: singular spline system") // A is strictly diagonally dominant
	}
	for i := 0; i < m-2; i++ {
		sp.s.SetRow(i+1, ab.RawRowView(i))
	}
	return sp
}

// segment returns the knot interval j of x and u = x - x_j.
func (sp *naturalSpline) segment(x float64) (int, float64) {
	j := min(int(math.Floor(x/sp.h)), sp.m-2)
	j = max(j, 0)
	return j, x - float64(j)*sp.h
}

// valueRow returns the row r with spline(x) = r . v.
func (sp *naturalSpline) valueRow(x float64) []float64 {
	j, u := sp.segment(x)
	h := sp.h
	aj := -u*u*u/(6*h) + u*u/2 - h*u/3 // multiplies y''_j
	aj1 := u*u*u/(6*h) - h*u/6         // multiplies y''_{j+1}
	row := make([]float64, sp.m)
	for k := range row {
		row[k] = aj*sp.s.At(j, k) + aj1*sp.s.At(j+1, k)
	}
	row[j] += 1 - u/h
	row[j+1] += u / h
	return row
}

// slopeRow returns the row r with spline'(x) = r . v.
func (sp *naturalSpline) slopeRow(x float64) []float64 {
	j, u := sp.segment(x)
	h := sp.h
	aj := -u*u/(2*h) + u - h/3
	aj1 := u*u/(2*h) - h/6
	row := make([]float64, sp.m)
	for k := range row {
		row[k] = aj*sp.s.At(j, k) + aj1*sp.s.At(j+1, k)
	}
	row[j] -= 1 / h
	row[j+1] += 1 / h
	return row
}

// secondDerivatives returns y” at the knots for the knot values v.
func (sp *naturalSpline) secondDerivatives(v []float64) []float64 {
	out := make([]float64, sp.m)
	for k := range out {
		out[k] = dot(sp.s.RawRowView(k), v)
	}
	return out
}

// Spline is the spline recalibration map (method "spline", input
// "probabilities"): the top-1 curve recalibrates the probability vector; the
// top-2 and within-top-2 curves are kept for their own scores (see
// ApplyTop2, ApplyWithinTop2).
//
// The probability vector of a prediction f: the top-1 entry becomes
// s = Top1.Map(max f), clamped to [1/K + 1e-9, 1]; the other entries are
// f's other probabilities scaled to sum to 1 - s (equal shares if they are
// all 0), each capped just below s (at s (1 - 1e-12)) with the excess
// shared by the others in proportion, so the arg max never changes.
type Spline struct {
	Header
	Top1       *SplineCurve `json:"top1"`
	Top2       *SplineCurve `json:"top2,omitempty"`
	WithinTop2 *SplineCurve `json:"within_top2,omitempty"`
}

// FitSpline fits the top-1 curve (and, for K >= 2, the top-2 and
// within-top-2 curves) on validation probabilities (n×k), labels and
// sample weights (nil: all 1; each curve is weighted as in SplineCurve).
// Malformed input wraps ErrInput: K < 2, probabilities that are not n×k,
// not in [0, 1] or whose rows do not sum to 1 within K * SumTolerance,
// labels outside 0..K-1, bad weights (wrapping data.ErrWeights too); fewer
// than 3 samples of weight > 0 wraps ErrTooFew.
func FitSpline(probs []float64, labels []int, k int, weights []float64, o SplineOptions) (*Spline, error) {
	if err := checkFitInput(probs, nil, labels, k, false, weights); err != nil {
		return nil, fmt.Errorf("recal: spline: %w", err)
	}
	if n := mathx.PositiveRows(weights, len(labels)); n < 3 {
		if weights != nil {
			return nil, fmt.Errorf("recal: spline: %w: %d samples of weight > 0, need at least 3", ErrTooFew, n)
		}
		return nil, fmt.Errorf("recal: spline: %w: %d samples, need at least 3", ErrTooFew, n)
	}
	sp := &Spline{Header: Header{SchemaVersion: SchemaVersion, Method: "spline", Input: InputProbabilities, K: k}}
	var err error
	s, c := metric.TopR(probs, labels, k, 1)
	if sp.Top1, err = FitSplineCurve(s, c, weights, o); err != nil {
		return nil, fmt.Errorf("top-1: %w", err)
	}
	s, c = metric.TopR(probs, labels, k, 2)
	if sp.Top2, err = FitSplineCurve(s, c, weights, o); err != nil {
		return nil, fmt.Errorf("top-2: %w", err)
	}
	s, c = metric.WithinTopR(probs, labels, k, 2)
	if sp.WithinTop2, err = FitSplineCurve(s, c, weights, o); err != nil {
		return nil, fmt.Errorf("within-top-2: %w", err)
	}
	return sp, nil
}

// Calibrate returns the recalibrated probability vectors.
func (sp *Spline) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	n, err := sp.checkInput(probs, logits, k)
	if err != nil {
		return nil, err
	}
	probs = probsOf(probs, logits, k)
	out := make([]float64, n*k)
	for i := 0; i < n; i++ {
		row, dst := probs[i*k:(i+1)*k], out[i*k:(i+1)*k]
		top := 0
		for m, v := range row {
			if v > row[top] {
				top = m
			}
		}
		s := math.Min(1, math.Max(1/float64(k)+1e-9, sp.Top1.Map(row[top])))
		spread(dst, row, top, s)
	}
	return out, nil
}

// spread writes s at index top and shares 1 - s among the other entries in
// proportion to row, each below s (1 - 1e-12).
func spread(dst, row []float64, top int, s float64) {
	k := len(row)
	cap := s * (1 - 1e-12)
	rest := 1 - s
	free := make([]bool, k)
	for m := range free {
		free[m] = m != top
	}
	dst[top] = s
	for {
		w := 0.0
		nfree := 0
		for m, f := range free {
			if f {
				w += row[m]
				nfree++
			}
		}
		if nfree == 0 {
			return
		}
		over := false
		for m, f := range free {
			if !f {
				continue
			}
			if w > 0 {
				dst[m] = rest * row[m] / w
			} else {
				dst[m] = rest / float64(nfree)
			}
			if dst[m] > cap {
				over = true
			}
		}
		if !over {
			return
		}
		for m, f := range free {
			if f && dst[m] > cap {
				dst[m], free[m] = cap, false
				rest -= cap
			}
		}
	}
}

func (sp *Spline) valid() error {
	if sp.Top1 == nil {
		return fmt.Errorf("no top1 curve")
	}
	for i, c := range []*SplineCurve{sp.Top1, sp.Top2, sp.WithinTop2} {
		if c != nil {
			if err := c.valid(); err != nil {
				return within([]string{"top1", "top2", "within_top2"}[i], err)
			}
		}
	}
	return nil
}
