package convention

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/numpy"
	"github.com/calib-dev/calib/metric"
)

// GCEOptions are the options of robustness_metrics'
// GeneralCalibrationError that GCE reproduces (its datapoints_per_bin is
// left out).
type GCEOptions struct {
	// Bins is num_bins; 0 means None: the bins of the monotonic sweep
	// (metric.MonotonicSweep), re-cut at the midpoints between
	// neighbouring bins' scores (_get_bin_edges).
	Bins int
	// Adaptive is binning_scheme "adaptive" (equal mass: upper edges the
	// sorted scores at indices round_half_even(b n / B), b = 1..B-1,
	// then 1); otherwise "even" (upper edges b/B).
	Adaptive bool
	// ClassConditional and MaxProb are the code's flags: class-conditional
	// without max_prob bins each class's column against its indicator
	// (Nixon et al.'s ACE, SCE), with max_prob the class's column over the
	// rows that predict it; not class-conditional with max_prob bins the
	// top-label confidence, without it every probability pooled.
	ClassConditional, MaxProb bool
	// Threshold keeps the probabilities strictly above it (0: all but the
	// probabilities of exactly 0).
	Threshold float64
	// L2 is norm "l2" (squared gaps, the root of the total); else "l1".
	L2 bool
}

// GCE returns robustness_metrics' GeneralCalibrationError(o) of the n×k
// probabilities (k = 1: p1 of binary input, read as [1-p1, p1]) and
// labels, as its update_state and result compute it: each slice of
// scores (a class's, or the pooled or top-label one) is binned by
// np.digitize on the upper edges (a score equal to an edge goes to the
// upper bin; a score of 1 to a bin of its own past the last), eps =
// 2^-52 is added to every count, and
//
//	term = sum_b ((c_b + eps)/n_s) |acc_b - conf_b|^q,  acc_b = (sum of outcomes)/(c_b + eps)
//
// (q = 1, or 2 for l2; n_s the slice's size; 0 for an empty slice);
// class-conditional terms are divided by K and summed; l2 returns the
// root of the result. Nixon et al.'s ACE is the registered "ace"
// (Adaptive, ClassConditional, Threshold 0, Bins 30); TACE the paper's
// Threshold 0.01 (the registered "tace" never passes its threshold on
// and equals "ace"); "msce" is Adaptive, MaxProb, Bins 0.
func GCE(probs []float64, labels []int, k int, o GCEOptions) (float64, error) {
	if k < 1 || len(probs) != len(labels)*k {
		panic("convention: GCE: length mismatch")
	}
	if o.Bins < 0 {
		return 0, fmt.Errorf("convention: GCE with %d bins", o.Bins)
	}
	if k == 1 {
		two := make([]float64, 2*len(labels))
		for i, v := range probs {
			two[2*i], two[2*i+1] = 1-v, v
		}
		probs, k = two, 2
	}
	n := len(labels)
	hit := func(i, j int) float64 {
		if labels[i] == j {
			return 1
		}
		return 0
	}
	argmax := func(i int) int { return mathx.Argmax(probs[i*k : (i+1)*k]) }
	var total float64
	if !o.ClassConditional {
		var x, y []float64
		for i := range n {
			if o.MaxProb {
				a := argmax(i)
				if v := probs[i*k+a]; v > o.Threshold {
					x, y = append(x, v), append(y, hit(i, a))
				}
				continue
			}
			for j := range k {
				if v := probs[i*k+j]; v > o.Threshold {
					x, y = append(x, v), append(y, hit(i, j))
				}
			}
		}
		total = gceTerm(x, y, o)
	} else {
		parts := make([]float64, k)
		for j := range k {
			var x, y []float64
			for i := range n {
				if o.MaxProb && argmax(i) != j {
					continue
				}
				if v := probs[i*k+j]; v > o.Threshold {
					x, y = append(x, v), append(y, hit(i, j))
				}
			}
			parts[j] = gceTerm(x, y, o) / float64(k)
		}
		total = numpy.Sum(parts)
	}
	if o.L2 {
		total = math.Sqrt(total)
	}
	return total, nil
}

