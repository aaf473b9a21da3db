package kde

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// Debiasing of the kernel ratio (ECE^KDE paper, appendix C).
//
// At an evaluation point, the ratio r = Ybar / Xbar of eq. 3 is a ratio of
// straight averages over the m = n - 1 other samples, X_i = k_i (the
// kernel) and Y_i = k_i [y_i = l]. It estimates R = E[Y] / E[X] with a bias
// of order 1/m. Writing mu = E X, nu = E Y and the central moments
// s_xx = Var X, s_xy = Cov(X, Y), k_xxx = E(X-mu)^3, k_xxy =
// E(X-mu)^2 (Y-nu), the expansion of eq. 46-66 gives
//
//	E[r] = R + A/m + B/m^2 + O(m^-3),
//	A = nu s_xx / mu^3 - s_xy / mu^2,
//	B = k_xxy / mu^3 - nu k_xxx / mu^4 - 3 s_xx s_xy / mu^4 + 3 nu s_xx^2 / mu^5
//
// (eq. 66 multiplied out by R = nu/mu, so that nothing divides by nu, which
// is 0 for a label no neighbour has). The plug-in estimate Ahat (sample
// means and unbiased sample (co)variances) is itself biased:
// E[Ahat] = A + C/m + O(m^-2), where the delta method (Ahat is linear in
// the sample (co)variances, whose covariances with the means are
// Cov(Xbar, s_xx) = k_xxx/m, Cov(Xbar, s_xy) = Cov(Ybar, s_xx) = k_xxy/m)
// gives
//
//	C = 6 nu s_xx^2 / mu^5 - 6 s_xx s_xy / mu^4 - 3 nu k_xxx / mu^4 + 3 k_xxy / mu^3.
//
// Hence the estimator debiased to O(m^-3):
//
//	r_c = r - Ahat/m + (Chat - Bhat)/m^2,
//	C - B = 3 nu s_xx^2 / mu^5 - 3 s_xx s_xy / mu^4 - 2 nu k_xxx / mu^4 + 2 k_xxy / mu^3,
//
// with plug-in moments. This is the paper's scheme (eq. 72-75: correct the
// first-order term for its own bias, keep the second-order term as a plug-in)
// with the terms rederived: the rendering available of eq. 70-75 is damaged
// (a stray mu_Y in eq. 70's third term, a garbled line after eq. 71) and its
// recursion terms r_a*, r_b* do not match the delta method (for example r_b*
// has -4 Var(X)/mu^2 where the bias of Var-hat(X)/Xbar^2 is
// 3 Var(X)/mu^2 - 2 k_xxx/(mu Var(X))). The correction is scale invariant,
// so the kernels can be taken in the units e^-shift of the sweeps. It
// removes the O(1/m) bias of the ratio at a fixed point and bandwidth, not
// the smoothing bias (O(h)) and not the bias of the nonlinear ||r - f||_p^p.
// Where the effective number of neighbours is small (one kernel dominates)
// the expansion does not hold and r_c can leave [0, 1].
//
// With sample weights w_i the ratio is sum w_i k_i [y_i = l] / sum w_i k_i,
// the ratio of the averages of X_i = w_i k_i and Y_i = w_i k_i [y_i = l]
// over the m other samples of positive weight. When the triples
// (w_i, f_i, y_i) are independent draws of one distribution (the weight a
// random attribute of the sample, as for importance weights), the pairs
// (X_i, Y_i) over the samples of positive weight are i.i.d. given how many
// there are, and R = E[w k y] / E[w k] (the ratio under the weighted
// distribution) is the same with or without the condition w > 0. The
// expansion above then holds verbatim with these X_i and Y_i and m the
// number of other samples of positive weight, and r_c removes the O(1/m)
// bias of the weighted ratio: so computed, and unbiased to O(m^-3) in this
// model. A zero weight is then exactly a removed sample. With weights fixed
// by design instead (not random), the X_i are independent but not
// identically distributed, the plug-in variances also measure the spread of
// the E[X_i], and the correction is a heuristic with no such guarantee.
// Unit weights give the unweighted r_c bit for bit.

