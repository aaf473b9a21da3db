package kde

import (
	"context"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/textenum"
)

// Objective is the criterion SelectBandwidth maximises.
type Objective int

const (
	// LOO is the leave-one-out log-likelihood of the kernel density
	// estimate (maximum-likelihood cross-validation, the paper's section 5):
	//
	//	l(h) = sum_j log( (1/(n-1)) sum_{i != j} k_h(f_j; f_i) )
	//
	// and with sample weights w (W = sum_j w_j, W_-j = W - w_j, n+ the
	// number of positive weights) the weighted mean log-likelihood of the
	// weighted leave-one-out density, times n+:
	//
	//	l_w(h) = (n+/W) sum_j w_j log( sum_{i != j} w_i k_h(f_j; f_i) / W_-j )
	//
	// which for unit weights is l(h) bit for bit (n+/W = 1), and which a
	// sample of weight 0 leaves unchanged (as if removed). The best grid
	// point is refined by Brent's method in log h (to 1 % by default).
	LOO Objective = iota
	// Reference is the objective of the reference code (ece_kde.py), kept
	// to reproduce its choices: l(h) - n log h, that is
	// sum_j [logsumexp_{i != j} log k_h(f_j; f_i) - log((n-1) h)] with the
	// log((n-1) h) term in float32, scanned in grid order keeping strict
	// improvements over a running best that starts at 0. The grid value is
	// returned unrefined. Where the reference returns -1 (no log-likelihood
	// above 0) SelectBandwidth returns an error. With sample weights it is
	// (n+/W) sum_j w_j [log sum_{i != j} w_i k_h(f_j; f_i) - log(W_-j h)],
	// log(W_-j h) in float32 as above (the same for unit weights).
	Reference
)

var objectiveNames = [...]string{"loo", "reference"}

// String returns "loo" or "reference".
func (o Objective) String() string {
	if o < 0 || int(o) >= len(objectiveNames) {
		return fmt.Sprintf("Objective(%d)", int(o))
	}
	return objectiveNames[o]
}

// ParseObjective returns the objective named s ("loo" or "reference"; the
// enumerations' one rule: any case, '-' for '_').
func ParseObjective(s string) (Objective, error) {
	i, err := textenum.Parse("bandwidth objective", s, objectiveNames[:])
	return Objective(i), err
}

// MarshalText implements encoding.TextMarshaler.
func (o Objective) MarshalText() ([]byte, error) {
	n, err := textenum.Name("kde: bandwidth objective", int(o), objectiveNames[:])
	return []byte(n), err
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseObjective).
func (o *Objective) UnmarshalText(b []byte) error {
	v, err := ParseObjective(string(b))
	if err == nil {
		*o = v
	}
	return err
}

// DefaultGrid returns the reference code's 20 candidate bandwidths:
// 10^(-5 + 4i/14) for i = 0..14, then 0.2, 0.4, 0.6, 0.8, 1.0, each rounded
// to float32 as the reference holds them (so that the Reference objective
// reproduces its log-likelihoods).
func DefaultGrid() []float64 {
	g := make([]float64, 0, 20)
	for i := 0; i <= 14; i++ {
		g = append(g, float64(float32(math.Pow(10, -5+4*float64(i)/14))))
	}
	for _, v := range []float32{0.2, 0.4, 0.6, 0.8, 1.0} {
		g = append(g, float64(v))
	}
	return g
}

// DefaultTolerance is the width in log h of the bracket at which the
// refinement (brentMax) stops when BandwidthOptions.Tolerance is 0 (h to about 1 %).
const DefaultTolerance = 1e-2

// BandwidthOptions configures SelectBandwidth. The zero value selects with
// the LOO objective on DefaultGrid, refined.
type BandwidthOptions struct {
	Grid      []float64 // candidate bandwidths, increasing; nil means DefaultGrid()
	Objective Objective
	// Exact computes the one-dimensional notions' likelihoods by the exact
	// O(n^2) sweeps (see Options.Exact). The Reference objective, which
	// reproduces the reference code, always does.
	Exact bool
	// NoRefine skips the refinement (Brent's method) of the LOO objective.
	NoRefine bool
	// Tolerance is the bracket width in log h at which the refinement
	// stops; 0 means DefaultTolerance.
	Tolerance float64
	Workers   int // goroutines; 0 means GOMAXPROCS
	// Progress, if not nil, is told how far the computation is.
	Progress Progress
	ctx      context.Context // the call's context, its first argument
}

