package evaluate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// KernelSums is the second pass of a streamed evaluation: the kernel sums
// of ece_kde at the sampled evaluation points, one kde.PointSums per
// notion, over every row added. Build it with Sums.KernelSums once the
// first pass is complete.
type KernelSums struct {
	st kernelSumsState
	// index finds the evaluation point of a (source, row).
	index map[string]map[int64]int
}

// kernelSumsState is the state of KernelSums, and its JSON form.
type kernelSumsState struct {
	Version int              `json:"version"`
	Notions []*kde.PointSums `json:"notions"`
	// Points names the row of each evaluation point, in the order of the
	// points of every notion.
	Points []pointID `json:"points"`
	K      int       `json:"k"` // columns of the rows
	// MMCE holds mmce's kernel sums at the same points (nil when mmce is
	// not asked for).
	MMCE *metric.MMCESums `json:"mmce,omitempty"`
	// Witness holds ece_witness's residual kernel sums.
	Witness *kde.WitnessSums `json:"witness,omitempty"`
	// Sharpness holds sharpness's kernel sums (top_label, or binary for
	// one-column input, with the squared sums) when ece_kde does not
	// already compute that notion (then its PointSums keeps the squares).
	Sharpness *kde.PointSums `json:"sharpness,omitempty"`
	// TopEdges and ClassEdges hold the scores near the edges of
	// data-dependent bins (see metric.ScoreSketch), Cells the canonical
	// cells when their number depends on the data.
	TopEdges   *metric.EdgeValues   `json:"top_edges,omitempty"`
	ClassEdges []*metric.EdgeValues `json:"class_edges,omitempty"`
	Cells      *metric.CellSums     `json:"cells,omitempty"`
	// Rows counts the rows added, for the check that the pass is complete.
	Rows int64 `json:"rows"`
	// Variational holds ece_variational's maps and gain sums (block 0).
	Variational *variationalPass `json:"variational,omitempty"`
	// Block and Blocks say which block of the evaluation points these
	// sums hold (0 of 1: all; see Sums.KernelSumsBlock).
	Block  int `json:"block,omitempty"`
	Blocks int `json:"blocks,omitempty"`
}

// MarshalJSON writes the JSON form: {"kind": "evaluate.KernelSums",
// "version": 2, ...} and the exported fields, each sum in its own
// envelope.
func (ks *KernelSums) MarshalJSON() ([]byte, error) {
	return kernelSumsKind.Encode(&ks.st)
}

// UnmarshalJSON reads the JSON form of KernelSums, checking its kind,
// version and that every part is there.
func (ks *KernelSums) UnmarshalJSON(b []byte) error {
	var v kernelSumsState
	if _, err := kernelSumsKind.Decode(b, &v); err != nil {
		return err
	}
	for _, ps := range v.Notions {
		if ps == nil || ps.M() != len(v.Points) {
			return kernelSumsKind.Errorf("notions inconsistent with the %d points", len(v.Points))
		}
	}
	if v.Sharpness != nil && v.Sharpness.M() != len(v.Points) {
		return kernelSumsKind.Errorf("sharpness sums inconsistent with the %d points", len(v.Points))
	}
	if v.MMCE != nil && v.MMCE.M() != len(v.Points) {
		return kernelSumsKind.Errorf("mmce sums of %d points, not %d", v.MMCE.M(), len(v.Points))
	}
	if v.Witness != nil && v.Witness.M() != len(v.Points) {
		return kernelSumsKind.Errorf("witness sums inconsistent with the %d points", len(v.Points))
	}
	if (v.TopEdges == nil && v.ClassEdges != nil) || (v.TopEdges != nil && (len(v.ClassEdges) != v.K || slices.Contains(v.ClassEdges, nil))) {
		return kernelSumsKind.Errorf("%d class edge sums for K = %d", len(v.ClassEdges), v.K)
	}
	if v.Variational != nil {
		if err := v.Variational.check(); err != nil {
			return kernelSumsKind.Errorf("%v", err)
		}
	}
	if v.Blocks < 0 || v.Block < 0 || (v.Blocks > 0 && v.Block >= v.Blocks) || v.Rows < 0 {
		return kernelSumsKind.Errorf("block %d of %d, %d rows", v.Block, v.Blocks, v.Rows)
	}
	ks.st, ks.index = v, nil
	return nil
}

