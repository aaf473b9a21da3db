package kde

import (
	"cmp"
	"context"
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/parallel"
)

// Block sizes of the streamed O(n^2) sweeps: evaluation points are handled
// blockJ at a time against tiles of at most tileI kernel centres, so a
// worker's scratch is at most blockJ*tileI floats (16 KiB) and memory stays
// O(n d). The estimate and LOO sweeps use tiles of problem.ti centres, whose
// coordinates take at most tileBytes (they stay in the L1 cache while a
// block's rows are computed) unless that is fewer than 64 centres (16 for
// d > 256; see newProblem).
const (
	blockJ    = 8
	tileI     = 256
	tileBytes = 16 << 10
)

// problem is a Dirichlet kernel regression in normalised form: n points x_j
// in the (d-1)-simplex (d columns), each with a label in 0..nl-1. Every point
// is both an evaluation point and a kernel centre; centre i has the Dirichlet
// kernel with alpha_i = x_i/h + 1 (eq. 10). A Beta kernel on a scalar c (eq.
// 8) is the case d = 2 with the columns (c, 1-c).
type problem struct {
	n, d, nl int
	x        []float64 // n×d coordinates, input order
	exact    []bool    // row has a zero coordinate: its log-kernels need the 0*log 0 = 0 convention
	anyExact bool
	labels   []int // input order

	// Centres sorted by label, so that each label's kernel sum is a sum
	// over a contiguous range.
	order []int     // sorted position -> input index
	rank  []int     // input index -> sorted position
	fct   []float64 // centre coordinates by tile and by coordinate: centre i0+b of the tile at i0 (nb centres) has coordinate m at fct[i0*d + m*nb + b]
	lxs   []float64 // n×d log coordinates in sorted order (evaluation points are swept in this order)
	seg   []int     // centres of label l are at sorted positions seg[l]..seg[l+1]-1
	// ti is the number of centres of a tile; fmin[t*d + m] is the smallest
	// coordinate m of the centres of tile t (sorted positions t*ti ..): for
	// x_j in the simplex,
	// <x_i, log x_j> <= <fmin_t, log x_j> for every centre i of tile t.
	ti   int
	fmin []float64

	// The gradient's row-major layout, built by rowMajor on first use (the
	// sweeps need neither): lx holds the n×d log coordinates in input order
	// (-Inf at exact zeros), fc the n×d centre coordinates in sorted order.
	lx, fc []float64
	// fminT is fmin by coordinate (fminT[m*ntiles + t]) and zeroT ntiles
	// zeros: boundRows computes every tile's bound for a point as one
	// kernel.LogKernelRows.
	fminT, zeroT []float64

	// Sample weights (nil: all 1). w is in input order, lw holds log w_i
	// in sorted order: logNorm subtracts it from the normalisers, so that
	// every sweep sums w_i k_h(x_j; x_i) with the unweighted loops (a zero
	// weight gives the log-kernel -Inf, whose exponential is exactly 0).
	// npos is the number of positive weights (n when w is nil).
	w    []float64
	lw   []float64
	npos int

	// beta marks a Beta problem built by betaProblem (columns (c, 1-c));
	// fast makes its sweeps take the series form (line.go),
	// built on first use into ln.
	beta, fast bool
	ln         *line

	workers int
	track   *tracker        // progress of the current call, or nil
	ctx     context.Context // cancels the current call's sweeps; nil: never
}

