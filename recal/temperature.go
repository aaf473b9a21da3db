package recal

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// Temperature is temperature scaling (Guo et al. 2017): probabilities =
// softmax(z / T). JSON: {"method": "temperature", "input": "logits",
// "temperature": T, ...}.
type Temperature struct {
	Header
	Temperature float64 `json:"temperature"`
}

// Temperature search interval: log T in [log 0.05, log 20] (the golden
// reference's bounded search).
const (
	MinTemperature = 0.05
	MaxTemperature = 20.0
)

// FitTemperature returns the T minimising the weighted mean validation NLL
// of softmax(z / T),
//
//	NLL(T) = sum_i w_i [logsumexp(z_i / T) - z_{i,y_i} / T] / sum_i w_i,
//
// nil weights meaning all 1, over [MinTemperature, MaxTemperature]. The
// NLL is convex in beta = 1/T, with derivatives
//
//	NLL'(beta)  = sum_i w_i (E_i[z] - z_{i,y_i}) / sum_i w_i,
//	NLL''(beta) = sum_i w_i Var_i[z] / sum_i w_i,
//
// (mean and variance of the row's logits under softmax(beta z_i)), both
// from one pass: it is minimised by Newton's method on beta,
// safeguarded by bisection of the bracket the derivative's sign keeps, to
// a step below 1e-13 beta (5 to 8 passes where a golden-section search to
// 1e-10 took 52); past 20 steps, where three steps in a row move the same
// end of the bracket (the NLL of nearly separable rows falls like
// e^{-beta gap}, and Newton's steps shrink to 1/gap), the next step
// bisects the bracket in log beta instead, so the search ends within 200
// steps whatever the logits. logits is n×k.
//
// It refuses separable logits (ErrSeparable): where the label's logit is
// the largest of its row in every row of weight > 0, every term of
// NLL'(beta) is <= 0 at every beta, so the NLL falls all the way to
// T -> 0 and has no minimum; a fit would return the interval's end, and
// probabilities of 1 - 1e-90 and less. It fails when the optimum is at an
// end of the interval (the logits are degenerate for the labels: the error
// wraps ErrInput), on no samples (ErrTooFew) and on malformed input
// (ErrInput: logits that are not n×k finite numbers, a label outside
// 0..k-1, bad weights, which wrap data.ErrWeights too).
func FitTemperature(logits []float64, labels []int, k int, weights []float64) (*Temperature, error) {
	if err := checkFitInput(nil, logits, labels, k, true, weights); err != nil {
		return nil, fmt.Errorf("recal: temperature: %w", err)
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("recal: temperature: %w: no samples", ErrTooFew)
	}
	if separable(logits, labels, k, weights) {
		return nil, fmt.Errorf("recal: temperature: %w: in every row the label's logit is the largest: the NLL falls as T -> 0 and has no minimum, so temperature scaling has nothing to fit (fit it on held-out predictions that the model gets wrong sometimes)", ErrSeparable)
	}
	lo, hi := 1/MaxTemperature, 1/MinTemperature
	beta := 1.0
	same, last := 0, 0 // steps in a row that moved the same end of the bracket, and which (-1: lo, 1: hi)
	degenerate := func() error {
		return fmt.Errorf("recal: temperature: %w: the NLL is smallest at the end of [%g, %g] (T = %g): the logits look degenerate", ErrInput, MinTemperature, MaxTemperature, 1/beta)
	}
	converged := false
	for iter := range 200 {
		d1, d2 := temperatureDerivatives(logits, labels, k, beta, weights)
		if math.IsNaN(d1) || math.IsNaN(d2) {
			return nil, fmt.Errorf("recal: temperature: the NLL's derivatives at T = %g are not numbers", 1/beta)
		}
		if !(d2 > 0) {
			return nil, degenerate() // every row's logits equal: the NLL does not depend on T
		}
		end := 0
		switch {
		case d1 > 0:
			hi, end = beta, 1
		case d1 < 0:
			lo, end = beta, -1
		default:
			return temperatureAt(beta, k), nil
		}
		if end == last {
			same++
		} else {
			same, last = 1, end
		}
		// The minimum lies beyond an end of the interval.
		if (beta == 1/MaxTemperature && d1 > 0) || (beta == 1/MinTemperature && d1 < 0) {
			return nil, degenerate()
		}
		next := beta - d1/d2
		if math.Abs(next-beta) <= 1e-13*beta {
			beta, converged = next, true
			break
		}
		if iter >= 20 && same >= 3 && next > lo && next < hi {
			// Newton crawls towards one end (it converges in 5 to 8
			// steps elsewhere, whose path this leaves as it was): bisect
			// in log beta (the bracket spans a factor of 400 at most, so
			// 46 bisections reach 1e-13).
			next, same = math.Sqrt(lo*hi), 0
		}
		if !(next > lo && next < hi) {
			// Outside the bracket: bisect it, or try its end when the
			// bracket is still an end of the interval.
			switch {
			case d1 < 0 && hi == 1/MinTemperature && !(next < hi):
				next = hi
			case d1 > 0 && lo == 1/MaxTemperature && !(next > lo):
				next = lo
			default:
				next = (lo + hi) / 2
			}
		}
		if hi-lo <= 1e-13*beta {
			beta, converged = next, true
			break
		}
		beta = next
	}
	if !converged {
		return nil, fmt.Errorf("recal: temperature: the search did not converge in 200 steps (T = %g, bracket [%g, %g])", 1/beta, 1/hi, 1/lo)
	}
	if t := 1 / beta; math.Log(t)-math.Log(MinTemperature) < 1e-6 || math.Log(MaxTemperature)-math.Log(t) < 1e-6 {
		return nil, degenerate()
	}
	return temperatureAt(beta, k), nil
}