// pointID names a row of a streamed set: its shard and its index there.
type pointID struct {
	Source string `json:"source"`
	Row    int64  `json:"row"`
}

// KernelSums returns empty second-pass sums for the sample drawn by the
// first pass (nil when no metric needs a second pass, see KernelPass).
func (s *Sums) KernelSums() (*KernelSums, error) {
	return s.KernelSumsContext(context.Background(), 0, 1)
}

// KernelSumsBlock returns empty second-pass sums for block b of nb of the
// evaluation points: the points [b m / nb, (b+1) m / nb) of the sample, in
// its order. This is the block-pair plan of a cluster: each (block, shard)
// pair adds the shard's rows to its block's sums, the pairs of a block are
// merged (Merge), and ConcatKernelSums joins the blocks into what
// KernelSums would give, bit for bit; a worker holds one block's m / nb
// points. The sums that are not per point (the scores near data-dependent
// bin edges, canonical cells of the Doane and Sqrt rules, ece_variational's
// maps, fitted here on the first pass's samples, and gains) are in block 0
// only.
func (s *Sums) KernelSumsBlock(b, nb int) (*KernelSums, error) {
	return s.KernelSumsContext(context.Background(), b, nb)
}

// KernelSumsContext is KernelSumsBlock whose fits (ece_variational's)
// stop when ctx is cancelled.
func (s *Sums) KernelSumsContext(ctx context.Context, b, nb int) (*KernelSums, error) {
	return s.kernelSumsFitted(ctx, b, nb, false)
}

// kernelSumsFitted is KernelSumsContext; free lets ece_variational's
// samples go as its maps are fitted (Sums.variationalPass), for a caller
// done with s's samples.
func (s *Sums) kernelSumsFitted(ctx context.Context, b, nb int, free bool) (*KernelSums, error) {
	ks, err := s.kernelSums(b, nb)
	if err != nil || ks == nil || b != 0 {
		return ks, err
	}
	if ks.st.Variational, err = s.variationalPass(ctx, free); err != nil {
		return nil, err
	}
	return ks, nil
}

// kernelSums is KernelSumsBlock but for ece_variational's part.
func (s *Sums) kernelSums(b, nb int) (*KernelSums, error) {
	if nb < 1 || b < 0 || b >= nb {
		return nil, fmt.Errorf("evaluate: block %d of %d", b, nb)
	}
	if !s.KernelPass() {
		return nil, nil
	}
	if !s.started || s.st.N == 0 {
		return nil, &data.StreamError{Err: data.ErrEmpty}
	}
	ks := &KernelSums{st: kernelSumsState{Version: streamVersion, K: s.st.K, Block: b, Blocks: nb}}
	if b == 0 {
		if err := s.binnedKernelPart(ks); err != nil {
			return nil, err
		}
	}
	if s.st.Sample == nil {
		return ks, nil
	}
	if s.st.Config.All && s.st.N > MaxAllPoints {
		return nil, optionError("eval-points", "every row as an evaluation point: %d rows, more than the %d the kernel sums can hold; give a number of evaluation points", s.st.N, MaxAllPoints)
	}
	probs, labels, weights, ids := s.st.Sample.points(s.st.Weighted)
	m := len(ids)
	j0, j1 := b*m/nb, (b+1)*m/nb
	if j0 == j1 {
		return nil, optionError("eval-blocks", "%d blocks of the %d evaluation points the data gave: block %d would be empty; give at most %d blocks", nb, m, b, m)
	}
	probs, labels, ids = probs[j0*s.st.K:j1*s.st.K], labels[j0:j1], ids[j0:j1]
	if weights != nil {
		weights = weights[j0:j1]
	}
	notions, _, err := streamNotions(s.st.Config.Mode, s.st.K, s.st.Binary)
	if err != nil {
		return nil, err
	}
	ks.st.Points = ids
	if err := s.pointSums(ks, notions, probs, labels, weights); err != nil {
		return nil, err
	}
	return ks, nil
}