// newProblem builds the regression of labels on the n points x (n×d) with
// sample weights w (nil: all 1; checked by the caller).
func newProblem(x []float64, d int, labels []int, nl int, w []float64, workers int) *problem {
	n := len(labels)
	p := &problem{n: n, d: d, nl: nl, x: x, labels: labels, workers: workers,
		exact: make([]bool, n), order: make([]int, n), rank: make([]int, n), seg: make([]int, nl+1),
		w: w, npos: n}
	for i, v := range x {
		if v == 0 {
			p.exact[i/d] = true
			p.anyExact = true
		}
	}
	for i := range p.order {
		p.order[i] = i
	}
	// Within a label, centres are sorted by (arg max, max) so that centres
	// near each other in the simplex are near each other in the order: then
	// negligible kernels (below e^kernel.Negligible of the largest) against
	// an evaluation point come in long runs, which kernel.SumExp skips.
	am, mx := make([]int, n), make([]float64, n)
	for i := range am {
		row := x[i*d : (i+1)*d]
		am[i] = argMax(row)
		mx[i] = row[am[i]]
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		if labels[a] != labels[b] {
			return labels[a] - labels[b]
		}
		if am[a] != am[b] {
			return am[a] - am[b]
		}
		return cmp.Compare(mx[a], mx[b])
	})
	p.lxs = make([]float64, n*d)
	for s, i := range p.order {
		p.rank[i] = s
		for m, v := range x[i*d : (i+1)*d] {
			p.lxs[s*d+m] = math.Log(v)
		}
	}
	// Tiles hold tileBytes of coordinates, and at least minTile centres:
	// 64 keeps the blocks of kernel.LogKernelRows full at K around 100
	// (3.5 instead of 4.9 ns per pair at K = 100, the witness 5.2 instead
	// of 6.3, though the tile then leaves the L1 cache); above d = 256 a
	// tile of 64 is over 128 KiB and gains nothing (K = 1,000: 99 against
	// 95 ns per pair), so 16.
	minTile := 64
	if d > 256 {
		minTile = 16
	}
	p.ti = min(tileI, max(minTile, tileBytes/(8*d)))
	ntiles := (n + p.ti - 1) / p.ti
	p.fct = make([]float64, n*d)
	p.fmin = make([]float64, ntiles*d)
	for t := 0; t < ntiles; t++ {
		i0, nb := t*p.ti, min(p.ti, n-t*p.ti)
		fm := p.fmin[t*d : (t+1)*d]
		copy(fm, p.centre(i0))
		for b := 0; b < nb; b++ {
			for m, v := range p.centre(i0 + b) {
				p.fct[i0*d+m*nb+b] = v
				fm[m] = min(fm[m], v)
			}
		}
	}
	p.fminT, p.zeroT = make([]float64, ntiles*d), make([]float64, ntiles)
	for t := 0; t < ntiles; t++ {
		for m := 0; m < d; m++ {
			p.fminT[m*ntiles+t] = p.fmin[t*d+m]
		}
	}
	if w != nil {
		p.lw, p.npos = make([]float64, n), 0
		for s, i := range p.order {
			p.lw[s] = math.Log(w[i]) // -Inf for a zero weight
			if w[i] > 0 {
				p.npos++
			}
		}
	}
	for _, y := range labels {
		p.seg[y+1]++
	}
	for l := 0; l < nl; l++ {
		p.seg[l+1] += p.seg[l]
	}
	return p
}

// logNorm returns the log normalising constants of the centre kernels in
// sorted order: log B(alpha_i) = sum_m lgamma(alpha_im) - lgamma(sum_m
// alpha_im) with alpha_i = x_i/h + 1, using the actual sum of alpha_i (eq. 10).
// With sample weights it returns log B(alpha_i) - log w_i instead (+Inf for
// a zero weight), so that the log-kernels of every sweep are
// log(w_i k_h(x_j; x_i)) and all its kernel sums are weighted: the tile
// bounds (the smallest constant of a tile) stay valid, and unit weights
// subtract exactly 0.
func (p *problem) logNorm(h float64) []float64 {
	c := make([]float64, p.n)
	// Chunks of centres on the workers (each c[s] alone: the same bits).
	const chunk = 1024
	parallel.For((p.n+chunk-1)/chunk, p.workers, func() struct{} { return struct{}{} }, func(_ struct{}, b int) {
		for s := b * chunk; s < min(p.n, (b+1)*chunk); s++ {
			sum, lb := 0.0, 0.0
			for _, v := range p.centre(s) {
				a := v/h + 1
				g, _ := math.Lgamma(a)
				lb += g
				sum += a
			}
			g, _ := math.Lgamma(sum)
			c[s] = lb - g
		}
	})
	if p.lw != nil {
		for s, v := range p.lw {
			c[s] -= v
		}
	}
	return c
}

// others returns the number of samples other than j (input order) that
// have a positive weight: n - 1 without weights. It is the m of the
// debiasing (appendix C, D), over which the ratios average.
func (p *problem) others(j int) int {
	if p.w == nil {
		return p.n - 1
	}
	if p.w[j] > 0 {
		return p.npos - 1
	}
	return p.npos
}

// centre returns the coordinates of the centre at sorted position s.
func (p *problem) centre(s int) []float64 {
	i := p.order[s]
	return p.x[i*p.d : (i+1)*p.d]
}

