package evaluate

import (
	"fmt"

	"github.com/calib-dev/calib/metric"
)

// The proper scores and basics: means of per-point terms, exact in a
// stream (metric.ScoreSums), with percentile intervals.
var (
	brierDef      = scoreDef(Brier, (*metric.ScoreSums).BrierScore)
	nllDef        = scoreDef(NLL, (*metric.ScoreSums).MeanNLL)
	accuracyDef   = scoreDef(Accuracy, (*metric.ScoreSums).Accuracy)
	confidenceDef = scoreDef(Confidence, (*metric.ScoreSums).Confidence)
)

// scoreDef is the metric m, the mean of per-point terms; streamed, its
// value is mean of a stream's score sums.
func scoreDef(m Metric, mean func(*metric.ScoreSums) float64) metricDef {
	return metricDef{
		name:     m,
		compute:  func(ev *evaluator) ([]*Result, error) { return ev.score(m) },
		interval: percentile,
		define:   func(_ *config, e *Result) { e.Estimator = "mean" },
		finish: func(s *Sums, _ *KernelSums, _ *Evaluation) ([]*Result, error) {
			return []*Result{{Metric: m, Value: jf(mean(s.st.Scores))}}, nil
		},
	}
}

// score computes brier, nll, accuracy or confidence: means of per-point
// terms.
func (ev *evaluator) score(m Metric) ([]*Result, error) {
	s := ev.set
	terms := make([]float64, s.N)
	for i := range terms {
		row, lab := s.Probs[i*s.K:(i+1)*s.K], s.Labels[i:i+1]
		switch m {
		case Brier:
			terms[i] = metric.Brier(row, lab, s.K, nil)
		case NLL:
			var z []float64 // the exact log-softmax from logits
			switch {
			case s.Logits != nil && s.Binary:
				z = []float64{0, s.Logits[i]} // one logit z is (0, z)
			case s.Logits != nil:
				z = s.Logits[i*s.K : (i+1)*s.K]
			}
			terms[i] = metric.NLL(row, z, lab, s.K, nil)
		case Accuracy:
			terms[i] = metric.Accuracy(row, lab, s.K, nil)
		case Confidence:
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
	e := &Result{Metric: m, Value: jf(mean(all))}
	ev.setStat(e, func(idx []int) (float64, error) { return mean(idx), nil })
	return []*Result{e}, nil
}
