package kde

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/parallel"
)

// Relabeling: ECE^KDE for many label vectors of the same predictions.
//
// At a fixed bandwidth the leave-one-out kernel weights
//
//	a_ji = w_i k_h(f_j; f_i) / sum_{i' != j} w_i' k_h(f_j; f_i')   (i != j)
//
// of every part of a notion do not depend on the labels: only the
// regressions r_j = sum_i a_ji y_i (eq. 3, 9) do. Relabel.Estimates takes a
// batch of B label vectors and sweeps the kernel once per part (the cost of
// one estimate: tiles skipped on their bound as in Estimate), and applies
// each row's weights above e^kernel.Negligible = 1.9e-22 of its largest
// (the terms every sum of this package skips) to all B vectors while the
// row is at hand: B estimates cost one sweep plus O(B (nnz + nK))
// additions, nnz the number of such weights, instead of B sweeps of O(n^2
// K) kernel evaluations. This is what makes consistency resampling of
// ECE^KDE (package calibtest) cheap. Nothing n x n is kept (Estimates
// says what is).

// Relabel is ECE^KDE of one notion at a fixed bandwidth for the
// predictions probs, ready for any label vector: Estimates(ys)[b][i] is
// Estimate(notion, probs, ys[b], k, weights, opts).Values[i].Value up to
// rounding (the sums run in another order; about 1e-15 relative).
type Relabel struct {
	notion    Notion
	n, k      int
	ps        []float64
	classMean bool
	weights   []float64
	workers   int
	h         float64
	parts     []relabelPart
	nnz       atomic.Int64
	tr        *tracker
}

// relabelAcc bounds the accumulators of one worker of Estimates, in
// floats (8 MiB); a variable for the tests.
var relabelAcc = 1 << 20

// relabelBufs are the buffers of Estimates, reused across parts and
// chunks: the transposed labels, the labels of the centres in sorted order
// (Canonical) and their 0/1 outcomes (Beta kernels).
type relabelBufs struct {
	yt, lab []int32
	out     []float64
}

func (b *relabelBufs) labels(n int) []int32 {
	b.yt = grow(b.yt, n)
	return b.yt
}

func (b *relabelBufs) sorted(n int) []int32 {
	b.lab = grow(b.lab, n)
	return b.lab
}

// outcomes returns n zeros.
func (b *relabelBufs) outcomes(n int) []float64 {
	b.out = grow(b.out, n)
	clear(b.out)
	return b.out
}

// grow returns s resliced to n, reallocated when it is shorter.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// relabelChunk is the number of centres whose outcome rows the points of
// a block take in turn (16 KiB of rows at 128 vectors).
const relabelChunk = 16

// relabelPart is the label-independent part of one kernel regression: its
// problem (points x, n×d: probs for Canonical, (c, 1-c) for the Beta
// kernels, built on all-zero labels so that the order of the centres and
// the tiles do not depend on the labels) and the log normalisers at the
// bandwidth. For a Beta part the outcome of row i is [y_i = target[i]]
// (TopLabel: the arg max of row i; ClassWise: the part's class; Binary: 1).
type relabelPart struct {
	pb     *problem
	c      []float64
	target []int
	scale  float64
}

