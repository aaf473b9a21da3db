package kde

import (
	"cmp"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/parallel"
)

// One-dimensional kernel sums by a tree of series (tens of node visits per point and bandwidth instead of n kernels).
//
// A Beta-kernel problem (TopLabel, Binary and each ClassWise column; eq. 8)
// has centres c_i with coordinates (a_i, b_i) = (c_i, 1 - c_i) and, for an
// evaluation point x_j with u_j = log a_j and v_j = log b_j, the weighted
// log-kernels (see logNorm; C_i = log B(alpha_i) - log w_i)
//
//	l_ij = (a_i u_j + b_i v_j)/h - C_i = a_i T_j + V_j - C_i,
//	T_j = (u_j - v_j)/h,  V_j = v_j/h,
//
// since a_i + b_i = 1. For a fixed point, l_ij is an exponential family in
// a_i: the q-th power sum over a set N of centres (a node: centres
// contiguous in the order of a) is, for any slope tau_N and with a_i =
// abar + rho z_i, z_i in [-1, 1],
//
//	sum_{i in N} e^(q l_ij) = e^(q V_j + G_N + q abar d) sum_k mu_k s^k,
//	d = T_j - tau_N,  s = q rho d,
//	mu_k = sum_{i in N} e^(g_i - G_N) z_i^k / k!,  g_i = q (a_i tau_N - C_i),
//
// with G_N = max_i g_i: a power series in s whose coefficients do not depend
// on the point (Taylor's series of e^(s z) summed over the node). Cut after
// P = lineTerms terms and evaluated by Horner's rule, its error is at most
// mu_0 e^(x + |s|) (|s|^P / P! + 2P 2^-53) with x the exponent in front (the
// remainder of the series, and the rounding of a sum of terms whose
// magnitudes add up to at most mu_0 e^|s|), while the node's sum is at least
// mu_0 e^(x - |s|) (the centre with g_i = G_N alone): at |s| <= 1 a relative
// 3.3e-14 of the node at worst. tau_N is the secant slope of the unweighted
// normaliser across the node, so that the e^(g_i - G_N) are close to 1 and s
// is small for the points near the node, whose kernels matter.
//
// Each label's centres form a binary tree of nodes over leaves of lineLeaf
// centres. A point's sums descend the tree from the root, nearer child
// first (the points go in groups of lineGroup consecutive in the order of
// a, which share the descent: queryGroup decides a node once for the group
// from bounds over its points wherever it can, each point's decision then
// being the rule below); a node is
//
//   - skipped when its sum is below e^kernel.Negligible (e^-50) of a lower
//     bound of the point's sum (as the tiles of the exact sweeps are),
//   - expanded (lineTerms multiply-adds and one exponential) when it does not
//     hold the point itself and |s| <= lineNear, or |s| <= lineFar and its
//     error bound above is below 2^-53 of that lower bound (lineLogEps),
//   - else split; a leaf is summed term by term, the term i = j skipped.
//
// The term i = j is therefore excluded exactly (never subtracted). A kernel
// sum's relative error is at most 3.3e-14 per node expanded at |s| <= 1 (a
// point meets a few to a few dozen), 2^-53 per node expanded under the
// budget and e^-50 per node skipped, against the exact sweeps' sum of the
// same log-kernels; the log-kernels themselves, differences of terms of
// magnitude up to |C_i| (about 1e6 at h = 1e-5), are rounded differently by
// the two forms by a few ulp of those terms. Measured: about 1e-13 and
// better on every case of line_test.go. A point's terms are summed
// once its descent is done, in the order they were found, relative to the
// largest (lineAcc.finish); the groups are fixed by the data, so that the
// results are bit-identical for any number of workers and on every CPU
// (math.FMA and kernel's exponentials, which give the same bits on every
// path). Points with a coordinate exactly 0 or 1 see only the
// centres at the same end (kernel exactly 0 elsewhere; 0 log 0 = 0): their
// sums run over that range of the tree, with T_j = V_j = 0.
//
// Options.Exact (and BandwidthOptions.Exact) keep the exact sweeps of
// problem.go, which the golden tests of the reference use.
const (
	lineLeaf  = 16
	lineTerms = 20
	lineNear  = 1.0
	lineFar   = 8.0
	// lineLogEps is the log of the error a node expanded beyond lineNear
	// may add, relative to the lower bound of the point's sum: 2^-53.
	lineLogEps = -53 * math.Ln2
)