// rowMajor builds the gradient's row-major copies lx and fc (once).
func (p *problem) rowMajor() {
	if p.fc != nil {
		return
	}
	n, d := p.n, p.d
	p.lx, p.fc = make([]float64, n*d), make([]float64, n*d)
	for i, v := range p.x[:n*d] {
		p.lx[i] = math.Log(v)
	}
	for s := 0; s < n; s++ {
		copy(p.fc[s*d:(s+1)*d], p.centre(s))
	}
}

// tile fills t (rows j0..j0+na-1 against sorted centres i0..i0+len(c)-1)
// with log k_h(x_j; x_i) = invh * <x_i, log x_j> - c_i.
func (p *problem) tile(t []float64, j0, na, i0 int, c []float64, invh float64) {
	d, nb := p.d, len(c)
	fc := p.fc[i0*d : (i0+nb)*d]
	kernel.LogKernelTile(t[:na*nb], p.lx[j0*d:(j0+na)*d], fc, c, d, invh)
	if !p.anyExact {
		return
	}
	for a := 0; a < na; a++ {
		if j := j0 + a; p.exact[j] {
			kernel.LogKernelTileExact(t[a*nb:(a+1)*nb], p.lx[j*d:(j+1)*d], fc, c, d, invh)
		}
	}
}

// dotBound returns <fmin_t, log x_s> >= <x_i, log x_s> for every centre i of
// tile t (log x <= 0), with 0 * log 0 = 0.
func (p *problem) dotBound(s, t int) float64 {
	b := 0.0
	lx := p.lxs[s*p.d : (s+1)*p.d]
	for m, f := range p.fmin[t*p.d : (t+1)*p.d] {
		if f != 0 {
			b += f * lx[m]
		}
	}
	return b
}

// boundRows sets bnd[a*ntiles + t] = dotBound(s0+a, t) for the na points
// at sorted positions s0.. and every tile t, bit for bit (the products
// with a zero fmin are +-0 for a finite log coordinate, which leave the sum
// unchanged): the bounds of a block as one matrix product.
func (p *problem) boundRows(bnd []float64, s0, na int) {
	d, nt := p.d, len(p.zeroT)
	kernel.LogKernelRows(bnd[:na*nt], p.lxs[s0*d:(s0+na)*d], d, p.fminT, nt, p.zeroT, 1)
	if !p.anyExact {
		return
	}
	for a := 0; a < na; a++ {
		if s := s0 + a; p.exact[p.order[s]] {
			for t := range nt {
				bnd[a*nt+t] = p.dotBound(s, t)
			}
		}
	}
}

// tileRows fills dst (len(sel) rows of len(c)) with the log-kernels of the
// evaluation points at sorted positions s0+sel[q] against the centres
// i0..i0+len(c)-1 of one tile (i0 a multiple of ti), all together
// (kernel.LogKernelRows; each row as LogKernelRow gives it, bit for bit); ls is scratch of len(sel)*d.
func (p *problem) tileRows(dst, ls []float64, sel []int, s0, i0 int, c []float64, invh float64) {
	d, nb, nc := p.d, min(p.ti, p.n-i0), len(c)
	fct := p.fct[i0*d:]
	for q, a := range sel {
		copy(ls[q*d:(q+1)*d], p.lxs[(s0+a)*d:(s0+a+1)*d])
	}
	kernel.LogKernelRows(dst[:len(sel)*nc], ls[:len(sel)*d], d, fct, nb, c, invh)
	if !p.anyExact {
		return
	}
	for q, a := range sel {
		if s := s0 + a; p.exact[p.order[s]] {
			kernel.LogKernelRowExact(dst[q*nc:(q+1)*nc], p.lxs[s*d:(s+1)*d], fct, nb, c, invh)
		}
	}
}

// tileNeeded sets need[g] to whether tile t of centres can add more than a
// negligible amount to the kernel sums of an evaluation point (whose
// dotBound for the tile is bound) at bandwidth hs[g], whose running maximum log-kernel is ma[g]
// (cmins[g] from tileMin of the bandwidth's normalisers), and reports
// whether it can for any bandwidth. The sweeps over a bandwidth grid share
// one dot product per pair and skip a tile where no bandwidth needs it.
func (p *problem) tileNeeded(need []bool, bound float64, t int, hs []float64, cmins [][]float64, ma []float64) bool {
	any := false
	for g, h := range hs {
		need[g] = !negligible(bound/h-cmins[g][t], ma[g])
		any = any || need[g]
	}
	return any
}

