package kde

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// WitnessSums is the mergeable form of Witness (the cross-fitted residual
// witness, p = 1, and the debiased U-statistic, p = 2, of the canonical
// calibration error) at m fixed evaluation points. For each point j and
// each bandwidth h of the grid it holds the leave-one-out kernel sums of the
// residuals e_i = y_i - f_i over every centre i added,
//
//	S_j(h) = sum_{i != j} w_i k_h(f_j; f_i),   E_j(h) = sum_{i != j} w_i k_h(f_j; f_i) e_i,
//
// (Dirichlet kernel, eq. 10; one shift per point and bandwidth as in
// PointSums), so that g_j(h) = E_j / S_j is residualSweep's regression; and,
// with p = 2, the same sums at the bandwidths Scale x h with the pair sums
//
//	P_j = sum_{i != i'} x_i x_i',  Q_j = sum_{i != i'} x_i x_i' <e_i, e_i'>,  x_i = w_i k(f_j; f_i),
//
// accumulated term by term (kernel.PairWeightedSumExp: never the
// difference of two squares) and merged by P = P_a + P_b + 2 S_a S_b, Q =
// Q_a + Q_b + 2 <E_a, E_b>. Estimate chooses the bandwidths and gives the
// estimates from the points' terms as Witness does from all rows: with
// every row a point (in input order, the same Seed) it is Witness's value.
// Memory: m x grid x (K + 1) floats, twice that and m x grid x 2 more with
// p = 2.
type WitnessSums struct {
	st witnessSumsState
}

// witnessSumsState is the state of WitnessSums.
type witnessSumsState struct {
	Version int       `json:"version"`
	K       int       `json:"k"`
	Grid    []float64 `json:"grid"`
	// Scale is WitnessOptions.P2Scale (0: no p = 2 sums).
	Scale   float64   `json:"scale,omitempty"`
	Points  []float64 `json:"points"`
	Labels  []int     `json:"labels"`
	Weights []float64 `json:"weights,omitempty"`
	N       int64     `json:"n"`
	W       float64   `json:"w"`
	// Shift[b*m + j], S[b*m + j] and E[(b*m + j)*K + l] for bandwidth b of
	// Grid followed (p = 2) by Scale x Grid; P and Q[(b - G)*m + j] for
	// the second half. Shift is -Inf (JSON: null) while the point has no
	// centre with a positive kernel.
	Shift []float64 `json:"-"`
	S     []float64 `json:"s"`
	E     []float64 `json:"e"`
	P     []float64 `json:"p,omitempty"`
	Q     []float64 `json:"q,omitempty"`
}

// NewWitnessSums returns empty sums at the evaluation points (m rows of k
// probabilities, labels, weights nil or m values >= 0) on the grid (nil:
// WitnessGrid()); p2Scale > 0 adds the p = 2 sums at p2Scale x grid.
func NewWitnessSums(points []float64, labels []int, k int, weights, grid []float64, p2Scale float64) (*WitnessSums, error) {
	grid, err := checkEvalPoints(Canonical, points, labels, k, weights, grid, WitnessGrid)
	if err != nil {
		return nil, err
	}
	if p2Scale < 0 || math.IsInf(p2Scale, 0) || math.IsNaN(p2Scale) {
		return nil, fmt.Errorf("kde: witness: P2Scale %v: must be positive", p2Scale)
	}
	ws := &WitnessSums{st: witnessSumsState{Version: pointSumsVersion, K: k, Grid: slices.Clone(grid), Scale: p2Scale,
		Points: slices.Clone(points), Labels: slices.Clone(labels), Weights: slices.Clone(weights)}}
	ws.alloc()
	return ws, nil
}

// alloc sizes the sums for the grid and points.
func (ws *WitnessSums) alloc() {
	m, nb := ws.M(), ws.bandwidths()
	ws.st.Shift, ws.st.S, ws.st.E = make([]float64, nb*m), make([]float64, nb*m), make([]float64, nb*m*ws.st.K)
	for i := range ws.st.Shift {
		ws.st.Shift[i] = math.Inf(-1)
	}
	if ws.st.Scale > 0 {
		ws.st.P, ws.st.Q = make([]float64, len(ws.st.Grid)*m), make([]float64, len(ws.st.Grid)*m)
	}
}

// M returns the number of evaluation points.
func (ws *WitnessSums) M() int { return len(ws.st.Labels) }