// lineInvFact[k] = 1/k!.
var lineInvFact = func() (f [lineTerms]float64) {
	f[0] = 1
	for k := 1; k < lineTerms; k++ {
		f[k] = f[k-1] / float64(k)
	}
	return f
}()

// lineLogErr[k] is the log of the error factor of an expanded node with
// |s| <= k/4 (k = 0..4 lineFar): |s|^P / P! for the truncation plus 2P 2^-53
// for Horner's rounding, both relative to the node's upper bound mu_0
// e^(x + |s|) (the sum of |mu_k| |s|^k is at most mu_0 e^|s|).
var lineLogErr = func() (t [4*int(lineFar) + 1]float64) {
	for k := range t {
		s := float64(k) / 4
		t[k] = math.Log(math.Pow(s, lineTerms)*lineInvFact[lineTerms-1]/lineTerms + 2*lineTerms*0x1p-53)
	}
	return t
}()

// lineTree is one label's centres of a Beta problem in increasing order of
// a, with the geometry of its nodes.
type lineTree struct {
	a, b  []float64 // coordinates, increasing a
	pos   []int     // the centres' sorted positions in the problem
	zeros int       // centres with a = 0 (the first ones)
	ones  int       // centres with a = 1 (the last ones)
	// lv[v] is level v of the tree: node k covers centres
	// [k span, min((k+1) span, m)), span = lineLeaf << v; the last level has
	// one node.
	lv [][]lineNode
}

// lineNode is a node's centres [lo, hi) and their abar and rho.
type lineNode struct {
	lo, hi   int
	mid, rho float64
}

// line is the series form of a Beta problem: a tree per label and, for
// every point (input order), its label's tree and index in it.
type line struct {
	p     *problem
	trees []lineTree
	idx   []int // input index -> index in the tree of its label
	byA   []int // the input indices in increasing order of a (stable)
}

// lineOf returns the problem's line, built on first use; nil when the
// problem is not a Beta problem in fast mode.
func (p *problem) lineOf() *line {
	if !p.fast {
		return nil
	}
	if p.ln == nil {
		p.ln = newLine(p)
	}
	return p.ln
}

func newLine(p *problem) *line {
	ln := &line{p: p, trees: make([]lineTree, p.nl), idx: make([]int, p.n), byA: make([]int, p.n)}
	for j := range ln.byA {
		ln.byA[j] = j
	}
	slices.SortStableFunc(ln.byA, func(x, y int) int { return cmp.Compare(p.x[2*x], p.x[2*y]) })
	for l := range p.nl {
		t := &ln.trees[l]
		t.pos = make([]int, 0, p.seg[l+1]-p.seg[l])
		for s := p.seg[l]; s < p.seg[l+1]; s++ {
			t.pos = append(t.pos, s)
		}
		slices.SortStableFunc(t.pos, func(x, y int) int {
			return cmp.Compare(p.centre(x)[0], p.centre(y)[0])
		})
		m := len(t.pos)
		t.a, t.b = make([]float64, m), make([]float64, m)
		for q, s := range t.pos {
			c := p.centre(s)
			t.a[q], t.b[q] = c[0], c[1]
			ln.idx[p.order[s]] = q
			if c[0] == 0 {
				t.zeros++
			}
			if c[1] == 0 {
				t.ones++
			}
		}
		for span := lineLeaf; ; span *= 2 {
			lv := make([]lineNode, max(1, (m+span-1)/span))
			for k := range lv {
				nd := &lv[k]
				nd.lo, nd.hi = k*span, min((k+1)*span, m)
				if nd.lo < nd.hi {
					a0, a1 := t.a[nd.lo], t.a[nd.hi-1]
					nd.mid, nd.rho = (a0+a1)/2, (a1-a0)/2
				}
			}
			t.lv = append(t.lv, lv)
			if len(lv) == 1 {
				break
			}
		}
	}
	return ln
}

