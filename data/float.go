package data

import (
	"math"
	"strconv"
)

// Float is a float64 that encodes -Inf, +Inf and NaN as null in JSON, so
// that no non-finite number ever reaches an output (a sum of weights past
// the float64 range, an estimate that is undefined).
type Float float64

// MarshalJSON writes the shortest decimal that round-trips, or null.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}
