package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/metric"
)

// RowRange is a run of rows [From, To) of one source (a shard's name, as
// Batch.Source) that a Sums has added. Sums keep them so that the same
// rows cannot be added twice (a shard's sums merged with a copy of
// themselves doubled n) and so that a decoded Sums can be checked: the
// ranges hold exactly N rows.
type RowRange struct {
	Source   string `json:"source"`
	From, To int64
}

// rowsOverlap returns an error naming the rows [from, to) of source when
// rs (sorted by source, then From) holds any of them, and the index at
// which a range starting at from would go.
func rowsOverlap(rs []RowRange, source string, from, to int64) (int, error) {
	i, _ := slices.BinarySearchFunc(rs, RowRange{Source: source, From: from}, compareRanges)
	if i > 0 && rs[i-1].Source == source && rs[i-1].To > from || i < len(rs) && rs[i].Source == source && rs[i].From < to {
		return i, fmt.Errorf("rows %d to %d of %s were added before: the same rows twice (a shard's sums merged with themselves?)", from+1, to, source)
	}
	return i, nil
}

// addRows records the rows [from, to) of source in rs, at index i from
// rowsOverlap (sorted by source, then From; adjacent runs joined), and
// returns the new list.
func addRows(rs []RowRange, i int, source string, from, to int64) []RowRange {
	if to <= from {
		return rs
	}
	joinPrev := i > 0 && rs[i-1].Source == source && rs[i-1].To == from
	joinNext := i < len(rs) && rs[i].Source == source && rs[i].From == to
	switch {
	case joinPrev && joinNext:
		rs[i-1].To = rs[i].To
		return slices.Delete(rs, i, i+1)
	case joinPrev:
		rs[i-1].To = to
		return rs
	case joinNext:
		rs[i].From = from
		return rs
	}
	return slices.Insert(rs, i, RowRange{Source: source, From: from, To: to})
}

// mergeRows returns the ranges of a and b (each sorted, without overlap)
// in one sorted list, adjacent runs joined, in O(len(a) + len(b)), or an
// error naming rows that both hold.
func mergeRows(a, b []RowRange) ([]RowRange, error) {
	out := make([]RowRange, 0, len(a)+len(b))
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var r RowRange
		if j >= len(b) || i < len(a) && compareRanges(a[i], b[j]) <= 0 {
			r, i = a[i], i+1
		} else {
			r, j = b[j], j+1
		}
		if n := len(out); n > 0 && out[n-1].Source == r.Source {
			last := &out[n-1]
			switch {
			case last.To > r.From:
				return nil, fmt.Errorf("rows %d to %d of %s were added before: the same rows twice (a shard's sums merged with themselves?)", r.From+1, min(r.To, last.To), r.Source)
			case last.To == r.From:
				last.To = r.To
				continue
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func compareRanges(a, b RowRange) int {
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return cmp.Compare(a.From, b.From)
}

// near says whether a and b agree to the rounding of sums added in
// another order (relative 1e-9 of the larger, or 1e-300).
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b), 1e-291)
}