// lineExp is the expansion of one tree at one bandwidth and power: per
// node (the levels one after the other, level v from off[v]) its geometry,
// tau_N, G_N (-Inf for a node without a positive weight), log mu_0 and
// mu_0..mu_{P-1}, and the leaves' normalisers. A node's fields are one
// 64-byte record, all a point's descent reads of it but the moments.
type lineExp struct {
	q   float64
	c   []float64 // C_i in tree order
	nd  []lineNodeExp
	off []int     // level v's first node in nd
	mu  []float64 // node x of nd: mu[x*lineTerms:]
}

type lineNodeExp struct {
	lo, hi       int32   // the node's centres
	mid, rho     float64 // abar and rho
	tau, g, lmu0 float64
	// la and ra are the last a of the left child and the first a of the
	// right one (a leaf: 0), to order the children.
	la, ra float64
}

// betaNorm is log B(a/h + 1, b/h + 1) with the actual sum of the
// parameters, as logNorm computes it (without a weight).
func betaNorm(a, b, h float64) float64 {
	ga, _ := math.Lgamma(a/h + 1)
	gb, _ := math.Lgamma(b/h + 1)
	gs, _ := math.Lgamma(a/h + 1 + b/h + 1)
	return ga + gb - gs
}

// expand builds the tree's expansion at bandwidth h and power q from the
// problem's normalisers c (sorted order, weighted), the nodes of each level
// in chunks of about lineChunk centres on up to workers goroutines (each
// node alone: the same bits for any number).
func (t *lineTree) expand(c []float64, h, q float64, workers int) *lineExp {
	m := len(t.a)
	e := &lineExp{q: q, c: make([]float64, m)}
	for i, s := range t.pos {
		e.c[i] = c[s]
	}
	g, g2 := make([]float64, m), make([]float64, m)
	total := 0
	for _, lv := range t.lv {
		e.off = append(e.off, total)
		total += len(lv)
	}
	e.nd, e.mu = make([]lineNodeExp, total), make([]float64, total*lineTerms)
	for v, lv := range t.lv {
		nds, mu := e.nd[e.off[v]:e.off[v]+len(lv)], e.mu[e.off[v]*lineTerms:(e.off[v]+len(lv))*lineTerms]
		per := max(1, lineChunk/(lineLeaf<<v)) // nodes per chunk
		parallel.For((len(lv)+per-1)/per, workers, func() struct{} { return struct{}{} }, func(_ struct{}, ch int) {
			for k := ch * per; k < min(len(lv), (ch+1)*per); k++ {
				nd, ne := lv[k], &nds[k]
				ne.lo, ne.hi, ne.mid, ne.rho = int32(nd.lo), int32(nd.hi), nd.mid, nd.rho
				if v > 0 && 2*k+1 < len(t.lv[v-1]) {
					ch := t.lv[v-1]
					ne.la, ne.ra = t.a[ch[2*k].hi-1], t.a[ch[2*k+1].lo]
				}
				t.expandNode(nd, ne, mu[k*lineTerms:(k+1)*lineTerms], e.c, g, g2, h, q)
			}
		})
	}
	return e
}

// lineChunk is about the number of centres whose node moments one goroutine
// of expand computes at a time.
const lineChunk = 4096

