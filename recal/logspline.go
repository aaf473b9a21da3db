package recal

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// MethodLogSpline is log-spline scaling (FitLogSpline).
const MethodLogSpline Method = "log-spline"

// LogSpline is log-spline scaling: one piecewise-linear map psi of the
// log-probability, shared by every class, plus a bias per class,
//
//	probabilities = softmax(b_k + psi(u_k)),  u_k = log p_k,
//	psi(u) = a u + sum_j c_j max(u - t_j, 0),
//
// with knots t_1 < ... < t_M. It holds temperature scaling (psi(u) = u /
// T, b = 0), a shift of the class priors (psi(u) = u, b_k = log w_k) and
// their combinations, and approximates a shared monotone map of each
// probability such as the inverse of label smoothing, psi(u) = log(e^u -
// eps / K), with K + M + 1 parameters: a reach between temperature scaling
// (1) and Dirichlet calibration (K^2 + K). u is the log-softmax of the
// logits, or log max(p, 2^-126) given probabilities. JSON: "slope" (a),
// "knots" (t), "hinges" (c), "b" (K).
type LogSpline struct {
	Header
	Slope  float64   `json:"slope"`
	Knots  []float64 `json:"knots"`
	Hinges []float64 `json:"hinges"`
	B      []float64 `json:"b"`
}

// LogSplineOptions configures FitLogSpline. The zero value places 8 knots.
type LogSplineOptions struct {
	// Knots is the number of knots M, placed at the quantiles j / (M + 1)
	// of the log-probabilities weighted by the probabilities (where the
	// probability mass lies; repeated quantiles merged); 0 means 8, -1
	// none (psi linear: temperature and bias).
	Knots int
	// KnotsAt, if not nil, are the knots themselves (strictly increasing
	// finite log-probabilities, at most 255), in place of the quantiles
	// Knots places: a cross-fit computes them once on every fold's rows
	// (LogSplineKnots; they read no label) instead of once per fold.
	KnotsAt []float64
	// Shared drops the class biases (b = 0): psi alone, the same for every
	// class, M + 1 parameters. It holds temperature scaling and
	// approximates label smoothing's inverse but not a prior shift; with
	// many classes and few rows per class it is the less noisy fit.
	Shared bool
	// Workers is the number of goroutines of the fit (0: GOMAXPROCS); the
	// map is the same for any.
	Workers int
	// Start, if not nil, is where the optimiser starts (its slope, hinges
	// and biases where the sizes match, else the identity): a map fitted
	// on similar data (another fold) saves iterations. The problem is
	// strictly convex, so the map does not depend on it beyond the
	// stopping rule.
	Start *LogSpline
}

// logSplineFloor is the smallest probability whose log LogSpline reads
// from probabilities (float32's smallest normal).
const logSplineFloor = 0x1p-126

// logSplineRidge is the weight of the squared biases and hinges in the fit:
// it fixes the biases' common level (softmax ignores it) and keeps the
// hinges of knots with little data near 0. Without it (1e-6) the fit is
// ill-conditioned: two fits of the same data with gradients below 1e-8
// differed by 1e-6 in their probabilities.
const logSplineRidge = 1e-4

// logProbs returns u = log-softmax(z) of the logits, or log max(p, 2^-126).
func logProbs(probs, logits []float64, k int) []float64 {
	u := make([]float64, max(len(probs), len(logits)))
	if len(logits) > 0 {
		for i := 0; i < len(logits); i += k {
			row := logits[i : i+k]
			m := slices.Max(row)
			s := 0.0
			for _, v := range row {
				s += math.Exp(v - m)
			}
			lse := m + math.Log(s)
			for j, v := range row {
				u[i+j] = v - lse
			}
		}
		return u
	}
	for i, p := range probs {
		u[i] = math.Log(math.Max(p, logSplineFloor))
	}
	return u
}

