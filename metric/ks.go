package metric

import (
	"cmp"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
)

// KSCurve holds the cumulative sums behind a KS calibration error (splines
// paper eq. 9-11), with the samples sorted by score (ascending, stable):
// Score[i] is the i-th smallest score, Pred[i] = (1/W) sum_{m<=i} w_m
// score_m and Obs[i] = (1/W) sum_{m<=i} w_m outcome_m, W the total weight
// (N and unit weights when unweighted).
type KSCurve struct {
	Score, Pred, Obs []float64
}

// KS returns the Kolmogorov-Smirnov calibration error of scores in [0, 1]
// against outcomes in {0, 1} (splines paper eq. 12) with sample weights
// (nil: all 1):
//
//	KS = max_i | (1/W) sum_{m<=i} w_m score_m - (1/W) sum_{m<=i} w_m outcome_m |,
//	W  = sum_m w_m,
//
// with the samples sorted by score, ascending, by a stable sort (ties keep
// the input order), the sums taken in that order in float64 and divided by
// W at the end, as the reference's cumsum(x)/N. Integer weights give the
// KS error of the rows repeated w_i times (the difference moves linearly
// along the copies of a row, so its maximum is at the end of a row). The
// curve is returned when withCurve is true. KS panics if the lengths
// differ; it returns 0 for no samples.
func KS(scores, outcomes []float64, withCurve bool, weights []float64) (float64, *KSCurve) {
	if len(scores) != len(outcomes) {
		panic("metric: KS: length mismatch")
	}
	checkWeights("KS", weights, len(scores))
	n := len(scores)
	idx := argsort(scores)
	var cv *KSCurve
	if withCurve {
		cv = &KSCurve{Score: make([]float64, n), Pred: make([]float64, n), Obs: make([]float64, n)}
	}
	N := mathx.WeightSum(weights, n)
	ks, cs, co := 0.0, 0.0, 0.0
	for i, j := range idx {
		if weights == nil {
			cs += scores[j]
			co += outcomes[j]
		} else {
			cs += weights[j] * scores[j]
			co += weights[j] * outcomes[j]
		}
		ks = math.Max(ks, math.Abs(cs/N-co/N))
		if cv != nil {
			cv.Score[i], cv.Pred[i], cv.Obs[i] = scores[j], cs/N, co/N
		}
	}
	return ks, cv
}

// SortedKS is a sample sorted by score once, so that the KS error of a
// bootstrap resample takes O(n): the resample's sorted order is this order
// with each sample repeated as often as it is drawn (samples with equal
// scores keep the input order, as the stable sort of the full sample).
type SortedKS struct {
	order            []int
	scores, outcomes []float64
	weights          []float64 // nil: all 1
}

// NewSortedKS sorts a sample with its weights (nil: all 1) for KSResample.
// It panics if the lengths differ.
func NewSortedKS(scores, outcomes, weights []float64) *SortedKS {
	if len(scores) != len(outcomes) {
		panic("metric: NewSortedKS: length mismatch")
	}
	checkWeights("NewSortedKS", weights, len(scores))
	idx := argsort(scores)
	return &SortedKS{order: idx, scores: scores, outcomes: outcomes, weights: weights}
}

// KSResample returns the KS error of the resample with counts[i] copies of
// sample i (the sum of counts is the resample size): with weights, sample i
// has the weight counts[i] w_i, W = sum_i counts[i] w_i.
func (s *SortedKS) KSResample(counts []int) float64 {
	if s.weights != nil {
		return s.weightedResample(counts)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	N := float64(n)
	ks, cs, co := 0.0, 0.0, 0.0
	for _, j := range s.order {
		for range counts[j] {
			cs += s.scores[j]
			co += s.outcomes[j]
			ks = math.Max(ks, math.Abs(cs/N-co/N))
		}
	}
	return ks
}

// weightedResample is KSResample with weights: each drawn sample adds its
// weight times its count at once (the difference is linear along the
// copies, so the maximum is at the end of a sample's copies).
func (s *SortedKS) weightedResample(counts []int) float64 {
	W := 0.0
	for i, c := range counts {
		W += float64(c) * s.weights[i]
	}
	ks, cs, co := 0.0, 0.0, 0.0
	for _, j := range s.order {
		if counts[j] == 0 {
			continue
		}
		w := float64(counts[j]) * s.weights[j]
		cs += w * s.scores[j]
		co += w * s.outcomes[j]
		ks = math.Max(ks, math.Abs(cs/W-co/W))
	}
	return ks
}

// KSOutcomes returns the KS error of the whole sample with its outcomes
// replaced by outcomes (the scores, their sorted order and the weights
// kept): KS(scores, outcomes, false, weights) bit for bit, in O(n) (the
// consistency-resampling tests redraw only the outcomes). It panics if
// outcomes has another length.
func (s *SortedKS) KSOutcomes(outcomes []float64) float64 {
	if len(outcomes) != len(s.scores) {
		panic("metric: KSOutcomes: length mismatch")
	}
	N := mathx.WeightSum(s.weights, len(s.scores))
	ks, cs, co := 0.0, 0.0, 0.0
	for _, j := range s.order {
		if s.weights == nil {
			cs += s.scores[j]
			co += outcomes[j]
		} else {
			cs += s.weights[j] * s.scores[j]
			co += s.weights[j] * outcomes[j]
		}
		ks = math.Max(ks, math.Abs(cs/N-co/N))
	}
	return ks
}

// Counts returns how often each of n samples appears in idx.
func Counts(n int, idx []int) []int {
	c := make([]int, n)
	for _, i := range idx {
		c[i]++
	}
	return c
}

// argsort returns the indices of x in increasing order of x, ties in
// index order (what a stable sort of 0..n-1 gives, by pdqsort with the
// index as the tie-break: O(n log n) where the stable sort's merges cost
// O(n log^2 n)).
func argsort(x []float64) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(x[a], x[b]); c != 0 {
			return c
		}
		return a - b
	})
	return idx
}