// expandNode sets node nd's tau_N, G_N, log mu_0 (ne) and moments mk; g and
// g2 are scratch over the node's centres.
func (t *lineTree) expandNode(nd lineNode, ne *lineNodeExp, mk, c, g, g2 []float64, h, q float64) {
	ne.g = math.Inf(-1)
	if nd.lo >= nd.hi {
		return
	}
	if nd.rho > 0 {
		// Any finite slope is exact; this one keeps the g_i close.
		ne.tau = (betaNorm(t.a[nd.hi-1], t.b[nd.hi-1], h) - betaNorm(t.a[nd.lo], t.b[nd.lo], h)) / (2 * nd.rho)
		if !(math.Abs(ne.tau) < 1e300) {
			ne.tau = 0
		}
	}
	for i := nd.lo; i < nd.hi; i++ {
		g[i] = q * (t.a[i]*ne.tau - c[i])
		ne.g = max(ne.g, g[i])
	}
	if ne.g == math.Inf(-1) {
		return
	}
	// The weights e^(g_i - G_N) (the vector exponential: kernel.Exp's
	// bits) and the z_i, in place of g; then the moments, four centres in
	// step: each mu_k still adds the centres' terms in order of i (a
	// centre of weight 0 adds +0, which leaves a sum that is never -0
	// unchanged), while the four chains of powers run side by side.
	ws, zs := g[nd.lo:nd.hi], g2[nd.lo:nd.hi]
	kernel.ExpSum(ws, ws, ne.g)
	for i := range zs {
		zs[i] = 0
		if nd.rho > 0 {
			zs[i] = (t.a[nd.lo+i] - nd.mid) / nd.rho
		}
	}
	i := 0
	for ; i+4 <= len(ws); i += 4 {
		w0, w1, w2, w3 := ws[i], ws[i+1], ws[i+2], ws[i+3]
		z0, z1, z2, z3 := zs[i], zs[i+1], zs[i+2], zs[i+3]
		for j := range mk {
			mk[j] += w0
			mk[j] += w1
			mk[j] += w2
			mk[j] += w3
			w0 *= z0
			w1 *= z1
			w2 *= z2
			w3 *= z3
		}
	}
	for ; i < len(ws); i++ {
		w, z := ws[i], zs[i]
		if w == 0 {
			continue
		}
		for j := range mk {
			mk[j] += w
			w *= z
		}
	}
	for j := range mk {
		mk[j] *= lineInvFact[j]
	}
	ne.lmu0 = math.Log(mk[0])
}

// lineAcc accumulates one point's sums: the terms e^x v of each label as
// they are added, and lb, the log of a lower bound of their total; finish
// turns the terms into s[l], label l's sum in units of e^scale.
type lineAcc struct {
	scale, lb float64
	s         [2]float64
	x, v      []float64 // the terms, in the order added
	l         []int8    // their labels
}

// reset empties acc, keeping its buffers.
func (acc *lineAcc) reset() {
	acc.scale, acc.lb = math.Inf(-1), math.Inf(-1)
	acc.s = [2]float64{}
	acc.x, acc.v, acc.l = acc.x[:0], acc.v[:0], acc.l[:0]
}

// add adds e^x v to label l's sum.
func (acc *lineAcc) add(l int, x, v float64) {
	acc.x, acc.v, acc.l = append(acc.x, x), append(acc.v, v), append(acc.l, int8(l))
}

// finish sets scale to the largest x of the terms and s[l] to the sum of
// label l's terms v e^(x - scale) in the order they were added (the
// exponentials by kernel.ExpSum, a vector pass, in place of the x).
func (acc *lineAcc) finish() {
	if len(acc.x) == 0 {
		return
	}
	acc.scale = kernel.Max(acc.x)
	kernel.ExpSum(acc.x, acc.x, acc.scale)
	for t, e := range acc.x {
		acc.s[acc.l[t]] += acc.v[t] * e
	}
}

