package calibtest_test

import (
	"fmt"

	"github.com/calib-dev/calib/calibtest"
)

// Test whether confidences are calibrated: the cumulative-difference
// (Kolmogorov-Smirnov, Kuiper) and Spiegelhalter tests with their p-values.
func Example() {
	scores := []float64{0.9, 0.8, 0.95, 0.7, 0.85, 0.6, 0.99, 0.75}
	correct := []float64{1, 1, 1, 0, 1, 1, 1, 0}
	c, err := calibtest.Cumulative(scores, correct, nil)
	if err != nil {
		panic(err)
	}
	s, _ := calibtest.Spiegelhalter(scores, correct, nil)
	fmt.Printf("KS %.3f (p = %.3f), Kuiper %.3f (p = %.3f), Spiegelhalter z %.3f (p = %.3f)\n", c.KS, c.KSP, c.Kuiper, c.KuiperP, s.Z, s.P)
	fmt.Println("class-wise, Holm-adjusted:", calibtest.Holm([]float64{0.01, 0.2, 0.04}))
	// Output:
	// KS 1.014 (p = 0.617), Kuiper 1.400 (p = 0.605), Spiegelhalter z 0.383 (p = 0.702)
	// class-wise, Holm-adjusted: [0.03 0.2 0.08]
}
