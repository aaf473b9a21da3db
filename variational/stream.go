package variational

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/rowkey"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/recal"
)

// The streamed estimate: the variational error of a set read in batches,
// in memory bounded whatever the number of rows n, in two passes.
//
//  1. Sketch: each row goes to its fold (RowFold: the fold it has in
//     memory), and each fold keeps a sample of at most Capacity of its
//     rows, those of smallest priority Mix(key XOR salt) (a bottom-k
//     sketch: the same sample for any cut into batches, shards and
//     workers; Merge adds up shards).
//  2. Sketch.Fit cross-fits the families on the samples, each fold's map
//     on the other folds' samples, and for each loss chooses the family as
//     Recalibrated.Error does, on the sampled rows, with that family's
//     optimism and maps' jackknife (fitUncertainty) there.
//  3. GainSums: every row again, through the maps of its fold of each
//     chosen family: the (weighted) sums of its gains, per fold too
//     (Merge adds up shards).
//  4. Fitted.Error: the estimate and its interval from the sums, exactly
//     Recalibrated.Error's when the samples hold every row (the sums' order
//     aside: within 1e-12).
//
// Only the canonical notion is streamed.

// DefaultSketchBytes bounds a Sketch's samples when NewSketch is given no
// capacity: about 10 MiB of rows (8 bytes per probability and logit, 96
// per row besides), 1,236 rows per fold at K = 100 with logits (4,944 to
// fit each map on), 8,192 at K = 10; a quarter more while a fold's sample
// waits to be cut back (Add).
const DefaultSketchBytes = 10 << 20

// sketchSalt sets the sample's priorities apart from the folds.
const sketchSalt = 0x736b6574_63686564 // "sketched"

// Sketch is the first pass of a streamed estimate: each fold's sample.
type Sketch struct {
	Folds    int    `json:"folds"`
	Seed     uint64 `json:"seed"`
	K        int    `json:"k"`
	Capacity int    `json:"capacity"` // rows kept per fold
	// LogitCols is the width of the rows' logits (K, 1 for one-column
	// binary input, 0 without logits) and Binary the input's one-column
	// form: every batch must agree.
	LogitCols int  `json:"logit_cols"`
	Binary    bool `json:"binary,omitempty"`
	Weighted  bool `json:"weighted,omitempty"` // some batch had weights
	// Seen counts the rows of each fold; KeySum adds up (mod 2^64) the
	// rows' keys (their values and places), which the second pass must
	// match (Fitted.Error).
	Seen    []int64       `json:"seen"`
	KeySum  uint64        `json:"key_sum,omitempty"`
	Samples [][]SketchRow `json:"samples"`
	// Formed says LogitCols and Binary are set (a batch was added).
	Formed bool     `json:"formed,omitempty"`
	limit  []uint64 // per fold, the priority above which a row cannot enter (once cut back)
}

// SketchRow is a sampled row: its priority, place and values.
type SketchRow struct {
	Priority uint64    `json:"priority"`
	Shard    int       `json:"shard"`
	Row      int64     `json:"row"`
	Probs    []float64 `json:"probs"`
	Logits   []float64 `json:"logits,omitempty"`
	Label    int       `json:"label"`
	Weight   float64   `json:"weight"`
}

// NewSketch returns the empty first pass of o's folds (0: 5) and seed for
// rows of k classes, keeping at most capacity rows per fold (0: as many as
// DefaultSketchBytes holds with K logits).
func NewSketch(o Options, k, capacity int) (*Sketch, error) {
	if o.Folds == 0 {
		o.Folds = 5
	}
	switch {
	case o.Folds < 2:
		return nil, fmt.Errorf("%w: %d folds, want at least 2", ErrInput, o.Folds)
	case k < 2:
		return nil, fmt.Errorf("%w: %d classes", ErrInput, k)
	case capacity < 0:
		return nil, fmt.Errorf("%w: a sample of %d rows per fold", ErrInput, capacity)
	}
	if capacity == 0 {
		capacity = max(1, DefaultSketchBytes/(16*k+96)/o.Folds)
	}
	return &Sketch{Folds: o.Folds, Seed: o.Seed, K: k, Capacity: capacity, Seen: make([]int64, o.Folds), Samples: make([][]SketchRow, o.Folds)}, nil
}

