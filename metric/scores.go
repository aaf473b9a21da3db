package metric

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// checkRows panics unless probs holds len(labels) rows of k entries (and
// logits, when not nil, as many): the package's caller-bug policy (see the
// package doc).
func checkRows(name string, probs, logits []float64, labels []int, k int) {
	if k < 1 || len(probs) != len(labels)*k || (logits != nil && len(logits) != len(probs)) {
		panic(fmt.Sprintf("metric: %s: length mismatch (%d probabilities, %d logits, %d labels, K = %d)", name, len(probs), len(logits), len(labels), k))
	}
}

// checkWeights panics unless weights is nil or holds n weights: the
// package's caller-bug policy for the functions that return no error (the
// values are not checked; see the package doc).
func checkWeights(name string, weights []float64, n int) {
	if weights != nil && len(weights) != n {
		panic(fmt.Sprintf("metric: %s: length mismatch (%d weights for %d samples)", name, len(weights), n))
	}
}

// Brier returns the multiclass Brier score (a sum over classes, in [0, 2]),
// the weighted mean
//
//	Brier = sum_i w_i sum_k (f_ik - [y_i = k])^2 / sum_i w_i.
//
// nil weights mean all 1, (1/n) sum_i sum_k (f_ik - [y_i = k])^2.
func Brier(probs []float64, labels []int, k int, weights []float64) float64 {
	checkRows("Brier", probs, nil, labels, k)
	checkWeights("Brier", weights, len(labels))
	sum := 0.0
	if weights == nil {
		for i, y := range labels {
			for c, v := range probs[i*k : (i+1)*k] {
				d := v
				if c == y {
					d = v - 1
				}
				sum += d * d
			}
		}
		return sum / float64(len(labels))
	}
	for i, y := range labels {
		sum += weights[i] * brierRow(probs[i*k:(i+1)*k], y)
	}
	return sum / mathx.WeightSum(weights, len(labels))
}

// brierRow returns one row's Brier term sum_k (f_k - [y = k])^2.
func brierRow(row []float64, y int) float64 {
	s := 0.0
	for c, v := range row {
		d := v
		if c == y {
			d = v - 1
		}
		s += d * d
	}
	return s
}

// nllRow returns one row's NLL term: with logits z (not nil) the exact
// z_y - logsumexp(z) negated, else -log max(f_y, NLLEpsilon).
func nllRow(row, z []float64, y int) float64 {
	if z == nil {
		return -math.Log(math.Max(row[y], NLLEpsilon))
	}
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - m)
	}
	return m + math.Log(s) - z[y]
}

// NLLEpsilon is the clip of NLL on probabilities: as scikit-learn's
// log_loss (eps = the float64 machine epsilon), a probability of the label
// below it counts as NLLEpsilon, so a confident mistake costs at most
// -log(2.2e-16) = 36.04 instead of +Inf.
const NLLEpsilon = 0x1p-52

// NLL returns the weighted mean negative log-likelihood
//
//	NLL = -sum_i w_i log f_{i,y_i} / sum_i w_i
//
// (nil weights mean all 1: -(1/n) sum_i log f_{i,y_i}). With logits (n×k,
// not nil) it uses the exact log-softmax z_y - logsumexp(z), with no
// clipping; otherwise log max(f_y, NLLEpsilon).
func NLL(probs, logits []float64, labels []int, k int, weights []float64) float64 {
	if logits != nil {
		checkRows("NLL", logits, nil, labels, k) // probs are not read
	} else {
		checkRows("NLL", probs, nil, labels, k)
	}
	checkWeights("NLL", weights, len(labels))
	sum := 0.0
	if logits == nil && weights == nil {
		for i, y := range labels {
			sum -= math.Log(math.Max(probs[i*k+y], NLLEpsilon))
		}
		return sum / float64(len(labels))
	}
	for i, y := range labels {
		var z, row []float64
		if logits != nil {
			z = logits[i*k : (i+1)*k]
		} else {
			row = probs[i*k : (i+1)*k]
		}
		term := nllRow(row, z, y)
		if weights != nil {
			term *= weights[i]
		}
		sum += term
	}
	return sum / mathx.WeightSum(weights, len(labels))
}

// Accuracy returns the weighted fraction of samples whose arg max (the
// first on ties) is the label,
//
//	Accuracy = sum_i w_i [argmax_k f_ik = y_i] / sum_i w_i,
//
// nil weights meaning all 1.
func Accuracy(probs []float64, labels []int, k int, weights []float64) float64 {
	checkRows("Accuracy", probs, nil, labels, k)
	checkWeights("Accuracy", weights, len(labels))
	_, c := TopR(probs, labels, k, 1)
	return weightedMean(c, weights)
}

// Confidence returns the weighted mean top-label confidence
//
//	Confidence = sum_i w_i max_k f_ik / sum_i w_i,
//
// nil weights meaning all 1.
func Confidence(probs []float64, labels []int, k int, weights []float64) float64 {
	checkRows("Confidence", probs, nil, labels, k)
	checkWeights("Confidence", weights, len(labels))
	s, _ := TopR(probs, labels, k, 1)
	return weightedMean(s, weights)
}

// weightedMean returns sum_i w_i x_i / sum_i w_i (the plain mean, summed
// in order, for nil weights).
func weightedMean(x, w []float64) float64 {
	s := 0.0
	if w == nil {
		for _, v := range x {
			s += v
		}
		return s / float64(len(x))
	}
	for i, v := range x {
		s += w[i] * v
	}
	return s / mathx.WeightSum(w, len(x))
}

// checkPair panics unless scores and outcomes have the same length: the
// package's caller-bug policy.
func checkPair(name string, scores, outcomes []float64) {
	if len(scores) != len(outcomes) {
		panic(fmt.Sprintf("metric: %s: length mismatch (%d scores, %d outcomes)", name, len(scores), len(outcomes)))
	}
}
