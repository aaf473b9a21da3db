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
func KDECanonical(logits, onehot, h *G.Node, p float64) *G.Node {
	b := logits.Shape().Dimensions[0]
	f := G.Softmax(logits, -1)
	lk := logKernel(f, G.LogSoftmax(logits, -1), h)
	notSelf := G.LogicalNot(G.Diagonal(logits.Graph(), b))
	r := G.MatMul(G.MaskedSoftmax(lk, notSelf, -1), onehot)
	e := G.Abs(G.Sub(r, f))
	if p != 1 {
		e = G.Pow(e, G.ConstAs(e, p))
	}
	return G.DivScalar(G.ReduceAllSum(e), float64(b))
}

// logKernel returns log k_ji = (1/h) <f_i, log f_j> - log B(f_i/h + 1), the
// log Dirichlet kernel of centre f_i evaluated at f_j, as a B×B node (j
// rows, i columns); h is a scalar node, or of shape (G, 1, 1) for a grid
// of bandwidths (then the result is G×B×B).
func logKernel(f, logf, h *G.Node) *G.Node {
	dot := G.MatMul(logf, G.Transpose(f, 0, 1)) // (B, B): <f_i, log f_j> at [j, i]
	if h.Rank() > 0 {
		f, dot = G.InsertAxes(f, 0), G.InsertAxes(dot, 0)
	}
	alpha := G.AddScalar(G.Div(f, h), 1)
	logB := G.Sub(G.ReduceSum(Lgamma(alpha), -1), Lgamma(G.ReduceSum(alpha, -1))) // (B) or (G, B)
	return G.Sub(G.Div(dot, h), G.InsertAxes(logB, logB.Rank()-1))
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
// is a constant for the step). The grid is evaluated at once: the inner
// products <f_i, log f_j> are shared, only the normalisers and the
// log-sum-exp repeat per bandwidth (G×B×B work).
func LOOBandwidth(logits *G.Node, grid []float64) *G.Node {
	g := logits.Graph()
	b := logits.Shape().Dimensions[0]
	lg := G.StopGradient(logits)
	hs := G.Const(g, grid)
	lk := logKernel(G.Softmax(lg, -1), G.LogSoftmax(lg, -1), G.Reshape(hs, len(grid), 1, 1)) // (G, B, B)
	notSelf := G.BroadcastToDims(G.InsertAxes(G.LogicalNot(G.Diagonal(g, b)), 0), len(grid), b, b)
	// Masked log-sum-exp over i: the i = j terms are left out by Where,
	// never shifted by a large negative number.
	m := G.StopGradient(G.MaskedReduceMax(lk, notSelf, -1)) // (G, B)
	ex := G.Where(notSelf, G.Exp(G.Sub(lk, G.InsertAxes(m, -1))), G.ZerosLike(lk))
	ll := G.ReduceSum(G.Add(m, G.Log(G.ReduceSum(ex, -1))), -1) // (G); the -B log(B-1) is common
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