// gceTerm is _get_upper_bounds then _get_calibration_error of one slice.
func gceTerm(x, y []float64, o GCEOptions) float64 {
	m := len(x)
	if m == 0 {
		return 0
	}
	var ub []float64
	switch {
	case o.Bins == 0:
		ub = sweepEdges(x, y, o.Adaptive)
	case o.Adaptive:
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		step := float64(m) / float64(o.Bins) // np.linspace(0, m, B, endpoint=False)
		for b := 1; b < o.Bins; b++ {
			ub = append(ub, sorted[min(int(math.RoundToEven(float64(b)*step)), m-1)])
		}
		ub = append(ub, 1)
	default:
		ub = numpy.Linspace(0, 1, o.Bins+1)[1:] // np.histogram_bin_edges([], B, (0, 1))[1:]
	}
	nb := o.Bins
	for _, v := range x {
		nb = max(nb, countAtMost(ub, v)+1)
	}
	sums, counts, hits := make([]float64, nb), make([]float64, nb), make([]float64, nb)
	for i, v := range x {
		b := countAtMost(ub, v)
		sums[b] += v
		counts[b]++
		hits[b] += y[i]
	}
	const eps = 0x1p-52
	terms := make([]float64, nb)
	for b := range counts {
		c := counts[b] + eps
		d := hits[b]/c - sums[b]/c
		if o.L2 {
			d *= d
		}
		terms[b] = math.Abs(d * (c / float64(m)))
	}
	return numpy.Sum(terms)
}

// sweepEdges is _get_mon_sweep_bins: the monotonic sweep's bins (of the
// slice's scores against its outcomes) as upper edges: for the bins
// present in order, the midpoint between a bin's smallest score and the
// previous bin's largest, then the largest score.
func sweepEdges(x, y []float64, adaptive bool) []float64 {
	b := metric.EqualWidth
	if adaptive {
		b = metric.EqualMass
	}
	s, err := metric.MonotonicSweep(x, y, nil, b)
	if err != nil {
		return []float64{1}
	}
	lo, hi := make([]float64, s.Bins), make([]float64, s.Bins)
	seen := make([]bool, s.Bins)
	for i, a := range s.Assign {
		if !seen[a] {
			lo[a], hi[a], seen[a] = x[i], x[i], true
			continue
		}
		lo[a], hi[a] = min(lo[a], x[i]), max(hi[a], x[i])
	}
	var edges []float64
	prevMax, first := 0.0, true
	for a := range s.Bins {
		if !seen[a] {
			continue
		}
		if first {
			edges = append(edges, lo[a])
			first = false
		} else {
			edges = append(edges, lo[a]*.5+prevMax*.5)
		}
		prevMax = hi[a]
	}
	edges = append(edges, prevMax)
	return edges[1:]
}

// TopLabelACE returns torch-uncertainty's AdaptiveCalibrationError: the
// confidences sorted (ties by input order; torch.sort leaves them
// unspecified) and cut by position into B chunks (torch.tensor_split: the
// first n mod B chunks one longer), and sum_b (n_b/n) |acc_b - conf_b|^p
// (its l1; l2 is the root of the p = 2 value; its "max" is MaxChunk).
// Fewer scores than bins leave empty chunks, which torch-uncertainty
// turns into NaN: an error here. Computed in float64, where
// torch-uncertainty casts to float32.
func TopLabelACE(scores, outcomes []float64, bins int, p float64) (float64, float64, error) {
	if len(scores) != len(outcomes) {
		panic("convention: TopLabelACE: length mismatch")
	}
	n := len(scores)
	if bins < 1 || n < bins {
		return 0, 0, fmt.Errorf("convention: torch_uncertainty's ACE: %d scores in %d bins leave a bin empty (NaN there): %w", n, bins, ErrUnsupported)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	v, mx := 0.0, 0.0
	start := 0
	for b := range bins {
		size := n / bins
		if b < n%bins {
			size++
		}
		var sx, sy float64
		for _, i := range idx[start : start+size] {
			sx += scores[i]
			sy += outcomes[i]
		}
		start += size
		d := math.Abs(sy/float64(size) - sx/float64(size))
		v += math.Pow(d, p) * (float64(size) / float64(n))
		mx = max(mx, d)
	}
	return v, mx, nil
}