// ratioSums are the power sums of a ratio of averages over m samples:
// X = sum X_i, XX = sum X_i^2, XXX = sum X_i^3, Y = sum Y_i, XY = sum X_i Y_i,
// XXY = sum X_i^2 Y_i.
type ratioSums struct {
	M                      int
	X, XX, XXX, Y, XY, XXY float64
}

// add adds the sample pair (x, y) to the sums.
func (s *ratioSums) add(x, y float64) {
	s.M++
	s.X += x
	s.XX += x * x
	s.XXX += x * x * x
	s.Y += y
	s.XY += x * y
	s.XXY += x * x * y
}

// debiased returns the plain ratio Y/X and the debiased r_c (see above).
// With M < 3 or X = 0 it returns the plain ratio for both.
func (s ratioSums) debiased() (r, rc float64) {
	if s.X == 0 {
		return math.NaN(), math.NaN()
	}
	r = s.Y / s.X
	m := float64(s.M)
	if s.M < 3 {
		return r, r
	}
	mu, nu := s.X/m, s.Y/m
	a2, a3, exy, exxy := s.XX/m, s.XXX/m, s.XY/m, s.XXY/m
	sxx := m / (m - 1) * (a2 - mu*mu)
	sxy := m / (m - 1) * (exy - mu*nu)
	kxxx := a3 - 3*mu*a2 + 2*mu*mu*mu
	kxxy := exxy - 2*mu*exy - nu*a2 + 2*mu*mu*nu
	mu2 := mu * mu
	mu3 := mu2 * mu
	mu4 := mu3 * mu
	a := nu*sxx/mu3 - sxy/mu2
	cb := 3*nu*sxx*sxx/(mu4*mu) - 3*sxx*sxy/mu4 - 2*nu*kxxx/mu4 + 2*kxxy/mu3
	return r, r - a/m + cb/(m*m)
}

// debiasedRatios is ratios with every r_jl replaced by its debiased value
// r_c (appendix C) over the m = n - 1 other samples (with sample weights:
// the other samples of positive weight, X_i = w_i k_i).
func (p *problem) debiasedRatios(h float64) (r, lse []float64) {
	m, s := p.sums(h, 3)
	n, nl := p.n, p.nl
	r, lse = make([]float64, n*nl), make([]float64, n)
	for j := range lse {
		if m[j] == math.Inf(-1) {
			lse[j] = math.Inf(-1)
			continue
		}
		var t ratioSums
		t.M = p.others(j)
		for l := 0; l < nl; l++ {
			t.X += s[0][j*nl+l]
			t.XX += s[1][j*nl+l]
			t.XXX += s[2][j*nl+l]
		}
		lse[j] = m[j] + math.Log(t.X)
		for l := 0; l < nl; l++ {
			t.Y, t.XY, t.XXY = s[0][j*nl+l], s[1][j*nl+l], s[2][j*nl+l]
			_, r[j*nl+l] = t.debiased()
		}
	}
	return r, lse
}