// binnedKernelPart starts the binned entries' part of the second pass
// (the first block's): the top-label and class edges the sketches need,
// and the canonical cells of the pooled coordinates' bins.
func (s *Sums) binnedKernelPart(ks *KernelSums) error {
	if s.st.TopSketch != nil {
		top, err := s.st.TopSketch.Needed(s.st.Config.Bins, s.st.Weighted)
		if err != nil {
			return fmt.Errorf("evaluate: top-label bins: %w", err)
		}
		ks.st.TopEdges = metric.NewEdgeValues(top, edgeLimit(s.st.K))
		for k, sk := range s.st.ClassSketch {
			keys, err := sk.Needed(s.st.Config.Bins, s.st.Weighted)
			if err != nil {
				return fmt.Errorf("evaluate: class %d bins: %w", k, err)
			}
			ks.st.ClassEdges = append(ks.st.ClassEdges, metric.NewEdgeValues(keys, edgeLimit(s.st.K)))
		}
	}
	if s.st.Pooled != nil {
		// The pooled coordinates' rule: the rows of positive weight
		// (Sqrt), their K values each (Doane).
		bins, err := s.st.Config.Bins.MergedBins(*s.st.Pooled, float64(s.st.Pos), float64(s.st.Pos)*float64(s.st.K))
		if err != nil {
			return err
		}
		if ks.st.Cells, err = metric.NewCellSums(s.st.K, bins); err != nil {
			return err
		}
		ks.st.Cells.SetLimit(s.st.Config.cellLimit(s.st.K))
	}
	return nil
}

// pointSums starts the kernel metrics' sums at the block's evaluation
// points: mmce's, ece_kde's of each notion, ece_witness's and sharpness's
// (which shares ece_kde's sums of its notion where there are some).
func (s *Sums) pointSums(ks *KernelSums, notions []kde.Notion, probs []float64, labels []int, weights []float64) error {
	var err error
	if s.st.Config.has(MMCE) {
		if ks.st.MMCE, err = metric.NewMMCESums(probs, labels, s.st.K, weights, s.st.Config.MMCEWidth); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	if !s.st.Config.has(ECEKDE) {
		notions = nil
	}
	for _, n := range notions {
		ps, err := kde.NewPointSums(n, probs, labels, s.st.K, weights, s.st.Config.Grid)
		if err != nil {
			return err
		}
		ks.st.Notions = append(ks.st.Notions, ps)
	}
	if c := s.st.Config; c.has(ECEWitness) {
		scale := 0.0
		if slices.Contains(c.WitnessP, 2) {
			scale = 0.5 // kde.WitnessOptions.P2Scale's default
		}
		if ks.st.Witness, err = kde.NewWitnessSums(probs, labels, s.st.K, weights, c.WitnessGrid, scale); err != nil {
			return err
		}
	}
	if s.st.Config.has(Sharpness) {
		ps := ks.notion(s.sharpnessNotion())
		if ps == nil {
			if ps, err = kde.NewPointSums(s.sharpnessNotion(), probs, labels, s.st.K, weights, s.st.Config.Grid); err != nil {
				return err
			}
			ks.st.Sharpness = ps
		}
		if err := ps.KeepSquares(); err != nil {
			return err
		}
	}
	return nil
}

// notion returns ece_kde's sums of notion n (nil when not computed).
func (ks *KernelSums) notion(n kde.Notion) *kde.PointSums {
	for _, ps := range ks.st.Notions {
		if ps.Notion() == n {
			return ps
		}
	}
	return nil
}

// all returns every PointSums of ks: ece_kde's and sharpness's own.
func (ks *KernelSums) all() []*kde.PointSums {
	if ks.st.Sharpness == nil {
		return ks.st.Notions
	}
	return append(slices.Clip(ks.st.Notions), ks.st.Sharpness)
}

// Add adds a batch's rows as kernel centres (workers: goroutines, 0 all;
// ctx may be nil).
func (ks *KernelSums) Add(ctx context.Context, b *data.Batch, workers int) error {
	if ks == nil || b == nil || b.Set == nil || b.N == 0 {
		return nil
	}
	if ks.index == nil {
		ks.index = map[string]map[int64]int{}
		for j, id := range ks.st.Points {
			if ks.index[id.Source] == nil {
				ks.index[id.Source] = map[int64]int{}
			}
			ks.index[id.Source][id.Row] = j
		}
	}
	if b.K != ks.st.K || b.Labels == nil {
		return b.RowsError(fmt.Errorf("%d columns, where the first pass had %d (or no labels)", b.K, ks.st.K))
	}
	self := make([]int, b.N)
	rows := ks.index[b.Source]
	for i := range self {
		self[i] = -1
		if j, ok := rows[b.Offset+int64(i)]; ok {
			self[i] = j
		}
	}
	// ece_variational first: a batch its maps refuse leaves every sum as
	// it was.
	if ks.st.Variational != nil {
		if err := ks.st.Variational.add(b); err != nil {
			return err
		}
	}
	if ks.st.MMCE != nil {
		if err := ks.st.MMCE.Add(b.Probs, b.Labels, b.K, b.Weights); err != nil {
			return b.RowsError(err)
		}
	}
	if ks.st.TopEdges != nil {
		if err := addScores(ks.st.TopEdges, ks.st.ClassEdges, b.Probs, b.Labels, b.K, b.Weights); err != nil {
			return b.RowsError(err)
		}
	}
	if ks.st.Cells != nil {
		if err := ks.st.Cells.Add(b.Probs, b.Labels, b.Weights); err != nil {
			return b.RowsError(err)
		}
	}
	ks.st.Rows += int64(b.N)
	for _, ps := range ks.all() {
		if err := ps.Add(ctx, b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers}); err != nil {
			return b.RowsError(err)
		}
	}
	if ks.st.Witness != nil {
		if err := ks.st.Witness.Add(ctx, b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers}); err != nil {
			return b.RowsError(err)
		}
	}
	return nil
}

