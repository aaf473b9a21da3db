package mathx

import "math"

// Finite reports whether every value of xs is finite: neither NaN nor ±Inf
// (true for none).
func Finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