// gridTile is a worker's scratch of the grid sweeps (LOO and witness): the
// dotBound of the block's points for every tile, which points need the
// current tile for which bandwidths, and their dot products with it.
type gridTile struct {
	p         *problem
	ng        int
	s0, na    int
	bnd, dots []float64 // bnd[a*ntiles + t]; dots: one row of the tile per selected point
	ls        []float64
	sel       []int
	need      []bool // need[a*ng + g]
}

func (p *problem) newGridTile(ng int) *gridTile {
	return &gridTile{p: p, ng: ng, bnd: make([]float64, blockJ*len(p.zeroT)), dots: make([]float64, blockJ*tileI),
		ls: make([]float64, blockJ*p.d), sel: make([]int, 0, blockJ), need: make([]bool, blockJ*ng)}
}

// start begins a block of na points at sorted positions s0.. (their bounds
// for every tile).
func (bt *gridTile) start(s0, na int) {
	bt.s0, bt.na = s0, na
	bt.p.boundRows(bt.bnd, s0, na)
}

// needed sets sel to the points a of the block for which tile t is not
// negligible at one bandwidth (1/h = invh, cmin the tiles' smallest
// normalisers, ms[a] the point's running maximum log-kernel) and reports
// whether there is one.
func (bt *gridTile) needed(t int, invh float64, cmin, ms []float64) bool {
	nt := len(bt.p.zeroT)
	bt.sel = bt.sel[:0]
	for a := 0; a < bt.na; a++ {
		if !negligible(bt.bnd[a*nt+t]*invh-cmin[t], ms[a]) {
			bt.sel = append(bt.sel, a)
		}
	}
	return len(bt.sel) > 0
}

// tile returns the points a of the block that need tile t for some
// bandwidth (tileNeeded with their running maxima m[a*ng:]), sets their
// need flags, and computes their dot products with the tile's centres
// into dots (row q for sel[q]; zero: the tile's zero normalisers).
func (bt *gridTile) tile(t int, hs []float64, cmins [][]float64, m, zero []float64) []int {
	p, ng, nt := bt.p, bt.ng, len(bt.p.zeroT)
	bt.sel = bt.sel[:0]
	for a := 0; a < bt.na; a++ {
		if p.tileNeeded(bt.need[a*ng:(a+1)*ng], bt.bnd[a*nt+t], t, hs, cmins, m[a*ng:(a+1)*ng]) {
			bt.sel = append(bt.sel, a)
		}
	}
	if len(bt.sel) > 0 {
		p.tileRows(bt.dots, bt.ls, bt.sel, bt.s0, t*p.ti, zero, 1) // dot products only
	}
	return bt.sel
}

// tileMin returns the smallest c_i of each tile of ti centres.
func tileMin(c []float64, ti int) []float64 {
	cm := make([]float64, (len(c)+ti-1)/ti)
	for t := range cm {
		cm[t] = slices.Min(c[t*ti : min(len(c), (t+1)*ti)])
	}
	return cm
}

// negligible reports whether a tile whose log-kernels are at most ub can be
// skipped for a point whose running maximum is m: every term is below
// e^kernel.Negligible of the largest, like the groups kernel.SumExp skips.
func negligible(ub, m float64) bool {
	return m > math.Inf(-1) && ub < m+kernel.Negligible
}

// segments calls fn(l, lo, hi) for each label l with centres in the sorted
// range [i0, i1), lo and hi relative to i0.
func (p *problem) segments(i0, i1 int, fn func(l, lo, hi int)) {
	for l := p.labels[p.order[i0]]; l < p.nl && p.seg[l] < i1; l++ {
		lo, hi := max(p.seg[l], i0), min(p.seg[l+1], i1)
		if lo < hi {
			fn(l, lo-i0, hi-i0)
		}
	}
}