// linePoint is an evaluation point of a line query.
type linePoint struct {
	T, V   float64 // (u - v)/h and v/h; 0 and 0 at an end
	tu, tv float64 // u/h and v/h for the leaves; 0 and 0 at an end
	a      float64 // its coordinate a, to order the children
	lo, hi int     // the centres of the tree it sees
	self   int     // its index in the tree, or -1
}

// point returns the query of input point j against tree l at bandwidth h.
func (ln *line) point(j, l int, h float64) linePoint {
	p := ln.p
	a, b := p.x[2*j], p.x[2*j+1]
	t := &ln.trees[l]
	q := linePoint{a: a, self: -1, hi: len(t.a)}
	if p.labels[j] == l {
		q.self = ln.idx[j]
	}
	switch {
	case a == 0:
		q.hi = t.zeros
	case b == 0:
		q.lo = len(t.a) - t.ones
	default:
		lx := p.lxs[2*p.rank[j] : 2*p.rank[j]+2] // log a, log b, taken once by newProblem
		u, v := lx[0], lx[1]
		q.T, q.V, q.tu, q.tv = (u-v)/h, v/h, u/h, v/h
	}
	return q
}

// query adds the q-th power sums of the point's kernels over tree l to acc
// (label l's sum). stack and row are scratch.
func (t *lineTree) query(e *lineExp, pt *linePoint, l int, acc *lineAcc, stack []int32, row []float64) []int32 {
	return t.queryFrom(e, pt, l, acc, stack, row, len(t.lv)-1, 0)
}

// queryFrom is query over the subtree of node k of level v.
func (t *lineTree) queryFrom(e *lineExp, pt *linePoint, l int, acc *lineAcc, stack []int32, row []float64, v0, k0 int) []int32 {
	if pt.lo >= pt.hi || e == nil {
		return stack
	}
	q := e.q
	plo, phi, self := int32(pt.lo), int32(pt.hi), int32(pt.self)
	stack = append(stack[:0], int32(v0), int32(k0))
	for len(stack) > 0 {
		v, k := int(stack[len(stack)-2]), int(stack[len(stack)-1])
		stack = stack[:len(stack)-2]
		x0 := e.off[v] + k
		ne := &e.nd[x0]
		if ne.hi <= plo || ne.lo >= phi || ne.g == math.Inf(-1) {
			continue
		}
		s, x := ne.at(q, pt.T, pt.V)
		as := math.Abs(s)
		ub := x + ne.lmu0 + as
		if ub < acc.lb+kernel.Negligible {
			continue // below e^-50 of the point's sum (never while lb = -Inf)
		}
		whole := ne.lo >= plo && ne.hi <= phi && (self < ne.lo || self >= ne.hi)
		if whole && lineExpands(as, ub, acc.lb) {
			acc.addNode(l, x, s, ne.lmu0, e.mu[x0*lineTerms:(x0+1)*lineTerms])
			continue
		}
		if v == 0 {
			t.leaf(e, pt, l, max(int(ne.lo), pt.lo), min(int(ne.hi), pt.hi), acc, row)
			continue
		}
		// Children: the farther pushed first, so that the nearer is
		// summed first (its terms raise the lower bound sooner).
		c0, c1 := 2*k, 2*k+1
		if c1 >= e.off[v]-e.off[v-1] {
			stack = append(stack, int32(v-1), int32(c0))
			continue
		}
		if pt.a-ne.la < ne.ra-pt.a {
			c0, c1 = c1, c0 // the left child (2k) is nearer: push the right one first
		}
		stack = append(stack, int32(v-1), int32(c0), int32(v-1), int32(c1))
	}
	return stack
}

// at returns, for a point with T and V (linePoint), the node's series
// variable s = q rho (T - tau_N) and the log of its factor x = q V + G_N +
// q abar (T - tau_N).
func (ne *lineNodeExp) at(q, T, V float64) (s, x float64) {
	d := T - ne.tau
	return q * ne.rho * d, q*V + ne.g + q*ne.mid*d
}

