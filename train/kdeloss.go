package train

import (
	"math"

	G "github.com/gomlx/gomlx/pkg/core/graph"
)

// lanczos are the coefficients of the Lanczos approximation with g = 7 and
// 9 terms (Numerical Recipes 3rd ed. 6.1; relative error below 2e-15 for
// real x >= 1/2).
var lanczos = [...]float64{
	0.99999999999980993, 676.5203681218851, -1259.1392167224028,
	771.32342877765313, -176.61502916214059, 12.507343278686905,
	-0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
}

// Lgamma returns log Gamma(x) elementwise for x >= 1/2, as a composite of
// graph operations (GoMLX has no lgamma op), by the Lanczos approximation
// (g = 7): with z = x - 1 and t = z + 7.5,
//
//	log Gamma(x) = log(sqrt(2 pi)) + (z + 0.5) log t - t + log(c_0 + sum_{i=1..8} c_i / (z + i)).
//
// It is differentiable by the graph's automatic differentiation. Every
// argument ECE^KDE needs is >= 1 (alpha = f/h + 1).
func Lgamma(x *G.Node) *G.Node {
	z := G.AddScalar(x, -1)
	sum := G.AddScalar(G.ZerosLike(z), lanczos[0])
	for i := 1; i < len(lanczos); i++ {
		sum = G.Add(sum, G.Div(G.ConstAs(z, lanczos[i]), G.AddScalar(z, float64(i))))
	}
	t := G.AddScalar(z, 7.5)
	out := G.Sub(G.Mul(G.AddScalar(z, 0.5), G.Log(t)), t)
	return G.Add(G.AddScalar(out, 0.5*math.Log(2*math.Pi)), G.Log(sum))
}

// KDECanonical returns the canonical ECE^KDE estimate of CE_p^p (eq. 2, 3,
// 9, 10) of a mini-batch as a graph node, differentiable in the logits:
// f = softmax(logits) (B×K), y the one-hot labels (B×K), h the bandwidth
// (a scalar node: a constant, or LOOBandwidth's per-batch choice).
//
//	log k_ji = (1/h) <f_i, log f_j> - log B(f_i/h + 1),
//	r_j = sum_{i != j} softmax_i(log k_ji) y_i,   value = (1/B) sum_j ||r_j - f_j||_p^p.
//
// log f comes from LogSoftmax (finite even where f underflows), the term
// i = j is excluded by a mask (MaskedSoftmax), never by a large negative
// number, and the normaliser uses the actual sum of alpha_i. The value
// equals kde.Estimate(kde.Canonical, ...) on the same probabilities. A
// class absent from the batch only makes its column of r zero: nothing
// divides by a class count, so the value and gradient stay finite (the
// reference's training NaNs there).
//
// The gradient is not left to automatic differentiation, whose rule for a
// matrix product broadcasts a B×B×K tensor (slow on the pure-Go backend);
// it is written out with three more B×B by B×K products (kdeGradient) and
// attached by the surrogate value + sum((z - stop(z)) * stop(grad)), whose
// value is exactly the estimate and whose gradient in z is exactly grad.
func KDECanonical(logits, onehot, h *G.Node, p float64) *G.Node {
	b := logits.Shape().Dimensions[0]
	z := G.StopGradient(logits)
	h = G.StopGradient(h)
	f := G.Softmax(z, -1)
	logf := G.LogSoftmax(z, -1)
	alpha := G.AddScalar(G.Div(f, h), 1)
	sumAlpha := G.ReduceSum(alpha, -1)
	logB := G.Sub(G.ReduceSum(Lgamma(alpha), -1), Lgamma(sumAlpha)) // (B)
	// lk[j, i] = <f_i, log f_j> / h - log B_i.
	lk := G.Sub(G.Div(G.MatMul(logf, G.Transpose(f, 0, 1)), h), G.InsertAxes(logB, 0))
	notSelf := G.LogicalNot(G.Diagonal(logits.Graph(), b))
	pm := G.MaskedSoftmax(lk, notSelf, -1) // P[j, i], 0 on the diagonal
	r := G.MatMul(pm, onehot)
	e := G.Sub(r, f)
	ae := G.Abs(e)
	// dE[j, c] = d value / d r_jc = (p/B) |e|^(p-1) sign(e) (0 at e = 0).
	var de *G.Node
	if p == 1 {
		de = G.Sign(e)
	} else {
		ae = G.Pow(ae, G.ConstAs(ae, p))
		de = G.MulScalar(G.Mul(G.Pow(G.Abs(e), G.ConstAs(e, p-1)), G.Sign(e)), p)
	}
	value := G.DivScalar(G.ReduceAllSum(ae), float64(b))
	grad := kdeGradient(f, logf, alpha, sumAlpha, pm, r, onehot, G.DivScalar(de, float64(b)), h)
	return G.Add(value, G.ReduceAllSum(G.Mul(G.Sub(logits, z), G.StopGradient(grad))))
}

