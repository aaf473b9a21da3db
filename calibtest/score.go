package calibtest

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The score tests are Rao's score (Lagrange multiplier) tests of a
// recalibration family at the identity map: the gradient of the
// log-likelihood of the labels under the recalibrated model g_theta(f) at
// theta_0 (g = f), standardised by its covariance under H0, where the
// labels are Categorical(f) draws. Against the family's own alternatives
// they are the locally most powerful tests, and they cost O(nK) with no
// fitting, so they keep their power with many classes where the kernel
// and binned statistics lose theirs. Run gives them consistency-resampled
// p-values (each resample costs O(n)), valid at any n.
//
//   - Temperature (probabilities softmax(beta log f), beta_0 = 1): the
//     score S = sum_i (u_{i,y_i} - sum_k f_ik u_ik), u = log f (clipped at
//     2^-126), with Var_H0(S) = sum_i Var_{f_i}(u_i); the statistic is z =
//     S / sqrt(Var). z > 0: the labels favour sharper probabilities (the
//     model is under-confident), z < 0 over-confident; the test is
//     two-sided (|z|).
//   - Prior shift (probabilities proportional to f_k e^{b_k}, b_0 = 0):
//     the scores S_k = sum_i (1{y_i = k} - f_ik), the observed minus the
//     predicted count of each class, with covariance V = sum_i (diag f_i -
//     f_i f_i^T); the statistic is S^T V^-1 S over the classes with
//     probability mass but the last (their counts sum to n), chi-square
//     with K - 1 degrees of freedom asymptotically; a label of a class
//     without mass makes it +Inf.

// scoreFloor is the smallest probability whose log the temperature score
// reads (float32's smallest normal, as the variational log loss).
const scoreFloor = 0x1p-126

// TemperatureScore returns the temperature score test's z for the labels
// (see the comment above) and the H0 standard deviation of S.
func TemperatureScore(probs []float64, labels []int, k int) (z, sd float64, err error) {
	st, err := newTemperatureScore(probs, k)
	if err != nil {
		return 0, 0, err
	}
	if err := checkLabels(labels, len(probs)/k, k); err != nil {
		return 0, 0, err
	}
	return st.z(labels), st.sd, nil
}

type temperatureScore struct {
	u    []float64 // n×K log-probabilities
	mean float64   // sum_i E_f u_i
	sd   float64
	k    int
}

func newTemperatureScore(probs []float64, k int) (*temperatureScore, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	st := &temperatureScore{u: make([]float64, len(probs)), k: k}
	v := 0.0
	for i := 0; i < len(probs); i += k {
		var m, m2 float64
		for j, p := range probs[i : i+k] {
			u := math.Log(math.Max(p, scoreFloor))
			st.u[i+j] = u
			m += p * u
			m2 += p * u * u
		}
		st.mean += m
		v += math.Max(0, m2-m*m)
	}
	st.sd = math.Sqrt(v)
	return st, nil
}

// z returns S / sd (0 when sd is 0: every row one-hot, nothing to test).
func (st *temperatureScore) z(labels []int) float64 {
	s := -st.mean
	for i, y := range labels {
		s += st.u[i*st.k+y]
	}
	if st.sd == 0 {
		return 0
	}
	return s / st.sd
}

// TemperatureScoreStatistic is |z| of the temperature score test for
// consistency resampling: a resample costs O(n).
func TemperatureScoreStatistic(probs []float64, k int, workers int) (Statistic, error) {
	st, err := newTemperatureScore(probs, k)
	if err != nil {
		return nil, fmt.Errorf("calibtest: temperature score: %w", err)
	}
	n := len(probs) / k
	return PerVector(func(y []int) (float64, error) {
		if err := checkLabels(y, n, k); err != nil {
			return 0, err
		}
		return math.Abs(st.z(y)), nil
	}, workers), nil
}