// Curve is the outcome of SelectBandwidth.
type Curve struct {
	Notion    Notion
	Objective Objective
	Bandwidth float64   // the selected bandwidth
	LogLik    float64   // the objective at Bandwidth
	Index     int       // index of the best grid point
	Refined   bool      // Bandwidth comes from the refinement (Brent's method), better than the grid's best
	Grid      []float64 // the candidates
	GridLL    []float64 // the objective at each candidate (-Inf where it is -Inf)
	// Excluded counts points whose leave-one-out density is exactly 0 at
	// every bandwidth (a zero coordinate that no other point shares); they
	// are left out of the LOO objective, which would be -Inf for every h.
	// The Reference objective keeps them (and is then -Inf).
	Excluded int
	// Warnings says when the choice is doubtful: the best grid value is
	// at an end of the grid (the optimum may lie outside it; with
	// duplicated predictions the LOO likelihood grows without bound as
	// h -> 0).
	Warnings []error
}

// SelectBandwidth chooses the bandwidth of a notion by leave-one-out maximum
// likelihood: the Dirichlet kernel on the full vectors for Canonical, the
// Beta kernel on the confidences for TopLabel and on p1 for Binary, and for
// ClassWise one bandwidth maximising the sum over classes of the Beta LOO on
// each column. labels are not used, but are checked like Estimate's (the
// TopLabel and ClassWise points do not depend on them).
//
// weights are the sample weights (nil means all 1; see the objectives):
// sample j's log-likelihood term is weighted by w_j and its leave-one-out
// density is the w-weighted kernel density of the other samples. A sample
// of weight 0 changes nothing. Invalid weights give an error wrapping
// mathx.ErrWeights, fewer than two positive weights one wrapping
// ErrTooFew.
func SelectBandwidth(ctx context.Context, notion Notion, probs []float64, labels []int, k int, weights []float64, opts BandwidthOptions) (*Curve, error) {
	opts.ctx = ctx
	if err := check(notion, probs, labels, k); err != nil {
		return nil, err
	}
	if err := checkWeights(weights, len(labels), true); err != nil {
		return nil, err
	}
	grid := opts.Grid
	if grid == nil {
		grid = DefaultGrid()
	}
	if err := checkGrid(grid); err != nil {
		return nil, err
	}
	if opts.Objective != LOO && opts.Objective != Reference {
		return nil, fmt.Errorf("kde: invalid objective %d", int(opts.Objective))
	}
	tol := opts.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	if !(tol > 0) {
		return nil, fmt.Errorf("kde: refinement tolerance %v: must be positive", tol)
	}
	pts := parts(notion, probs, labels, k, weights, opts.Workers)
	lineMode(pts, opts.Exact || opts.Objective == Reference)
	tr := track(opts.ctx, pts, opts.Progress, len(grid))
	// The refinement's work is announced with the grid's, at its largest
	// (the widest bracket), so that the reported fraction never goes back;
	// what it does not use is reported done when it is known.
	refine := opts.Objective == LOO && !opts.NoRefine && len(grid) >= 2
	maxEvals := 0
	if refine && tr != nil {
		for i := range grid {
			lo, hi := grid[max(i-1, 0)], grid[min(i+1, len(grid)-1)]
			maxEvals = max(maxEvals, refineEvals(math.Log(hi)-math.Log(lo), tol))
		}
		for _, pt := range pts {
			tr.expect(int64(maxEvals * blocks(pt.prob.n)))
		}
	}
	// unused reports the refinement work announced but not done.
	unused := func(evals int) {
		if tr != nil && maxEvals > evals {
			for _, pt := range pts {
				tr.add(int64((maxEvals - evals) * blocks(pt.prob.n)))
			}
		}
	}
	cv := &Curve{Notion: notion, Objective: opts.Objective, Grid: append([]float64(nil), grid...), Index: -1}
	var wkept float64
	cv.GridLL, cv.Excluded, wkept = objective(pts, grid, opts.Objective, weights)
	if err := canceled(opts.ctx); err != nil {
		return nil, err
	}
	if cv.Excluded == len(pts)*len(labels) {
		return nil, fmt.Errorf("kde: %s: %w", notion, ErrNoDensity)
	}
	if !(wkept > 0) {
		return nil, fmt.Errorf("kde: %s: %w: no sample of positive weight has a positive leave-one-out density", notion, ErrNoDensity)
	}

	if opts.Objective == Reference {
		best := 0.0
		for i, ll := range cv.GridLL {
			if ll > best {
				best, cv.Index = ll, i
			}
		}
		if cv.Index < 0 {
			return nil, fmt.Errorf("kde: %s: no grid bandwidth has a reference log-likelihood above 0 (the reference code returns -1 here); use the loo objective", notion)
		}
		cv.Bandwidth, cv.LogLik = grid[cv.Index], cv.GridLL[cv.Index]
		cv.edgeWarning()
		return cv, nil
	}
	for i, ll := range cv.GridLL {
		if ll > math.Inf(-1) && (cv.Index < 0 || ll > cv.GridLL[cv.Index]) {
			cv.Index = i
		}
	}
	if cv.Index < 0 {
		return nil, fmt.Errorf("kde: %s: the leave-one-out likelihood is 0 at every grid bandwidth", notion)
	}
	cv.Bandwidth, cv.LogLik = grid[cv.Index], cv.GridLL[cv.Index]
	cv.edgeWarning()
	if !refine {
		return cv, nil
	}
	ilo, ihi := max(cv.Index-1, 0), min(cv.Index+1, len(grid)-1)
	f := func(u float64) float64 {
		ll, _, _ := objective(pts, []float64{math.Exp(u)}, LOO, weights)
		return ll[0]
	}
	u, ll, evals := brentMax(f, bracket{
		a: math.Log(grid[ilo]), b: math.Log(grid[ihi]), x: math.Log(cv.Bandwidth),
		fa: cv.GridLL[ilo], fb: cv.GridLL[ihi], fx: cv.LogLik,
	}, tol, refineEvals(math.Log(grid[ihi])-math.Log(grid[ilo]), tol))
	unused(evals)
	if err := canceled(opts.ctx); err != nil {
		return nil, err
	}
	if ll > cv.LogLik {
		cv.Bandwidth, cv.LogLik, cv.Refined = math.Exp(u), ll, true
	}
	return cv, nil
}

