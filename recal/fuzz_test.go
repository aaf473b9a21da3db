package recal

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzLoad: Load never panics, and its errors wrap ErrInput. A map it
// accepts (K up to 64 here) maps fixed rows of its K, probabilities and
// logits, to finite rows summing to 1 within 1e-9, or returns an error
// wrapping ErrInput; and it saves and loads back to the same bytes. The
// seeds are every method's map as Save writes it and a few broken ones.
func FuzzLoad(f *testing.F) {
	for _, c := range fitAll(f, 200) {
		var b bytes.Buffer
		if err := Save(&b, c); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema_version":1,"method":"temperature","input":"logits","k":3,"temperature":-1}`))
	f.Add([]byte(`{"schema_version":1,"method":"log-spline","input":"probs","k":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Load(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v does not wrap ErrInput", err)
			}
			return
		}
		k := c.Info().K
		if k < 2 || k > 64 {
			return
		}
		p, z, _ := logitSet(5, k, 2)
		out, err := c.Calibrate(p, z, k)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("Calibrate: error %v does not wrap ErrInput", err)
			}
		} else {
			if i, s := notDistribution(out, k, 1e-9); i >= 0 {
				t.Fatalf("row %d sums to %v: %v", i, s, out[i*k:(i+1)*k])
			}
		}
		var b1, b2 bytes.Buffer
		if err := Save(&b1, c); err != nil {
			t.Fatalf("Save: %v", err)
		}
		c2, err := Load(bytes.NewReader(b1.Bytes()))
		if err != nil {
			t.Fatalf("a saved map does not load: %v\n%s", err, b1.Bytes())
		}
		if err := Save(&b2, c2); err != nil || !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatalf("save, load, save differs (%v):\n%s\n%s", err, b1.Bytes(), b2.Bytes())
		}
	})
}