// FitLogSpline fits log-spline scaling on validation predictions (probs
// n×k, logits n×k or nil: read when given), labels and sample weights (nil:
// all 1) by minimising the weighted mean NLL plus 1e-4 (sum b^2 + sum c^2),
// a convex problem (the logits are linear in the parameters), by Newton's
// method (L-BFGS with class biases above 128 classes) from the identity
// (a = 1) or o.Start. Errors as FitLinear's; a cancelled ctx stops the fit
// with an error wrapping its Err().
func FitLogSpline(ctx context.Context, probs, logits []float64, labels []int, k int, weights []float64, o LogSplineOptions) (*LogSpline, error) {
	readLogits := len(logits) > 0
	if err := checkFitInput(probs, logits, labels, k, readLogits, weights); err != nil {
		return nil, fmt.Errorf("recal: log-spline: %w", err)
	}
	if err := checkLinearData(labels, weights, LinearOptions{}); err != nil {
		return nil, fmt.Errorf("recal: log-spline: %w", err)
	}
	if !readLogits {
		logits = nil
	}
	m, err := o.knotCount()
	if err != nil {
		return nil, err
	}
	u := logProbs(probs, logits, k)
	var knots []float64
	if o.KnotsAt != nil {
		if err := checkKnots(o.KnotsAt); err != nil {
			return nil, fmt.Errorf("recal: log-spline: %w: KnotsAt: %v", ErrInput, err)
		}
		knots = slices.Clone(o.KnotsAt)
	} else {
		knots = massQuantiles(u, m, weights, k)
	}
	d := newLogSplineData(u, labels, weights, k, knots, o.Workers)
	nb := k
	if o.Shared {
		nb = 0
	}
	th := make([]float64, 1+len(knots)+nb)
	th[0] = 1
	if st := o.Start; st != nil && len(st.Hinges) == len(knots) && (nb == 0 || len(st.B) == nb) {
		th[0] = st.Slope
		copy(th[1:], st.Hinges)
		if nb > 0 {
			copy(th[1+len(knots):], st.B)
		}
	}
	// Newton's method with the exact Hessian (objective): 2 to 10 passes
	// over the data where L-BFGS took 30 to 200 (with class biases above
	// logSplineNewtonMaxK classes, L-BFGS). Near a gradient of 1e-11
	// the objective's rounding can stop the line search: a point whose
	// gradient is below 1e-5 is converged.
	var x []float64
	if nb > 0 && k > logSplineNewtonMaxK {
		// To a gradient of 1e-8 or a change below 1e-12 over 10 iterations.
		settings := &optimize.Settings{GradientThreshold: 1e-8, MajorIterations: 1000,
			Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 10}}
		x, err = minimizeLBFGS(ctx, "log-spline", func(th, grad []float64) float64 { return d.objective(th, grad, nil) }, th, settings, 1e-5)
	} else {
		x, err = minimizeNewton(ctx, newtonProblem{name: "log-spline", dim: len(th), eval: d.objective}, th, 1e-5)
	}
	if err != nil {
		return nil, err
	}
	b := x[1+len(knots):]
	if o.Shared {
		b = make([]float64, k)
	}
	return &LogSpline{Header: Header{SchemaVersion: SchemaVersion, Method: string(MethodLogSpline), Input: InputLogits, K: k},
		Slope: x[0], Knots: knots, Hinges: x[1 : 1+len(knots)], B: b}, nil
}

// LogSplineKnots returns the knots FitLogSpline places with o.Knots on
// these predictions (probs n×k, or logits where given) and row weights:
// the probability-weighted quantiles j / (M + 1) of the log-probabilities.
// They read no label.
func LogSplineKnots(probs, logits []float64, k int, weights []float64, o LogSplineOptions) ([]float64, error) {
	m, err := o.knotCount()
	if err != nil {
		return nil, err
	}
	return massQuantiles(logProbs(probs, logits, k), m, weights, k), nil
}

// knotCount returns the number of knots o.Knots asks for: 8 for 0, none
// for -1, or an error for a count outside -1..255.
func (o LogSplineOptions) knotCount() (int, error) {
	switch m := o.Knots; {
	case m == 0:
		return 8, nil
	case m == -1:
		return 0, nil
	case m < 0 || m > 255:
		return 0, fmt.Errorf("recal: log-spline: %w: %d knots", ErrInput, o.Knots)
	default:
		return m, nil
	}
}