// refineEvals caps the bandwidth evaluations of brentMax on a bracket of
// width w in log h down to tol: twice those of a golden-section search
// (two, then one per shrink by the golden ratio). Brent's method takes 4 to
// 6 on the real sets' objectives; the cap is reached only on adversarial
// ones (cusps, walls of -Inf), where the best point so far is returned.
func refineEvals(w, tol float64) int {
	evals := 2
	for ; w >= tol; w *= goldenRatio {
		evals++
	}
	return 2 * evals
}

// edgeWarning adds a warning when the best grid value is an end of the grid.
func (cv *Curve) edgeWarning() {
	switch {
	case len(cv.Grid) < 2:
	case cv.Index == 0:
		cv.Warnings = append(cv.Warnings, fmt.Errorf("the objective is largest at the smallest grid bandwidth %.3g; the optimum may be smaller (duplicated predictions make the LOO likelihood grow without bound as h -> 0)", cv.Grid[0]))
	case cv.Index == len(cv.Grid)-1:
		cv.Warnings = append(cv.Warnings, fmt.Errorf("the objective is largest at the largest grid bandwidth %.3g; the optimum may be larger", cv.Grid[cv.Index]))
	}
}

// goldenRatio is (sqrt(5) - 1) / 2, the bracket's shrink factor per step
// of a golden-section search.
const goldenRatio = 0.6180339887498949

// bracket is where brentMax starts: the interval [a, b] of u = log h, the
// best point x in it (a <= x <= b) and the objective at the three (fa, fb,
// fx; -Inf allowed at the ends).
type bracket struct{ a, b, x, fa, fb, fx float64 }

// brentMax maximises f(u) over u in the bracket by Brent's method (R. P.
// Brent, Algorithms for Minimization without Derivatives, 1973, ch. 5;
// the form of Numerical Recipes' brent): a parabola through the best three
// points evaluated so far gives the next point when its vertex falls
// inside the bracket and its step is under half the step before last,
// else a golden-section step goes into the larger part of the bracket.
// The bracket's known ends and best point start the parabolas, so a
// smooth objective needs about 5 evaluations where a golden-section search
// of the same bracket needs 13. No two evaluations are closer than tol/4.
// It stops when the bracket reaches at most tol/2 on either side of the
// best point (a maximiser of a unimodal f then lies within tol/2 of the
// returned point; the golden-section search this replaced guaranteed tol)
// or after maxEvals evaluations (then without that guarantee), and returns
// the best point, its value and the number of evaluations.
func brentMax(f func(u float64) float64, br bracket, tol float64, maxEvals int) (x, fx float64, evals int) {
	const cgold = 1 - goldenRatio // 0.381966..., the golden step's fraction
	a, b := br.a, br.b
	x, fx = br.x, br.fx
	// w: the second best point, v: the previous w. Starting with the ends
	// lets the first step be a parabola through all three known points.
	w, fw, v, fv := br.b, br.fb, br.a, br.fa
	if fv > fw {
		w, fw, v, fv = v, fv, w, fw
	}
	tol1 := tol / 4
	tol2 := 2 * tol1
	// d, e: the last step and the one before it. Both start at the
	// bracket's width, so that the first two steps may be parabolas (with
	// e = 0 the second would always be a golden-section step).
	d, e := b-a, b-a
	for ; evals < maxEvals; evals++ {
		xm := (a + b) / 2
		if math.Abs(x-xm) <= tol2-(b-a)/2 {
			break
		}
		golden := true
		if math.Abs(e) > tol1 && mathx.Finite(fx, fw, fv) && x != w && x != v && w != v {
			// The vertex of the parabola through (x, fx), (w, fw), (v, fv):
			// x + p/q.
			r := (x - w) * (fx - fv)
			q := (x - v) * (fx - fw)
			p := (x-v)*q - (x-w)*r
			q = 2 * (q - r)
			if q > 0 {
				p = -p
			}
			q = math.Abs(q)
			last := e
			e = d
			if q != 0 && math.Abs(p) < math.Abs(q*last/2) && p > q*(a-x) && p < q*(b-x) {
				d = p / q
				if u := x + d; u-a < tol2 || b-u < tol2 {
					d = math.Copysign(tol1, xm-x)
				}
				golden = false
			}
		}
		if golden {
			if x >= xm {
				e = a - x
			} else {
				e = b - x
			}
			d = cgold * e
		}
		u := x + d
		if math.Abs(d) < tol1 {
			u = x + math.Copysign(tol1, d)
		}
		fu := f(u)
		if fu > fx {
			if u >= x {
				a = x
			} else {
				b = x
			}
			v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
			continue
		}
		if u < x {
			a = u
		} else {
			b = u
		}
		switch {
		case fu >= fw || w == x:
			v, fv, w, fw = w, fw, u, fu
		case fu >= fv || v == x || v == w:
			v, fv = u, fu
		}
	}
	return x, fx, evals
}