// form checks that a batch has the sketch's form, recording it from the
// first.
func (sk *Sketch) form(b *data.Set) error {
	cols := 0
	if b.Logits != nil {
		cols = len(b.Logits) / max(1, b.N)
	}
	switch {
	case b.K != sk.K:
		return fmt.Errorf("%w: a batch of %d classes in a sketch of %d", ErrInput, b.K, sk.K)
	case b.Labels == nil:
		return fmt.Errorf("%w: a batch without labels", ErrInput)
	case !sk.Formed:
		sk.LogitCols, sk.Binary, sk.Formed = cols, b.Binary, true
	case cols != sk.LogitCols || b.Binary != sk.Binary:
		return fmt.Errorf("%w: a batch of %d logit columns (binary %v) after %d (binary %v)", ErrInput, cols, b.Binary, sk.LogitCols, sk.Binary)
	}
	return nil
}

// Add offers the rows of a batch whose first row is row offset of the
// stream's shard at position shard.
func (sk *Sketch) Add(b *data.Set, shard int, offset int64) error {
	if b.N == 0 {
		return nil
	}
	if err := sk.form(b); err != nil {
		return err
	}
	sk.Weighted = sk.Weighted || b.Weights != nil
	for i := range b.N {
		p, y, w := b.Probs[i*b.K:(i+1)*b.K], b.Labels[i], mathx.Weight(b.Weights, i)
		key := rowKey(sk.Seed, y, p, shard, offset+int64(i))
		f := rowkey.Fold(key, foldSalt, sk.Folds)
		sk.Seen[f]++
		sk.KeySum += key
		pr := rowkey.Mix(key ^ sketchSalt)
		if sk.limit != nil && pr > sk.limit[f] {
			continue
		}
		r := SketchRow{Priority: pr, Shard: shard, Row: offset + int64(i), Probs: slices.Clone(p), Label: y, Weight: w}
		if sk.LogitCols > 0 {
			r.Logits = slices.Clone(b.Logits[i*sk.LogitCols : (i+1)*sk.LogitCols])
		}
		sk.Samples[f] = append(sk.Samples[f], r)
		// Cut back a quarter over the capacity: each row costs O(log
		// Capacity) sorting, the sample at most 5/4 of its bound.
		if len(sk.Samples[f]) >= sk.Capacity+max(1, sk.Capacity/4) {
			sk.compact(f)
		}
	}
	return nil
}

// compact keeps fold f's Capacity rows of smallest priority.
func (sk *Sketch) compact(f int) {
	slices.SortFunc(sk.Samples[f], func(a, b SketchRow) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Shard, b.Shard), cmp.Compare(a.Row, b.Row))
	})
	if len(sk.Samples[f]) >= sk.Capacity {
		clear(sk.Samples[f][sk.Capacity:])
		sk.Samples[f] = sk.Samples[f][:sk.Capacity]
		if sk.limit == nil {
			sk.limit = make([]uint64, sk.Folds)
			for i := range sk.limit {
				sk.limit[i] = math.MaxUint64
			}
		}
		sk.limit[f] = sk.Samples[f][sk.Capacity-1].Priority
	}
}

