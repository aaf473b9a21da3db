package beam

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*Shard)(nil)).Elem())
	register.DoFn3x1[context.Context, Shard, func(*data.Batch), error](&readFn{})
	register.Emitter1[*data.Batch]()
	register.Combiner3[*evaluate.Sums, *data.Batch, *evaluate.Sums](&sumsFn{})
	register.DoFn4x1[context.Context, Shard, *evaluate.Sums, func(*evaluate.KernelSums), error](&kernelFn{})
	register.Emitter1[*evaluate.KernelSums]()
	register.Combiner3[*evaluate.KernelSums, *evaluate.KernelSums, *evaluate.KernelSums](&kernelMergeFn{})
	register.DoFn4x1[context.Context, *evaluate.Sums, func(**evaluate.KernelSums) bool, func(string), error](&finishFn{})
	register.Iter1[*evaluate.KernelSums]()
	register.Emitter1[string]()
	beam.RegisterType(reflect.TypeOf((*BlockShard)(nil)).Elem())
	register.DoFn2x0[Shard, func(BlockShard)](&blockPairsFn{})
	register.Emitter1[BlockShard]()
	register.DoFn4x1[context.Context, BlockShard, *evaluate.Sums, func(*evaluate.KernelSums), error](&blockKernelFn{})
	register.Combiner3[*blockAcc, *evaluate.KernelSums, *evaluate.KernelSums](&blocksMergeFn{})
}

// The functions of the pipeline are structs whose exported fields Beam
// serialises (JSON) to the workers.

// readFn reads a shard into batches (the first pass).
type readFn struct {
	Data data.Options
	Rows int
}

// ProcessElement emits the batches of the shard sh.
func (f *readFn) ProcessElement(ctx context.Context, sh Shard, emit func(*data.Batch)) error {
	return marked(eachBatch(ctx, sh, f.Data, f.Rows, func(b *data.Batch) error {
		emit(b)
		return nil
	}))
}

// sumsFn is the CombineFn of the first pass: the accumulator is an
// *evaluate.Sums, started from Empty (the JSON of evaluate.NewSums of the
// options, which carries them to the workers).
type sumsFn struct {
	Empty []byte
}

// CreateAccumulator returns empty sums.
func (f *sumsFn) CreateAccumulator() (*evaluate.Sums, error) {
	return decodeSums(f.Empty)
}

// AddInput adds the rows of a batch.
func (f *sumsFn) AddInput(s *evaluate.Sums, b *data.Batch) (*evaluate.Sums, error) {
	if err := s.Add(b); err != nil {
		return nil, marked(err)
	}
	return s, nil
}

// MergeAccumulators adds the sums b to a.
func (f *sumsFn) MergeAccumulators(a, b *evaluate.Sums) (*evaluate.Sums, error) {
	if err := a.Merge(b); err != nil {
		return nil, marked(err)
	}
	return a, nil
}

// ExtractOutput returns the sums.
func (f *sumsFn) ExtractOutput(s *evaluate.Sums) *evaluate.Sums { return s }

// kernelFn computes the kernel sums of a shard (the second pass) at the
// evaluation points of the complete first pass.
type kernelFn struct {
	Data    data.Options
	Rows    int
	Workers int
}

// ProcessElement reads the shard sh and emits its kernel sums.
func (f *kernelFn) ProcessElement(ctx context.Context, sh Shard, sums *evaluate.Sums, emit func(*evaluate.KernelSums)) error {
	ks, err := sums.KernelSums()
	return marked(addShard(ctx, ks, err, sh, f.Data, f.Rows, f.Workers, emit))
}

