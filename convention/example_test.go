package convention_test

import (
	"fmt"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/metric"
)

// One set of confidences, the "ECE" of three libraries: torchmetrics puts
// the confidence of 1 in a bin of its own, Hendrycks' calib_err needs 100
// scores per bin.
func ExampleNewCurve() {
	conf := []float64{0.95, 1, 1, 0.65, 0.8, 0.5}
	correct := []float64{1, 0, 1, 1, 0, 1}
	for _, n := range []convention.Name{convention.Calib, convention.Sklearn, convention.Torchmetrics} {
		c, err := convention.NewCurve(n, conf, correct, nil, 2, metric.EqualWidth)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: ECE %.4f in %d bins\n", n, c.ECE(1), len(c.Bins))
	}
	_, err := convention.NewCurve(convention.Hendrycks, conf, correct, nil, 2, metric.EqualWidth)
	fmt.Println(err)
	// Output:
	// calib: ECE 0.3167 in 2 bins
	// sklearn: ECE 0.3167 in 2 bins
	// torchmetrics: ECE 0.1833 in 3 bins
	// convention hendrycks: 6 scores, fewer than one bin of 100 (calib_err fails): not supported by the library
}