// Merge adds another shard's sketch of the same folds, seed, K and
// capacity.
func (sk *Sketch) Merge(o *Sketch) error {
	if sk.Folds != o.Folds || sk.Seed != o.Seed || sk.K != o.K || sk.Capacity != o.Capacity {
		return fmt.Errorf("%w: sketches of %d folds (seed %d, K = %d, %d rows per fold) and %d folds (seed %d, K = %d, %d rows)",
			ErrInput, sk.Folds, sk.Seed, sk.K, sk.Capacity, o.Folds, o.Seed, o.K, o.Capacity)
	}
	if o.Formed {
		if sk.Formed && (sk.LogitCols != o.LogitCols || sk.Binary != o.Binary) {
			return fmt.Errorf("%w: sketches of %d and %d logit columns", ErrInput, sk.LogitCols, o.LogitCols)
		}
		sk.LogitCols, sk.Binary, sk.Formed = o.LogitCols, o.Binary, true
	}
	sk.Weighted = sk.Weighted || o.Weighted
	sk.KeySum += o.KeySum
	for f := range sk.Folds {
		sk.Seen[f] += o.Seen[f]
		sk.Samples[f] = append(sk.Samples[f], o.Samples[f]...)
		sk.compact(f)
	}
	return nil
}

// Complete reports whether every fold's sample holds all its rows.
func (sk *Sketch) Complete() bool {
	for f := range sk.Folds {
		if int64(len(sk.Samples[f])) < sk.Seen[f] {
			return false
		}
	}
	return true
}

// Fit cross-fits o's families (o.Folds and Seed are the sketch's) on the
// samples: the rows in the order of the stream (shard, then row), each
// fold's map fitted on the other folds' samples, as CrossFit fits a set
// in memory.
func (sk *Sketch) Fit(ctx context.Context, o Options) (*Fitted, error) {
	return sk.fit(ctx, o, false)
}

// FitFreeing is Fit for a caller done with the sketch (a stream read by
// one process): each sampled row is let go once copied into the set the
// maps are fitted on, so that the fits reuse the samples' memory. The
// sketch keeps its counts and no sample: it cannot be fitted again.
func (sk *Sketch) FitFreeing(ctx context.Context, o Options) (*Fitted, error) {
	return sk.fit(ctx, o, true)
}

func (sk *Sketch) fit(ctx context.Context, o Options, free bool) (*Fitted, error) {
	var all []SketchRow
	var foldOf []int // each of all's rows' fold: the sample it is in
	for f := range sk.Folds {
		sk.compact(f)
		all = append(all, sk.Samples[f]...)
		for range sk.Samples[f] {
			foldOf = append(foldOf, f)
		}
	}
	if free {
		clear(sk.Samples)
	}
	fold := make([]int, 0, len(all))
	if len(all) < sk.Folds {
		return nil, fmt.Errorf("%w: %d rows for %d folds", ErrInput, len(all), sk.Folds)
	}
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(all[a].Shard, all[b].Shard), cmp.Compare(all[a].Row, all[b].Row))
	})
	s := &data.Set{N: len(all), K: sk.K, Binary: sk.Binary, Probs: make([]float64, 0, len(all)*sk.K), Labels: make([]int, 0, len(all))}
	if sk.LogitCols > 0 {
		s.Logits = make([]float64, 0, len(all)*sk.LogitCols)
	}
	if sk.Weighted {
		s.Weights = make([]float64, 0, len(all))
	}
	for _, i := range idx {
		r := all[i]
		s.Probs = append(s.Probs, r.Probs...)
		s.Logits = append(s.Logits, r.Logits...)
		s.Labels = append(s.Labels, r.Label)
		if sk.Weighted {
			s.Weights = append(s.Weights, r.Weight)
		}
		fold = append(fold, foldOf[i])
		if free {
			all[i] = SketchRow{}
		}
	}
	all = nil
	o.Folds, o.Seed, o.keep = sk.Folds, sk.Seed, streamLosses
	if len(o.families()) == 0 {
		return nil, fmt.Errorf("%w: no recalibration family", ErrInput)
	}
	rc, err := crossFitFolds(ctx, s, o, fold)
	if err != nil {
		return nil, err
	}
	ft := &Fitted{Folds: sk.Folds, Seed: sk.Seed, K: sk.K, LogitCols: sk.LogitCols, KeySum: sk.KeySum}
	for _, n := range sk.Seen {
		ft.Rows += n
	}
	for _, f := range rc.fits {
		fam := FittedFamily{Name: f.name, Method: f.method, Maps: f.maps}
		if f.err != nil {
			fam.Err, fam.Maps = f.err.Error(), nil
		}
		ft.Families = append(ft.Families, fam)
	}
	for _, lo := range streamLosses {
		r, err := rc.Error(lo)
		if err != nil {
			return nil, err
		}
		j := slices.IndexFunc(ft.Families, func(f FittedFamily) bool { return f.Name == r.Family })
		ft.Losses = append(ft.Losses, FittedLoss{Family: j, MapSE: r.MapSE, Optimism: r.Optimism, Z: r.Z, Reach: r.Reach})
	}
	return ft, nil
}

