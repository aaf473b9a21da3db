// Package kde implements ECE^KDE, the consistent and differentiable Lp
// calibration error estimator of Popordanoska, Sayer and Blaschko, "A
// Consistent and Differentiable Lp Canonical Calibration Error Estimator"
// (NeurIPS 2022), for canonical, marginal (class-wise) and top-label
// calibration, with exact gradients and leave-one-out bandwidth selection.
//
// # Estimator
//
// With f_j the prediction of sample j (a point of the K-simplex), y_j its
// one-hot label and h the bandwidth, the calibration error
// CE_p(f)^p = E[ ||E[y | f(x)] - f(x)||_p^p ] (eq. 1) is estimated by
//
//	CE_p^p ≈ (1/n) sum_j || r_j - f_j ||_p^p                        (eq. 2, 9)
//	r_j    = sum_{i != j} k_h(f_j; f_i) y_i / sum_{i != j} k_h(f_j; f_i)   (eq. 3)
//
// with the Dirichlet kernel (eq. 10) centred at f_i,
//
//	log k_h(x; f_i) = sum_k (alpha_ik - 1) log x_k - log B(alpha_i),
//	alpha_i = f_i / h + 1,
//	log B(alpha) = sum_k lgamma(alpha_k) - lgamma(sum_k alpha_k),
//
// the normaliser taken from the actual sum of alpha_i (which is 1/h + K only
// when the row sums to exactly 1). A Beta kernel (eq. 8) is the Dirichlet
// kernel of the two coordinates (c, 1-c). Every estimate reports CE_p^p
// (Value, the paper's form) and its p-th root CE_p (Root); p is any real
// number >= 1.
//
// The notions:
//
//   - Canonical: the Dirichlet kernel on the whole vector, r_j in the simplex.
//   - ClassWise: for each class k a Beta kernel on f_jk with the indicator
//     [y = k]; the value is the SUM over classes of (1/n) sum_j |r_jk - f_jk|^p
//     (the reference code's convention), or with Options.ClassMean the mean.
//   - TopLabel: a Beta kernel on c_j = max_k f_jk with the indicator
//     [argmax_k f_jk = y_j]; (1/n) sum_j |r_j - c_j|^p, no factor 2.
//   - Binary: one-column input p1: 2 x (1/n) sum_j |r_j - p1_j|^p with the
//     Beta kernel on p1, which equals Canonical (and ClassWise) on the two
//     columns (1-p1, p1).
//
// # Cancellation
//
// Every function that sweeps the data takes a context as its first
// parameter (never an options field): a done context stops the O(n^2)
// sweeps and resampling within milliseconds, and the call returns an error
// wrapping ctx.Err(); a nil context is never done. Not cancelling costs
// nothing measurable.
//
// # Sample weights
//
// Every estimator takes sample weights w_j >= 0, one per sample, as the
// parameter just before its options (nil means all 1, gonum's convention).
// A weight scales both roles of a sample: its term in the outer mean, and
// its kernel in every other point's leave-one-out sums. With W = sum_j w_j,
// W_-j = W - w_j and n+ the number of positive weights:
//
//	CE_p^p ≈ sum_j w_j || r_j - f_j ||_p^p / sum_j w_j                (eq. 2, 9)
//	r_j    = sum_{i != j} w_i k_h(f_j; f_i) y_i / sum_{i != j} w_i k_h(f_j; f_i)   (eq. 3)
//
// with both outer sums over the kept points (ClassWise, TopLabel and Binary
// use the same weights on their Beta kernels); the term i = j stays
// excluded exactly. The leave-one-out bandwidth objective (section 5) is
// the weighted mean log-likelihood of the weighted leave-one-out density,
// times n+ so that unit weights give the unweighted sum (see Bandwidth):
//
//	l_w(h) = (n+/W) sum_j w_j log( sum_{i != j} w_i k_h(f_j; f_i) / W_-j )
//
// The sharpness ratio (eq. 7) becomes the ratio of weighted U-statistics
//
//	sum_j w_j [ (sum_{i!=j} w_i k_ij y_i)^2 - sum_{i!=j} (w_i k_ij y_i)^2 ]
//	        / [ (sum_{i!=j} w_i k_ij)^2   - sum_{i!=j} (w_i k_ij)^2 ] / sum_j w_j
//
// the regression (eq. 3 over all samples) and its density
//
//	r(x) = sum_i w_i k_h(x; f_i) e_{y_i} / sum_i w_i k_h(x; f_i),
//	density(x) = (1/W) sum_i w_i k_h(x; f_i),
//
// the effective number of neighbours Kish's (sum_{i != j} w_i k_ij)^2 /
// sum_{i != j} (w_i k_ij)^2, its median over points weighted by w_j, and
// the witness estimators (witness.go) take w_i k_ji as the kernel and weight
// every mean over points by w_j. The debiasing (appendix C, D) uses
// X_i = w_i k_i over the m other samples of positive weight; it keeps its
// order of bias when the triples (w_i, f_i, y_i) are independent draws (see
// debias.go), not for weights fixed by design. Each bootstrap Resampled
// draws points uniformly and carries their weights. The weights are read,
// never changed; a result that resamples keeps its own copy.
//
// Consequences, all tested: unit weights give the unweighted results bit
// for bit; a sample of weight 0 changes nothing, as if its row were removed
// (to rounding: the sums group their terms differently; the witness's p = 1
// half-splits, drawn over all points, excepted); scaling all weights
// changes nothing. Weights are not frequency counts: a row of weight 2 is
// not two copies of it, which would be each other's leave-one-out
// neighbours. Gradient differentiates the weighted estimate with the
// weights held constant (a sample of weight 0 gets a zero gradient).
// Invalid weights (wrong length, negative, NaN, infinite, all zero) give an
// error wrapping mathx.ErrWeights, and fewer than two positive weights one
// wrapping ErrTooFew (except Regression, which is not leave-one-out).
//
// The weights cost nothing in the O(n^2) sweeps: log w_i is subtracted from
// the normaliser log B(alpha_i) of centre i once per bandwidth, so the
// unchanged loops sum log-kernels log(w_i k_h) (a zero weight gives -Inf,
// whose exponential is exactly 0, and the tile bounds stay valid); the
// outer weighted means are O(n). Without weights nothing is subtracted.
//
// # Numerics
//
// Everything is computed in float64 and in log space: for each evaluation
// point j the log-kernels l_ij are reduced by log-sum-exp, per label over
// i != j with y_i = l, with the running maximum over all i != j as the shift,
// so r_jl = exp(LSE_l - LSE_all). The term i = j is excluded exactly: skipped,
// or masked with -Inf (whose exponential is exactly 0), never by adding a
// large negative number. Exponentials use a table-driven exp (at most 2 ulp
// from math.Exp).
//
// The sums are streamed: evaluation points in blocks of 8 against tiles of
// kernel centres (at most 256, and at most 16 KiB of coordinates), so memory
// is O(nK) and never n×n. Centres and evaluation points are sorted by label,
// then by arg max and max, so that each label's sum is one contiguous range
// and similar points are near each other. Each block starts with its own
// tile; a tile is skipped for a point when an upper bound of its
// log-kernels, <min_i f_i, log f_j>/h - min_i log B(alpha_i) (valid because
// log f_j <= 0), is below the running maximum plus Negligible = -50, and
// within a tile groups of 16 terms all below that cut are skipped without
// exponentials. Such terms are below 1.9e-22 of the largest term, far below
// the float64 resolution of the sums. Blocks run on all cores
// (Options.Workers); each point's sums are taken in a fixed order and the
// final averages in point order, so the results are bit-identical whatever
// the number of workers.
//
// # Exact zeros and ones
//
// Where the reference code returns NaN, this package computes the
// mathematically right value. With f_ik = 0 the reference evaluates
// 0 * log 0 = NaN in the self term (which it masks by adding -3.4e38, and NaN
// survives that); a confidence of exactly 1 does the same through log(1 - x).
// Here (alpha - 1) log x is 0 when alpha = 1, and a kernel is exactly 0
// (log-kernel -Inf) where x lies on a face of the simplex to which the kernel
// gives no mass (x_k = 0 while alpha_k > 1). When every kernel at a point is
// 0, the point's denominator is exactly 0: the point is left out, the
// average runs over the n' points kept, and Result.Excluded reports n - n'.
// The golden cases c06 and c07 (NaN in the reference) are checked against a
// brute-force computation instead.
//
// The reference's default canonical path (K <= 60) also floors the
// denominator at 1e-10, which shrinks r_j towards 0 where the kernel density
// is below 1e-10 (small h); this package has no floor and agrees with the
// reference's log-space routine everywhere, and with its default path
// wherever the floor did not trigger.
//
// # Gradients
//
// Gradient returns the exact gradient of CE_p^p with respect to the n×K
// probabilities as free variables (both as evaluation points, through
// log f_j and the error r_j - f_j, and as kernel centres, through alpha_i and
// the digamma derivative of the normaliser); LogitGradient chains it through
// the softmax (sigmoid for one-column logits). Both are checked against the
// reference's autograd gradients and central finite differences.
//
// # Bandwidth
//
// SelectBandwidth maximises the leave-one-out log-likelihood
//
//	l(h) = sum_j log( (1/(n-1)) sum_{i != j} k_h(f_j; f_i) )
//
// (l_w above with sample weights) over DefaultGrid (the reference's 20 values) and refines the best grid
// point by Brent's method in log h (parabolic steps, golden-section steps
// where a parabola is not trusted; about 5 evaluations). The dot products
// <f_i, log f_j> are computed once per pair for all grid points, since
// (alpha_i - 1) . log f_j = <f_i, log f_j> / h. The Reference objective
// reproduces the reference code (which adds -log h per term and starts its
// running best at 0) for comparison.
package kde
