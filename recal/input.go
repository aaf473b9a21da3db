package recal

import (
	"errors"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// ErrInput is wrapped by every error caused by the caller's input rather
// than by the computation: predictions, labels or options that Calibrate or
// a Fit function cannot use (wrong shape, a value that is not finite or not
// a probability, a row that does not sum to 1, a label outside 0..K-1,
// sample weights that data.Set.SetWeights would refuse (such errors wrap
// data.ErrWeights too), an unknown method or mode), data too small to fit
// (ErrTooFew) and map files that Load rejects (ErrSchema, ErrMap). A command-line tool can report
// errors.Is(err, ErrInput) as a usage error.
var ErrInput = errors.New("bad input")

// ErrTooFew is wrapped by the Fit functions' errors for data too small or
// too degenerate to fit: fewer samples than the method needs (3 for a
// spline, 2 for isotonic regression and the linear maps, one per bin for
// histogram binning, one per cross-validation fold), a single outcome for
// Platt and beta calibration, a single class for the linear maps. It wraps
// ErrInput.
var ErrTooFew error = &kindError{"not enough data", ErrInput}

// ErrSeparable is wrapped by the errors of FitTemperature and FitPlatt on
// predictions that separate the outcomes perfectly (temperature: the
// label's logit is the largest in every row; Platt: every score of
// outcome 0 is at or below every score of outcome 1, or above): the
// likelihood grows without bound as the map sharpens, so there is no
// finite fit, and the end of a search would give probabilities within
// 1e-90 of 0 and 1. It is a kind of ErrTooFew (more data, on which the
// model errs sometimes, makes the fit finite) and so of ErrInput.
var ErrSeparable error = &kindError{"separable data", ErrTooFew}

// SumTolerance is the tolerance of the row sums of the probabilities given
// to Calibrate and the Fit functions, per class: a row of K probabilities
// must satisfy |sum_k p_k - 1| <= K * SumTolerance (1e-5 for K = 10; rows
// of a float32 softmax are off by about K * 6e-8). Every entry must lie in
// [0, 1] exactly, as data.Load requires.
const SumTolerance = 1e-6

// kindError is a sentinel error that is also a kind of a broader sentinel.
type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// asInput returns err as an error of the input: err itself when it wraps
// ErrInput already, else an error with err's message that wraps both err
// and ErrInput.
func asInput(err error) error {
	if errors.Is(err, ErrInput) {
		return err
	}
	return inputError{err}
}

// inputError is asInput's error.
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{e.err, ErrInput} }

// checkPredictions checks n×k predictions and returns n. probs, if not
// empty, must hold whole rows of k entries in [0, 1] summing to 1 within
// k * SumTolerance; logits, if not empty, must hold as many rows (or whole
// rows when probs is empty), and, when readLogits is set, finite numbers.
// The errors wrap ErrInput and name the row and column (1-based).
func checkPredictions(probs, logits []float64, k int, readLogits bool) (int, error) {
	if k < 1 {
		return 0, fmt.Errorf("%w: K = %d", ErrInput, k)
	}
	n := len(probs) / k
	if len(probs) == 0 {
		n = len(logits) / k
	}
	if len(probs) > 0 && len(probs) != n*k {
		return 0, fmt.Errorf("%w: %d probabilities do not make rows of K = %d", ErrInput, len(probs), k)
	}
	if len(logits) > 0 && len(logits) != n*k {
		if len(probs) == 0 {
			return 0, fmt.Errorf("%w: %d logits do not make rows of K = %d", ErrInput, len(logits), k)
		}
		return 0, fmt.Errorf("%w: %d logits for %d rows of K = %d, want %d", ErrInput, len(logits), n, k, n*k)
	}
	tol := float64(k) * SumTolerance
	for i := 0; i < n && len(probs) > 0; i++ {
		sum := 0.0
		for c, p := range probs[i*k : (i+1)*k] {
			if !(p >= 0 && p <= 1) {
				return 0, fmt.Errorf("%w: row %d, column %d: probability %v, want a number in [0, 1]", ErrInput, i+1, c+1, p)
			}
			sum += p
		}
		if !(math.Abs(sum-1) <= tol) {
			return 0, fmt.Errorf("%w: row %d: the probabilities sum to %.17g, want 1 within %g", ErrInput, i+1, sum, tol)
		}
	}
	if readLogits {
		for j, z := range logits {
			if math.IsNaN(z) || math.IsInf(z, 0) {
				return 0, fmt.Errorf("%w: row %d, column %d: logit %v, want a finite number", ErrInput, j/k+1, j%k+1, z)
			}
		}
	}
	return n, nil
}

// checkFitInput checks the validation predictions, labels and sample
// weights of a fit: k >= 2, the probabilities (or, when probs is empty, the
// logits) and labels hold the same number of rows (see checkPredictions;
// readLogits as there), every label is in 0..k-1, and the weights are nil
// or one per row (see checkWeights). Its errors wrap ErrInput.
func checkFitInput(probs, logits []float64, labels []int, k int, readLogits bool, weights []float64) error {
	if k < 2 {
		return fmt.Errorf("%w: K = %d, need at least 2 classes", ErrInput, k)
	}
	if len(probs) == 0 && len(logits) == 0 && len(labels) > 0 {
		return fmt.Errorf("%w: no predictions for %d labels", ErrInput, len(labels))
	}
	n, err := checkPredictions(probs, logits, k, readLogits)
	if err != nil {
		return err
	}
	if n != len(labels) {
		return fmt.Errorf("%w: %d rows of predictions and %d labels", ErrInput, n, len(labels))
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return fmt.Errorf("%w: row %d: label %d, want 0..%d", ErrInput, i+1, y, k-1)
		}
	}
	return checkWeights(weights, n)
}

// checkWeights checks the sample weights of n rows: nil (all 1), or n
// finite weights >= 0, not all 0. Its errors wrap ErrInput and
// data.ErrWeights (mathx.ErrWeights) and name the offending weight
// (0-based, as mathx.CheckWeights).
func checkWeights(weights []float64, n int) error {
	if err := mathx.CheckWeights(weights, n); err != nil {
		return fmt.Errorf("%w: %w", ErrInput, err)
	}
	return nil
}

// checkScores checks the scores, outcomes and sample weights of a scalar
// fit: the same length, finite values, weights as checkWeights. Its errors
// wrap ErrInput.
func checkScores(scores, outcomes, weights []float64) error {
	if len(scores) != len(outcomes) {
		return fmt.Errorf("%w: %d scores and %d outcomes", ErrInput, len(scores), len(outcomes))
	}
	if err := checkWeights(weights, len(scores)); err != nil {
		return err
	}
	for i := range scores {
		if math.IsNaN(scores[i]) || math.IsInf(scores[i], 0) {
			return fmt.Errorf("%w: score %d is %v, want a finite number", ErrInput, i+1, scores[i])
		}
		if math.IsNaN(outcomes[i]) || math.IsInf(outcomes[i], 0) {
			return fmt.Errorf("%w: outcome %d is %v, want a finite number", ErrInput, i+1, outcomes[i])
		}
	}
	return nil
}