// massQuantiles returns up to m distinct knots: the quantiles j / (m + 1)
// of the values u weighted by exp(u) (the probabilities) times the row
// weights.
func massQuantiles(u []float64, m int, weights []float64, k int) []float64 {
	if m == 0 {
		return []float64{}
	}
	// The values in increasing order with their masses.
	su, mass := slices.Clone(u), make([]float64, len(u))
	if weights == nil {
		slices.Sort(su) // the mass exp(u) follows u: sort the values alone
		for i, v := range su {
			mass[i] = math.Exp(v)
		}
	} else {
		type entry struct{ u, mass float64 }
		es := make([]entry, len(u))
		for i, v := range u {
			es[i] = entry{v, math.Exp(v) * mathx.Weight(weights, i/k)}
		}
		// Entries of equal u are interchangeable: the knot is that u.
		slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.u, b.u) })
		for i, e := range es {
			su[i], mass[i] = e.u, e.mass
		}
	}
	total := 0.0
	for _, v := range mass {
		total += v
	}
	var knots []float64
	acc, j := 0.0, 1
	for i, v := range su {
		acc += mass[i]
		for j <= m && acc >= total*float64(j)/float64(m+1) {
			if len(knots) == 0 || v > knots[len(knots)-1] {
				knots = append(knots, v)
			}
			j++
		}
	}
	return knots
}

// newLogSplineData returns the fit's data with each entry's bucket, the
// number of knots at or below its u.
func newLogSplineData(u []float64, labels []int, weights []float64, k int, knots []float64, workers int) *logSplineData {
	d := &logSplineData{u: u, labels: labels, weights: weights, k: k, knots: knots, workers: workers,
		wsum: mathx.WeightSum(weights, len(labels)), bucket: make([]uint8, len(u))}
	for i, v := range u {
		d.bucket[i] = uint8(sort.Search(len(knots), func(j int) bool { return knots[j] > v }))
	}
	return d
}

type logSplineData struct {
	u       []float64 // n×k log-probabilities
	bucket  []uint8   // number of knots <= u
	labels  []int
	weights []float64
	wsum    float64
	k       int
	knots   []float64
	workers int
	sums    []float64 // objective's per-chunk sums, reused
}

// logSplineChunk is the number of rows whose sums one goroutine adds
// before they join the total in order (the same bits for any number of
// workers).
const logSplineChunk = 512

// logSplineGroups is the number of groups of chunks whose sums objective
// keeps apart (a fixed number: the same bits for any number of workers).
const logSplineGroups = 16

// logSplineNewtonMaxK is the largest K at which the fit with class biases
// uses Newton's method: its Hessian's bias block costs O(n K^2) a pass
// (K = 100, n = 8,000: about 20 ms with the SIMD axpy), which above this K
// costs more than the L-BFGS iterations it saves.
const logSplineNewtonMaxK = 128