// bandwidths returns the number of bandwidths summed: the grid, and with
// p = 2 the scaled grid.
func (ws *WitnessSums) bandwidths() int {
	if ws.st.Scale > 0 {
		return 2 * len(ws.st.Grid)
	}
	return len(ws.st.Grid)
}

// bandwidth returns bandwidth b (grid, then scaled grid).
func (ws *WitnessSums) bandwidth(b int) float64 {
	if g := len(ws.st.Grid); b >= g {
		return ws.st.Scale * ws.st.Grid[b-g]
	}
	return ws.st.Grid[b]
}

// Add adds a batch of kernel centres: probs n×K, labels and weights (nil:
// all 1); o.Self marks the centres that are evaluation points. Each point
// takes the batch tile by tile (pointTile centres) at its running shift.
func (ws *WitnessSums) Add(ctx context.Context, probs []float64, labels []int, weights []float64, o AddOptions) error {
	o.ctx = ctx
	n, k := len(labels), ws.st.K
	if n == 0 {
		return nil
	}
	if err := checkPoints(Canonical, probs, labels, k); err != nil {
		return err
	}
	if err := mathx.CheckWeightValues(weights, n); err != nil {
		return fmt.Errorf("kde: %w", err)
	}
	m, G, nb := ws.M(), len(ws.st.Grid), ws.bandwidths()
	if o.Self != nil && len(o.Self) != n {
		return fmt.Errorf("kde: %d self indices for %d centres", len(o.Self), n)
	}
	for _, j := range o.Self {
		if j < -1 || j >= m {
			return fmt.Errorf("kde: self index %d outside -1..%d", j, m-1)
		}
	}
	// Centre coordinates by column, residuals, log weights.
	fct := make([]float64, n*k)
	for i := 0; i < n; i++ {
		for q := 0; q < k; q++ {
			fct[q*n+i] = probs[i*k+q]
		}
	}
	e := residuals(probs, labels, k)
	lw := make([]float64, n)
	for i, w := range weights {
		lw[i] = math.Log(w)
	}
	hs := make([]float64, nb)
	for b := range hs {
		hs[b] = ws.bandwidth(b)
	}
	norm, err := centreNorms(fct, n, k, lw, hs, o)
	if err != nil {
		return err
	}
	self := map[int][]int{}
	for i, j := range o.Self {
		if j >= 0 {
			self[j] = append(self[j], i)
		}
	}
	lx, exact := make([]float64, m*k), make([]bool, m)
	for j := 0; j < m; j++ {
		for q, v := range ws.st.Points[j*k : (j+1)*k] {
			lx[j*k+q] = math.Log(v)
			exact[j] = exact[j] || v == 0
		}
	}
	zero := make([]float64, pointTile)
	err = parallel.ForContext(o.ctx, m, o.Workers, func() []float64 { return make([]float64, 2*pointTile) }, func(buf []float64, j int) {
		for t0 := 0; t0 < n; t0 += pointTile {
			t1 := min(n, t0+pointTile)
			dots, lk := buf[:t1-t0], buf[pointTile:pointTile+t1-t0]
			if exact[j] {
				kernel.LogKernelRowExact(dots, lx[j*k:(j+1)*k], fct[t0:], n, zero, 1)
			} else {
				kernel.LogKernelRow(dots, lx[j*k:(j+1)*k], fct[t0:], n, zero, 1)
			}
			for b := 0; b < nb; b++ {
				mx := kernel.AffineMax(lk, dots, norm[b*n+t0:b*n+t1], 1/ws.bandwidth(b))
				if skip := self[j]; len(skip) > 0 {
					for _, s := range skip {
						if s >= t0 && s < t1 {
							lk[s-t0] = math.Inf(-1)
						}
					}
					mx = kernel.Max(lk)
				}
				if math.IsInf(mx, -1) || math.IsNaN(mx) {
					continue
				}
				at := b*m + j
				acc := ws.st.E[at*k : (at+1)*k]
				if old := ws.st.Shift[at]; mx > old {
					if !math.IsInf(old, -1) {
						f := math.Exp(old - mx)
						ws.st.S[at] *= f
						for l := range acc {
							acc[l] *= f
						}
						if b >= G {
							ws.st.P[at-G*m] *= f * f
							ws.st.Q[at-G*m] *= f * f
						}
					}
					ws.st.Shift[at] = mx
				}
				if b < G {
					ws.st.S[at] += kernel.WeightedSumExp(acc, lk, e[t0*k:t1*k], ws.st.Shift[at])
					continue
				}
				pa := at - G*m
				ws.st.S[at], ws.st.P[pa], ws.st.Q[pa] = kernel.PairWeightedSumExp(acc, lk, e[t0*k:t1*k], ws.st.Shift[at], ws.st.S[at], ws.st.P[pa], ws.st.Q[pa])
			}
		}
	})
	if err != nil {
		return fmt.Errorf("kde: %w", err)
	}
	ws.st.N += int64(n)
	ws.st.W += mathx.WeightSum(weights, n)
	return nil
}