// Fitted holds what the second pass of a streamed estimate needs from
// the first: each family's maps and, for each loss of GainSums, the family
// chosen on the sampled rows with its maps' jackknife and optimism there
// (fitUncertainty), which the estimate adds to the rows' SE from the sums
// of every row. Its JSON form carries the maps (as calib fit writes them),
// for the workers of a distributed second pass.
type Fitted struct {
	Folds     int    `json:"folds"`
	Seed      uint64 `json:"seed"`
	K         int    `json:"k"`
	LogitCols int    `json:"logit_cols"`
	// Rows and KeySum are the first pass's count and sum of row keys
	// (Sketch.KeySum), which the second pass's must match.
	Rows     int64          `json:"rows,omitempty"`
	KeySum   uint64         `json:"key_sum,omitempty"`
	Families []FittedFamily `json:"families"`
	Losses   []FittedLoss   `json:"losses"` // per loss of streamLosses: lp at p = 1, Brier, log
}

// FittedFamily is one family of a Fitted: its maps by fold, or the error
// of its fit.
type FittedFamily struct {
	Name   string             `json:"name"`
	Method recal.Method       `json:"method"`
	Err    string             `json:"error,omitempty"`
	Maps   []recal.Calibrator `json:"-"`
}

// FittedLoss is a loss's choice: the index of its family in Families and,
// on the sampled rows, that family's MapSE and Optimism, the interval's Z
// and its Reach (Result's).
type FittedLoss struct {
	Family   int     `json:"family"`
	MapSE    float64 `json:"map_se"`
	Optimism float64 `json:"optimism"`
	Z        float64 `json:"z"`
	Reach    float64 `json:"reach"`
}

// MarshalJSON writes the family with its maps.
func (f FittedFamily) MarshalJSON() ([]byte, error) {
	type plain FittedFamily
	maps := make([]json.RawMessage, len(f.Maps))
	for i, c := range f.Maps {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		maps[i] = b
	}
	return json.Marshal(struct {
		plain
		Maps []json.RawMessage `json:"maps,omitempty"`
	}{plain(f), maps})
}