// objective returns the objective at each bandwidth, summed over the parts
// (the classes of ClassWise), the number of excluded points (LOO) and the
// total weight of the points kept (of the first bandwidth, summed over the
// parts; the number kept without weights). w are the sample weights (nil:
// all 1).
func objective(pts []part, hs []float64, obj Objective, w []float64) (ll []float64, excluded int, wkept float64) {
	if w != nil {
		return weightedObjective(pts, hs, obj, w)
	}
	ll = make([]float64, len(hs))
	for _, pt := range pts {
		n := pt.prob.n
		lse := pt.prob.looLSE(hs)
		logn1 := math.Log(float64(n - 1))
		for g, h := range hs {
			sum := 0.0
			if obj == Reference {
				// log((n-1) h) evaluated in float32, as the reference does.
				t := float32(float64(n-1) * float64(float32(h)))
				sub := float64(float32(math.Log(float64(t))))
				for _, v := range lse[g*n : (g+1)*n] {
					sum += v - sub
				}
			} else {
				for _, v := range lse[g*n : (g+1)*n] {
					if v == math.Inf(-1) {
						if g == 0 {
							excluded++
						}
						continue
					}
					sum += v - logn1
				}
			}
			ll[g] += sum
		}
	}
	return ll, excluded, float64(len(pts)*len(pts[0].prob.labels) - excluded)
}

// weightedObjective is objective with sample weights w: each point's term
// times w_j, log(n-1) replaced by log W_-j (the total weight of the other
// points), the sum scaled by n+/W (n+ the number of positive weights).
// W_-j is taken as the sum of the weights before j plus the sum of those
// after it (sums of non-negative numbers, accurate to n ulp; W - w_j could
// cancel), which is exactly n - 1 for unit weights; a point of weight 0 is
// skipped (its log-density may be -Inf).
// For unit weights every operation matches objective's: 1 x t = t and
// n+/W = 1.
func weightedObjective(pts []part, hs []float64, obj Objective, w []float64) (ll []float64, excluded int, wkept float64) {
	ll = make([]float64, len(hs))
	n := len(w)
	logOthers := make([]float64, n)
	before, total, npos := 0.0, 0.0, 0
	for _, v := range w {
		total += v
		if v > 0 {
			npos++
		}
	}
	after := make([]float64, n) // sum of w_i for i > j
	for j := n - 2; j >= 0; j-- {
		after[j] = after[j+1] + w[j+1]
	}
	others := make([]float64, n)
	for j, v := range w {
		others[j] = before + after[j]
		logOthers[j] = math.Log(others[j])
		before += v
	}
	scale := float64(npos) / total
	for _, pt := range pts {
		lse := pt.prob.looLSE(hs)
		for g, h := range hs {
			sum := 0.0
			for j, v := range lse[g*n : (g+1)*n] {
				if obj == LOO && v == math.Inf(-1) {
					if g == 0 {
						excluded++
					}
					continue
				}
				if g == 0 {
					wkept += w[j]
				}
				if w[j] == 0 {
					continue
				}
				sub := logOthers[j]
				if obj == Reference {
					// log(W_-j h) in float32, as the reference does.
					t := float32(others[j] * float64(float32(h)))
					sub = float64(float32(math.Log(float64(t))))
				}
				sum += w[j] * (v - sub)
			}
			ll[g] += sum * scale
		}
	}
	return ll, excluded, wkept
}
