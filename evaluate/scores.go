package evaluate

import (
	"fmt"

	"github.com/calib-dev/calib/metric"
)

// scoreMetric computes the mean of the per-point terms of m.
func scoreMetric(m string) func(ev *evaluator) ([]*Result, error) {
	return func(ev *evaluator) ([]*Result, error) { return ev.score(m) }
}

// score computes brier, nll, accuracy or confidence: means of per-point
// terms.
func (ev *evaluator) score(m string) ([]*Result, error) {
	s := ev.set
	terms := make([]float64, s.N)
	for i := range terms {
		row, lab := s.Probs[i*s.K:(i+1)*s.K], s.Labels[i:i+1]
		switch m {
		case "brier":
			terms[i] = metric.Brier(row, lab, s.K, nil)
		case "nll":
			var z []float64 // the exact log-softmax from logits
			switch {
			case s.Logits != nil && s.Binary:
				z = []float64{0, s.Logits[i]} // one logit z is (0, z)
			case s.Logits != nil:
				z = s.Logits[i*s.K : (i+1)*s.K]
			}
			terms[i] = metric.NLL(row, z, lab, s.K, nil)
		case "accuracy":
			terms[i] = metric.Accuracy(row, lab, s.K, nil)
		case "confidence":
			terms[i] = metric.Confidence(row, lab, s.K, nil)
		default:
			return nil, fmt.Errorf("unknown metric %q", m)
		}
	}
	// mean is the (weighted) mean of the terms of the samples idx.
	mean := func(idx []int) float64 {
		if s.Weights == nil {
			sum := 0.0
			for _, j := range idx {
				sum += terms[j]
			}
			return sum / float64(len(idx))
		}
		sum, ws := 0.0, 0.0
		for _, j := range idx {
			sum += s.Weights[j] * terms[j]
			ws += s.Weights[j]
		}
		return sum / ws
	}
	all := make([]int, s.N)
	for i := range all {
		all[i] = i
	}
	e := &Result{Metric: m, Value: jf(mean(all)), group: groupScores}
	e.stat = func(idx []int) (float64, error) { return mean(idx), nil }
	return []*Result{e}, nil
}

// finishScore reports brier, nll, accuracy or confidence.
func (s *Sums) finishScore(m string) []*Result {
	v := map[string]func() float64{"brier": s.Scores.BrierScore, "nll": s.Scores.MeanNLL, "accuracy": s.Scores.Accuracy, "confidence": s.Scores.Confidence}[m]()
	return []*Result{{Metric: m, Value: jf(v), group: groupScores}}
}
