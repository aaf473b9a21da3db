package mathx

import (
	"math"
	"testing"
)

// TestFinite: NaN and both infinities are not finite; no value is.
func TestFinite(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want bool
	}{
		{nil, true}, {[]float64{0, -1, math.MaxFloat64, math.SmallestNonzeroFloat64}, true},
		{[]float64{1, math.NaN()}, false}, {[]float64{math.Inf(1)}, false}, {[]float64{2, math.Inf(-1)}, false},
	} {
		if got := Finite(c.xs...); got != c.want {
			t.Errorf("Finite(%v) = %v", c.xs, got)
		}
	}
}