// ratios returns, for every evaluation point j (input order),
//
//	lse[j]       = log sum_{i != j} k_h(x_j; x_i)
//	r[j*nl + l]  = sum_{i != j, y_i = l} k_h(x_j; x_i) / sum_{i != j} k_h(x_j; x_i)
//
// the leave-one-out kernel regression of the one-hot labels (eq. 3, 9); with
// sample weights every k_h(x_j; x_i) here is w_i k_h(x_j; x_i) (see logNorm).
// Both are computed in log space: per label a log-sum-exp over i != j with the
// running maximum over all i != j as shift. The term i = j is masked with
// -Inf, whose exponential is exactly 0 (never by adding a large negative
// number). Where every kernel is exactly 0 (possible only with zero
// coordinates) lse[j] = -Inf and r is 0.
func (p *problem) ratios(h float64) (r, lse []float64) {
	m, ss := p.sums(h, 1)
	s := ss[0]
	n, nl := p.n, p.nl
	r, lse = make([]float64, n*nl), make([]float64, n)
	for j := range lse {
		if m[j] == math.Inf(-1) {
			lse[j] = math.Inf(-1)
			continue
		}
		sa := s[j*nl : (j+1)*nl]
		tot := 0.0
		for _, v := range sa {
			tot += v
		}
		lse[j] = m[j] + math.Log(tot)
		for l, v := range sa {
			r[j*nl+l] = v / tot
		}
	}
	return r, lse
}

// ratiosNeighbours is ratios with, for every evaluation point j, the
// effective number of neighbours (sum_i k_ij)^2 / sum_i k_ij^2 over i != j
// (0 where every kernel is 0), from the same sweep. With sample weights
// k_ij is w_i k_h(x_j; x_i): Kish's effective sample size of the weighted
// kernel average.
func (p *problem) ratiosNeighbours(h float64) (r, lse, ess []float64) {
	m, ss := p.sweepSums(h, 2, true)
	s, q := ss[0], ss[1]
	n, nl := p.n, p.nl
	r, lse, ess = make([]float64, n*nl), make([]float64, n), make([]float64, n)
	for j := range lse {
		if m[j] == math.Inf(-1) {
			lse[j] = math.Inf(-1)
			continue
		}
		tot, tot2 := 0.0, 0.0
		for l := 0; l < nl; l++ {
			tot += s[j*nl+l]
			tot2 += q[j*nl+l]
		}
		lse[j] = m[j] + math.Log(tot)
		for l := 0; l < nl; l++ {
			r[j*nl+l] = s[j*nl+l] / tot
		}
		if tot2 > 0 {
			ess[j] = tot * tot / tot2
		}
	}
	return r, lse, ess
}

// sums returns, for every evaluation point j (input order), the shift m[j]
// (the largest log-kernel over i != j, -Inf when all kernels are 0) and the
// power sums of the kernels by label, s[q] for the power q+1 (q < powers,
// powers 1 to 3), in units of e^((q+1) m[j]):
//
//	s[q][j*nl + l] = sum_{i != j, y_i = l} (k_h(x_j; x_i) e^-m[j])^(q+1).
//
// Higher powers of negligible kernels are more negligible still, so the
// tile and group skipping of the first power is valid for all. With sample
// weights each kernel is w_i k_h(x_j; x_i) (see logNorm), so s[q] holds the
// power sums of X_i = w_i k_ij.
func (p *problem) sums(h float64, powers int) (m []float64, s [][]float64) {
	return p.sweepSums(h, powers, false)
}

