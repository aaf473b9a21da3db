package train

import (
	"errors"
	"fmt"
	"math"
)

// Model is a trained MLP in plain data: the standardisation of the inputs
// and the dense layers, enough to compute its logits without GoMLX. It is
// what `calib train` saves in model.json.
type Model struct {
	D, K int
	// Mean and Scale standardise a feature row: (x - Mean) / Scale.
	Mean, Scale []float64
	// Dense are the layers in order; every layer but the first is
	// preceded by a ReLU (GoMLX's fnn layout).
	Dense []Dense
}

// Dense is one affine layer: out = in · W + B, W row-major In×Out.
type Dense struct {
	In, Out int
	W, B    []float64
}

// Logits returns the N×K logits of n raw (unstandardised) feature rows x
// (n×D, row-major). Dropout is off, as at evaluation.
func (m *Model) Logits(x []float64, n int) ([]float64, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if n < 0 || len(x) != n*m.D {
		return nil, fmt.Errorf("train: %d values for %d rows of %d features", len(x), n, m.D)
	}
	out := make([]float64, 0, n*m.K)
	var cur, next []float64
	for r := 0; r < n; r++ {
		cur = cur[:0]
		for c, v := range x[r*m.D : (r+1)*m.D] {
			cur = append(cur, (v-m.Mean[c])/m.Scale[c])
		}
		for l, d := range m.Dense {
			if l > 0 {
				for i, v := range cur {
					cur[i] = math.Max(v, 0)
				}
			}
			next = append(next[:0], d.B...)
			for i, v := range cur {
				if v == 0 {
					continue
				}
				for o, w := range d.W[i*d.Out : (i+1)*d.Out] {
					next[o] += v * w
				}
			}
			cur, next = next, cur
		}
		out = append(out, cur...)
	}
	return out, nil
}

// check validates the shapes of the layers.
func (m *Model) check() error {
	if m.D < 1 || m.K < 2 || len(m.Mean) != m.D || len(m.Scale) != m.D || len(m.Dense) == 0 {
		return errors.New("train: model has inconsistent dimensions")
	}
	in := m.D
	for l, d := range m.Dense {
		if d.In != in || len(d.W) != d.In*d.Out || len(d.B) != d.Out {
			return fmt.Errorf("train: model layer %d has inconsistent dimensions", l)
		}
		in = d.Out
	}
	if in != m.K {
		return fmt.Errorf("train: model's last layer has %d outputs for K = %d", in, m.K)
	}
	return nil
}