// Merge adds the sums of another shard over the same points and grid.
func (ws *WitnessSums) Merge(o *WitnessSums) error {
	switch {
	case ws.st.K != o.st.K || !slices.Equal(ws.st.Grid, o.st.Grid) || ws.st.Scale != o.st.Scale:
		return fmt.Errorf("%w: witness sums of other classes or grids", ErrMismatch)
	case !slices.Equal(ws.st.Points, o.st.Points) || !slices.Equal(ws.st.Labels, o.st.Labels) || !slices.Equal(ws.st.Weights, o.st.Weights):
		return fmt.Errorf("%w: different evaluation points", ErrMismatch)
	}
	m, G, k := ws.M(), len(ws.st.Grid), ws.st.K
	for at, b := range o.st.Shift {
		if math.IsInf(b, -1) {
			continue
		}
		a := ws.st.Shift[at]
		da, db := ws.st.E[at*k:(at+1)*k], o.st.E[at*k:(at+1)*k]
		fa, fb := 1.0, 1.0 // the factors bringing each side to the larger shift
		switch {
		case math.IsInf(a, -1):
			fa = 0
			ws.st.Shift[at] = b
		case b <= a:
			fb = math.Exp(b - a)
		default:
			fa = math.Exp(a - b)
			ws.st.Shift[at] = b
		}
		if at >= G*m {
			pa := at - G*m
			dot := 0.0
			for l := range da {
				dot += da[l] * db[l]
			}
			cross := 2 * fa * fb
			ws.st.P[pa] = ws.st.P[pa]*fa*fa + o.st.P[pa]*fb*fb + cross*ws.st.S[at]*o.st.S[at]
			ws.st.Q[pa] = ws.st.Q[pa]*fa*fa + o.st.Q[pa]*fb*fb + cross*dot
		}
		ws.st.S[at] = ws.st.S[at]*fa + o.st.S[at]*fb
		for l := range da {
			da[l] = da[l]*fa + db[l]*fb
		}
	}
	ws.st.N += o.st.N
	ws.st.W += o.st.W
	return nil
}

// witnessSumsPlain is WitnessSums without its JSON methods.
type witnessSumsPlain witnessSumsState

// witnessSumsJSON is the JSON form: the shifts with -Inf as null.
type witnessSumsJSON struct {
	witnessSumsPlain
	Shift []*float64 `json:"shift"`
}

// MarshalJSON writes the versioned JSON form.
func (ws *WitnessSums) MarshalJSON() ([]byte, error) {
	return witnessSumsKind.Encode(witnessSumsJSON{witnessSumsPlain: witnessSumsPlain(ws.st), Shift: nullShifts(ws.st.Shift)})
}

// UnmarshalJSON reads the JSON form, checking its version and sizes.
func (ws *WitnessSums) UnmarshalJSON(b []byte) error {
	var v witnessSumsJSON
	if _, err := witnessSumsKind.Decode(b, &v); err != nil {
		return err
	}
	out := WitnessSums{st: witnessSumsState(v.witnessSumsPlain)}
	if err := checkGrid(out.st.Grid); err != nil {
		return witnessSumsKind.Errorf("%w", err)
	}
	m := len(out.st.Labels)
	if out.st.K < 2 || m == 0 || len(out.st.Points) != m*out.st.K || (out.st.Weights != nil && len(out.st.Weights) != m) || !(out.st.Scale >= 0) {
		return witnessSumsKind.Errorf("inconsistent sizes")
	}
	if err := checkPoints(Canonical, out.st.Points, out.st.Labels, out.st.K); err != nil {
		return witnessSumsKind.Errorf("%w", err)
	}
	nb := out.bandwidths()
	if len(v.Shift) != nb*m || len(out.st.S) != nb*m || len(out.st.E) != nb*m*out.st.K {
		return witnessSumsKind.Errorf("inconsistent sizes")
	}
	if out.st.Scale > 0 && (len(out.st.P) != len(out.st.Grid)*m || len(out.st.Q) != len(out.st.Grid)*m) {
		return witnessSumsKind.Errorf("inconsistent pair sums")
	}
	out.st.Shift = infShifts(v.Shift)
	*ws = out
	return nil
}