// NewRelabel prepares the ECE^KDE estimates of notion at opts.Bandwidth
// (ctx, opts.P, ClassMean, Workers and Progress as for Estimate; Terms,
// Neighbours and Debias are not supported) for the predictions probs (n×k)
// with sample weights (nil: all 1). It costs O(nK); the sweeps are
// Estimates'.
func NewRelabel(ctx context.Context, notion Notion, probs []float64, k int, weights []float64, opts Options) (*Relabel, error) {
	opts.ctx = ctx
	if k < 1 || len(probs)%k != 0 {
		return nil, fmt.Errorf("kde: relabel: %d probabilities for K = %d", len(probs), k)
	}
	n := len(probs) / k
	zeros := make([]int, n)
	if err := check(notion, probs, zeros, k); err != nil {
		return nil, err
	}
	if err := checkWeights(weights, n, true); err != nil {
		return nil, err
	}
	h := opts.Bandwidth
	if err := checkBandwidth(h); err != nil {
		return nil, err
	}
	if opts.Terms || opts.Neighbours || opts.Debias {
		return nil, errors.New("kde: relabel: Terms, Neighbours and Debias are not supported")
	}
	ps, err := exponents(opts.P)
	if err != nil {
		return nil, err
	}
	rl := &Relabel{notion: notion, n: n, k: k, ps: slices.Clone(ps), classMean: opts.ClassMean && notion == ClassWise,
		weights: slices.Clone(weights), workers: opts.Workers, h: h, tr: newTracker(opts.Progress)}
	add := func(x []float64, d int, target []int, scale float64) {
		pb := newProblem(x, d, zeros, 1, rl.weights, opts.Workers)
		pb.ctx, pb.track = opts.ctx, rl.tr
		rl.parts = append(rl.parts, relabelPart{pb: pb, c: pb.logNorm(h), target: target, scale: scale})
	}
	switch notion {
	case Canonical:
		add(probs, k, nil, 1)
	case TopLabel:
		c, _ := confidences(probs, zeros, k)
		t := make([]int, n)
		for j := range t {
			t[j] = argMax(probs[j*k : (j+1)*k])
		}
		add(betaPoints(c), 2, t, 1)
	case ClassWise:
		for c := 0; c < k; c++ {
			x := make([]float64, n)
			for j := range x {
				x[j] = probs[j*k+c]
			}
			add(betaPoints(x), 2, constant(n, c), 1)
		}
	case Binary:
		x := make([]float64, n)
		for j := range x {
			x[j] = probs[j*2+1]
		}
		add(betaPoints(x), 2, constant(n, 1), 2)
	}
	return rl, nil
}

// betaPoints returns the two-column points (c_j, 1 - c_j) of a Beta
// kernel.
func betaPoints(c []float64) []float64 {
	x := make([]float64, 2*len(c))
	for j, v := range c {
		x[2*j], x[2*j+1] = v, 1-v
	}
	return x
}

func constant(n, v int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = v
	}
	return t
}

// Weights returns the number of kernel weights the last Estimates applied
// over all parts and chunks of vectors (with one chunk, nnz above: the cost
// of one more label vector in additions).
func (rl *Relabel) Weights() int { return int(rl.nnz.Load()) }

// Estimates returns, for every label vector ys[b] (n labels in 0..k-1),
// the estimates of CE_p^p for the exponents of the options: out[b][i] for
// P[i]. It sweeps the kernel once per part and chunk of vectors (a chunk:
// as many vectors as keep a worker's accumulators within 8 MiB, 8 x chunk x
// K floats for Canonical, so every vector at K = 10 and B <= 13,107) and
// costs O(B (nnz + nK)) more, on Workers goroutines, bit-identical for any
// number of them and any chunking. Memory: the chunk's labels twice (4 B n
// bytes each) or its 0/1 outcomes (8 B n), the per-block partial sums (B n
// P / 8 floats), and per worker the accumulators and up to 192 n bytes of
// one block's weights. The errors are Estimate's
// (ErrNoDensity when no point has a positive leave-one-out density, a
// cancelled ctx, a non-finite estimate).
func (rl *Relabel) Estimates(ys [][]int) ([][]float64, error) {
	n, k, nb, np := rl.n, rl.k, len(ys), len(rl.ps)
	for b, y := range ys {
		if len(y) != n {
			return nil, fmt.Errorf("kde: relabel: label vector %d has %d labels for %d samples", b, len(y), n)
		}
		for i, v := range y {
			if v < 0 || v >= k {
				return nil, fmt.Errorf("kde: relabel: label vector %d, sample %d: label %d outside 0..%d", b, i, v, k-1)
			}
		}
	}
	out := make([][]float64, nb)
	for b := range out {
		out[b] = make([]float64, np)
	}
	if nb == 0 {
		return out, nil
	}
	rl.nnz.Store(0)
	// Chunks of vectors small enough that a worker's accumulators
	// (blockJ x chunk x K floats for Canonical) stay within 8 MiB; each
	// chunk sweeps the kernel once. A vector's estimate does not depend on
	// the chunk it is in.
	nl := k
	if rl.parts[0].target != nil {
		nl = 1
	}
	chunk := max(1, min(nb, relabelAcc/(blockJ*nl)))
	var bufs relabelBufs
	for c0 := 0; c0 < nb; c0 += chunk {
		sub := ys[c0:min(nb, c0+chunk)]
		m := len(sub)
		// The labels transposed: yt[i*m + b] = sub[b][i], so that one
		// kernel weight a_ji meets the labels of row i of every vector in
		// one run.
		yt := bufs.labels(n * m)
		for b, y := range sub {
			for i, v := range y {
				yt[i*m+b] = int32(v)
			}
		}
		for _, pt := range rl.parts {
			rl.tr.expect(int64(blocks(n)))
			sums, nkept, wkept, err := rl.sweep(pt, yt, m, &bufs)
			if err != nil {
				return nil, err
			}
			if nkept == 0 || !(wkept > 0) {
				return nil, fmt.Errorf("kde: relabel %s: %w", rl.notion, ErrNoDensity)
			}
			for b := range sub {
				for pi := range rl.ps {
					out[c0+b][pi] += sums[b*np+pi] / wkept
				}
			}
		}
	}
	for b := range out {
		for pi := range out[b] {
			if rl.classMean {
				out[b][pi] /= float64(k)
			}
			if v := out[b][pi]; math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("kde: relabel %s: the estimate of label vector %d at bandwidth %v is not finite", rl.notion, b, rl.h)
			}
		}
	}
	return out, nil
}