// UnmarshalJSON reads a family and loads its maps (recal.Load: checked).
func (f *FittedFamily) UnmarshalJSON(b []byte) error {
	type plain FittedFamily
	var v struct {
		plain
		Maps []json.RawMessage `json:"maps"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = FittedFamily(v.plain)
	for i, m := range v.Maps {
		c, err := recal.Load(bytes.NewReader(m))
		if err != nil {
			return fmt.Errorf("variational: family %s, fold %d's map: %w", f.Name, i, err)
		}
		f.Maps = append(f.Maps, c)
	}
	return nil
}

// UnmarshalJSON reads a Fitted and checks it.
func (ft *Fitted) UnmarshalJSON(b []byte) error {
	type plain Fitted
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*ft = Fitted(v)
	return ft.check()
}

// check reports a Fitted that does not hold what the second pass needs.
func (ft *Fitted) check() error {
	if ft.Folds < 2 || ft.K < 2 || len(ft.Families) == 0 || len(ft.Losses) != len(streamLosses) {
		return fmt.Errorf("%w: fitted maps of %d folds, K = %d, %d families, %d losses", ErrInput, ft.Folds, ft.K, len(ft.Families), len(ft.Losses))
	}
	for _, f := range ft.Families {
		if f.Err == "" && len(f.Maps) != ft.Folds {
			return fmt.Errorf("%w: family %s: %d maps for %d folds", ErrInput, f.Name, len(f.Maps), ft.Folds)
		}
	}
	for _, l := range ft.Losses {
		if l.Family < 0 || l.Family >= len(ft.Families) || ft.Families[l.Family].Err != "" || !(l.MapSE >= 0) || math.IsNaN(l.Optimism) || math.IsInf(l.Optimism, 0) ||
			!(l.Z >= z95 && l.Z < 10) || !(l.Reach >= 0) || math.IsInf(l.Reach, 0) {
			return fmt.Errorf("%w: a loss of family %d (of %d), map SE %v, optimism %v, z %v, reach %v", ErrInput, l.Family, len(ft.Families), l.MapSE, l.Optimism, l.Z, l.Reach)
		}
	}
	return nil
}

// streamLosses are the losses GainSums sums: the Lp loss at p = 1 (CE_1),
// the Brier score (CE_2^2) and the log loss.
var streamLosses = []Options{{Loss: Lp, P: 1}, {Loss: Brier, P: 1}, {Loss: Log, P: 1}}

// GainSums is the second pass of a streamed estimate: for each loss, the
// weighted sums of the rows' gains under its chosen family.
type GainSums struct {
	Folds int `json:"folds"`
	// Chosen names each loss's family (Fitted.Losses).
	Chosen []string `json:"chosen"`
	// N counts the rows; SW and SW2 sum their weights and squared weights,
	// FoldW the weights per fold.
	N      int64     `json:"n"`
	KeySum uint64    `json:"key_sum,omitempty"` // the rows' keys, as Sketch.KeySum
	SW     float64   `json:"sw"`
	SW2    float64   `json:"sw2"`
	FoldW  []float64 `json:"fold_w"`
	// Gain[l] are the sums of loss l (streamLosses).
	Gain []GainSum `json:"gain"`
}

// GainSum holds the sums of one loss: sum w g, sum w g^2, and per fold
// sum w g.
type GainSum struct {
	G     float64   `json:"g"`
	G2    float64   `json:"g2"`
	Folds []float64 `json:"folds"`
}

// NewSums returns the empty second pass of f's maps.
func (ft *Fitted) NewSums() *GainSums {
	gs := &GainSums{Folds: ft.Folds, FoldW: make([]float64, ft.Folds), Gain: make([]GainSum, len(ft.Losses))}
	for l, fl := range ft.Losses {
		gs.Chosen = append(gs.Chosen, ft.Families[fl.Family].Name)
		gs.Gain[l].Folds = make([]float64, ft.Folds)
	}
	return gs
}

// Add sums into gs the gains of a batch whose first row is row offset of
// the stream's shard at position shard, each row through the maps of its
// fold (RowFold) of each loss's family.
func (ft *Fitted) Add(gs *GainSums, b *data.Set, shard int, offset int64) error {
	switch {
	case b.N == 0:
		return nil
	case b.K != ft.K || b.Labels == nil:
		return fmt.Errorf("%w: a batch of %d classes (labels %v) for maps of %d", ErrInput, b.K, b.Labels != nil, ft.K)
	case len(gs.Gain) != len(ft.Losses) || gs.Folds != ft.Folds:
		return fmt.Errorf("%w: sums of %d losses and %d folds for maps of %d and %d", ErrInput, len(gs.Gain), gs.Folds, len(ft.Losses), ft.Folds)
	}
	cols := 0
	if b.Logits != nil {
		cols = len(b.Logits) / b.N
	}
	if cols != ft.LogitCols {
		return fmt.Errorf("%w: a batch of %d logit columns for maps fitted on %d", ErrInput, cols, ft.LogitCols)
	}
	// The batch's sums first, added to gs once every map has applied: a
	// batch that fails leaves gs as it was.
	add := ft.NewSums()
	byFold := make([][]int, ft.Folds)
	for i := range b.N {
		w := mathx.Weight(b.Weights, i)
		key := rowKey(ft.Seed, b.Labels[i], b.Probs[i*b.K:(i+1)*b.K], shard, offset+int64(i))
		f := rowkey.Fold(key, foldSalt, ft.Folds)
		byFold[f] = append(byFold[f], i)
		add.KeySum += key
		add.N++
		add.SW += w
		add.SW2 += w * w
		add.FoldW[f] += w
	}
	for f, idx := range byFold {
		if len(idx) == 0 {
			continue
		}
		part := rows(b, idx)
		applied := map[int][]float64{} // by family: each chosen family's map applied once
		for l, fl := range ft.Losses {
			out := applied[fl.Family]
			if out == nil {
				var err error
				if out, err = ft.apply(fl.Family, f, part); err != nil {
					return err
				}
				applied[fl.Family] = out
			}
			s := &add.Gain[l]
			for a, i := range idx {
				w := mathx.Weight(b.Weights, i)
				g := gain(streamLosses[l], part.Probs[a*b.K:(a+1)*b.K], out[a*b.K:(a+1)*b.K], part.Labels[a])
				s.G += w * g
				s.G2 += w * g * g
				s.Folds[f] += w * g
			}
		}
	}
	return gs.Merge(add)
}

// apply returns the probabilities of the rows of part under family j's
// map of fold f.
func (ft *Fitted) apply(j, f int, part *data.Set) ([]float64, error) {
	ff := ft.Families[j]
	out, err := recal.Apply(ff.Maps[f], withLogits(part, ff.Method))
	if err != nil {
		return nil, fmt.Errorf("variational: %s, fold %d's map: %w", ff.Name, f, err)
	}
	return out.Probs, nil
}

// Merge adds another shard's sums of the same maps.
func (gs *GainSums) Merge(o *GainSums) error {
	if !slices.Equal(gs.Chosen, o.Chosen) || gs.Folds != o.Folds || len(o.Gain) != len(gs.Gain) {
		return fmt.Errorf("%w: sums of families %v (%d folds) and %v (%d folds)", ErrInput, gs.Chosen, gs.Folds, o.Chosen, o.Folds)
	}
	gs.N += o.N
	gs.KeySum += o.KeySum
	gs.SW += o.SW
	gs.SW2 += o.SW2
	for f := range gs.FoldW {
		gs.FoldW[f] += o.FoldW[f]
	}
	for l := range gs.Gain {
		a, b := &gs.Gain[l], o.Gain[l]
		a.G += b.G
		a.G2 += b.G2
		for f := range a.Folds {
			a.Folds[f] += b.Folds[f]
		}
	}
	return nil
}

// SameRows reports an error wrapping ErrInput where the second pass's
// sums gs are not of the first pass's rows at the same places (their
// count and sum of row keys): other rows, or the same in another order
// or shard, whose folds would differ from the first pass's (a row's map
// may then have been fitted on it). A Fitted without Rows (written
// before the check) passes.
func (ft *Fitted) SameRows(gs *GainSums) error {
	if ft.Rows > 0 && (gs.N != ft.Rows || gs.KeySum != ft.KeySum) {
		return fmt.Errorf("%w: the second pass read %d rows that are not the first pass's %d (other rows, or the same at other places: both passes must give every row with its shard and row number)", ErrInput, gs.N, ft.Rows)
	}
	return nil
}

// Error returns the streamed estimate of o's loss (Lp at p = 1, Brier or
// log; the canonical notion) from the sums of every row under the family
// chosen on the sampled rows: its mean gain, per-fold means and the rows'
// SE, with the maps' jackknife, optimism, interval quantile and reach of
// the sampled rows.
func (ft *Fitted) Error(gs *GainSums, o Options) (Result, error) {
	o, err := o.withLoss()
	if err != nil {
		return Result{}, err
	}
	if o.Notion != "" && o.Notion != notion.Canonical {
		return Result{}, fmt.Errorf("%w: a streamed estimate is of the canonical notion, not %s", ErrInput, o.Notion)
	}
	l := slices.IndexFunc(streamLosses, func(x Options) bool { return x.Loss == o.Loss && (x.Loss != Lp || o.P == 1) })
	if l < 0 {
		return Result{}, fmt.Errorf("%w: a streamed estimate of the lp loss is at p = 1, not %v", ErrInput, o.P)
	}
	if len(gs.Gain) != len(ft.Losses) {
		return Result{}, fmt.Errorf("%w: sums of %d losses for maps of %d", ErrInput, len(gs.Gain), len(ft.Losses))
	}
	if err := ft.SameRows(gs); err != nil {
		return Result{}, err
	}
	if !(gs.SW > 0) {
		return Result{}, fmt.Errorf("%w: no rows of positive weight in the second pass", ErrInput)
	}
	s, fl := gs.Gain[l], ft.Losses[l]
	r := Result{Value: s.G / gs.SW, N: int(gs.N), Folds: gs.Folds, PerFold: make([]float64, gs.Folds), Family: ft.Families[fl.Family].Name}
	for f := range r.PerFold {
		if gs.FoldW[f] > 0 {
			r.PerFold[f] = s.Folds[f] / gs.FoldW[f]
		}
	}
	if neff := gs.SW * gs.SW / gs.SW2; neff > 1 {
		r.SE = math.Sqrt(max(0, s.G2-s.G*s.G/gs.SW) / gs.SW / (neff - 1))
	}
	r.MapSE, r.Optimism, r.Z, r.Reach = fl.MapSE, fl.Optimism, fl.Z, fl.Reach
	r.SE = math.Sqrt(r.SE*r.SE + r.MapSE*r.MapSE)
	r.setEnds()
	for _, v := range append([]float64{r.Value, r.SE, r.Lo, r.Hi}, r.PerFold...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Result{}, fmt.Errorf("%w: sums that give a value of %v: not the sums of a stream", ErrInput, v)
		}
	}
	return r, nil
}

// UnmarshalJSON reads a Sketch and checks its form: a sample and a count
// per fold, rows of K probabilities and LogitCols logits.
func (sk *Sketch) UnmarshalJSON(b []byte) error {
	type plain Sketch
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Folds < 2 || v.K < 2 || v.Capacity < 1 || len(v.Seen) != v.Folds || len(v.Samples) != v.Folds || v.LogitCols < 0 {
		return fmt.Errorf("%w: a sketch of %d folds (%d counts, %d samples), K = %d, %d rows per fold", ErrInput, v.Folds, len(v.Seen), len(v.Samples), v.K, v.Capacity)
	}
	for f, rs := range v.Samples {
		if v.Seen[f] < int64(len(rs)) {
			return fmt.Errorf("%w: fold %d samples %d of %d rows", ErrInput, f, len(rs), v.Seen[f])
		}
		for _, r := range rs {
			if len(r.Probs) != v.K || len(r.Logits) != v.LogitCols || r.Label < 0 || r.Label >= v.K || !(r.Weight >= 0) {
				return fmt.Errorf("%w: fold %d: a row of %d probabilities, %d logits, label %d, weight %v", ErrInput, f, len(r.Probs), len(r.Logits), r.Label, r.Weight)
			}
		}
	}
	*sk = Sketch(v)
	return nil
}

// UnmarshalJSON reads GainSums and checks their form.
func (gs *GainSums) UnmarshalJSON(b []byte) error {
	type plain GainSums
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Folds < 2 || len(v.FoldW) != v.Folds || len(v.Gain) != len(streamLosses) || len(v.Chosen) != len(v.Gain) || v.N < 0 {
		return fmt.Errorf("%w: gain sums of %d folds (%d fold weights), %d losses, %d families", ErrInput, v.Folds, len(v.FoldW), len(v.Gain), len(v.Chosen))
	}
	for l, s := range v.Gain {
		if len(s.Folds) != v.Folds {
			return fmt.Errorf("%w: gain sums of loss %d: %d folds", ErrInput, l, len(s.Folds))
		}
	}
	*gs = GainSums(v)
	return nil
}
