package metric

import (
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// CanonicalBinned is the binned estimate of canonical calibration error on
// the simplex (ECE^KDE paper, section 4 and Fig. 1, generalised to any K):
// each coordinate of [0, 1]^K is cut into B equal parts, a prediction f goes
// to the cell (floor(B f_1), ..., floor(B f_K)) with f_k = 1 mapped to B-1,
// and only occupied cells are stored (a map keyed by cell). In cell c of
// mass W_c = sum_{i in c} w_i, H_c is the weighted mean one-hot label
// sum_{i in c} w_i e_{y_i} / W_c and fbar_c the weighted mean prediction
// sum_{i in c} w_i f_i / W_c (nil weights: all 1, W_c = n_c). A cell of
// mass 0 (only samples of weight 0) counts as empty.
type CanonicalBinned struct {
	B     int // bins per class dimension
	Cells int // occupied cells (mass > 0)
	// Value is sum_c (W_c/W) ||H_c - fbar_c||_p^p, W the total weight, the
	// bin-mean form of the top-label and class-wise binned errors. (The
	// paper's section 4 writes the per-sample form (1/n) sum_i ||H(f_i) -
	// f_i||_p^p, which keeps a floor of the order of K/(4B) from the
	// spread of f inside the cells even for perfectly calibrated
	// predictions; the bin-mean form goes to 0 with n for them.)
	Value float64
	// MCE is max over cells of max_k |H_k - mean f_k|, the cell means
	// taken over the cell's samples.
	MCE float64
	// MCECount is the number of samples (rows, whatever their weight) in
	// the cell where MCE is attained (the first such cell): with one or
	// two, MCE is the label noise of single samples.
	MCECount int
}

// Canonical computes the canonical binned estimate for the exponent p with
// the sample weights (nil: all 1). The cells are always equal-width;
// o.Rule chooses B (Doane on the pooled n×K entries, each sample's weight
// repeated for its K entries; ceil(sqrt(W)) for Sqrt, W the total weight;
// or o.Bins). Bad weights are an error wrapping data.ErrWeights (see
// BinScores).
func Canonical(probs []float64, labels []int, k int, p float64, weights []float64, o BinOptions) (*CanonicalBinned, error) {
	c, err := AssignCells(probs, labels, k, weights, o)
	if err != nil {
		return nil, err
	}
	return c.Estimate(p, nil), nil
}

// Cells is the cell of every prediction of a sample, kept so that bootstrap
// resamples can be summarised in O(nK) (exact when B does not depend on the
// sample: the Fixed rule, and the Sqrt rule without weights).
type Cells struct {
	probs   []float64
	labels  []int
	weights []float64 // nil: all 1
	k, b    int
	cell    []int // cell index of each sample
	ncells  int
}

// AssignCells finds the cell of every prediction; the weights (nil: all 1)
// are kept for Estimate. Bad weights are an error wrapping data.ErrWeights.
func AssignCells(probs []float64, labels []int, k int, weights []float64, o BinOptions) (*Cells, error) {
	n := len(labels)
	if n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("metric: canonical binning: %d probabilities for %d samples of %d classes", len(probs), n, k)
	}
	if err := mathx.CheckWeights(weights, n); err != nil {
		return nil, fmt.Errorf("metric: canonical binning: %w", err)
	}
	var b int
	var err error
	if o.Rule == Sqrt {
		b = sqrtBins(float64(mathx.PositiveRows(weights, n))) // weights normalised to mean 1 sum to the rows of positive weight
	} else if b, err = o.numBins(probs, repeatWeights(weights, k)); err != nil {
		return nil, err
	}
	if b > 1<<16 {
		return nil, fmt.Errorf("metric: canonical binning: %d bins per dimension, at most 65536", b)
	}
	c := &Cells{probs: probs, labels: labels, weights: weights, k: k, b: b, cell: make([]int, n)}
	ids := map[string]int{}
	key := make([]byte, 2*k)
	for i := 0; i < n; i++ {
		for m, v := range probs[i*k : (i+1)*k] {
			x := min(int(math.Floor(float64(b)*v)), b-1)
			key[2*m], key[2*m+1] = byte(x>>8), byte(x)
		}
		id, ok := ids[string(key)]
		if !ok {
			id = len(ids)
			ids[string(key)] = id
		}
		c.cell[i] = id
	}
	c.ncells = len(ids)
	return c, nil
}

// repeatWeights returns each weight repeated k times (the weights of the
// n×k entries of a matrix), or nil for nil.
func repeatWeights(w []float64, k int) []float64 {
	if w == nil {
		return nil
	}
	r := make([]float64, 0, len(w)*k)
	for _, v := range w {
		for range k {
			r = append(r, v)
		}
	}
	return r
}

// Estimate returns the estimate on the samples idx (repeats allowed; nil
// means all), each with its weight (a row drawn twice counts twice).
func (c *Cells) Estimate(p float64, idx []int) *CanonicalBinned {
	k := c.k
	if idx == nil {
		idx = make([]int, len(c.labels))
		for i := range idx {
			idx[i] = i
		}
	}
	count := make([]int, c.ncells)
	mass := make([]float64, c.ncells)
	f, y := make([]float64, c.ncells*k), make([]float64, c.ncells*k)
	total := float64(len(idx))
	if c.weights != nil {
		total = 0
	}
	if c.weights == nil {
		for _, i := range idx {
			id := c.cell[i]
			count[id]++
			for m, v := range c.probs[i*k : (i+1)*k] {
				f[id*k+m] += v
			}
			y[id*k+c.labels[i]]++
		}
		for id, n := range count {
			mass[id] = float64(n)
		}
	} else {
		for _, i := range idx {
			id := c.cell[i]
			w := c.weights[i]
			count[id]++
			total += w
			mass[id] += w
			for m, v := range c.probs[i*k : (i+1)*k] {
				f[id*k+m] += w * v
			}
			y[id*k+c.labels[i]] += w
		}
	}
	res := &CanonicalBinned{B: c.b}
	for id, w := range mass {
		if !(w > 0) {
			continue
		}
		res.Cells++
		for m := 0; m < k; m++ {
			d := math.Abs(y[id*k+m]-f[id*k+m]) / w
			if d > res.MCE {
				res.MCE, res.MCECount = d, count[id]
			}
			res.Value += w * math.Pow(d, p)
		}
	}
	res.Value /= total
	return res
}