// lineExpands reports whether a node whose series has |s| = as and whose
// sum is at most e^ub is expanded against a point's lower bound e^lb: at
// |s| <= lineNear, or at |s| <= lineFar where its error bound is below
// 2^-53 of e^lb (the rule of line.go's comment; the node must also be
// whole).
func lineExpands(as, ub, lb float64) bool {
	return as <= lineNear || (as <= lineFar && ub-lb+lineLogErr[int(math.Ceil(4*as))] <= lineLogEps)
}

// addNode adds the node's series at s (moments mk, factor e^x) to label
// l's sum and raises the lower bound by the node's least sum.
func (acc *lineAcc) addNode(l int, x, s, lmu0 float64, mk []float64) {
	acc.add(l, x, lineSeries(mk, s))
	acc.lb = max(acc.lb, x+lmu0-math.Abs(s))
}

// lineSeries is a node's series sum_k mk[k] s^k by Horner's rule in two
// chains (even and odd powers).
func lineSeries(mk []float64, s float64) float64 {
	mk = mk[:lineTerms]
	s2 := s * s
	ev, od := mk[lineTerms-2], mk[lineTerms-1]
	for j := lineTerms - 4; j >= 0; j -= 2 {
		ev = math.FMA(ev, s2, mk[j])
		od = math.FMA(od, s2, mk[j+1])
	}
	return math.FMA(od, s, ev)
}

// lineGroup is the number of points, consecutive in the order of a, whose
// sums descend a tree together (queryGroup).
const lineGroup = 2 * blockJ

// queryGroup adds to accs[j] the q-th power sums of the kernels of points
// pts[j] (consecutive in the order of a, none at an end: each sees the
// whole tree) over tree l, as query would for each, sharing the descent:
// a node is decided once for the group from bounds over its points (T and
// V are monotone in a): skipped when the largest of their upper bounds is
// below e^-50 of the smallest lower bound of their sums, expanded for every
// point when the largest |s| meets query's rule for the point with the
// largest error against the smallest sum, each point then evaluating the
// series at its own s. Where the group cannot decide, each point is decided
// alone (skip or expand) if none of them would split the node, and
// otherwise the node is split for the group; a leaf is left to each point's
// query. Every decision is one query's rule holding for each point, so the
// error bound of each point's sums is query's; the sums differ from
// query's in the rounding only (the nodes may be others).
func (t *lineTree) queryGroup(e *lineExp, pts []linePoint, l int, accs []lineAcc, w *lineScratch) {
	if e == nil || len(pts) == 0 {
		return
	}
	q := e.q
	tmin, tmax, vmax := pts[0].T, pts[0].T, pts[0].V
	selfLo, selfHi := int32(math.MaxInt32), int32(-1)
	for _, pt := range pts {
		tmin, tmax, vmax = min(tmin, pt.T), max(tmax, pt.T), max(vmax, pt.V)
		if pt.self >= 0 {
			selfLo, selfHi = min(selfLo, int32(pt.self)), max(selfHi, int32(pt.self))
		}
	}
	amid := (pts[0].a + pts[len(pts)-1].a) / 2
	lbmin := func() float64 {
		m := accs[0].lb
		for i := range accs {
			m = min(m, accs[i].lb)
		}
		return m
	}
	lb := lbmin()
	stack := append(w.gstack[:0], int32(len(t.lv)-1), 0)
	for len(stack) > 0 {
		v, k := int(stack[len(stack)-2]), int(stack[len(stack)-1])
		stack = stack[:len(stack)-2]
		x0 := e.off[v] + k
		ne := &e.nd[x0]
		if ne.g == math.Inf(-1) {
			continue
		}
		// Over the group: |s| <= smax, x <= xmax (mid >= 0, V <= vmax).
		d0, d1 := tmin-ne.tau, tmax-ne.tau
		smax := q * ne.rho * max(math.Abs(d0), math.Abs(d1))
		ub := q*vmax + ne.g + q*ne.mid*d1 + ne.lmu0 + smax
		if ub < lb+kernel.Negligible {
			continue // below e^-50 of every point's sum
		}
		whole := selfHi < 0 || ne.hi <= selfLo || ne.lo > selfHi
		mk := e.mu[x0*lineTerms : (x0+1)*lineTerms]
		if whole && lineExpands(smax, ub, lb) {
			for i := range pts {
				s, x := ne.at(q, pts[i].T, pts[i].V)
				accs[i].addNode(l, x, s, ne.lmu0, mk)
			}
			lb = lbmin()
			continue
		}
		if v == 0 {
			for i := range pts {
				w.stack = t.queryFrom(e, &pts[i], l, &accs[i], w.stack, w.row, v, k)
			}
			lb = lbmin()
			continue
		}
		// Each point alone: done here if none of them splits the node.
		split := !whole
		for i := 0; i < len(pts) && !split; i++ {
			s, x := ne.at(q, pts[i].T, pts[i].V)
			as := math.Abs(s)
			ubi := x + ne.lmu0 + as
			split = ubi >= accs[i].lb+kernel.Negligible && !lineExpands(as, ubi, accs[i].lb)
		}
		if !split {
			for i := range pts {
				s, x := ne.at(q, pts[i].T, pts[i].V)
				if x+ne.lmu0+math.Abs(s) < accs[i].lb+kernel.Negligible {
					continue
				}
				accs[i].addNode(l, x, s, ne.lmu0, mk)
			}
			lb = lbmin()
			continue
		}
		// Split for the group, the child nearer the group's middle summed
		// first.
		c0, c1 := 2*k, 2*k+1
		if c1 >= e.off[v]-e.off[v-1] {
			stack = append(stack, int32(v-1), int32(c0))
			continue
		}
		if amid-ne.la < ne.ra-amid {
			c0, c1 = c1, c0
		}
		stack = append(stack, int32(v-1), int32(c0), int32(v-1), int32(c1))
	}
	w.gstack = stack
}

