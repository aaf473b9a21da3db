package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/metric"
)

// rowRange is a run of rows [From, To) of one source (a shard's name, as
// Batch.Source) that a Sums has added. Sums keep them so that the same
// rows cannot be added twice (a shard's sums merged with a copy of
// themselves doubled n) and so that a decoded Sums can be checked: the
// ranges hold exactly N rows.
type rowRange struct {
	Source   string `json:"source"`
	From, To int64
}

// rowsOverlap returns an error naming the rows [from, to) of source when
// rs (sorted by source, then From) holds any of them, and the index at
// which a range starting at from would go.
func rowsOverlap(rs []rowRange, source string, from, to int64) (int, error) {
	i, _ := slices.BinarySearchFunc(rs, rowRange{Source: source, From: from}, compareRanges)
	if i > 0 && rs[i-1].Source == source && rs[i-1].To > from || i < len(rs) && rs[i].Source == source && rs[i].From < to {
		return i, fmt.Errorf("rows %d to %d of %s were added before: the same rows twice (a shard's sums merged with themselves?)", from+1, to, source)
	}
	return i, nil
}

// addRows records the rows [from, to) of source in rs, at index i from
// rowsOverlap (sorted by source, then From; adjacent runs joined), and
// returns the new list.
func addRows(rs []rowRange, i int, source string, from, to int64) []rowRange {
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
	return slices.Insert(rs, i, rowRange{Source: source, From: from, To: to})
}

// mergeRows returns the ranges of a and b (each sorted, without overlap)
// in one sorted list, adjacent runs joined, in O(len(a) + len(b)), or an
// error naming rows that both hold.
func mergeRows(a, b []rowRange) ([]rowRange, error) {
	out := make([]rowRange, 0, len(a)+len(b))
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var r rowRange
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

func compareRanges(a, b rowRange) int {
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return cmp.Compare(a.From, b.From)
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
	if err := s.st.Scores.Check(s.st.N, w, s.st.K); err != nil {
		return fmt.Errorf("scores.%w", err)
	}
	bins := func(name string, b *metric.BinSums) error {
		if err := b.Check(c.Bins.Bins, s.st.N, w); err != nil {
			return fmt.Errorf("%s: %w", name, err)
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
	if s.st.Cells != nil {
		if err := s.st.Cells.Check(s.st.K, c.Bins.Bins, s.st.N); err != nil {
			return fmt.Errorf("cells: %w", err)
		}
	}
	for name, list := range map[string][]*metric.KSSums{"ks_top": s.st.KSTop, "ks_within": s.st.KSWith, "ks_class": s.st.KSClass} {
		for i, ks := range list {
			if err := ks.Check(c.KSCells, s.st.N, w); err != nil {
				return fmt.Errorf("%s[%d]: %w", name, i, err)
			}
		}
	}
	if sm := s.st.Sample; sm != nil {
		if sm.M != c.M || sm.Seed != c.Seed || len(sm.Rows) > sm.M || int64(len(sm.Rows)) > s.st.N {
			return fmt.Errorf("sample: %d rows of capacity %d (seed %d) for %d rows; the configuration's capacity %d, seed %d", len(sm.Rows), sm.M, sm.Seed, s.st.N, c.M, c.Seed)
		}
		seen := map[pointID]bool{}
		for i, r := range sm.Rows {
			id := pointID{Source: r.Source, Row: r.Row}
			if len(r.Probs) != s.st.K || r.Label < 0 || r.Label >= s.st.K || !(r.Weight >= 0) || seen[id] {
				return fmt.Errorf("sample: row %d (%s, row %d): %d probabilities, label %d, weight %v for K = %d, or a row twice", i, r.Source, r.Row, len(r.Probs), r.Label, r.Weight, s.st.K)
			}
			seen[id] = true
		}
	}
	return nil
}
