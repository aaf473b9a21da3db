package metric

import (
	"fmt"
	"math"
)

// CanonicalBinned is the binned estimate of canonical calibration error on
// the simplex (ECE^KDE paper, section 4 and Fig. 1, generalised to any K):
// each coordinate of [0, 1]^K is cut into B equal parts, a prediction f goes
// to the cell (floor(B f_1), ..., floor(B f_K)) with f_k = 1 mapped to B-1,
// and only occupied cells are stored (a map keyed by cell). H(f) is the mean
// one-hot label of f's cell.
type CanonicalBinned struct {
	B     int // bins per class dimension
	Cells int // occupied cells
	// Value is (1/n) sum_i ||H(f_i) - f_i||_p^p (the paper's per-sample
	// form), for the exponent given to Canonical.
	Value float64
	// MCE is max over cells of max_k |H_k - mean f_k|, the cell means
	// taken over the cell's samples.
	MCE float64
}

// Canonical computes the canonical binned estimate for the exponent p. The
// cells are always equal-width; o.Rule chooses B (Doane on the pooled n×K
// entries, or ceil(sqrt(n)), or o.Bins).
func Canonical(probs []float64, labels []int, k int, p float64, o BinOptions) (*CanonicalBinned, error) {
	n := len(labels)
	if n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("metric: canonical binning: %d probabilities for %d samples of %d classes", len(probs), n, k)
	}
	var b int
	var err error
	if o.Rule == Sqrt {
		b = max(1, int(math.Ceil(math.Sqrt(float64(n)))))
	} else if b, err = o.numBins(probs); err != nil {
		return nil, err
	}
	if b > 1<<16 {
		return nil, fmt.Errorf("metric: canonical binning: %d bins per dimension, at most 65536", b)
	}
	type cell struct {
		count int
		f, y  []float64 // sums of f and of the one-hot labels
	}
	cells := map[string]*cell{}
	keys := make([]string, n)
	key := make([]byte, 2*k)
	for i := 0; i < n; i++ {
		row := probs[i*k : (i+1)*k]
		for m, v := range row {
			c := min(int(math.Floor(float64(b)*v)), b-1)
			key[2*m], key[2*m+1] = byte(c>>8), byte(c)
		}
		ks := string(key)
		keys[i] = ks
		cl := cells[ks]
		if cl == nil {
			cl = &cell{f: make([]float64, k), y: make([]float64, k)}
			cells[ks] = cl
		}
		cl.count++
		for m, v := range row {
			cl.f[m] += v
		}
		cl.y[labels[i]]++
	}
	res := &CanonicalBinned{B: b, Cells: len(cells)}
	for _, cl := range cells {
		for m := range cl.f {
			res.MCE = math.Max(res.MCE, math.Abs(cl.y[m]-cl.f[m])/float64(cl.count))
		}
	}
	for i := 0; i < n; i++ {
		cl := cells[keys[i]]
		for m, v := range probs[i*k : (i+1)*k] {
			res.Value += math.Pow(math.Abs(cl.y[m]/float64(cl.count)-v), p)
		}
	}
	res.Value /= float64(n)
	return res, nil
}