// leaf adds the terms of centres [lo, hi) of a leaf (i = j masked with
// -Inf, whose exponential is exactly 0); row is scratch of lineLeaf.
func (t *lineTree) leaf(e *lineExp, pt *linePoint, l, lo, hi int, acc *lineAcc, row []float64) {
	r := row[:hi-lo]
	tm := math.Inf(-1)
	for i := lo; i < hi; i++ {
		// At an end tu = tv = 0 and only the centres of that end are in
		// range: their log-kernel is -C_i.
		x := e.q * (float64(t.a[i]*pt.tu) + float64(t.b[i]*pt.tv) - e.c[i])
		if i == pt.self {
			x = math.Inf(-1)
		}
		r[i-lo] = x
		tm = max(tm, x)
	}
	if tm == math.Inf(-1) {
		return
	}
	acc.add(l, tm, kernel.SumExp(r, tm))
	acc.lb = max(acc.lb, tm)
}

// lineScratch is a worker's scratch of the line sweeps: the descent's
// stack and a leaf's log-kernels.
type lineScratch struct {
	stack, gstack []int32
	row           []float64
	idx           []int
	pts           []linePoint
	accs          []lineAcc // a group's points'
	acc           lineAcc   // a point's at an end
}

func newLineScratch() *lineScratch {
	return &lineScratch{row: make([]float64, lineLeaf), idx: make([]int, 0, lineGroup),
		pts: make([]linePoint, 0, lineGroup), accs: make([]lineAcc, lineGroup)}
}

