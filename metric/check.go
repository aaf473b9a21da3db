package metric

import (
	"fmt"
	"math"
)

// The checks of decoded sums against the stream they belong to (a stream
// of n rows of total weight w): a state read from a file or another
// process must agree with its own counts before it is merged or finished.
// Each error names the field, as the JSON form spells it.

// closeTotals reports whether two weight totals agree to rounding.
func closeTotals(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b), 1e-291)
}

// Check reports whether the score sums are those of n rows of total
// weight w and K classes: every sum within its range, the label weights K
// and summing to w.
func (ss *ScoreSums) Check(n int64, w float64, k int) error {
	sc := &ss.st
	switch {
	case int64(sc.N) != n:
		return fmt.Errorf("n = %d, n = %d", sc.N, n)
	case !closeTotals(sc.W, w):
		return fmt.Errorf("weight_sum = %v, the rows' weight %v", sc.W, w)
	case !(sc.Correct >= 0 && sc.Correct <= w*(1+1e-9)):
		return fmt.Errorf("correct_sum = %v: want 0 to the weight total %v", sc.Correct, w)
	case !(sc.Conf >= 0 && sc.Conf <= w*(1+1e-9)):
		return fmt.Errorf("confidence_sum = %v: want 0 to the weight total %v", sc.Conf, w)
	case !(sc.Brier >= 0 && sc.Brier <= 2*w*(1+1e-9)):
		return fmt.Errorf("brier_sum = %v: want 0 to twice the weight total %v", sc.Brier, w)
	case !(sc.NLL >= 0):
		return fmt.Errorf("nll_sum = %v: want >= 0", sc.NLL)
	case sc.Label != nil && len(sc.Label) != k:
		return fmt.Errorf("label_weight: %d entries for K = %d", len(sc.Label), k)
	}
	if sc.Label != nil {
		sum := 0.0
		for c, v := range sc.Label {
			if !(v >= 0) {
				return fmt.Errorf("label_weight[%d] = %v", c, v)
			}
			sum += v
		}
		if !closeTotals(sum, w) {
			return fmt.Errorf("label_weight sums to %v, the rows' weight %v", sum, w)
		}
	}
	return nil
}

// Check reports whether the bin sums are those of bins bins over n rows
// of total weight w: the arrays' sizes, every bin's count, mass and sums
// within range, and no more rows or weight in the bins than in all.
func (bs *BinSums) Check(bins int, n int64, w float64) error {
	b := &bs.st
	if len(b.Edges) != bins+1 || len(b.Count) != bins || len(b.Mass) != bins || len(b.Score) != bins || len(b.Freq) != bins {
		return fmt.Errorf("%d edges and %d counts for %d bins", len(b.Edges), len(b.Count), bins)
	}
	if int64(b.N) != n || !closeTotals(b.W, w) {
		return fmt.Errorf("n = %d, weight %v; the sums' n = %d, weight %v", b.N, b.W, n, w)
	}
	c, m := 0, 0.0
	for i := range b.Count {
		if b.Count[i] < 0 || !(b.Mass[i] >= 0) || !(b.Score[i] >= 0 && b.Score[i] <= b.Mass[i]*(1+1e-9)) || !(b.Freq[i] >= 0 && b.Freq[i] <= b.Mass[i]*(1+1e-9)) {
			return fmt.Errorf("bin %d: count %d, mass %v, score sum %v, outcome sum %v", i, b.Count[i], b.Mass[i], b.Score[i], b.Freq[i])
		}
		c, m = c+b.Count[i], m+b.Mass[i]
	}
	if c > b.N || !(m <= w*(1+1e-9)+1e-300) {
		return fmt.Errorf("the bins hold %d rows of weight %v, more than the %d rows of weight %v", c, m, b.N, w)
	}
	return nil
}

// Check reports whether the KS sums are those of cells cells over n rows
// of total weight w.
func (ks *KSSums) Check(cells int, n int64, w float64) error {
	if int64(ks.st.N) != n || ks.st.Cells != cells || !closeTotals(ks.st.W, w) {
		return fmt.Errorf("n = %d, %d cells, weight %v; the sums' n = %d, %d cells, weight %v", ks.st.N, ks.st.Cells, ks.st.W, n, cells, w)
	}
	return nil
}

// Check reports whether the cell sums are those of K classes, b bins per
// coordinate and n rows.
func (cs *CellSums) Check(k, b int, n int64) error {
	if cs.st.K != k || cs.st.B != b || int64(cs.st.N) != n {
		return fmt.Errorf("of K = %d, %d bins, n = %d; the sums' K = %d, %d bins, n = %d", cs.st.K, cs.st.B, cs.st.N, k, b, n)
	}
	return nil
}

// B returns the number of cells per coordinate.
func (cs *CellSums) B() int { return cs.st.B }

// Limit returns the largest number of occupied cells kept (0: no limit).
func (cs *CellSums) Limit() int { return cs.st.Limit }

// SetLimit sets the largest number of occupied cells kept (0: no limit);
// past it the cells are dropped and Overflowed reports it.
func (cs *CellSums) SetLimit(n int) { cs.st.Limit = n }

// Overflowed reports whether more cells were occupied than Limit.
func (cs *CellSums) Overflowed() bool { return cs.st.Overflow }

// Occupied returns the number of occupied cells kept.
func (cs *CellSums) Occupied() int { return len(cs.st.Cells) }

// N returns the number of rows added (merged shards' included).
func (cs *CellSums) N() int { return cs.st.N }
