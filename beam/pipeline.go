package beam

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Options configures a pipeline. The zero value evaluates the default
// streamed metrics (evaluate.StreamOptions' defaults) of probability files
// with their labels inside, in batches of about data.DefaultChunkBytes of
// predictions.
type Options struct {
	// Stream holds the options of the evaluation, as evaluate.Stream takes
	// them; they are checked by Build, before any data is read. Progress
	// is not used. Workers bounds the goroutines of the kernel sums of
	// one shard on a worker (0: all cores); the results do not depend on
	// it.
	Stream evaluate.StreamOptions
	// Data says how to decode every shard (format, logits, tolerance,
	// Parquet columns, ...); its Labels and Weights are replaced by each
	// Shard's.
	Data data.Options
	// Rows is the number of rows of a batch (0: about
	// data.DefaultChunkBytes of predictions, see data.OpenChunks).
	// The results do not depend on it beyond rounding.
	Rows int
	// Output is where the last stage writes the `calib eval --json`
	// document: a local path, or a name with a scheme written through
	// Beam's filesystem package (gs://...). It must be writable by the
	// worker that runs the last stage. Build writes nothing when it is
	// "" (the document is still the PCollection it returns); Run then
	// uses a temporary file.
	Output string
	// File is the Evaluation's File, the input as the user named it (""
	// leaves it out).
	File string
	// EvalBlocks > 1 runs the second pass as the block-pair plan: the
	// evaluation points cut into EvalBlocks blocks, each (block, shard)
	// pair an element of its own (a worker holds one block's points and
	// reads one shard), the pairs merged per block and the blocks joined
	// (evaluate.Sums.KernelSumsBlock, evaluate.ConcatKernelSums): the
	// same document bit for bit, with the O(m n) kernel work spread over
	// blocks x shards. For the exact estimates (every row a point) at
	// moderate n. 0 or 1: one block.
	EvalBlocks int
}

// Build adds the evaluation of the shards to the pipeline of s and returns
// the PCollection of the `calib eval --json` document (one string, as
// evaluate.WriteJSON writes it, with its final newline), which is also
// written to o.Output when that is set. The options are checked here: a
// bad option or an empty shard list is an error and adds nothing. The
// shards are evaluated in the order given, named by Shard.File.
func Build(s beam.Scope, shards []Shard, o Options) (beam.PCollection, error) {
	if len(shards) == 0 {
		return beam.PCollection{}, errNoShards
	}
	if o.Rows < 0 {
		return beam.PCollection{}, errorf("%d rows per batch: want a positive number, or 0 for about %d bytes of predictions a batch", o.Rows, data.DefaultChunkBytes)
	}
	if o.EvalBlocks < 0 || o.EvalBlocks > MaxEvalBlocks {
		return beam.PCollection{}, errorf("%d blocks of evaluation points: want 1 to %d (0: 1)", o.EvalBlocks, MaxEvalBlocks)
	}
	empty, err := evaluate.NewSums(o.Stream)
	if err != nil {
		return beam.PCollection{}, errorf("%w", err)
	}
	emptyJSON, err := json.Marshal(empty)
	if err != nil {
		return beam.PCollection{}, errorf("%w", err)
	}
	s = s.Scope("calib.eval")
	// The shard names, spread over the workers.
	names := beam.Reshuffle(s, beam.CreateList(s, slices.Clone(shards)))
	batches := beam.ParDo(s, &readFn{Data: o.Data, Rows: o.Rows}, names)
	sums := beam.Combine(s.Scope("pass1"), &sumsFn{Empty: emptyJSON}, batches)
	var kernel beam.PCollection
	switch {
	case empty.KernelPass() && o.EvalBlocks > 1:
		p2 := s.Scope("pass2")
		pairs := beam.Reshuffle(p2, beam.ParDo(p2, &blockPairsFn{Blocks: o.EvalBlocks}, names))
		perPair := beam.ParDo(p2, &blockKernelFn{Data: o.Data, Rows: o.Rows, Workers: o.Stream.Workers, Blocks: o.EvalBlocks}, pairs, beam.SideInput{Input: sums})
		kernel = beam.Combine(p2, &blocksMergeFn{Blocks: o.EvalBlocks}, perPair)
	case empty.KernelPass():
		perShard := beam.ParDo(s.Scope("pass2"), &kernelFn{Data: o.Data, Rows: o.Rows, Workers: o.Stream.Workers}, names, beam.SideInput{Input: sums})
		kernel = beam.Combine(s.Scope("pass2"), &kernelMergeFn{}, perShard)
	default:
		kernel = beam.CreateList(s, []*evaluate.KernelSums{})
	}
	return beam.ParDo(s, &finishFn{Output: o.Output, File: o.File, Start: time.Now().UnixNano()}, sums, beam.SideInput{Input: kernel}), nil
}

// MaxEvalBlocks bounds Options.EvalBlocks (and calib-beam's --eval-blocks).
const MaxEvalBlocks = 1 << 16

// Run builds the pipeline of the shards and runs it on the runner of the
// --runner flag (prism, in this process, when it is not set; see
// beamx.Run), then reads back and returns the Evaluation the last stage
// wrote to o.Output (a temporary file when o.Output is ""). The Evaluation
// is decoded from the JSON document, so the fields JSON leaves out
// (Input, Calibrated) are empty. Run calls beam.Init if it was not called.
func Run(ctx context.Context, shards []Shard, o Options) (*evaluate.Evaluation, error) {
	if !beam.Initialized() {
		beam.Init()
	}
	if o.Output == "" {
		dir, err := os.MkdirTemp("", "calib-beam-*")
		if err != nil {
			return nil, errorf("%w", err)
		}
		defer os.RemoveAll(dir)
		o.Output = filepath.Join(dir, "eval.json")
	}
	p, s := beam.NewPipelineWithRoot()
	if _, err := Build(s, shards, o); err != nil {
		return nil, err
	}
	if err := beamx.Run(ctx, p); err != nil {
		return nil, errorf("running the pipeline: %w", err)
	}
	doc, err := readOutput(ctx, o.Output)
	if err != nil {
		return nil, err
	}
	ev := new(evaluate.Evaluation)
	if err := json.Unmarshal(doc, ev); err != nil {
		return nil, errorf("reading %s: %w", o.Output, err)
	}
	return ev, nil
}