// kdeGradient returns d value / d logits (B×K) of KDECanonical from its
// forward quantities and dE = d value / d r (B×K). With S[j, i] =
// P_ji <dE_j, y_i - r_j> = d value / d log k_ji,
//
//	d/df_ic   = -dE_ic + (1/h) sum_j S_ji log f_jc
//	            - (sum_j S_ji) (1/h) (psi(alpha_ic) - psi(sum_c alpha_ic)),
//	d/dlogf_jc = (1/h) sum_i S_ji f_ic,
//
// then through f = softmax(z) and log f = logsoftmax(z). kde.LogitGradient
// computes the same derivative in plain Go (problem.go); the tests compare
// the two and central finite differences.
func kdeGradient(f, logf, alpha, sumAlpha, pm, r, onehot, de, h *G.Node) *G.Node {
	er := G.ReduceSum(G.Mul(de, r), -1) // <dE_j, r_j>
	s := G.Mul(pm, G.Sub(G.MatMul(de, G.Transpose(onehot, 0, 1)), G.InsertAxes(er, -1)))
	colS := G.ReduceSum(s, 0) // sum_j S_ji, (B)
	dlogB := G.Div(G.Sub(Digamma(alpha), G.InsertAxes(Digamma(sumAlpha), -1)), h)
	gf := G.Sub(G.Div(G.MatMul(G.Transpose(s, 0, 1), logf), h), G.Add(de, G.Mul(G.InsertAxes(colS, -1), dlogB)))
	glogf := G.Div(G.MatMul(s, f), h)
	// Softmax: d/dz = f (g - <f, g>); log-softmax: d/dz = g - f sum(g).
	dz := G.Mul(f, G.Sub(gf, G.InsertAxes(G.ReduceSum(G.Mul(f, gf), -1), -1)))
	return G.Add(dz, G.Sub(glogf, G.Mul(f, G.InsertAxes(G.ReduceSum(glogf, -1), -1))))
}

// Digamma returns psi(x) = d log Gamma(x) / dx elementwise for x >= 1, as
// a composite of graph operations: the recurrence psi(x) = psi(x + 6) -
// sum_{k=0..5} 1/(x + k), then the asymptotic series at y = x + 6 >= 7,
//
//	psi(y) = log y - 1/(2y) - 1/(12y^2) + 1/(120y^4) - 1/(252y^6) + 1/(240y^8)
//	         - 1/(132y^10) + 691/(32760y^12),
//
// whose first omitted term, 1/(12y^14), is below 2e-13 there.
func Digamma(x *G.Node) *G.Node {
	shift := G.ZerosLike(x)
	for k := 0; k < 6; k++ {
		shift = G.Add(shift, G.Reciprocal(G.AddScalar(x, float64(k))))
	}
	y := G.AddScalar(x, 6)
	inv := G.Reciprocal(y)
	inv2 := G.Mul(inv, inv)
	// Horner in 1/y^2 for the even terms.
	poly := G.AddScalar(G.MulScalar(inv2, 691.0/32760), -1.0/132)
	poly = G.AddScalar(G.Mul(poly, inv2), 1.0/240)
	poly = G.AddScalar(G.Mul(poly, inv2), -1.0/252)
	poly = G.AddScalar(G.Mul(poly, inv2), 1.0/120)
	poly = G.AddScalar(G.Mul(poly, inv2), -1.0/12)
	poly = G.Mul(poly, inv2)
	psi := G.Sub(G.Add(G.Log(y), poly), G.MulScalar(inv, 0.5))
	return G.Sub(psi, shift)
}