// SampledWitness is the estimate of one exponent from WitnessSums.
type SampledWitness struct {
	WitnessValue
	M int   // evaluation points
	N int64 // centres
	// SE, Lo and Hi: the standard error of Value over the sample of
	// points and its symmetric normal interval (the terms can be
	// negative); 0 and Value, Value with every row a point.
	SE, Lo, Hi float64
}

// Estimate returns the estimates of ws for the exponents p (nil: 1 and 2
// where the sums have them), as Witness computes them from all rows but
// over the evaluation points: V1(h) and CV(h) are the means of the
// points' terms, the cross-fitting splits the points (splits: 0 means 20;
// seed as WitnessOptions.Seed), and U_j is taken at Scale x h_cv. The SE
// treats the terms as the plug-in's (1 - m/n) m'/(m'-1) sum w_j^2 (t_j -
// V)^2 / (sum w_j)^2; for p = 1 it ignores the small dependence the
// cross-fitting adds between the terms. level 0: 0.95.
func (ws *WitnessSums) Estimate(p []float64, splits int, seed uint64, level float64) ([]SampledWitness, error) {
	if p == nil {
		p = []float64{1}
		if ws.st.Scale > 0 {
			p = append(p, 2)
		}
	}
	if splits == 0 {
		splits = 20
	}
	if level == 0 {
		level = 0.95
	}
	if !(level > 0 && level < 1) || splits < 0 {
		return nil, fmt.Errorf("kde: witness: level %v or %d splits", level, splits)
	}
	m, G, k := ws.M(), len(ws.st.Grid), ws.st.K
	v1, cv := make([]float64, G*m), make([]float64, G*m)
	defined := make([]bool, m)
	gj := make([]float64, k)
	e := residuals(ws.st.Points, ws.st.Labels, k)
	terms := func(b, j int) (sign, cvt, dot float64, ok bool) {
		at := b*m + j
		if math.IsInf(ws.st.Shift[at], -1) || !(ws.st.S[at] > 0) {
			return 0, 0, 0, false
		}
		ej := e[j*k : (j+1)*k]
		inv := 1 / ws.st.S[at]
		gg := 0.0
		for l, v := range ws.st.E[at*k : (at+1)*k] {
			switch {
			case v > 0:
				sign += ej[l]
			case v < 0:
				sign -= ej[l]
			}
			gj[l] = v * inv
			dot += gj[l] * ej[l]
			gg += gj[l] * gj[l]
		}
		return sign, 2*dot - gg, dot, true
	}
	for j := 0; j < m; j++ {
		defined[j] = true
		for g := 0; g < G; g++ {
			s, c, _, ok := terms(g, j)
			if !ok {
				defined[j] = false
				continue
			}
			v1[g*m+j], cv[g*m+j] = s, c
		}
		if !defined[j] {
			for g := 0; g < G; g++ {
				v1[g*m+j], cv[g*m+j] = 0, 0
			}
		}
	}
	var out []SampledWitness
	for _, pv := range p {
		v := WitnessValue{P: pv, Kept: slices.Clone(defined)}
		switch pv {
		case 1:
			v.Curve = curveMeans(v1, defined, ws.st.Weights, m, G)
			best := mathx.Argmax(v.Curve)
			v.Bandwidth = ws.st.Grid[best]
			var hg float64
			v.Terms, hg = crossFit(v1, defined, ws.st.Weights, m, G, splits, seed)
			v.HalfBandwidths = geometricMean(ws.st.Grid, hg)
			v.Warnings = edgeWarning(ws.st.Grid, best, "witness V1")
		case 2:
			if ws.st.Scale == 0 {
				return nil, errors.New("kde: witness p = 2: the sums have no pair sums")
			}
			v.Curve = curveMeans(cv, defined, ws.st.Weights, m, G)
			best := mathx.Argmax(v.Curve)
			v.CVBandwidth, v.Bandwidth = ws.st.Grid[best], ws.st.Scale*ws.st.Grid[best]
			v.Warnings = edgeWarning(ws.st.Grid, best, "cross-validation CV")
			v.Terms = make([]float64, m)
			for j := range v.Kept {
				pa := best*m + j
				_, _, dot, ok := terms(G+best, j)
				if !v.Kept[j] || !ok || !(ws.st.P[pa] > 0) {
					v.Kept[j] = false
					continue
				}
				v.Terms[j] = 2*dot - ws.st.Q[pa]/ws.st.P[pa]
			}
		default:
			return nil, fmt.Errorf("kde: witness: p = %v: must be 1 or 2", pv)
		}
		kept, wkept := 0, 0.0
		for j, ok := range v.Kept {
			if !ok {
				v.Excluded++
				continue
			}
			w := mathx.Weight(ws.st.Weights, j)
			v.Value += w * v.Terms[j]
			wkept += w
			if w > 0 {
				kept++
			}
		}
		if kept == 0 || !(wkept > 0) {
			return nil, fmt.Errorf("kde: witness p = %v: %w: no evaluation point of positive weight is kept", pv, ErrTooFew)
		}
		v.Value /= wkept
		if !mathx.Finite(v.Value) {
			return nil, fmt.Errorf("kde: witness p = %v: estimate is %v", pv, v.Value)
		}
		v.Root = math.Pow(math.Max(0, v.Value), 1/pv)
		sw := SampledWitness{WitnessValue: v, M: m, N: ws.st.N, Lo: v.Value, Hi: v.Value}
		if sw.SE = sampledSE(v.Terms, v.Kept, ws.st.Weights, ws.st.N, 1, v.Value, wkept, kept); sw.SE > 0 {
			z := distuv.UnitNormal.Quantile((1 + level) / 2)
			sw.Lo, sw.Hi = v.Value-z*sw.SE, v.Value+z*sw.SE
		}
		out = append(out, sw)
	}
	return out, nil
}

