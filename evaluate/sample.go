package evaluate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/rowkey"
)

// sample is a uniform sample without replacement of at most M rows of a
// streamed set, mergeable across shards: the bottom-M sketch. Every row
// gets the key rowkey.Key of its label, weight, K probabilities, the
// position of its shard in the stream's list and its index there: a
// function of the rows (their values and their place in the stream) and
// the seed only: never of the
// shard's name or file format, so that shards named by relative or
// absolute paths, or read from CSV or from Parquet, give the same sample.
// Rows of equal values get keys of their own wherever they are (the place
// enters every key), so that predictions with few distinct values (rounded,
// isotonic) are not sampled in clusters. The sample is the M rows of
// smallest key (ties broken by source and row). Since the keys are
// independent of the order in which rows arrive, Add and Merge give the
// same sample for any cut into batches, any order of the shards' batches
// and any number of workers, and every subset of M rows is equally likely
// (over seeds).
type sample struct {
	M    int         `json:"m"` // capacity
	Seed uint64      `json:"seed"`
	K    int         `json:"k"` // columns of the rows
	Rows []sampleRow `json:"rows"`
	// sorted says Rows is in key order and holds at most M rows.
	sorted bool
}

// sampleRow is one row of a Sample.
type sampleRow struct {
	Key    uint64    `json:"key"`
	Source string    `json:"source"`
	Row    int64     `json:"row"`
	Probs  []float64 `json:"probs"`
	Label  int       `json:"label"`
	Weight float64   `json:"weight"`
}

// MarshalJSON writes the sample compacted: its M rows of smallest key.
func (s *sample) MarshalJSON() ([]byte, error) {
	s.compact()
	type plain sample
	return json.Marshal((*plain)(s))
}

func compareRows(a, b *sampleRow) int {
	if c := cmp.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return cmp.Compare(a.Row, b.Row)
}

// threshold returns the key above which a row cannot enter the sample.
func (s *sample) threshold() uint64 {
	s.compact()
	if len(s.Rows) < s.M {
		return ^uint64(0)
	}
	return s.Rows[len(s.Rows)-1].Key
}

// compact sorts the rows by key and keeps the M smallest.
func (s *sample) compact() {
	if s.sorted {
		return
	}
	slices.SortFunc(s.Rows, func(a, b sampleRow) int { return compareRows(&a, &b) })
	if len(s.Rows) > s.M {
		clear(s.Rows[s.M:])
		s.Rows = s.Rows[:s.M]
	}
	s.sorted = true
}

// add offers the rows of a batch (probs n×K, labels, weights nil: 1) of
// source (at position shard in the stream) whose first row has index
// offset.
func (s *sample) add(source string, shard int, offset int64, probs []float64, labels []int, weights []float64) {
	limit := s.threshold()
	for i, y := range labels {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		key := rowkey.Key(s.Seed, y, w, probs[i*s.K:(i+1)*s.K], shard, offset+int64(i))
		if key > limit {
			continue
		}
		s.Rows = append(s.Rows, sampleRow{Key: key, Source: source, Row: offset + int64(i), Probs: slices.Clone(probs[i*s.K : (i+1)*s.K]), Label: y, Weight: w})
		s.sorted = false
		if len(s.Rows) >= 2*max(s.M, 512) {
			limit = s.threshold()
		}
	}
}

// merge adds the rows of another sample with the same M, seed and K.
func (s *sample) merge(o *sample) error {
	if s.M != o.M || s.Seed != o.Seed || s.K != o.K {
		return fmt.Errorf("evaluate: samples of %d rows (seed %d, K = %d) and %d rows (seed %d, K = %d) do not merge", s.M, s.Seed, s.K, o.M, o.Seed, o.K)
	}
	s.Rows = append(s.Rows, o.Rows...)
	s.sorted = false
	s.compact()
	return nil
}

// points returns the sampled rows in the order of the set (by source
// name, then row; with every row of one source the input order, which the
// witness's cross-fitting splits follow): probabilities m×K, labels,
// weights (nil when unweighted) and the row of each.
func (s *sample) points(weighted bool) (probs []float64, labels []int, weights []float64, ids []pointID) {
	s.compact()
	rows := slices.Clone(s.Rows)
	slices.SortFunc(rows, func(a, b sampleRow) int {
		if c := cmp.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return cmp.Compare(a.Row, b.Row)
	})
	for _, r := range rows {
		probs = append(probs, r.Probs...)
		labels = append(labels, r.Label)
		if weighted {
			weights = append(weights, r.Weight)
		}
		ids = append(ids, pointID{Source: r.Source, Row: r.Row})
	}
	return probs, labels, weights, ids
}

// sampleState is sampleSums's part of the first pass's state
// (sumsState).
type sampleState struct {
	Sample *sample `json:"sample,omitempty"`
}

// sampleSums is the kernel metrics' first pass (ece_kde, ece_witness,
// mmce, sharpness): the sample of their evaluation points, drawn from
// every row (Sample); their kernel sums at the points are the second
// pass (KernelSums).
var sampleSums = &sumsPart{
	what: "the evaluation points' sample",
	start: func(st *sumsState, _ *data.Batch) error {
		st.Sample = &sample{M: st.Config.M, Seed: st.Config.Seed, K: st.K}
		return nil
	},
	add: func(st *sumsState, b *data.Batch) error {
		st.Sample.add(b.Source, b.Shard, b.Offset, b.Probs, b.Labels, b.Weights)
		return nil
	},
	mergeable: func(st, o *sumsState) error {
		if st.Sample.M != o.Sample.M || st.Sample.Seed != o.Sample.Seed || st.Sample.K != o.Sample.K {
			return errors.New("sums with different samples")
		}
		return nil
	},
	merge: func(st, o *sumsState) error { return st.Sample.merge(o.Sample) },
	check: func(st *sumsState) error {
		if st.Sample == nil || st.Sample.M < 1 || st.Sample.K != st.K {
			return errors.New("missing or inconsistent sample")
		}
		return nil
	},
	secondPass: func(*streamConfig) bool { return true },
	holds:      func(st *sumsState) bool { return st.Sample != nil },
	drawn:      true,
}

// blockPoints returns the evaluation points of block b of nb of the
// sample, and their rows (none without a sample).
func (s *Sums) blockPoints(b, nb int) (*evalPoints, []pointID, error) {
	if s.st.Sample == nil {
		return nil, nil, nil
	}
	if s.st.Config.All && s.st.N > int64(MaxAllPoints) {
		return nil, nil, optionError("eval-points", "every row as an evaluation point: %d rows, more than the %d the kernel sums can hold; give a number of evaluation points", s.st.N, MaxAllPoints)
	}
	probs, labels, weights, ids := s.st.Sample.points(s.st.Weighted)
	m := len(ids)
	j0, j1 := b*m/nb, (b+1)*m/nb
	if j0 == j1 {
		return nil, nil, optionError("eval-blocks", "%d blocks of the %d evaluation points the data gave: block %d would be empty; give at most %d blocks", nb, m, b, m)
	}
	pts := &evalPoints{probs: probs[j0*s.st.K : j1*s.st.K], labels: labels[j0:j1]}
	if weights != nil {
		pts.weights = weights[j0:j1]
	}
	return pts, ids[j0:j1], nil
}

// evalPoints are a block's evaluation points: their rows' probabilities,
// labels and weights (nil: unweighted).
type evalPoints struct {
	probs   []float64
	labels  []int
	weights []float64
}