// addShard adds the rows of shard sh to the empty second-pass sums ks (err:
// the error of making them; nil sums: no second pass) and emits them.
func addShard(ctx context.Context, ks *evaluate.KernelSums, err error, sh Shard, opts data.Options, rows, workers int, emit func(*evaluate.KernelSums)) error {
	if err != nil {
		return errorf("%w", err)
	}
	if ks == nil {
		return nil
	}
	err = eachBatch(ctx, sh, opts, rows, func(b *data.Batch) error {
		if err := ks.Add(ctx, b, workers); err != nil {
			return errorf("%w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	emit(ks)
	return nil
}

// BlockShard is one element of the block-pair plan: a shard and a block of
// the evaluation points.
type BlockShard struct {
	Shard Shard
	Block int
}

// blockPairsFn emits the pairs of a shard with every block.
type blockPairsFn struct{ Blocks int }

// ProcessElement emits (sh, b) for every block b.
func (f *blockPairsFn) ProcessElement(sh Shard, emit func(BlockShard)) {
	for b := 0; b < f.Blocks; b++ {
		emit(BlockShard{Shard: sh, Block: b})
	}
}

// blockKernelFn computes the kernel sums of one block of the evaluation
// points over one shard.
type blockKernelFn struct {
	Data    data.Options
	Rows    int
	Workers int
	Blocks  int
}

// ProcessElement reads the pair's shard and emits its block's sums.
func (f *blockKernelFn) ProcessElement(ctx context.Context, p BlockShard, sums *evaluate.Sums, emit func(*evaluate.KernelSums)) error {
	ks, err := sums.KernelSumsBlock(p.Block, f.Blocks)
	return marked(addShard(ctx, ks, err, p.Shard, f.Data, f.Rows, f.Workers, emit))
}

// blockAcc is the accumulator of blocksMergeFn: each block's sums merged
// so far (nil: none yet).
type blockAcc struct {
	Blocks []*evaluate.KernelSums
}

// blocksMergeFn is the CombineFn of the block-pair plan: it merges the
// sums of each block over the shards and joins the blocks at the end.
type blocksMergeFn struct{ Blocks int }

// CreateAccumulator returns an accumulator with no block.
func (f *blocksMergeFn) CreateAccumulator() *blockAcc {
	return &blockAcc{Blocks: make([]*evaluate.KernelSums, f.Blocks)}
}

// AddInput merges a (block, shard) pair's sums into its block.
func (f *blocksMergeFn) AddInput(a *blockAcc, ks *evaluate.KernelSums) (*blockAcc, error) {
	block, _ := ks.Block()
	if block < 0 || block >= len(a.Blocks) {
		return nil, marked(errorf("kernel sums of block %d of %d", block, len(a.Blocks)))
	}
	m, err := (&kernelMergeFn{}).MergeAccumulators(a.Blocks[block], ks)
	if err != nil {
		return nil, marked(err)
	}
	a.Blocks[block] = m
	return a, nil
}

// MergeAccumulators merges the blocks of b into a.
func (f *blocksMergeFn) MergeAccumulators(a, b *blockAcc) (*blockAcc, error) {
	for _, ks := range b.Blocks {
		if ks == nil {
			continue
		}
		if _, err := f.AddInput(a, ks); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ExtractOutput joins the blocks (nil when there were none: no shard).
func (f *blocksMergeFn) ExtractOutput(a *blockAcc) (*evaluate.KernelSums, error) {
	if slices.Contains(a.Blocks, nil) {
		if slices.IndexFunc(a.Blocks, func(ks *evaluate.KernelSums) bool { return ks != nil }) < 0 {
			return nil, nil
		}
		return nil, marked(errorf("a block of the evaluation points has no kernel sums"))
	}
	ks, err := evaluate.ConcatKernelSums(a.Blocks)
	if err != nil {
		return nil, marked(err)
	}
	return ks, nil
}

// kernelMergeFn is the CombineFn of the second pass: it merges the kernel
// sums of the shards (the accumulator is nil until the first).
type kernelMergeFn struct{}

// CreateAccumulator returns nil: no kernel sums yet.
func (f *kernelMergeFn) CreateAccumulator() *evaluate.KernelSums { return nil }

// AddInput merges the kernel sums b into a.
func (f *kernelMergeFn) AddInput(a, b *evaluate.KernelSums) (*evaluate.KernelSums, error) {
	return f.MergeAccumulators(a, b)
}

// MergeAccumulators merges the kernel sums b into a.
func (f *kernelMergeFn) MergeAccumulators(a, b *evaluate.KernelSums) (*evaluate.KernelSums, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	if err := a.Merge(b); err != nil {
		return nil, marked(err)
	}
	return a, nil
}

// ExtractOutput returns the merged kernel sums.
func (f *kernelMergeFn) ExtractOutput(a *evaluate.KernelSums) *evaluate.KernelSums { return a }

// finishFn turns the sums of both passes into the `calib eval --json`
// document and writes it to Output ("" writes nothing).
type finishFn struct {
	Output string
	File   string
	Start  int64 // Unix nanoseconds at Build: the Evaluation's Seconds count from there
}

// ProcessElement finishes the evaluation of the merged sums and the kernel
// sums (none without ece_kde) and emits the document.
func (f *finishFn) ProcessElement(ctx context.Context, sums *evaluate.Sums, kernel func(**evaluate.KernelSums) bool, emit func(string)) error {
	var ks, x *evaluate.KernelSums
	for kernel(&x) {
		if x != nil {
			ks = x
		}
	}
	ev, err := evaluate.Finish(sums, ks)
	if err != nil {
		return marked(err)
	}
	ev.File = f.File
	if f.Start != 0 {
		ev.Seconds = time.Since(time.Unix(0, f.Start)).Seconds()
	}
	var doc bytes.Buffer
	if err := evaluate.WriteJSON(&doc, ev); err != nil {
		return marked(err)
	}
	if f.Output != "" {
		if err := writeOutput(ctx, f.Output, doc.Bytes()); err != nil {
			return marked(err)
		}
	}
	emit(doc.String())
	return nil
}