// priorScore holds the prior-shift score test's predicted counts and the
// Cholesky factor of its H0 covariance over the classes it tests: the
// first K - 1 classes that have probability mass (a class with none has
// no H0 variance; observing it makes the statistic +Inf).
type priorScore struct {
	expected []float64 // sum_i f_ik
	classes  []int     // the classes in the quadratic form
	chol     mat.Cholesky
	k        int
}

func newPriorScore(probs []float64, k int) (*priorScore, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	ps := &priorScore{expected: make([]float64, k), k: k}
	for i := 0; i < len(probs); i += k {
		for a, p := range probs[i : i+k] {
			ps.expected[a] += p
		}
	}
	for a, e := range ps.expected {
		if e > 0 {
			ps.classes = append(ps.classes, a)
		}
	}
	// The counts of the classes with mass sum to n: one of them is
	// determined by the others.
	if len(ps.classes) > 0 {
		ps.classes = ps.classes[:len(ps.classes)-1]
	}
	m := len(ps.classes)
	if m == 0 {
		return ps, nil
	}
	v := mat.NewSymDense(m, nil)
	for i := 0; i < len(probs); i += k {
		row := probs[i : i+k]
		for a, ca := range ps.classes {
			for b := a; b < m; b++ {
				cb := ps.classes[b]
				c := -row[ca] * row[cb]
				if a == b {
					c += row[ca]
				}
				v.SetSym(a, b, v.At(a, b)+c)
			}
		}
	}
	if !ps.chol.Factorize(v) {
		// Rounding can leave the covariance of nearly one-hot rows just
		// short of positive definite: a relative jitter of 1e-12.
		jitter := 0.0
		for a := range m {
			jitter = math.Max(jitter, v.At(a, a))
		}
		for a := range m {
			v.SetSym(a, a, v.At(a, a)+1e-12*jitter)
		}
		if !ps.chol.Factorize(v) {
			return nil, fmt.Errorf("%w: prior score: the predicted class counts' covariance is singular", ErrNoVariance)
		}
	}
	return ps, nil
}

// stat returns S^T V^-1 S over ps.classes, or +Inf when a class without
// probability mass occurs in the labels.
func (ps *priorScore) stat(labels []int) (float64, error) {
	count := make([]float64, ps.k)
	for _, y := range labels {
		count[y]++
	}
	for a, e := range ps.expected {
		if e == 0 && count[a] > 0 {
			return math.Inf(1), nil
		}
	}
	m := len(ps.classes)
	if m == 0 {
		return 0, nil
	}
	s := make([]float64, m)
	for a, c := range ps.classes {
		s[a] = count[c] - ps.expected[c]
	}
	sv := mat.NewVecDense(m, s)
	var x mat.VecDense
	if err := ps.chol.SolveVecTo(&x, sv); err != nil {
		return 0, fmt.Errorf("calibtest: prior score: %w", err)
	}
	return mat.Dot(sv, &x), nil
}

// PriorScore returns the prior-shift score statistic S^T V^-1 S (see the
// comment above; chi-square with K - 1 degrees of freedom under H0 as n
// grows).
func PriorScore(probs []float64, labels []int, k int) (float64, error) {
	ps, err := newPriorScore(probs, k)
	if err != nil {
		return 0, err
	}
	if err := checkLabels(labels, len(probs)/k, k); err != nil {
		return 0, err
	}
	return ps.stat(labels)
}

// PriorScoreStatistic is the prior-shift score statistic for consistency
// resampling: a resample costs O(n + K^2).
func PriorScoreStatistic(probs []float64, k int, workers int) (Statistic, error) {
	ps, err := newPriorScore(probs, k)
	if err != nil {
		return nil, err
	}
	n := len(probs) / k
	return PerVector(func(y []int) (float64, error) {
		if err := checkLabels(y, n, k); err != nil {
			return 0, err
		}
		return ps.stat(y)
	}, workers), nil
}