// LOOBandwidth returns the bandwidth of grid (increasing) that maximises
// the leave-one-out log-likelihood of the Dirichlet kernel density of the
// batch's probabilities f = softmax(logits),
//
//	l(h) = sum_j log( (1/(B-1)) sum_{i != j} k_h(f_j; f_i) ),
//
// the paper's LOO MLE rule (section 5) applied to each mini-batch, as
// kde.SelectBandwidth(kde.Canonical, ..., NoRefine) does on the same
// probabilities. The result is a scalar node without gradient (the choice
// is a constant for the step). The grid is evaluated at once: one product
// of (log f / h) (G×B×K) with f gives every (1/h) <f_i, log f_j>, then the
// normalisers and the log-sum-exp over i != j (G×B×B work).
func LOOBandwidth(logits *G.Node, grid []float64) *G.Node {
	g := logits.Graph()
	b := logits.Shape().Dimensions[0]
	z := G.StopGradient(logits)
	f, logf := G.Softmax(z, -1), G.LogSoftmax(z, -1)
	hs := G.Const(g, grid)
	h3 := G.Reshape(hs, len(grid), 1, 1)
	alpha := G.AddScalar(G.Div(G.InsertAxes(f, 0), h3), 1)                                 // (G, B, K)
	logB := G.Sub(G.ReduceSum(Lgamma(alpha), -1), Lgamma(G.ReduceSum(alpha, -1)))          // (G, B)
	dot := G.DotGeneral(G.Div(G.InsertAxes(logf, 0), h3), []int{2}, nil, f, []int{1}, nil) // (G, B_j, B_i)
	lk := G.Sub(dot, G.InsertAxes(logB, 1))
	// The i = j terms are masked to -Inf (exp gives exactly 0), never
	// shifted by a large finite number.
	notSelf := G.BroadcastToDims(G.InsertAxes(G.LogicalNot(G.Diagonal(g, b)), 0), len(grid), b, b)
	lk = G.Where(notSelf, lk, G.Infinity(g, lk.DType(), -1))
	m := G.ReduceMax(lk, -1)                                                                       // (G, B): finite, B >= 2
	ll := G.ReduceSum(G.Add(m, G.Log(G.ReduceSum(G.Exp(G.Sub(lk, G.InsertAxes(m, -1))), -1))), -1) // (G); the -B log(B-1) is common
	return G.StopGradient(G.Gather(hs, G.ArgMax(ll, 0)))
}

// MMCE returns the maximum mean calibration error of Kumar, Sarawagi and
// Jain (ICML 2018) of a mini-batch as a graph node: with r_i the top-label
// confidence max softmax(logits_i) and c_i = [arg max = label] (no
// gradient),
//
//	MMCE = sqrt((1/B^2) sum_{i,j} (c_i - r_i)(c_j - r_j) exp(-|r_i - r_j| / width)),
//
// the value of metric.TopLabelMMCE. A small constant (1e-12) under the root
// keeps its gradient finite at 0.
func MMCE(logits, onehot *G.Node, width float64) *G.Node {
	b := logits.Shape().Dimensions[0]
	f := G.Softmax(logits, -1)
	r := G.ReduceMax(f, -1)
	// Correct when the label's probability is the largest.
	c := G.StopGradient(G.ConvertDType(G.GreaterOrEqual(G.ReduceSum(G.Mul(f, onehot), -1), r), f.DType()))
	d := G.Sub(c, r)
	k := G.Exp(G.DivScalar(G.Neg(G.Abs(G.Sub(G.InsertAxes(r, 0), G.InsertAxes(r, 1)))), width))
	sq := G.DivScalar(G.ReduceAllSum(G.Mul(G.Mul(G.InsertAxes(d, 0), G.InsertAxes(d, 1)), k)), float64(b*b))
	return G.Sqrt(G.AddScalar(G.Max(sq, G.ZerosLike(sq)), 1e-12))
}

// Focal returns the mean focal loss of the batch with the FL-53 schedule of
// Mukhoti et al. (2020): gamma = 5 where the label's probability is below
// 0.2, else 3: -(1 - p_y)^gamma log p_y.
func Focal(logits, onehot *G.Node) *G.Node {
	logp := G.ReduceSum(G.Mul(G.LogSoftmax(logits, -1), onehot), -1)
	p := G.Exp(logp)
	gamma := G.Where(G.LessThan(p, G.ConstAs(p, 0.2)), G.ConstAs(p, 5.0), G.ConstAs(p, 3.0))
	return G.Neg(G.ReduceAllMean(G.Mul(G.Pow(G.Sub(G.OnesLike(p), p), gamma), logp)))
}

// SmoothedXE returns the mean cross-entropy against labels smoothed by
// alpha: the target is (1 - alpha) y + alpha/K.
func SmoothedXE(logits, onehot *G.Node, alpha float64) *G.Node {
	k := float64(logits.Shape().Dimensions[1])
	target := G.AddScalar(G.MulScalar(onehot, 1-alpha), alpha/k)
	return G.Neg(G.ReduceAllMean(G.ReduceSum(G.Mul(target, G.LogSoftmax(logits, -1)), -1)))
}
