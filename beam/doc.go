// Package beam evaluates a sharded prediction set on an Apache Beam runner:
// the streamed evaluation of `calib eval --stream` (package evaluate's Sums,
// KernelSums and Finish), computed on a cluster, written as the `calib eval
// --json` document.
//
// It is its own Go module (github.com/calib-dev/calib/beam) so that
// importing the calib library never pulls in Beam's dependencies. The
// pipeline (Build) is
//
//	shards (beam.Create of the Shard list, then a Reshuffle)
//	  -> readFn: each shard read in batches of Options.Rows rows
//	     (data.OpenChunks; Batch.Source = the shard's name as given,
//	     Batch.Offset = the index of the batch's first row in the shard)
//	  -> sumsFn (CombineFn, accumulator *evaluate.Sums): first pass, the
//	     exact sums and the sample of evaluation points
//	  -> kernelFn (ParDo over the shards again, the merged Sums as a side
//	     input): one *evaluate.KernelSums per shard (only with ece_kde)
//	  -> kernelMergeFn (CombineFn merging the KernelSums)
//	  -> finishFn: evaluate.Finish, the JSON document, written to
//	     Options.Output.
//
// Each pass opens the shard files, as evaluate.Stream does, so no row
// travels between workers: only the sums do. Since the sample of evaluation
// points is a function of (source, row, seed) only (see the sample of package evaluate),
// the pipeline draws the same sample as evaluate.Stream over the same
// shards; the sums differ from the single-process ones only by the rounding
// of their merge order (the order in which the runner combines them).
//
// Elements and accumulators travel with the coders registered here: a
// compact binary coder for *data.Batch and the versioned JSON forms of
// *evaluate.Sums and *evaluate.KernelSums (Beam's default schema coder
// would drop their unexported state).
//
// Shard and output names without a scheme are local files; names with a
// scheme (gs://, s3://, memfs://) are read and written through Beam's
// filesystem package, a remote shard being copied to a local temporary file
// before it is decoded.
package beam