// sweepSums is sums; with squares (and powers 2) the second power is
// taken as the square of each first-power term, one exponential per kernel
// instead of two (for Result.Neighbours, which needs no more precision than
// that; sharpness and the debiasing keep sums' own).
func (p *problem) sweepSums(h float64, powers int, squares bool) (m []float64, s [][]float64) {
	if powers < 1 || powers > 3 || (squares && powers != 2) {
		panic("kde: sums: powers must be 1 to 3")
	}
	if ln := p.lineOf(); ln != nil {
		return ln.sums(h, powers) // the squares are the second power sums
	}
	n, nl := p.n, p.nl
	c := p.logNorm(h)
	cmin := tileMin(c, p.ti)
	ntiles := len(cmin)
	invh := 1 / h
	m, s = make([]float64, n), make([][]float64, powers)
	for q := range s {
		s[q] = make([]float64, n*nl)
	}
	type scratch struct {
		rowq, m []float64
		s       [][]float64
		bt      *gridTile
	}
	_ = parallel.ForContext(p.ctx, blocks(n), p.workers, func() *scratch {
		w := &scratch{rowq: make([]float64, tileI), m: make([]float64, blockJ), s: make([][]float64, powers), bt: p.newGridTile(1)}
		for q := range w.s {
			w.s[q] = make([]float64, blockJ*nl)
		}
		return w
	}, func(w *scratch, b int) {
		// A block of evaluation points in sorted order (similar points)
		// starts with its own tile of centres (the nearest neighbours,
		// most likely), so that the running maxima are close to final
		// early and far tiles can be skipped on their bound. The points of
		// the block share each tile while it is in the cache, and their
		// log-kernels with it are computed together.
		s0 := b * blockJ
		na := min(blockJ, n-s0)
		ms := w.m[:na]
		for a := range ms {
			ms[a] = math.Inf(-1)
		}
		for q := range w.s {
			clear(w.s[q][:na*nl])
		}
		bt := w.bt
		bt.start(s0, na)
		home := s0 / p.ti
		for k := 0; k < ntiles; k++ {
			t := (home + k) % ntiles
			i0, i1 := t*p.ti, min(n, (t+1)*p.ti)
			nb := i1 - i0
			rowq := w.rowq[:nb]
			if !bt.needed(t, invh, cmin, ms) {
				continue
			}
			p.tileRows(bt.dots, bt.ls, bt.sel, s0, i0, c[i0:i1], invh)
			for qq, a := range bt.sel {
				sp := s0 + a
				row := bt.dots[qq*nb : (qq+1)*nb]
				if self := sp - i0; self >= 0 && self < len(row) {
					row[self] = math.Inf(-1) // masks i = j exactly: its exponential is 0
				}
				tm := kernel.Max(row)
				if tm == math.Inf(-1) {
					continue
				}
				if tm > ms[a] {
					if ms[a] > math.Inf(-1) {
						scale := math.Exp(ms[a] - tm)
						f := scale
						for q := range w.s {
							for l := range nl {
								w.s[q][a*nl+l] *= f
							}
							f *= scale
						}
					}
					ms[a] = tm
				}
				if squares {
					s1, s2 := w.s[0][a*nl:(a+1)*nl], w.s[1][a*nl:(a+1)*nl]
					p.segments(i0, i1, func(l, lo, hi int) {
						x, y := kernel.SumExpSq(row[lo:hi], ms[a])
						s1[l] += x
						s2[l] += y
					})
					continue
				}
				for q := range w.s {
					sa := w.s[q][a*nl : (a+1)*nl]
					src := row
					if q > 0 {
						for i, v := range row {
							rowq[i] = float64(q+1) * v
						}
						src = rowq
					}
					p.segments(i0, i1, func(l, lo, hi int) {
						sa[l] += kernel.SumExp(src[lo:hi], float64(q+1)*ms[a])
					})
				}
			}
		}
		for a := 0; a < na; a++ {
			j := p.order[s0+a]
			m[j] = ms[a]
			for q := range s {
				copy(s[q][j*nl:(j+1)*nl], w.s[q][a*nl:(a+1)*nl])
			}
		}
		p.track.add(1)
	})
	return m, s
}