// groups computes every point's kernel sums over both trees at bandwidth h
// (exps[l]: the trees' expansions at one power) and passes them to fn (its
// input index and sums; fn may keep neither the pointer nor run long): the
// points in the order of a in groups of lineGroup, the groups on the
// workers, a group's points inside (0, 1) by queryGroup, those at an end
// by query. Each group's work is the same for any number of workers.
func (ln *line) groups(h float64, exps [2]*lineExp, fn func(j int, acc *lineAcc)) error {
	p := ln.p
	n := p.n
	return parallel.ForContext(p.ctx, (n+lineGroup-1)/lineGroup, p.workers, newLineScratch, func(w *lineScratch, g int) {
		s0, s1 := g*lineGroup, min(n, (g+1)*lineGroup)
		idx := w.idx[:0]
		for _, j := range ln.byA[s0:s1] {
			if a, b := p.x[2*j], p.x[2*j+1]; a != 0 && b != 0 {
				idx = append(idx, j)
				continue
			}
			acc := &w.acc
			acc.reset()
			for l := range ln.trees {
				pt := ln.point(j, l, h)
				w.stack = ln.trees[l].query(exps[l], &pt, l, acc, w.stack, w.row)
			}
			acc.finish()
			fn(j, acc)
		}
		accs := w.accs[:len(idx)]
		for i := range accs {
			accs[i].reset()
		}
		for l := range ln.trees {
			pts := w.pts[:0]
			for _, j := range idx {
				pts = append(pts, ln.point(j, l, h))
			}
			ln.trees[l].queryGroup(exps[l], pts, l, accs, w)
			w.pts = pts
		}
		for i, j := range idx {
			accs[i].finish()
			fn(j, &accs[i])
		}
		w.idx = idx
		p.track.add(int64(blocks(s1) - s0/blockJ)) // the blocks of blockJ points done
	})
}

// sums runs the line form of problem.sweepSums: for every point j (input
// order) the shift m[j] and the power sums s[q][j*2 + l] in units of
// e^((q+1) m[j]).
func (ln *line) sums(h float64, powers int) (m []float64, s [][]float64) {
	p := ln.p
	n := p.n
	c := p.logNorm(h)
	exps := make([][2]*lineExp, powers)
	for q := range exps {
		for l := range ln.trees {
			exps[q][l] = ln.trees[l].expand(c, h, float64(q+1), p.workers)
		}
	}
	m, s = make([]float64, n), make([][]float64, powers)
	for q := range s {
		s[q] = make([]float64, 2*n)
	}
	// Power q's scale of point j, then its sums in units of e^((q+1) m[j]).
	scales := make([]float64, powers*n)
	for q := range powers {
		err := ln.groups(h, exps[q], func(j int, acc *lineAcc) {
			scales[q*n+j] = acc.scale
			s[q][2*j], s[q][2*j+1] = acc.s[0], acc.s[1]
		})
		if err != nil {
			return m, s
		}
	}
	for j := range m {
		m[j] = scales[j]
		for q := range powers {
			for l := range 2 {
				if m[j] == math.Inf(-1) {
					s[q][2*j+l] = 0
				} else {
					s[q][2*j+l] *= math.Exp(scales[q*n+j] - float64(q+1)*m[j])
				}
			}
		}
	}
	return m, s
}

// looLSE is problem.looLSE in the line form: lse[g*n + j] = log
// sum_{i != j} w_i k_{h_g}(x_j; x_i).
func (ln *line) looLSE(hs []float64) []float64 {
	p := ln.p
	n := p.n
	lse := make([]float64, len(hs)*n)
	for g, h := range hs {
		c := p.logNorm(h)
		var exps [2]*lineExp
		for l := range ln.trees {
			exps[l] = ln.trees[l].expand(c, h, 1, p.workers)
		}
		out := lse[g*n : (g+1)*n]
		err := ln.groups(h, exps, func(j int, acc *lineAcc) {
			out[j] = math.Inf(-1)
			if tot := acc.s[0] + acc.s[1]; acc.scale > math.Inf(-1) && tot > 0 {
				out[j] = acc.scale + math.Log(tot)
			}
		})
		if err != nil {
			break
		}
	}
	return lse
}
