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