// looLSE returns, for every bandwidth hs[g] and evaluation point j,
// lse[g*n + j] = log sum_{i != j} k_{h_g}(x_j; x_i) (-Inf where every kernel
// is 0), with w_i k_h in place of k_h under sample weights (see logNorm).
// The dot products <x_i, log x_j> are computed once per pair for all
// bandwidths: alpha_i - 1 = x_i / h.
func (p *problem) looLSE(hs []float64) []float64 {
	if ln := p.lineOf(); ln != nil {
		return ln.looLSE(hs)
	}
	n, ng := p.n, len(hs)
	cs, cmins := make([][]float64, ng), make([][]float64, ng)
	for g, h := range hs {
		cs[g] = p.logNorm(h)
		cmins[g] = tileMin(cs[g], p.ti)
	}
	ntiles := len(cmins[0])
	zero := make([]float64, n)
	lse := make([]float64, ng*n)
	type scratch struct {
		row, m, s []float64
		bt        *gridTile
	}
	_ = parallel.ForContext(p.ctx, blocks(n), p.workers, func() *scratch {
		return &scratch{row: make([]float64, tileI),
			m: make([]float64, blockJ*ng), s: make([]float64, blockJ*ng), bt: p.newGridTile(ng)}
	}, func(w *scratch, b int) {
		// As in ratios: a block of sorted evaluation points, its own tile
		// first, tiles skipped for a bandwidth when their bound is
		// negligible (and entirely when negligible for every bandwidth).
		s0 := b * blockJ
		na := min(blockJ, n-s0)
		m, sum := w.m[:na*ng], w.s[:na*ng]
		for i := range m {
			m[i], sum[i] = math.Inf(-1), 0
		}
		w.bt.start(s0, na)
		home := s0 / p.ti
		for k := 0; k < ntiles; k++ {
			t := (home + k) % ntiles
			i0, i1 := t*p.ti, min(n, (t+1)*p.ti)
			nb := i1 - i0
			row := w.row[:nb]
			sel := w.bt.tile(t, hs, cmins, m, zero[i0:i1])
			for q, a := range sel {
				s := s0 + a
				ma, sa := m[a*ng:(a+1)*ng], sum[a*ng:(a+1)*ng]
				need := w.bt.need[a*ng : (a+1)*ng]
				dot := w.bt.dots[q*nb : (q+1)*nb]
				self := s - i0
				for g, h := range hs {
					if !need[g] {
						continue
					}
					invh, c := 1/h, cs[g][i0:i1]
					var tm float64
					if self < 0 || self >= nb {
						tm = kernel.AffineMax(row, dot, c, invh)
					} else {
						// The term i = j is masked with -Inf (its
						// exponential is exactly 0).
						tm = max(kernel.AffineMax(row[:self], dot[:self], c[:self], invh),
							kernel.AffineMax(row[self+1:], dot[self+1:], c[self+1:], invh))
						row[self] = math.Inf(-1)
					}
					if tm == math.Inf(-1) {
						continue
					}
					if tm > ma[g] {
						if ma[g] > math.Inf(-1) {
							sa[g] *= math.Exp(ma[g] - tm)
						}
						ma[g] = tm
					}
					sa[g] += kernel.SumExp(row, ma[g])
				}
			}
		}
		for a := 0; a < na; a++ {
			j := p.order[s0+a]
			for g := range hs {
				v := math.Inf(-1)
				if m[a*ng+g] > math.Inf(-1) {
					v = m[a*ng+g] + math.Log(sum[a*ng+g])
				}
				lse[g*n+j] = v
			}
		}
		p.track.add(int64(ng))
	})
	return lse
}

