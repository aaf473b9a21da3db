package metric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestScoresHand(t *testing.T) {
	probs := []float64{0.7, 0.2, 0.1, 0.1, 0.3, 0.6}
	labels := []int{0, 1}
	// Brier: (0.09+0.04+0.01 + 0.01+0.49+0.36)/2 = 0.5.
	near(t, "Brier", Brier(probs, labels, 3, nil), 0.5, 1e-15)
	near(t, "NLL", NLL(probs, nil, labels, 3, nil), -(math.Log(0.7)+math.Log(0.3))/2, 1e-15)
	near(t, "accuracy", Accuracy(probs, labels, 3, nil), 0.5, 0)
	near(t, "confidence", Confidence(probs, labels, 3, nil), 0.65, 1e-15)
	// NLL from logits is the exact log-softmax: logits (0, 0) -> log 2.
	near(t, "NLL logits", NLL(nil, []float64{0, 0, 1000, -1000}, []int{1, 1}, 2, nil), (math.Log(2)+2000)/2, 1e-12)
	// A probability of 0 is clipped at machine epsilon.
	near(t, "NLL clip", NLL([]float64{1, 0}, nil, []int{1}, 2, nil), 52*math.Ln2, 1e-12)
}

// mmceBrute is the O(n^2) definition.
func mmceBrute(r, c []float64, w float64) float64 {
	s := 0.0
	for i := range r {
		for j := range r {
			s += (c[i] - r[i]) * (c[j] - r[j]) * math.Exp(-math.Abs(r[i]-r[j])/w)
		}
	}
	return s / float64(len(r)*len(r))
}

// TestMMCE compares the O(n log n) MMCE with the O(n^2) definition
// (including ties and tiny widths) and its gradient with central finite
// differences.
func TestMMCE(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 2, 7, 300} {
		r, c := make([]float64, n), make([]float64, n)
		for i := range r {
			r[i] = 0.5 + 0.5*rng.Float64()
			if i%5 == 1 {
				r[i] = r[i-1] // ties
			}
			if rng.Float64() < r[i]*0.9 {
				c[i] = 1
			}
		}
		for _, w := range []float64{0.4, 0.05, 0.001} {
			grad := make([]float64, n)
			v, sq := MMCE(r, c, w, grad, nil)
			want := mmceBrute(r, c, w)
			near(t, "MMCE^2", sq, want, 1e-13*math.Max(1, math.Abs(want)))
			near(t, "MMCE", v, math.Sqrt(math.Max(want, 0)), 1e-12)
			if n > 1 && w > 0.01 {
				for i := 0; i < n; i += 37 {
					if i%5 == 1 || i%5 == 0 {
						continue // ties: |x| is not differentiable there
					}
					h := 1e-7
					x := append([]float64(nil), r...)
					x[i] += h
					up, _ := MMCE(x, c, w, nil, nil)
					x[i] -= 2 * h
					down, _ := MMCE(x, c, w, nil, nil)
					near(t, "MMCE gradient", grad[i], (up-down)/(2*h), 1e-6)
				}
			}
		}
	}
}

// TestTopLabelMMCEGradient checks the gradient with respect to the
// probabilities (on the arg max entries) by central finite differences.
func TestTopLabelMMCEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 9))
	const n, k = 60, 3
	probs, labels := make([]float64, n*k), make([]int, n)
	for i := range labels {
		for m := 0; m < k; m++ {
			probs[i*k+m] = rng.Float64()
		}
		labels[i] = rng.IntN(k)
	}
	grad := make([]float64, n*k)
	TopLabelMMCE(probs, labels, k, 0.4, grad, nil)
	for i := 0; i < n*k; i += 7 {
		x := append([]float64(nil), probs...)
		h := 1e-7
		x[i] += h
		up, _ := TopLabelMMCE(x, labels, k, 0.4, nil, nil)
		x[i] -= 2 * h
		down, _ := TopLabelMMCE(x, labels, k, 0.4, nil, nil)
		near(t, "dMMCE/df", grad[i], (up-down)/(2*h), 1e-6)
	}
}

// TestScoresLengthMismatchPanics: the caller-bug policy (see the package
// doc) holds for the scores too.
func TestScoresLengthMismatchPanics(t *testing.T) {
	probs, labels := []float64{0.5, 0.5, 0.2, 0.8}, []int{0, 1}
	for name, f := range map[string]func(){
		"Brier":      func() { Brier(probs[:3], labels, 2, nil) },
		"NLL":        func() { NLL(probs, probs[:2], labels, 2, nil) },
		"Accuracy":   func() { Accuracy(probs, labels[:1], 2, nil) },
		"Confidence": func() { Confidence(probs, labels, 3, nil) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "metric: "+name+": length mismatch") {
					t.Errorf("%s: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
	if v := Brier(probs, labels, 2, nil); math.Abs(v-(0.5+0.08)/2) > 1e-15 {
		t.Errorf("Brier %v", v)
	}
}
