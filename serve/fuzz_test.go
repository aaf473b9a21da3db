package serve

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// FuzzDecodeMatrix: any bytes decode to rows or a RequestError, never a
// panic; decoded rows are finite, n x cols, within the row bound.
func FuzzDecodeMatrix(f *testing.F) {
	for _, s := range []string{`[[0.2, 0.8], [0.5, 0.5]]`, `[0.1, 0.9]`, `[]`, `[[]]`, `[[1], [1, 2]]`, `["NaN"]`, `[1e999]`, `null`, `{"a": 1}`, `[[[1]]]`, `[-0, 1E-400]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMatrix(json.RawMessage(b), "probs", 50)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: %T %v, want a RequestError", b, err, err)
			}
			return
		}
		if m.n < 1 || m.cols < 1 || len(m.values) != m.n*m.cols || m.n > 50 {
			t.Fatalf("%q: %d rows of %d, %d values", b, m.n, m.cols, len(m.values))
		}
		for _, v := range m.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %v", b, v)
			}
		}
	})
}

// FuzzTensorData: any bytes give the shape's number of finite values or a
// RequestError, never a panic; FP32 values are float32s.
func FuzzTensorData(f *testing.F) {
	for _, s := range []string{`[[0.2, 0.8], [0.5, 0.5]]`, `[0.2, 0.8, 0.5, 0.5]`, `[[0.2], 0.8, [0.5, 0.5]]`, `[1e39, 0, 0, 0]`, `[[[[1]]]]`, `"x"`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, fp32 bool) {
		x, err := tensorData(json.RawMessage(b), "data", 2, 2, fp32)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: %T %v, want a RequestError", b, err, err)
			}
			return
		}
		if len(x) != 4 {
			t.Fatalf("%q: %d values", b, len(x))
		}
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) || (fp32 && v != float64(float32(v))) {
				t.Fatalf("%q: %v", b, v)
			}
		}
	})
}