// ConcatWitnessSums joins the sums of disjoint blocks of evaluation points,
// each over every centre, into the sums of all their points in block order
// (see ConcatPointSums): bit for bit those of one WitnessSums over all of
// them.
func ConcatWitnessSums(blocks []*WitnessSums) (*WitnessSums, error) {
	if len(blocks) == 0 {
		return nil, errors.New("kde: ConcatWitnessSums: no blocks")
	}
	a := blocks[0]
	for _, b := range blocks {
		switch {
		case b.st.K != a.st.K || !slices.Equal(b.st.Grid, a.st.Grid) || b.st.Scale != a.st.Scale:
			return nil, fmt.Errorf("%w: witness blocks of other classes or grids", ErrMismatch)
		case b.st.N != a.st.N || b.st.W != a.st.W || (b.st.Weights == nil) != (a.st.Weights == nil):
			return nil, fmt.Errorf("%w: witness blocks over %d and %d centres", ErrMismatch, a.st.N, b.st.N)
		}
	}
	out := &WitnessSums{st: witnessSumsState{Version: pointSumsVersion, K: a.st.K, Grid: slices.Clone(a.st.Grid), Scale: a.st.Scale, N: a.st.N, W: a.st.W}}
	for _, b := range blocks {
		out.st.Points = append(out.st.Points, b.st.Points...)
		out.st.Labels = append(out.st.Labels, b.st.Labels...)
		out.st.Weights = append(out.st.Weights, b.st.Weights...)
	}
	k := a.st.K
	for bw := 0; bw < a.bandwidths(); bw++ {
		for _, b := range blocks {
			m := b.M()
			out.st.Shift = append(out.st.Shift, b.st.Shift[bw*m:(bw+1)*m]...)
			out.st.S = append(out.st.S, b.st.S[bw*m:(bw+1)*m]...)
			out.st.E = append(out.st.E, b.st.E[bw*m*k:(bw+1)*m*k]...)
		}
	}
	for g := 0; a.st.Scale > 0 && g < len(a.st.Grid); g++ {
		for _, b := range blocks {
			m := b.M()
			out.st.P = append(out.st.P, b.st.P[g*m:(g+1)*m]...)
			out.st.Q = append(out.st.Q, b.st.Q[g*m:(g+1)*m]...)
		}
	}
	return out, nil
}

// N returns the number of centres (rows) added, merged shards' included.
func (ws *WitnessSums) N() int64 { return ws.st.N }