// Debiasing of the ratio of squared means (appendix D), the sharpness term
// of eq. 7.
//
// Eq. 7 estimates R = nu^2 / mu^2 by r = A/B, the ratio of the U-statistics
// A = (S_Y^2 - S_YY) / (m(m-1)) of nu^2 and B = (S_X^2 - S_XX) / (m(m-1)) of
// mu^2 (S the power sums over the m other samples). Each is unbiased, the
// ratio is not (Proposition 3.3). With Var B = 4 mu^2 s_xx/m + O(m^-2) and
// Cov(A, B) = 4 mu nu s_xy/m + O(m^-2) (the variance of a second-order
// U-statistic: its first Hoeffding projection), the expansion of eq. 78-86
// gives
//
//	E[r] = R + (4/m) (nu^2 s_xx / mu^4 - nu s_xy / mu^3) + O(m^-2),
//
// and subtracting the plug-in of the 1/m term leaves a bias of O(m^-2),
// the order Proposition 3.4 claims. (The rendering of eq. 86-126 available
// is damaged beyond use: its term coefficients do not follow from eq. 86;
// we derived the correction instead and check it by Monte Carlo.)
//
// With sample weights, A and B are the weighted U-statistics
// sum_{i != i'} X_i X_i' y_i y_i' and sum_{i != i'} X_i X_i' (over the m
// other samples of positive weight, divided by m(m-1)) with X_i = w_i k_i:
// unbiased for E[w k y]^2 and E[w k]^2 when the triples (w_i, f_i, y_i) are
// i.i.d., so r estimates (E[w k y] / E[w k])^2, the square of the weighted
// regression, and the correction above applies with these X_i, under the
// same model and with the same caveat for fixed weights as the ratio's.

// squaredDebiased returns eq. 7's ratio (S_Y^2 - S_YY)/(S_X^2 - S_XX) and
// its appendix D debiased value; NaN for both when the denominator is not
// positive. YY is sum Y_i^2 (for Y = k y with y in {0, 1}, it equals XY).
func (s ratioSums) squaredDebiased(yy float64) (partial, full float64) {
	den := s.X*s.X - s.XX
	if !(den > 0) {
		return math.NaN(), math.NaN()
	}
	partial = (s.Y*s.Y - yy) / den
	m := float64(s.M)
	if s.M < 3 {
		return partial, partial
	}
	mu, nu := s.X/m, s.Y/m
	sxx := m / (m - 1) * (s.XX/m - mu*mu)
	sxy := m / (m - 1) * (s.XY/m - mu*nu)
	mu3 := mu * mu * mu
	return partial, partial - 4/m*(nu*nu*sxx/(mu3*mu)-nu*sxy/mu3)
}

// SquaredRatio returns, for kernel values k_i >= 0 at one evaluation point
// and the 0/1 outcomes y_i of their centres, eq. 7's estimate of
// (E[k y] / E[k])^2,
//
//	((sum k y)^2 - sum (k y)^2) / ((sum k)^2 - sum k^2),
//
// and its appendix D debiased value (see squaredDebiased); NaN when the
// denominator is not positive.
//
// weights holds one weight w_i >= 0 per centre (nil means all 1). The
// estimate is then that of (E[w k y] / E[w k])^2 with every k_i replaced by
// w_i k_i,
//
//	((sum w k y)^2 - sum (w k y)^2) / ((sum w k)^2 - sum (w k)^2),
//
// and the debiasing counts the m centres of positive weight (see the
// comment above squaredDebiased: so debiased when the weights are i.i.d.
// attributes of the samples). A zero weight removes its centre; unit
// weights give the unweighted values bit for bit, all-zero weights NaN.
// Weights of the wrong length, negative, NaN or infinite are a caller bug:
// SquaredRatio panics with an error wrapping mathx.ErrWeights.
func SquaredRatio(k, y, weights []float64) (partial, debiased float64) {
	// All-zero weights are allowed here (NaN, like all-zero kernels).
	if err := mathx.CheckWeights(weights, len(k)); err != nil && !(len(weights) == len(k) && allZero(weights)) {
		panic(fmt.Errorf("kde: SquaredRatio: %w", err))
	}
	var s ratioSums
	yy := 0.0
	for i, x := range k {
		if weights != nil {
			if weights[i] == 0 {
				continue
			}
			x *= weights[i]
		}
		v := x * y[i]
		s.add(x, v)
		yy += v * v
	}
	return s.squaredDebiased(yy)
}

// allZero reports whether every element of w is 0.
func allZero(w []float64) bool {
	for _, v := range w {
		if v != 0 {
			return false
		}
	}
	return true
}
