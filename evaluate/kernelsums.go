package evaluate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/calib-dev/calib/data"
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
	Version int `json:"version"`
	// Each part's state (kernelPart), declared in its metric's file,
	// around the points; the JSON form is flat, in this order.
	eceKDEKernelState
	// Points names the row of each evaluation point, in the order of the
	// points of every notion.
	Points []pointID `json:"points"`
	K      int       `json:"k"` // columns of the rows
	mmceKernelState
	witnessKernelState
	sharpnessKernelState
	binnedKernelState
	// Rows counts the rows added, for the check that the pass is complete.
	Rows int64 `json:"rows"`
	variationalKernelState
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
	for _, p := range allKernelParts() {
		if p.check == nil {
			continue
		}
		if err := p.check(&v); err != nil {
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
	if nb < 1 || b < 0 || b >= nb {
		return nil, fmt.Errorf("evaluate: block %d of %d", b, nb)
	}
	if !s.KernelPass() {
		return nil, nil
	}
	if !s.started || s.st.N == 0 {
		return nil, &data.StreamError{Err: data.ErrEmpty}
	}
	kb := &kernelBlock{s: s, ctx: ctx, free: free}
	ks := &KernelSums{st: kernelSumsState{Version: streamVersion, K: s.st.K, Block: b, Blocks: nb}}
	pts, ids, err := s.blockPoints(b, nb)
	if err != nil {
		return nil, err
	}
	kb.points, ks.st.Points = pts, ids
	for _, p := range s.st.Config.kernelParts() {
		// A blockZero part starts in block 0 only, a per-point part only
		// where there are evaluation points (a sample).
		if p.start == nil || (p.blockZero && b != 0) || (!p.blockZero && kb.points == nil) {
			continue
		}
		if err := p.start(ks, kb); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

// kernelPart is a metric's part of a stream's second pass
// (metricDef.kernel): its state is a struct declared beside it and
// embedded in kernelSumsState (so the JSON form names its fields), and
// these functions, written in the metric's file, are the only code that
// sets it up, adds to it, merges it, joins its blocks and checks it. Metrics that share sums share one part (the binned
// metrics' bin edges and cells). holds and concat are required. The parts
// run in the table's order, on which two depend (TestKernelPartOrder):
// ece_variational's first, since its add refuses the batches its maps do
// not fit before any sum is touched, and ece_kde's before sharpness's,
// which shares ece_kde's sums of its notion.
type kernelPart struct {
	// what names the part's sums in messages ("mmce").
	what string
	// blockZero says the sums are not per evaluation point: they are
	// set up in block 0 only and carried whole when the blocks are
	// joined.
	blockZero bool
	// holds reports whether a state holds the part's sums.
	holds func(st *kernelSumsState) bool
	// start sets up the sums for the block kb (a per-point part's has
	// evaluation points).
	start func(ks *KernelSums, kb *kernelBlock) error
	// add adds a batch's rows; self gives each row's evaluation point
	// of the block (-1: none).
	add func(ks *KernelSums, ctx context.Context, b *data.Batch, self []int, workers int) error
	// merge adds another shard's sums of the same block (both hold
	// them).
	merge func(ks, o *KernelSums) error
	// concat joins the blocks' sums bs (in block order, all holding
	// them) into out; a blockZero part's takes block 0's.
	concat func(out *KernelSums, bs []*KernelSums) error
	// check checks a decoded state's sums (against its points).
	check func(st *kernelSumsState) error
	// complete checks, at Finish, that the sums saw the first pass's n
	// rows.
	complete func(st *kernelSumsState, n int64) error
}

// kernelBlock is what a part's start reads: the first pass, the fits'
// context, whether the first pass's samples may go as they are fitted
// (free), and the block's evaluation points (a per-point part starts only
// where there are some).
type kernelBlock struct {
	s      *Sums
	ctx    context.Context
	free   bool
	points *evalPoints
}

// allKernelParts returns every second-pass part of the table, each once.
func allKernelParts() []*kernelPart { return partsOf(nil, secondPass) }

// kernelParts returns the second-pass parts of the configuration's
// metrics, each once, in the table's order.
func (c *streamConfig) kernelParts() []*kernelPart { return partsOf(c.asks, secondPass) }

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
	// The parts in the table's order: ece_variational's first, so that a
	// batch its maps refuse leaves every sum as it was.
	for _, p := range allKernelParts() {
		if p.add == nil || !p.holds(&ks.st) {
			continue
		}
		if err := p.add(ks, ctx, b, self, workers); err != nil {
			return err
		}
	}
	ks.st.Rows += int64(b.N)
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
	for _, p := range allKernelParts() {
		switch a, b := p.holds(&ks.st), p.holds(&o.st); {
		case a != b:
			return fmt.Errorf("evaluate: merging kernel sums with and without %s", p.what)
		case !a || p.merge == nil:
			continue
		}
		if err := p.merge(ks, o); err != nil {
			return err
		}
	}
	ks.st.Rows += o.st.Rows
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
		if b.st.Block != i || max(1, b.st.Blocks) != nb {
			return nil, fmt.Errorf("evaluate: block %d of %d where block %d of %d was due", b.st.Block, b.st.Blocks, i, nb)
		}
		if b.st.K != a.st.K || b.st.Rows != a.st.Rows {
			return nil, fmt.Errorf("evaluate: blocks of kernel sums of different set-ups or rows (%d and %d)", a.st.Rows, b.st.Rows)
		}
	}
	out := &KernelSums{st: kernelSumsState{Version: streamVersion, K: a.st.K, Rows: a.st.Rows}}
	for _, b := range bs {
		out.st.Points = append(out.st.Points, b.st.Points...)
	}
	for _, p := range allKernelParts() {
		held := p.holds(&a.st)
		for i, b := range bs {
			switch {
			case p.blockZero && i > 0 && p.holds(&b.st):
				return nil, fmt.Errorf("evaluate: block %d holds the sums of block 0", i)
			case !p.blockZero && p.holds(&b.st) != held:
				return nil, fmt.Errorf("evaluate: blocks of kernel sums of different set-ups or rows (%d and %d)", a.st.Rows, b.st.Rows)
			}
		}
		if !held {
			continue
		}
		if err := p.concat(out, bs); err != nil {
			return nil, err
		}
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