// objective returns the weighted mean NLL plus the ridge at th = (a, c,
// b) and writes its gradient into grad and, when hess is not nil, its
// Hessian (len(th)^2, row-major). psi(u) = a u + C_j u - D_j for u in
// bucket j (C, D the prefix sums of c_j and c_j t_j), so one pass costs
// O(nK + M) for the value and gradient.
//
// The Hessian of the softmax NLL is sum_i w_i [sum_j p_ij F_ij F_ij^T -
// m_i m_i^T], F_ij = (phi_ij, e_j) the derivative of the logit z_ij in
// th, phi_ij = (u_ij, (u_ij - t_1)_+, ..., (u_ij - t_M)_+) and m_i =
// sum_j p_ij F_ij. Its psi block's first term is a sum over buckets of
// (u - t_l)(u - t_l') = u^2 - (t_l + t_l') u + t_l t_l' weighted by p:
// three sums per bucket; the cross block's, sum_i w_i p_ij phi_ij, two
// per class and bucket; m_i's psi part mu_i follows from the row's
// bucket sums of p and p u, so the per-row work beyond the gradient's is
// O(M^2 + K M) plus the bias block's K^2 products, summed a chunk at a
// time by the kernels' SIMD axpy.
func (d *logSplineData) objective(th, grad, hess []float64) float64 {
	k, m := d.k, len(d.knots)
	m1 := m + 1
	a, c, b := th[0], th[1:m1], th[m1:]
	biased := len(b) > 0
	if !biased {
		b = make([]float64, k) // Shared: no biases
	}
	cs, ds := make([]float64, m1), make([]float64, m1)
	for j := range m {
		cs[j+1] = cs[j] + c[j]
		ds[j+1] = ds[j] + c[j]*d.knots[j]
	}
	n := len(d.labels)
	nch := (n + logSplineChunk - 1) / logSplineChunk
	// Per chunk: the loss, d/da, the residual sums r and r u per bucket
	// (m + 1 each) and d/db (k); with the Hessian, the bucket sums S0, S1,
	// S2 of p, p u, p u^2 (m + 1 each), sum w mu mu^T ((m + 1)^2), and,
	// biased, A0, A1 (k×(m + 1): sum w p and w p u per class and bucket),
	// PM ((m + 1)×k: sum w mu_il p_ij), SP (k: sum w p) and PP (k×k: sum w
	// p_ij p_ij').
	width := 2 + 2*m1 + k
	hw := 0
	if hess != nil {
		hw = 3*m1 + m1*m1
		if biased {
			hw += 3*k*m1 + k + k*k
		}
	}
	tot := width + hw
	// The chunks are summed in at most logSplineGroups groups of
	// consecutive chunks, each into its own sums (memory: groups x the
	// Hessian's parts, whatever n), the groups added in order.
	ng := min(nch, logSplineGroups)
	if cap(d.sums) < ng*tot {
		d.sums = make([]float64, ng*tot)
	}
	sums := d.sums[:ng*tot]
	clear(sums)
	type scratch struct{ z, rp, rpu, mu, p, wmu, col []float64 }
	parallel.For(ng, d.workers, func() *scratch {
		sc := &scratch{z: make([]float64, k), rp: make([]float64, m1), rpu: make([]float64, m1), mu: make([]float64, m1)}
		if hess != nil && biased {
			sc.p, sc.wmu, sc.col = make([]float64, logSplineChunk*k), make([]float64, logSplineChunk*m1), make([]float64, logSplineChunk)
		}
		return sc
	}, func(sc *scratch, g int) {
		out := sums[g*tot : (g+1)*tot]
		r, ru, gb := out[2:2+m1], out[2+m1:2+2*m1], out[2+2*m1:width]
		var s0, s1, s2, mm, a0, a1, pm, sp, pp []float64
		if hess != nil {
			hs := out[width:]
			s0, s1, s2, mm = hs[:m1], hs[m1:2*m1], hs[2*m1:3*m1], hs[3*m1:3*m1+m1*m1]
			if biased {
				o := 3*m1 + m1*m1
				a0, a1, pm = hs[o:o+k*m1], hs[o+k*m1:o+2*k*m1], hs[o+2*k*m1:o+3*k*m1]
				o += 3 * k * m1
				sp, pp = hs[o:o+k], hs[o+k:o+k+k*k]
			}
		}
		z := sc.z
		for ch := g * nch / ng; ch < (g+1)*nch/ng; ch++ {
			first, last := ch*logSplineChunk, min(n, (ch+1)*logSplineChunk)
			if sc.p != nil {
				clear(sc.p)
				clear(sc.wmu)
			}
			for i := first; i < last; i++ {
				y := d.labels[i]
				w := mathx.Weight(d.weights, i) / d.wsum
				if w == 0 {
					continue
				}
				row, bk := d.u[i*k:(i+1)*k], d.bucket[i*k:(i+1)*k]
				mx := math.Inf(-1)
				for j, v := range row {
					z[j] = b[j] + (a+cs[bk[j]])*v - ds[bk[j]]
					if z[j] > mx {
						mx = z[j]
					}
				}
				zy := z[y]
				s := kernel.ExpSum(z, z, mx)
				out[0] += w * (mx + math.Log(s) - zy)
				inv := 1 / s
				for j := range z {
					z[j] *= inv // p_ij
					res := z[j]
					if j == y {
						res--
					}
					res *= w
					gb[j] += res
					out[1] += res * row[j]
					r[bk[j]] += res
					ru[bk[j]] += res * row[j]
				}
				if hess == nil {
					continue
				}
				rp, rpu, mu := sc.rp, sc.rpu, sc.mu
				clear(rp)
				clear(rpu)
				for j, p := range z {
					u, q := row[j], bk[j]
					wp := w * p
					rp[q] += p
					rpu[q] += p * u
					s0[q] += wp
					s1[q] += wp * u
					s2[q] += wp * u * u
					if biased {
						a0[j*m1+int(q)] += wp
						a1[j*m1+int(q)] += wp * u
						sp[j] += wp
					}
				}
				// mu_0 = sum p u; mu_l = sum over buckets >= l of (p u - t_l p).
				var tp, tpu float64
				for q := m; q >= 1; q-- {
					tp += rp[q]
					tpu += rpu[q]
					mu[q] = tpu - d.knots[q-1]*tp
				}
				mu[0] = tpu + rpu[0]
				for l := range m1 {
					wl := w * mu[l]
					for l2 := l; l2 < m1; l2++ {
						mm[l*m1+l2] += wl * mu[l2]
					}
				}
				if biased {
					r := i - first
					copy(sc.p[r*k:(r+1)*k], z)
					for l, v := range mu {
						sc.wmu[l*logSplineChunk+r] = w * v
					}
				}
			}
			if hess == nil || !biased {
				continue
			}
			// The chunk's sum_i w_i p_ij p_i (row j of PP) and sum_i w_i mu_il
			// p_i (row l of PM, stored by l): weighted sums of the rows of P,
			// the kernels' SIMD axpy.
			rows := last - first
			P := sc.p[:rows*k]
			for j := range k {
				for r := range rows {
					sc.col[r] = P[r*k+j] * mathx.Weight(d.weights, first+r) / d.wsum
				}
				kernel.AddWeightedRows(pp[j*k:(j+1)*k], sc.col[:rows], P)
			}
			for l := range m1 {
				kernel.AddWeightedRows(pm[l*k:(l+1)*k], sc.wmu[l*logSplineChunk:l*logSplineChunk+rows], P)
			}
		}
	})
	loss := 0.0
	clear(grad)
	total := make([]float64, tot)
	for g := range ng {
		out := sums[g*tot : (g+1)*tot]
		loss += out[0]
		for j := 1; j < tot; j++ {
			total[j] += out[j]
		}
	}
	grad[0] = total[1]
	r, ru := total[2:2+m1], total[2+m1:2+2*m1]
	if biased {
		copy(grad[m1:], total[2+2*m1:width])
	}
	// d/dc_j: the residuals of the entries above knot j times (u - t_j).
	var sr, sru float64
	for j := m; j >= 1; j-- {
		sr += r[j]
		sru += ru[j]
		grad[j] = sru - d.knots[j-1]*sr
	}
	for j := 1; j < len(th); j++ {
		loss += logSplineRidge * th[j] * th[j]
		grad[j] += 2 * logSplineRidge * th[j]
	}
	if hess != nil {
		d.assembleHessian(hess, total[width:], len(th), biased)
	}
	return loss
}