// checkState checks a decoded, started Sums for consistency: the row
// ranges against n, every count against n, every weight total against w,
// the score sums against their ranges, the arrays against the
// configuration and K, the sample against its capacity and K. Each
// error names the field.
func (s *Sums) checkState() error {
	c := s.st.Config
	if s.st.N < 1 {
		return fmt.Errorf("n = %d: started sums hold at least one row", s.st.N)
	}
	var rows int64
	for i, r := range s.st.Rows {
		if r.From < 0 || r.To <= r.From || i > 0 && compareRanges(s.st.Rows[i-1], r) >= 0 {
			return fmt.Errorf("rows: range %d (%s, %d to %d) out of order or empty", i, r.Source, r.From, r.To)
		}
		if i > 0 && s.st.Rows[i-1].Source == r.Source && s.st.Rows[i-1].To > r.From {
			return fmt.Errorf("rows: ranges of %s overlap", r.Source)
		}
		rows += r.To - r.From
	}
	if rows != s.st.N {
		return fmt.Errorf("n = %d, but the row ranges hold %d rows", s.st.N, rows)
	}
	if s.st.Pos < 0 || s.st.Pos > s.st.N || !s.st.Weighted && s.st.Pos != s.st.N {
		return fmt.Errorf("pos = %d: want the rows of positive weight, 0 to n = %d (n without weights)", s.st.Pos, s.st.N)
	}
	w := s.total()
	if !(w >= 0) || math.IsInf(w, 0) || !s.st.Weighted && s.st.W != 0 && s.st.W != float64(s.st.N) {
		return fmt.Errorf("w = %v: want a finite weight total >= 0 (n without weights)", s.st.W)
	}
	sc := s.st.Scores
	switch {
	case int64(sc.N) != s.st.N:
		return fmt.Errorf("scores.n = %d, n = %d", sc.N, s.st.N)
	case !near(sc.W, w):
		return fmt.Errorf("scores.weight_sum = %v, the rows' weight %v", sc.W, w)
	case !(sc.Correct >= 0 && sc.Correct <= w*(1+1e-9)):
		return fmt.Errorf("scores.correct_sum = %v: want 0 to the weight total %v", sc.Correct, w)
	case !(sc.Conf >= 0 && sc.Conf <= w*(1+1e-9)):
		return fmt.Errorf("scores.confidence_sum = %v: want 0 to the weight total %v", sc.Conf, w)
	case !(sc.Brier >= 0 && sc.Brier <= 2*w*(1+1e-9)):
		return fmt.Errorf("scores.brier_sum = %v: want 0 to twice the weight total %v", sc.Brier, w)
	case !(sc.NLL >= 0):
		return fmt.Errorf("scores.nll_sum = %v: want >= 0", sc.NLL)
	case sc.Label != nil && len(sc.Label) != s.st.K:
		return fmt.Errorf("scores.label_weight: %d entries for K = %d", len(sc.Label), s.st.K)
	}
	if sc.Label != nil {
		sum := 0.0
		for k, v := range sc.Label {
			if !(v >= 0) {
				return fmt.Errorf("scores.label_weight[%d] = %v", k, v)
			}
			sum += v
		}
		if !near(sum, w) {
			return fmt.Errorf("scores.label_weight sums to %v, the rows' weight %v", sum, w)
		}
	}
	bins := func(name string, b *metric.BinSums) error {
		if want := c.Bins.Bins; len(b.Edges) != want+1 || len(b.Count) != want || len(b.Mass) != want || len(b.Score) != want || len(b.Freq) != want {
			return fmt.Errorf("%s: %d edges and %d counts for %d bins", name, len(b.Edges), len(b.Count), want)
		}
		if int64(b.N) != s.st.N || !near(b.W, w) {
			return fmt.Errorf("%s: n = %d, weight %v; the sums' n = %d, weight %v", name, b.N, b.W, s.st.N, w)
		}
		n, m := 0, 0.0
		for i := range b.Count {
			if b.Count[i] < 0 || !(b.Mass[i] >= 0) || !(b.Score[i] >= 0 && b.Score[i] <= b.Mass[i]*(1+1e-9)) || !(b.Freq[i] >= 0 && b.Freq[i] <= b.Mass[i]*(1+1e-9)) {
				return fmt.Errorf("%s: bin %d: count %d, mass %v, score sum %v, outcome sum %v", name, i, b.Count[i], b.Mass[i], b.Score[i], b.Freq[i])
			}
			n, m = n+b.Count[i], m+b.Mass[i]
		}
		if n > b.N || !(m <= w*(1+1e-9)+1e-300) {
			return fmt.Errorf("%s: the bins hold %d rows of weight %v, more than the %d rows of weight %v", name, n, m, b.N, w)
		}
		return nil
	}
	if s.st.Top != nil {
		if err := bins("top", s.st.Top); err != nil {
			return err
		}
		for k, b := range s.st.Class {
			if err := bins(fmt.Sprintf("class[%d]", k), b); err != nil {
				return err
			}
		}
	}
	if s.st.Cells != nil && (s.st.Cells.K != s.st.K || s.st.Cells.B != c.Bins.Bins || int64(s.st.Cells.N) != s.st.N) {
		return fmt.Errorf("cells: K = %d, %d bins, n = %d; the sums' K = %d, %d bins, n = %d", s.st.Cells.K, s.st.Cells.B, s.st.Cells.N, s.st.K, c.Bins.Bins, s.st.N)
	}
	for name, list := range map[string][]*metric.KSSums{"ks_top": s.st.KSTop, "ks_within": s.st.KSWith, "ks_class": s.st.KSClass} {
		for i, ks := range list {
			if int64(ks.N) != s.st.N || ks.Cells != c.KSCells || !near(ks.W, w) {
				return fmt.Errorf("%s[%d]: n = %d, %d cells, weight %v; the sums' n = %d, %d cells, weight %v", name, i, ks.N, ks.Cells, ks.W, s.st.N, c.KSCells, w)
			}
		}
	}
	if sm := s.st.Sample; sm != nil {
		if sm.M != c.M || sm.Seed != c.Seed || len(sm.Rows) > sm.M || int64(len(sm.Rows)) > s.st.N {
			return fmt.Errorf("sample: %d rows of capacity %d (seed %d) for %d rows; the configuration's capacity %d, seed %d", len(sm.Rows), sm.M, sm.Seed, s.st.N, c.M, c.Seed)
		}
		seen := map[PointID]bool{}
		for i, r := range sm.Rows {
			id := PointID{Source: r.Source, Row: r.Row}
			if len(r.Probs) != s.st.K || r.Label < 0 || r.Label >= s.st.K || !(r.Weight >= 0) || seen[id] {
				return fmt.Errorf("sample: row %d (%s, row %d): %d probabilities, label %d, weight %v for K = %d, or a row twice", i, r.Source, r.Row, len(r.Probs), r.Label, r.Weight, s.st.K)
			}
			seen[id] = true
		}
	}
	return nil
}