// Merge adds another shard's kernel sums over the same sample (and the
// same block of it).
func (ks *KernelSums) Merge(o *KernelSums) error {
	if ks == nil || o == nil {
		return nil
	}
	if ks.st.Block != o.st.Block || ks.st.Blocks != o.st.Blocks {
		return fmt.Errorf("evaluate: merging kernel sums of block %d of %d with block %d of %d", ks.st.Block, ks.st.Blocks, o.st.Block, o.st.Blocks)
	}
	if (ks.st.MMCE == nil) != (o.st.MMCE == nil) {
		return fmt.Errorf("evaluate: merging kernel sums with and without mmce")
	}
	if ks.st.MMCE != nil {
		if err := ks.st.MMCE.Merge(o.st.MMCE); err != nil {
			return err
		}
	}
	if (ks.st.Witness == nil) != (o.st.Witness == nil) {
		return fmt.Errorf("evaluate: merging kernel sums with and without ece_witness")
	}
	if ks.st.Witness != nil {
		if err := ks.st.Witness.Merge(o.st.Witness); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	if (ks.st.TopEdges == nil) != (o.st.TopEdges == nil) || len(ks.st.ClassEdges) != len(o.st.ClassEdges) || (ks.st.Cells == nil) != (o.st.Cells == nil) {
		return fmt.Errorf("evaluate: merging second-pass sums of different set-ups")
	}
	if ks.st.TopEdges != nil {
		if err := ks.st.TopEdges.Merge(o.st.TopEdges); err != nil {
			return err
		}
		for k := range ks.st.ClassEdges {
			if err := ks.st.ClassEdges[k].Merge(o.st.ClassEdges[k]); err != nil {
				return err
			}
		}
	}
	if ks.st.Cells != nil {
		if err := ks.st.Cells.Merge(o.st.Cells); err != nil {
			return err
		}
	}
	if (ks.st.Variational == nil) != (o.st.Variational == nil) {
		return fmt.Errorf("evaluate: merging kernel sums with and without ece_variational")
	}
	if ks.st.Variational != nil {
		if err := ks.st.Variational.merge(o.st.Variational); err != nil {
			return err
		}
	}
	ks.st.Rows += o.st.Rows
	a, b := ks.all(), o.all()
	if len(ks.st.Notions) != len(o.st.Notions) || len(a) != len(b) {
		return fmt.Errorf("evaluate: merging kernel sums of %d and %d notions", len(a), len(b))
	}
	for i := range a {
		if err := a[i].Merge(b[i]); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	return nil
}

// ConcatKernelSums joins the second-pass sums of every block of the
// evaluation points (Sums.KernelSumsBlock, each merged over all shards),
// given in any order, into the sums of all points.
func ConcatKernelSums(blocks []*KernelSums) (*KernelSums, error) {
	if len(blocks) == 0 {
		return nil, errors.New("evaluate: no blocks of kernel sums")
	}
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b *KernelSums) int { return a.st.Block - b.st.Block })
	nb := max(1, bs[0].st.Blocks)
	if len(bs) != nb {
		return nil, fmt.Errorf("evaluate: %d of the %d blocks of kernel sums", len(bs), nb)
	}
	a := bs[0]
	for i, b := range bs {
		switch {
		case b.st.Block != i || max(1, b.st.Blocks) != nb:
			return nil, fmt.Errorf("evaluate: block %d of %d where block %d of %d was due", b.st.Block, b.st.Blocks, i, nb)
		case b.st.K != a.st.K || b.st.Rows != a.st.Rows || len(b.st.Notions) != len(a.st.Notions) || (b.st.Sharpness == nil) != (a.st.Sharpness == nil) || (b.st.MMCE == nil) != (a.st.MMCE == nil) || (b.st.Witness == nil) != (a.st.Witness == nil):
			return nil, fmt.Errorf("evaluate: blocks of kernel sums of different set-ups or rows (%d and %d)", a.st.Rows, b.st.Rows)
		case i > 0 && (b.st.TopEdges != nil || b.st.Cells != nil || b.st.Variational != nil):
			return nil, fmt.Errorf("evaluate: block %d holds the sums of block 0", i)
		}
	}
	out := &KernelSums{st: kernelSumsState{Version: streamVersion, K: a.st.K, Rows: a.st.Rows, TopEdges: a.st.TopEdges, ClassEdges: a.st.ClassEdges, Cells: a.st.Cells, Variational: a.st.Variational}}
	var err error
	for i := range a.st.Notions {
		ps, err := concatBlocks(bs, func(b *KernelSums) *kde.PointSums { return b.st.Notions[i] }, kde.ConcatPointSums)
		if err != nil {
			return nil, err
		}
		out.st.Notions = append(out.st.Notions, ps)
	}
	if a.st.Sharpness != nil {
		if out.st.Sharpness, err = concatBlocks(bs, func(b *KernelSums) *kde.PointSums { return b.st.Sharpness }, kde.ConcatPointSums); err != nil {
			return nil, err
		}
	}
	if a.st.Witness != nil {
		if out.st.Witness, err = concatBlocks(bs, func(b *KernelSums) *kde.WitnessSums { return b.st.Witness }, kde.ConcatWitnessSums); err != nil {
			return nil, err
		}
	}
	if a.st.MMCE != nil {
		if out.st.MMCE, err = concatBlocks(bs, func(b *KernelSums) *metric.MMCESums { return b.st.MMCE }, metric.ConcatMMCESums); err != nil {
			return nil, err
		}
	}
	for _, b := range bs {
		out.st.Points = append(out.st.Points, b.st.Points...)
	}
	return out, nil
}

// concatBlocks joins one part of the blocks' sums (get), in block order,
// with that part's concatenation (join).
func concatBlocks[T any](bs []*KernelSums, get func(*KernelSums) T, join func([]T) (T, error)) (T, error) {
	parts := make([]T, len(bs))
	for i, b := range bs {
		parts[i] = get(b)
	}
	out, err := join(parts)
	if err != nil {
		return out, fmt.Errorf("evaluate: %w", err)
	}
	return out, nil
}

// Block returns which block of the evaluation points the sums hold, and of
// how many blocks (0 of 1: every point; see Sums.KernelSumsBlock).
func (ks *KernelSums) Block() (block, blocks int) { return ks.st.Block, max(1, ks.st.Blocks) }

// N returns the number of rows added (merged shards' included).
func (ks *KernelSums) N() int64 { return ks.st.Rows }