// ranking returns the indices of the r largest entries of row, by
// decreasing value, ties to the lower class index: the first r entries of
// the order a stable sort by decreasing probability gives, found by
// insertion into the r kept so far (O(K r) instead of a sort of K).
func ranking(row []float64, r int, order []int) []int {
	order = order[:0]
	for c, v := range row {
		if len(order) == r && !(v > row[order[r-1]]) {
			continue // not above the r-th kept: a tie keeps the lower index
		}
		if len(order) < r {
			order = append(order, c)
		} else {
			order[r-1] = c
		}
		for j := len(order) - 1; j > 0 && v > row[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

// TopR returns the top-r scores and outcomes of predictions (splines paper
// eq. 3): score_i = the r-th largest probability of row i, outcome_i = 1 if
// the class with that probability is the label (ties between equal
// probabilities go to the lower class index). r counts from 1. Score i is
// row i's, so the sample weights of the rows are the weights of the scores
// (TopR, WithinTopR and ClassColumn take none).
func TopR(probs []float64, labels []int, k, r int) (scores, outcomes []float64) {
	return rankView(probs, labels, k, r, r-1)
}

// WithinTopR returns the within-top-r scores and outcomes (splines paper
// eq. 5): score_i = the sum of the r largest probabilities of row i (added
// largest first), outcome_i = 1 if the label is among those r classes.
func WithinTopR(probs []float64, labels []int, k, r int) (scores, outcomes []float64) {
	return rankView(probs, labels, k, r, 0)
}

// rankView sums, for each row, the probabilities of the classes ranked
// from..r-1 (0-based, decreasing probability) into the score, with outcome
// 1 when the label is among them.
func rankView(probs []float64, labels []int, k, r, from int) (scores, outcomes []float64) {
	checkR(k, r)
	n := len(labels)
	scores, outcomes = make([]float64, n), make([]float64, n)
	order := make([]int, 0, r)
	for i := range scores {
		row := probs[i*k : (i+1)*k]
		order = ranking(row, r, order)
		for _, c := range order[from:r] {
			scores[i] += row[c]
			if c == labels[i] {
				outcomes[i] = 1
			}
		}
	}
	return scores, outcomes
}

// ClassColumn returns the scores f_ik and outcomes [y_i = k] of class c.
func ClassColumn(probs []float64, labels []int, k, c int) (scores, outcomes []float64) {
	n := len(labels)
	scores, outcomes = make([]float64, n), make([]float64, n)
	for i := range scores {
		scores[i] = probs[i*k+c]
		if labels[i] == c {
			outcomes[i] = 1
		}
	}
	return scores, outcomes
}

func checkR(k, r int) {
	if r < 1 || r > k {
		panic("metric: r outside 1..K")
	}
}

// PerClass is a class-wise metric: the mean over classes (Value), the sum
// and the class terms.
type PerClass struct {
	Value    float64   // mean over the K classes
	Sum      float64   // sum over the K classes
	PerClass []float64 // the K class terms
}

// ClassWiseKS returns the KS calibration error of every class column (scores
// f_k, outcomes [y = k], the sample weights for every column; nil: all 1)
// and their mean and sum over the classes.
func ClassWiseKS(probs []float64, labels []int, k int, weights []float64) PerClass {
	checkRows("ClassWiseKS", probs, nil, labels, k)
	checkWeights("ClassWiseKS", weights, len(labels))
	pc := PerClass{PerClass: make([]float64, k)}
	for c := 0; c < k; c++ {
		s, o := ClassColumn(probs, labels, k, c)
		pc.PerClass[c], _ = KS(s, o, false, weights)
		pc.Sum += pc.PerClass[c]
	}
	pc.Value = pc.Sum / float64(k)
	return pc
}
