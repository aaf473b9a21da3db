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
//   - Marginal: for each class k a Beta kernel on f_jk with the indicator
//     [y = k]; the value is the SUM over classes of (1/n) sum_j |r_jk - f_jk|^p
//     (the reference code's convention), or with Options.ClassMean the mean.
//   - TopLabel: a Beta kernel on c_j = max_k f_jk with the indicator
//     [argmax_k f_jk = y_j]; (1/n) sum_j |r_j - c_j|^p, no factor 2.
//   - Binary: one-column input p1: 2 x (1/n) sum_j |r_j - p1_j|^p with the
//     Beta kernel on p1, which equals Canonical (and Marginal) on the two
//     columns (1-p1, p1).
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
// over DefaultGrid (the reference's 20 values) and refines the best grid
// point by a golden-section search in log h. The dot products
// <f_i, log f_j> are computed once per pair for all grid points, since
// (alpha_i - 1) . log f_j = <f_i, log f_j> / h. The Reference objective
// reproduces the reference code (which adds -log h per term and starts its
// running best at 0) for comparison.
package kde
