package kde

import (
	"context"
	"fmt"
	"math"

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
	// point is refined by a golden-section search in log h.
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

// DefaultTolerance is the width in log h at which the golden-section
// refinement stops when BandwidthOptions.Tolerance is 0 (h to about 1 %).
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
	// NoRefine skips the golden-section refinement of the LOO objective.
	NoRefine bool
	// Tolerance is the bracket width in log h at which the refinement
	// stops; 0 means DefaultTolerance.
	Tolerance float64
	Workers   int // goroutines; 0 means GOMAXPROCS
	// Progress, if not nil, is told how far the computation is.
	Progress Progress
	// Context, if not nil, cancels the selection (see Options.Context).
	Context context.Context
}

// Curve is the outcome of SelectBandwidth.
type Curve struct {
	Notion    Notion
	Objective Objective
	Bandwidth float64   // the selected bandwidth
	LogLik    float64   // the objective at Bandwidth
	Index     int       // index of the best grid point
	Refined   bool      // Bandwidth comes from the golden-section search
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
	Warnings []string
}

// SelectBandwidth chooses the bandwidth of a notion by leave-one-out maximum
// likelihood: the Dirichlet kernel on the full vectors for Canonical, the
// Beta kernel on the confidences for TopLabel and on p1 for Binary, and for
// Marginal one bandwidth maximising the sum over classes of the Beta LOO on
// each column. labels are not used, but are checked like Estimate's (the
// TopLabel and Marginal points do not depend on them).
//
// weights are the sample weights (nil means all 1; see the objectives):
// sample j's log-likelihood term is weighted by w_j and its leave-one-out
// density is the w-weighted kernel density of the other samples. A sample
// of weight 0 changes nothing. Invalid weights give an error wrapping
// mathx.ErrWeights, fewer than two positive weights one wrapping
// ErrTooFew.
func SelectBandwidth(notion Notion, probs []float64, labels []int, k int, weights []float64, opts BandwidthOptions) (*Curve, error) {
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
	tr := track(opts.Context, pts, opts.Progress, len(grid))
	// The refinement's work is announced with the grid's, at its largest
	// (the widest bracket), so that the reported fraction never goes back;
	// what it does not use is reported done when it is known.
	refine := opts.Objective == LOO && !opts.NoRefine && len(grid) >= 2
	maxEvals := 0
	if refine && tr != nil {
		for i := range grid {
			lo, hi := grid[max(i-1, 0)], grid[min(i+1, len(grid)-1)]
			maxEvals = max(maxEvals, goldenEvals(math.Log(hi)-math.Log(lo), tol))
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
	if err := canceled(opts.Context); err != nil {
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
	lo, hi := grid[max(cv.Index-1, 0)], grid[min(cv.Index+1, len(grid)-1)]
	a, b := math.Log(lo), math.Log(hi)
	unused(goldenEvals(b-a, tol))
	f := func(hs ...float64) []float64 { ll, _, _ := objective(pts, hs, LOO, weights); return ll }
	h, ll := goldenSection(f, a, b, tol)
	if err := canceled(opts.Context); err != nil {
		return nil, err
	}
	if ll > cv.LogLik {
		cv.Bandwidth, cv.LogLik, cv.Refined = h, ll, true
	}
	return cv, nil
}

// goldenEvals is the number of bandwidth evaluations of goldenSection on a
// bracket of width w in log h, down to tol: two, then one per shrink.
func goldenEvals(w, tol float64) int {
	evals := 2
	for ; w >= tol; w *= goldenRatio {
		evals++
	}
	return evals
}

// edgeWarning adds a warning when the best grid value is an end of the grid.
func (cv *Curve) edgeWarning() {
	switch {
	case len(cv.Grid) < 2:
	case cv.Index == 0:
		cv.Warnings = append(cv.Warnings, fmt.Sprintf("the objective is largest at the smallest grid bandwidth %.3g; the optimum may be smaller (duplicated predictions make the LOO likelihood grow without bound as h -> 0)", cv.Grid[0]))
	case cv.Index == len(cv.Grid)-1:
		cv.Warnings = append(cv.Warnings, fmt.Sprintf("the objective is largest at the largest grid bandwidth %.3g; the optimum may be larger", cv.Grid[cv.Index]))
	}
}

// goldenSection maximises f(e^u) over u in [a, b] by golden-section search
// until b - a < tol, and returns the best point it evaluated. f takes
// several bandwidths at once (one sweep over the pairs for all of them).
// goldenRatio is (sqrt(5) - 1) / 2, the bracket's shrink factor per step.
const goldenRatio = 0.6180339887498949

func goldenSection(f func(hs ...float64) []float64, a, b, tol float64) (h, ll float64) {
	const phi = goldenRatio
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	v := f(math.Exp(x1), math.Exp(x2))
	f1, f2 := v[0], v[1]
	h, ll = math.Exp(x1), f1
	if f2 > ll {
		h, ll = math.Exp(x2), f2
	}
	for b-a >= tol {
		if f1 >= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = f(math.Exp(x1))[0]
			if f1 > ll {
				h, ll = math.Exp(x1), f1
			}
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = f(math.Exp(x2))[0]
			if f2 > ll {
				h, ll = math.Exp(x2), f2
			}
		}
	}
	return h, ll
}

// objective returns the objective at each bandwidth, summed over the parts
// (the classes of Marginal), the number of excluded points (LOO) and the
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
