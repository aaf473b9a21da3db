package metric_test

import (
	"fmt"

	"github.com/calib-dev/calib/metric"
)

// Example computes the top-label view of four predictions, its binned ECE
// (two equal-width bins) and KS error, and the proper scores. By hand: one
// bin holds all four (mean confidence 0.75, accuracy 0.75: ECE 0); sorted
// by confidence the cumulative gaps are -0.4, -0.7, 0.1, 0 over n = 4 (KS
// 0.175); Brier (0.02 + 1.28 + 0.18 + 0.32)/4 = 0.45.
func Example() {
	probs := []float64{0.9, 0.1, 0.8, 0.2, 0.3, 0.7, 0.6, 0.4}
	labels := []int{0, 1, 1, 0}
	scores, correct := metric.TopR(probs, labels, 2, 1)
	bins, err := metric.BinScores(scores, correct, nil, metric.BinOptions{Bins: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	ks, _ := metric.KS(scores, correct, false, nil)
	fmt.Println("confidence", scores, "correct", correct)
	fmt.Printf("ECE %.4f, KS %.4f, Brier %.4f, accuracy %.2f\n", bins.ECE(1), ks, metric.Brier(probs, labels, 2, nil), metric.Accuracy(probs, labels, 2, nil))
	// Output:
	// confidence [0.9 0.8 0.7 0.6] correct [1 0 1 1]
	// ECE 0.0000, KS 0.1750, Brier 0.4500, accuracy 0.75
}

// Example_weighted weights the four predictions of Example by 2, 1, 1 and
// 0, as if the first were seen twice and the last not at all. By hand (W =
// 4): the bin's mean confidence is (1.8 + 0.8 + 0.7)/4 = 0.825 and its
// accuracy (2 + 0 + 1)/4 = 0.75 (ECE 0.075); sorted by confidence the
// cumulative gaps are 0, 0.3, 0.5, 0.3 over W = 4 (KS 0.125); Brier (2 *
// 0.02 + 1.28 + 0.18)/4 = 0.375.
func Example_weighted() {
	probs := []float64{0.9, 0.1, 0.8, 0.2, 0.3, 0.7, 0.6, 0.4}
	labels := []int{0, 1, 1, 0}
	weights := []float64{2, 1, 1, 0}
	scores, correct := metric.TopR(probs, labels, 2, 1)
	bins, err := metric.BinScores(scores, correct, weights, metric.BinOptions{Bins: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	ks, _ := metric.KS(scores, correct, false, weights)
	fmt.Printf("ECE %.4f, KS %.4f, Brier %.4f, accuracy %.2f\n", bins.ECE(1), ks, metric.Brier(probs, labels, 2, weights), metric.Accuracy(probs, labels, 2, weights))
	// Output:
	// ECE 0.0750, KS 0.1250, Brier 0.3750, accuracy 0.75
}

// Two shards of predictions binned separately and merged give the binned
// ECE of all the rows; KS sums bracket the KS error. By hand: each of the
// five scores has its own bin, so ECE = (0.45 + 0.65 + 0.2 + 0.1 + 0.05) /
// 5 = 0.29; sorted by score the cumulative gaps are -0.45, 0.2, 0, -0.1,
// -0.15 over n = 5 (KS 0.09), and with one sample per cell the interval is
// exact.
func ExampleBinSums() {
	shardA := [][]float64{{0.9, 0.8, 0.65}, {1, 1, 0}} // top-label scores, then outcomes
	shardB := [][]float64{{0.55, 0.95}, {1, 1}}
	total, _ := metric.NewBinSums(metric.BinOptions{Bins: 10})
	ks, _ := metric.NewKSSums(0)
	for _, sh := range [][][]float64{shardA, shardB} {
		part, _ := metric.NewBinSums(metric.BinOptions{Bins: 10})
		_ = part.Add(sh[0], sh[1], nil)
		_ = total.Merge(part) // parts may come from other processes (encoding/json)
		_ = ks.Add(sh[0], sh[1], nil)
	}
	all, _ := metric.BinScores([]float64{0.9, 0.8, 0.65, 0.55, 0.95}, []float64{1, 1, 0, 1, 1}, nil, metric.BinOptions{Bins: 10})
	lo, hi := ks.Interval()
	fmt.Printf("merged ECE %.4f, in memory %.4f; KS in [%.4f, %.4f]\n", total.Bins().ECE(1), all.ECE(1), lo, hi)
	// Output: merged ECE 0.2900, in memory 0.2900; KS in [0.0900, 0.0900]
}
