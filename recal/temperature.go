package recal

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
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
// nil weights meaning all 1, found by golden-section search on log T over
// [MinTemperature, MaxTemperature] to 1e-10 (the NLL is convex in 1/T, so
// the search is exact up to that tolerance). logits is n×k. It fails when
// the optimum is at an end of the interval (the logits are degenerate for
// the labels: the error wraps ErrInput), on no samples (ErrTooFew) and on
// malformed input (ErrInput: logits that are not n×k finite numbers, a
// label outside 0..k-1, bad weights, which wrap data.ErrWeights too).
func FitTemperature(logits []float64, labels []int, k int, weights []float64) (*Temperature, error) {
	if err := checkFitInput(nil, logits, labels, k, true, weights); err != nil {
		return nil, fmt.Errorf("recal: temperature: %w", err)
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("recal: temperature: %w: no samples", ErrTooFew)
	}
	f := func(logT float64) float64 { return meanNLL(logits, labels, k, math.Exp(-logT), weights) }
	a, b := math.Log(MinTemperature), math.Log(MaxTemperature)
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := f(x1), f(x2)
	for b-a > 1e-10 {
		if f1 <= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = f(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = f(x2)
		}
	}
	logT := (a + b) / 2
	if logT-math.Log(MinTemperature) < 1e-6 || math.Log(MaxTemperature)-logT < 1e-6 {
		return nil, fmt.Errorf("recal: temperature: %w: the NLL is smallest at the end of [%g, %g] (T = %g): the logits look degenerate", ErrInput, MinTemperature, MaxTemperature, math.Exp(logT))
	}
	return &Temperature{Header: Header{SchemaVersion: SchemaVersion, Method: "temperature", Input: InputLogits, K: k}, Temperature: math.Exp(logT)}, nil
}

// meanNLL is the weighted mean NLL of softmax(beta z) (nil weights: all 1).
func meanNLL(z []float64, labels []int, k int, beta float64, weights []float64) float64 {
	sum := 0.0
	for i, y := range labels {
		row := z[i*k : (i+1)*k]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, beta*v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(beta*v - m)
		}
		l := m + math.Log(s) - beta*row[y]
		if weights != nil {
			l *= weights[i]
		}
		sum += l
	}
	return sum / mathx.WeightSum(weights, len(labels))
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
