package smooth_test

import (
	"context"
	"fmt"

	"github.com/calib-dev/calib/smooth"
)

// The smooth ECE of an over-confident model's scores: at its fixed point
// sigma* (relplot's smECE) and at a given bandwidth (smECE_sigma).
func ExampleECE() {
	f := []float64{0.95, 0.9, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.55, 0.99}
	y := []float64{1, 1, 0, 1, 0, 1, 0, 0, 1, 1}
	r, err := smooth.ECE(context.Background(), f, y, nil, smooth.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("smECE %.4f at sigma* %.4f (%d bandwidths)\n", r.Value, r.Sigma, r.Evaluations)
	r, _ = smooth.ECE(context.Background(), f, y, nil, smooth.Options{Sigma: 0.05})
	fmt.Printf("smECE %.4f at sigma 0.05\n", r.Value)
	// Output:
	// smECE 0.2000 at sigma* 0.2002 (11 bandwidths)
	// smECE 0.2240 at sigma 0.05
}
