package beam

import (
	"context"
	"errors"
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Checked is what Check found before the pipeline starts.
type Checked struct {
	// Shards are the shards to evaluate: those given, but for the local
	// shards without rows, which Empty names.
	Shards []Shard
	Empty  []string
	// First is the first row of the first shard with rows: what the
	// options must fit (K, the input's kind).
	First *data.Set
}

// Check reads the first row of every local shard (and of the first
// shard, local or not) before a pipeline starts, so that the options and
// the data are checked in the driver, where an error is one line, instead
// of in a worker, whose error a runner reports among its own: every such
// shard must open (its format known and its file whole: a truncated
// Parquet file fails here), hold labels, and have the columns, kind
// (probabilities or logits) and weights of the first; the options must
// take the first row (the sums of evaluate.NewSums of o.Stream add it).
// Shards without rows are left out of Checked.Shards and named in Empty
// (all of them empty is an error); those that Check does not read (remote
// ones past the first) are kept as they are.
func Check(ctx context.Context, shards []Shard, o Options) (*Checked, error) {
	if len(shards) == 0 {
		return nil, errNoShards
	}
	sums, err := evaluate.NewSums(o.Stream)
	if err != nil {
		return nil, errorf("%w", err)
	}
	out := &Checked{}
	for i, sh := range shards {
		if i > 0 && (remote(sh.File) || remote(sh.Labels) || remote(sh.Weights)) {
			out.Shards = append(out.Shards, sh)
			continue
		}
		var first *data.Batch
		errFirst := errors.New("first row read")
		err := eachBatch(ctx, sh, o.Data, 1, func(b *data.Batch) error {
			first = b
			return errFirst
		})
		switch {
		case err != nil && !errors.Is(err, errFirst):
			return nil, err
		case first == nil: // eachBatch reads no rows of an empty shard
			out.Empty = append(out.Empty, sh.File)
			continue
		}
		if out.First == nil {
			out.First = first.Set
		}
		// The sums check the row against the stream's first: the same
		// columns, kind and weights.
		if err := sums.Add(first); err != nil {
			return nil, err
		}
		out.Shards = append(out.Shards, sh)
	}
	if len(out.Shards) == 0 {
		return nil, &data.StreamError{Err: fmt.Errorf("%w: every one of the %d shards is empty", data.ErrEmpty, len(shards))}
	}
	return out, nil
}