// assembleHessian writes the Hessian (np×np) from the summed Hessian
// parts hs of objective, ridge included.
func (d *logSplineData) assembleHessian(hess, hs []float64, np int, biased bool) {
	k, m := d.k, len(d.knots)
	m1 := m + 1
	s0, s1, s2, mm := hs[:m1], hs[m1:2*m1], hs[2*m1:3*m1], hs[3*m1:3*m1+m1*m1]
	t := make([]float64, m1) // t_0 = 0: the slope's feature u is u - 0 in every bucket
	copy(t[1:], d.knots)
	// Suffix sums over buckets q >= l.
	suf := func(v []float64) []float64 {
		out := make([]float64, m1+1)
		for q := m; q >= 0; q-- {
			out[q] = out[q+1] + v[q]
		}
		return out
	}
	S0, S1, S2 := suf(s0), suf(s1), suf(s2)
	clear(hess)
	for l := range m1 {
		for l2 := l; l2 < m1; l2++ {
			q := l2 // max(l, l2)
			v := S2[q] - (t[l]+t[l2])*S1[q] + t[l]*t[l2]*S0[q] - mm[l*m1+l2]
			hess[l*np+l2], hess[l2*np+l] = v, v
		}
	}
	if biased {
		o := 3*m1 + m1*m1
		a0, a1, pm := hs[o:o+k*m1], hs[o+k*m1:o+2*k*m1], hs[o+2*k*m1:o+3*k*m1]
		o += 3 * k * m1
		sp, pp := hs[o:o+k], hs[o+k:o+k+k*k]
		for j := range k {
			A0, A1 := suf(a0[j*m1:(j+1)*m1]), suf(a1[j*m1:(j+1)*m1])
			for l := range m1 {
				v := A1[l] - t[l]*A0[l] - pm[l*k+j]
				hess[l*np+m1+j], hess[(m1+j)*np+l] = v, v
			}
			for j2 := j; j2 < k; j2++ {
				v := -pp[j*k+j2]
				if j2 == j {
					v += sp[j]
				}
				hess[(m1+j)*np+m1+j2], hess[(m1+j2)*np+m1+j] = v, v
			}
		}
	}
	for j := 1; j < np; j++ {
		hess[j*np+j] += 2 * logSplineRidge
	}
}