// gradient returns dV/dx (n×d, input order) of a value V that depends on
// the ratios r of ratios(h) through G[j*nl + l] = dV/dr_jl. lse must be the
// lse of ratios(h). The direct dependence of V on x (the "- f" in r - f) is
// not included. It needs every coordinate positive (no exact rows).
//
// With w_ij = k_h(x_j; x_i) (times the sample weight of i, a constant, under
// weights: see logNorm), P_ij = w_ij / sum_{i'} w_i'j and
// l_ij = log w_ij = <x_i/h, log x_j> - log B(alpha_i) (+ log of the weight):
//
//	dr_jl/dl_ij = P_ij ([y_i = l] - r_jl)
//	beta_ij     = dV/dl_ij = P_ij (G_{j,y_i} - sum_l G_jl r_jl)
//	dl_ij/dx_jm = x_im / (h x_jm)                        (evaluation point)
//	dl_ij/dx_im = (log x_jm - psi(alpha_im) + psi(sum_m alpha_im)) / h   (centre)
//
// The evaluation-point sums run over i for each j and the centre sums over j
// for each i, each in a fixed order, so the result does not depend on the
// number of workers.
func (p *problem) gradient(h float64, r, lse, G []float64) []float64 {
	n, d, nl := p.n, p.d, p.nl
	p.rowMajor()
	c := p.logNorm(h)
	invh := 1 / h
	q := make([]float64, n) // q_j = sum_l G_jl r_jl
	for j := range q {
		for l := 0; l < nl; l++ {
			q[j] += G[j*nl+l] * r[j*nl+l]
		}
	}
	grad := make([]float64, n*d)

	// Evaluation-point part: U_jm = sum_{i != j} beta_ij x_im.
	// Per row: the kernel weights e^(l_ij - lse_j) of the tile as one
	// vector exponential (kernel.ExpSum), then beta_ij x_i added row by
	// row (kernel.AddWeightedRows, in order of i).
	_ = parallel.ForContext(p.ctx, blocks(n), p.workers, func() []float64 { return make([]float64, (blockJ+1)*tileI) }, func(t []float64, b int) {
		j0 := b * blockJ
		na := min(blockJ, n-j0)
		e := t[blockJ*tileI:]
		for i0 := 0; i0 < n; i0 += tileI {
			i1 := min(n, i0+tileI)
			nb := i1 - i0
			p.tile(t, j0, na, i0, c[i0:i1], invh)
			for a := 0; a < na; a++ {
				j := j0 + a
				if lse[j] == math.Inf(-1) {
					continue
				}
				row, e := t[a*nb:(a+1)*nb], e[:nb]
				kernel.ExpSum(e, row, lse[j])
				if self := p.rank[j] - i0; self >= 0 && self < nb {
					e[self] = 0 // i = j is excluded exactly
				}
				u := grad[j*d : (j+1)*d]
				p.segments(i0, i1, func(l, lo, hi int) {
					coef := G[j*nl+l] - q[j]
					for bi := lo; bi < hi; bi++ {
						e[bi] *= coef // beta_ij
					}
					kernel.AddWeightedRows(u, e[lo:hi], p.fc[(i0+lo)*d:(i0+hi)*d])
				})
			}
		}
		for a := 0; a < na; a++ {
			j := j0 + a
			for mm := 0; mm < d; mm++ {
				grad[j*d+mm] *= invh / p.x[j*d+mm]
			}
		}
		p.track.add(1)
	})

	// Centre part, per centre block (sorted order) against all evaluation
	// points: T_im = sum_{j != i} beta_ij log x_jm and b_i = sum_{j != i} beta_ij.
	centre := make([]float64, n*d) // sorted order
	// Per tile: the weights of all its pairs as one vector exponential,
	// beta by centre (bt[bb*na + a]), then beta_ij log x_j added by
	// kernel.AddWeightedRows, in order of j as before.
	_ = parallel.ForContext(p.ctx, blocks(n), p.workers, func() []float64 { return make([]float64, 2*tileI*blockJ) }, func(t []float64, b int) {
		s0 := b * blockJ
		nc := min(blockJ, n-s0)
		cb := c[s0 : s0+nc]
		bsum := make([]float64, nc)
		bt := t[tileI*blockJ:]
		var ci, cl [blockJ]int // the block's centres (input index) and their labels
		for bb := 0; bb < nc; bb++ {
			ci[bb] = p.order[s0+bb]
			cl[bb] = p.labels[ci[bb]]
		}
		for j0 := 0; j0 < n; j0 += tileI {
			na := min(tileI, n-j0)
			p.tile(t, j0, na, s0, cb, invh) // rows: evaluation points j0.., columns: centres s0..
			for a := 0; a < na; a++ {
				for bb, v := range t[a*nc : (a+1)*nc] {
					t[a*nc+bb] = v - lse[j0+a]
				}
			}
			kernel.ExpSum(t[:na*nc], t[:na*nc], 0)
			for a := 0; a < na; a++ {
				j := j0 + a
				g, qj, ok := G[j*nl:(j+1)*nl], q[j], lse[j] != math.Inf(-1)
				for bb := 0; bb < nc; bb++ {
					beta := 0.0
					if i := ci[bb]; i != j && ok {
						beta = t[a*nc+bb] * (g[cl[bb]] - qj)
					}
					bt[bb*na+a] = beta
				}
			}
			for bb := 0; bb < nc; bb++ {
				col := bt[bb*na : (bb+1)*na]
				kernel.AddWeightedRows(centre[(s0+bb)*d:(s0+bb+1)*d], col, p.lx[j0*d:(j0+na)*d])
				for _, v := range col {
					bsum[bb] += v
				}
			}
		}
		for bb := 0; bb < nc; bb++ {
			s := s0 + bb
			f := p.fc[s*d : (s+1)*d]
			asum := 0.0
			for _, v := range f {
				asum += v*invh + 1
			}
			psiSum := mathext.Digamma(asum)
			for mm, v := range f {
				centre[s*d+mm] = invh * (centre[s*d+mm] - (mathext.Digamma(v*invh+1)-psiSum)*bsum[bb])
			}
		}
		p.track.add(1)
	})
	for s, i := range p.order {
		for mm := 0; mm < d; mm++ {
			grad[i*d+mm] += centre[s*d+mm]
		}
	}
	return grad
}
