package smooth_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/calib-dev/calib/smooth"
)

// BenchmarkECE is smECE at the fixed point (about 11 bandwidths) and at a
// given sigma, for the two conventions, on n draws of a miscalibrated
// model.
func BenchmarkECE(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		f, y := draw(n, 5, 0.05)
		for _, c := range []struct {
			name string
			o    smooth.Options
		}{{"fixed-point", smooth.Options{}}, {"sigma=0.05", smooth.Options{Sigma: 0.05}}, {"relplot-1.0.1", smooth.Options{Convention: smooth.Relplot101}}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := smooth.ECE(context.Background(), f, y, nil, c.o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCurve is the diagram with its band of 200 resamples.
func BenchmarkCurve(b *testing.B) {
	f, y := draw(10000, 5, 0.05)
	for b.Loop() {
		if _, err := smooth.NewCurve(context.Background(), f, y, nil, smooth.CurveOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