// minimizeLBFGS minimises f (which writes its gradient) from th by L-BFGS
// under settings; a cancelled ctx stops it with an error. It fails unless
// it stopped on the gradient, the objective's convergence or the
// iteration limit, or (settle > 0) on a failed line search where the
// gradient's largest entry is at most settle. gonum asks for the value and
// the gradient at each point by separate calls; both come from one pass
// of f, so the pass caches the gradient of the last point.
func minimizeLBFGS(ctx context.Context, name string, f func(th, grad []float64) float64, th []float64, settings *optimize.Settings, settle float64) ([]float64, error) {
	var lastX, lastG []float64
	var lastF float64
	eval := func(x []float64) {
		if lastX != nil && slices.Equal(x, lastX) {
			return
		}
		if lastG == nil {
			lastG = make([]float64, len(x))
		}
		lastF = f(x, lastG)
		lastX = append(lastX[:0], x...)
	}
	p := optimize.Problem{
		Func: func(x []float64) float64 { eval(x); return lastF },
		Grad: func(grad, x []float64) { eval(x); copy(grad, lastG) },
		Status: func() (optimize.Status, error) {
			if err := ctx.Err(); err != nil {
				return optimize.Failure, err
			}
			return optimize.NotTerminated, nil
		},
	}
	res, err := optimize.Minimize(p, slices.Clone(th), settings, &optimize.LBFGS{})
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("recal: %s: %w", name, cerr)
	}
	if err != nil && res == nil {
		return nil, fmt.Errorf("recal: %s: L-BFGS: %w", name, err)
	}
	settled := settle > 0 && res.Status == optimize.Failure && res.Gradient != nil && floats.Norm(res.Gradient, math.Inf(1)) <= settle
	if !settled && res.Status != optimize.GradientThreshold && res.Status != optimize.FunctionConvergence && res.Status != optimize.IterationLimit {
		return nil, fmt.Errorf("recal: %s: L-BFGS stopped with status %v (%v)", name, res.Status, err)
	}
	for _, v := range res.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("recal: %s: the fit diverged", name)
		}
	}
	return res.X, nil
}

// Calibrate returns softmax(b_k + psi(u_k)).
func (l *LogSpline) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	n, err := l.checkInput(probs, logits, k)
	if err != nil {
		return nil, err
	}
	if len(logits) == 0 {
		logits = nil
	}
	u := logProbs(probs, logits, k)
	out := make([]float64, n*k)
	z := make([]float64, k)
	for i := 0; i < n; i++ {
		for j, v := range u[i*k : (i+1)*k] {
			z[j] = l.B[j] + l.Psi(v)
			if math.IsNaN(z[j]) || math.IsInf(z[j], 0) {
				// Only from a loaded map whose finite parameters overflow.
				return nil, fmt.Errorf("recal: log-spline map: %w: row %d: b + psi(log p) = %v: the map's parameters overflow", ErrInput, i+1, z[j])
			}
		}
		mathx.Softmax(out[i*k:(i+1)*k], z)
	}
	return out, nil
}

// Psi returns psi(u) = a u + sum_j c_j max(u - t_j, 0).
func (l *LogSpline) Psi(u float64) float64 {
	v := l.Slope * u
	for j, t := range l.Knots {
		if u > t {
			v += l.Hinges[j] * (u - t)
		}
	}
	return v
}

// valid checks the form (as many hinges as knots, strictly increasing and
// finite knots, K biases) and the values (finite).
func (l *LogSpline) valid() error {
	if len(l.Hinges) != len(l.Knots) || len(l.B) != l.K {
		return fmt.Errorf("%d knots, %d hinges and %d biases for K = %d", len(l.Knots), len(l.Hinges), len(l.B), l.K)
	}
	if len(l.Knots) > 255 {
		return fmt.Errorf("%d knots, at most 255", len(l.Knots))
	}
	return firstError(checkNumber("slope", l.Slope, math.Inf(-1)), checkKnots(l.Knots), checkFinite("hinges", l.Hinges), checkFinite("b", l.B))
}

// checkKnots checks a log-spline's knots: at most 255, finite and strictly
// increasing (a loaded map's and LogSplineOptions.KnotsAt).
func checkKnots(t []float64) error {
	if len(t) > 255 {
		return fmt.Errorf("%d knots, at most 255", len(t))
	}
	if err := checkFinite("knots", t); err != nil {
		return err
	}
	for j := 1; j < len(t); j++ {
		if !(t[j] > t[j-1]) {
			return badValue("knots[%d] = %v is not above the knot before it", j, t[j])
		}
	}
	return nil
}