// sweep computes, for one part and the nb label vectors of yt, the sums
// over the kept points j of w_j scale sum_l |r_jl - x_jl|^p (sums[b*np +
// i] for exponent P[i]), the number of kept points and their weight (the
// number without weights). A point is kept when some i != j has a positive
// kernel (Estimate's lse > -Inf). It is the sweep of sweepSums (tiles
// skipped on their bound) that keeps each point's log-kernels above the
// running cut instead of summing them; the partial sums of each block are
// added in block order.
func (rl *Relabel) sweep(pt relabelPart, yt []int32, nb int, bufs *relabelBufs) (sums []float64, nkept int, wkept float64, err error) {
	p, k, np := pt.pb, rl.k, len(rl.ps)
	n := p.n
	c := pt.c
	cmin := tileMin(c, p.ti)
	ntiles := len(cmin)
	invh := 1 / rl.h
	nblk := blocks(n)
	nl := k
	if pt.target != nil {
		nl = 1
	}
	part := make([]float64, nblk*nb*np)
	kept := make([]bool, n) // input order
	type entry struct {
		s  int32
		lk float64
	}
	// The labels of the centres in sorted order (Canonical: lab[s*nb + b],
	// the label of centre s in vector b) or their 0/1 outcomes (Beta:
	// out[s*nb + b]).
	var lab []int32
	var out []float64
	if pt.target == nil {
		lab = bufs.sorted(n * nb)
	} else {
		out = bufs.outcomes(n * nb)
	}
	for s, i := range p.order {
		for b := 0; b < nb; b++ {
			y := yt[i*nb+b]
			if lab != nil {
				lab[s*nb+b] = y
			} else if int(y) == pt.target[i] {
				out[s*nb+b] = 1
			}
		}
	}
	type scratch struct {
		m       []float64
		cand    [][]entry
		acc     []float64 // acc[(a*nb + b)*nl + l]
		dense   []float64 // Beta: dense[a*n + s] = a_js of the block's points
		touched []bool    // Beta: the tiles with a weight in dense
		bt      *gridTile
	}
	err = parallel.ForContext(p.ctx, nblk, p.workers, func() *scratch {
		w := &scratch{m: make([]float64, blockJ), cand: make([][]entry, blockJ), acc: make([]float64, blockJ*nb*nl), bt: p.newGridTile(1)}
		if pt.target != nil {
			w.dense, w.touched = make([]float64, blockJ*n), make([]bool, ntiles)
		}
		return w
	}, func(w *scratch, blk int) {
		s0 := blk * blockJ
		na := min(blockJ, n-s0)
		ms := w.m[:na]
		for a := range ms {
			ms[a] = math.Inf(-1)
			w.cand[a] = w.cand[a][:0]
		}
		bt := w.bt
		bt.start(s0, na)
		home := s0 / p.ti
		for kk := 0; kk < ntiles; kk++ {
			t := (home + kk) % ntiles
			i0, i1 := t*p.ti, min(n, (t+1)*p.ti)
			nbt := i1 - i0
			if !bt.needed(t, invh, cmin, ms) {
				continue
			}
			p.tileRows(bt.dots, bt.ls, bt.sel, s0, i0, c[i0:i1], invh)
			for qq, a := range bt.sel {
				row := bt.dots[qq*nbt : (qq+1)*nbt]
				if self := s0 + a - i0; self >= 0 && self < len(row) {
					row[self] = math.Inf(-1) // i = j excluded exactly
				}
				ms[a] = math.Max(ms[a], kernel.Max(row))
				cut := ms[a] + kernel.Negligible
				for i, v := range row {
					if v >= cut && v > math.Inf(-1) {
						w.cand[a] = append(w.cand[a], entry{int32(i0 + i), v})
					}
				}
			}
		}
		sums := part[blk*nb*np : (blk+1)*nb*np]
		applied := 0
		acc := w.acc
		clear(acc)
		for a := 0; a < na; a++ {
			if ms[a] == math.Inf(-1) {
				continue // every kernel is 0: not kept
			}
			kept[p.order[s0+a]] = true
			// The weights above the final cut, normalised.
			cut := ms[a] + kernel.Negligible
			r := w.cand[a][:0]
			tot := 0.0
			for _, e := range w.cand[a] {
				if e.lk >= cut {
					e.lk = math.Exp(e.lk - ms[a])
					tot += e.lk
					r = append(r, e)
				}
			}
			w.cand[a] = r
			applied += len(r)
			if pt.target == nil {
				// Canonical: acc[a][b][y] += a_ji for the label y of row i
				// in vector b.
				acc := acc[a*nb*k : (a+1)*nb*k]
				for _, e := range r {
					aw := e.lk / tot
					for b, y := range lab[int(e.s)*nb : (int(e.s)+1)*nb] {
						acc[b*k+int(y)] += aw
					}
				}
				continue
			}
			// Beta: the weights into the point's dense row over the
			// centres, applied below a chunk of centres at a time.
			wa := w.dense[a*n : (a+1)*n]
			for _, e := range r {
				wa[e.s] = e.lk / tot
				w.touched[int(e.s)/p.ti] = true
			}
		}
		if pt.target != nil {
			// acc[a][:] += sum_s a_js o[s][:] for the points of the block
			// as rows of centres in sorted order (o[s*nb + b] the 0/1
			// outcome of centre s in vector b), a chunk of relabelChunk
			// rows shared by the block's points while it is in the cache;
			// each entry of acc a sum in the order of s.
			for t, ok := range w.touched {
				if !ok {
					continue
				}
				w.touched[t] = false
				for c0 := t * p.ti; c0 < min(n, (t+1)*p.ti); c0 += relabelChunk {
					c1 := min(c0+relabelChunk, (t+1)*p.ti, n)
					for a := 0; a < na; a++ {
						if ms[a] == math.Inf(-1) {
							continue
						}
						wa := w.dense[a*n+c0 : a*n+c1]
						kernel.AddWeightedRows(acc[a*nb:(a+1)*nb], wa, out[c0*nb:c1*nb])
						clear(wa)
					}
				}
			}
		}
		for a := 0; a < na; a++ {
			if ms[a] == math.Inf(-1) {
				continue
			}
			j := p.order[s0+a]
			wj := 1.0
			if p.w != nil {
				wj = p.w[j]
			}
			xj := p.x[j*p.d : (j+1)*p.d]
			for b := 0; b < nb; b++ {
				for pi, pw := range rl.ps {
					t := 0.0
					if pt.target == nil {
						for l, v := range acc[(a*nb+b)*k : (a*nb+b+1)*k] {
							t += powAbs(v-xj[l], pw)
						}
					} else {
						t = powAbs(acc[a*nb+b]-xj[0], pw)
					}
					sums[b*np+pi] += wj * (pt.scale * t)
				}
			}
		}
		rl.nnz.Add(int64(applied))
		p.track.add(1)
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("kde: relabel: %w", err)
	}
	sums = make([]float64, nb*np)
	for blk := 0; blk < nblk; blk++ {
		for q, v := range part[blk*nb*np : (blk+1)*nb*np] {
			sums[q] += v
		}
	}
	for j, ok := range kept {
		if ok {
			nkept++
			if p.w != nil {
				wkept += p.w[j]
			}
		}
	}
	if p.w == nil {
		wkept = float64(nkept)
	}
	return sums, nkept, wkept, nil
}