// separable reports whether the label's logit is the largest of its row
// (ties allowed) in every row of weight > 0, where some row's label logit
// is above another of its logits: NLL(T) then falls as T -> 0.
func separable(logits []float64, labels []int, k int, weights []float64) bool {
	strict := false
	for i, y := range labels {
		if weights != nil && !(weights[i] > 0) {
			continue
		}
		zy := logits[i*k+y]
		for _, v := range logits[i*k : (i+1)*k] {
			if v > zy {
				return false
			}
			strict = strict || v < zy
		}
	}
	return strict
}

func temperatureAt(beta float64, k int) *Temperature {
	return &Temperature{Header: Header{SchemaVersion: SchemaVersion, Method: "temperature", Input: InputLogits, K: k}, Temperature: 1 / beta}
}

// temperatureChunk is the number of rows whose sums one goroutine adds
// before they join the total in order (the same bits for any number of
// workers).
const temperatureChunk = 1024

// temperatureDerivatives returns the first and second derivatives in beta
// of the weighted mean NLL of softmax(beta z) (nil weights: all 1); the
// search needs no value of the NLL itself.
func temperatureDerivatives(z []float64, labels []int, k int, beta float64, weights []float64) (d1, d2 float64) {
	n := len(labels)
	nch := (n + temperatureChunk - 1) / temperatureChunk
	sums := make([]float64, 2*nch)
	parallel.For(nch, 0, func() []float64 { return make([]float64, k) }, func(e []float64, ch int) {
		var g, h float64
		for i := ch * temperatureChunk; i < min(n, (ch+1)*temperatureChunk); i++ {
			row := z[i*k : (i+1)*k]
			m := math.Inf(-1)
			for j, v := range row {
				e[j] = beta * v
				if e[j] > m {
					m = e[j]
				}
			}
			s := kernel.ExpSum(e, e, m)
			var mean float64
			for j, v := range row {
				mean += e[j] * v
			}
			mean /= s
			y := labels[i]
			// E[z] - z_y summed as sum_j p_j (z_j - z_y): no cancellation
			// where p_y rounds to 1 (separable rows, large beta), whose
			// derivative would otherwise read exactly 0 and stop the search
			// at a false minimum.
			var vr, dy float64
			for j, v := range row {
				dv := v - mean
				vr += e[j] * dv * dv
				dy += e[j] * (v - row[y])
			}
			vr /= s
			w := mathx.Weight(weights, i)
			g += w * dy / s
			h += w * vr
		}
		sums[2*ch], sums[2*ch+1] = g, h
	})
	for ch := range nch {
		d1 += sums[2*ch]
		d2 += sums[2*ch+1]
	}
	ws := mathx.WeightSum(weights, n)
	return d1 / ws, d2 / ws
}

// Calibrate returns softmax(z / T).
func (t *Temperature) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	n, err := t.checkInput(probs, logits, k)
	if err != nil {
		return nil, err
	}
	z := logitsOf(probs, logits)
	out := make([]float64, n*k)
	row := make([]float64, k)
	for i := 0; i < n; i++ {
		for m, v := range z[i*k : (i+1)*k] {
			row[m] = v / t.Temperature
		}
		mathx.Softmax(out[i*k:(i+1)*k], row)
	}
	return out, nil
}

func (t *Temperature) valid() error {
	if !(t.Temperature > 0) || math.IsInf(t.Temperature, 0) {
		return badValue("temperature = %v, want a finite number > 0", t.Temperature)
	}
	return nil
}
