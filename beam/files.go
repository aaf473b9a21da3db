package beam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
)

// Shard is one prediction file of a sharded set, with its own labels and
// weights files ("" when the labels or weights, if any, are in the file).
// File is also the name of the shard's rows for the sample of evaluation
// points (data.Batch.Source): the same name must be used wherever the
// same rows are evaluated, as calib eval --stream uses the names that
// data.Shards returns.
//
// Index is the shard's position in the list that Shards returns (the
// sorted files): the stream's place of its rows for the sample, as calib
// eval --stream numbers the same shards.
type Shard struct {
	File    string
	Labels  string
	Weights string
	Index   int
}

// Shards returns the shards that the patterns name, each of input, labels
// and weights a file, a directory or a glob (see data.Shards; a name with
// a scheme, such as gs://bucket/preds-*.parquet, is listed through Beam's
// filesystem package, sorted lexically). The labels and weights patterns
// ("" when none) must name as many files as input; the i-th labels file and
// the i-th weights file, in sorted order, go with the i-th prediction file.
func Shards(ctx context.Context, input, labels, weights string) ([]Shard, error) {
	files, err := expand(ctx, input)
	if err != nil {
		return nil, err
	}
	shards := make([]Shard, len(files))
	for i, f := range files {
		shards[i].File, shards[i].Index = f, i
	}
	for _, side := range []struct {
		pattern, what string
		set           func(sh *Shard, name string)
	}{
		{labels, "labels", func(sh *Shard, name string) { sh.Labels = name }},
		{weights, "weights", func(sh *Shard, name string) { sh.Weights = name }},
	} {
		if side.pattern == "" {
			continue
		}
		names, err := expand(ctx, side.pattern)
		if err != nil {
			return nil, err
		}
		if len(names) != len(files) {
			return nil, &data.StreamError{Err: fmt.Errorf("%s names %d %s files for the %d prediction files of %s; give one per prediction file (they are paired in sorted order)", side.pattern, len(names), side.what, len(files), input)}
		}
		for i, name := range names {
			side.set(&shards[i], name)
		}
	}
	return shards, nil
}

// remote reports whether name has a scheme (gs://, memfs://, ...) and is
// read through Beam's filesystem package.
func remote(name string) bool { return strings.Contains(name, "://") }

// expand lists the files of a pattern, sorted.
func expand(ctx context.Context, pattern string) ([]string, error) {
	if !remote(pattern) {
		files, err := data.Shards(pattern)
		if err != nil {
			return nil, errorf("%w", err)
		}
		return files, nil
	}
	fs, err := filesystem.New(ctx, pattern)
	if err != nil {
		return nil, errorf("%s: %w", pattern, err)
	}
	defer fs.Close()
	files, err := fs.List(ctx, pattern)
	if err != nil {
		return nil, errorf("listing %s: %w", pattern, err)
	}
	if len(files) == 0 {
		return nil, errorf("%s: no file matches the pattern: %w", pattern, os.ErrNotExist)
	}
	slices.Sort(files)
	return files, nil
}

// eachBatch reads the shard sh in batches of at most rows rows (rows <= 0:
// about data.DefaultChunkBytes of predictions), decoded as opts says (its Labels and Weights
// replaced by the shard's), and calls fn on each; the batches are named
// sh.File with their offsets in it.
func eachBatch(ctx context.Context, sh Shard, opts data.Options, rows int, fn func(*data.Batch) error) (err error) {
	local := sh
	if remote(sh.File) || remote(sh.Labels) || remote(sh.Weights) {
		dir, err := os.MkdirTemp("", "calib-beam-*")
		if err != nil {
			return errorf("%s: %w", sh.File, err)
		}
		defer os.RemoveAll(dir)
		for i, p := range []*string{&local.File, &local.Labels, &local.Weights} {
			if !remote(*p) {
				continue
			}
			// Keep the extension: it picks the format.
			dst := filepath.Join(dir, fmt.Sprintf("%d-%s", i, path.Base(*p)))
			if err := download(ctx, *p, dst); err != nil {
				return err
			}
			*p = dst
		}
	}
	// The data package's errors name the file; a local copy's name is
	// not the user's.
	wrap := func(err error) error {
		if local != sh {
			return errorf("%s (copied to %s): %w", sh.File, local.File, err)
		}
		return errorf("%w", err)
	}
	// A shard may have only zero weights: evaluate.Finish checks the total.
	opts.Labels, opts.Weights, opts.ZeroWeightFile = local.Labels, local.Weights, true
	// A shard without rows (an empty part file, a CSV of its header
	// alone) adds nothing: Spark and Beam write such files; a set without
	// any row is evaluate.Finish's error.
	c, err := data.OpenChunks(local.File, opts, rows)
	if errors.Is(err, data.ErrEmpty) {
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	defer c.Close()
	for started := false; ; started = true {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, err := c.Next()
		if err == io.EOF || !started && errors.Is(err, data.ErrEmpty) {
			return nil
		}
		if err != nil {
			return wrap(err)
		}
		if err := fn(&data.Batch{Set: s, Source: sh.File, Shard: sh.Index, Offset: c.Offset()}); err != nil {
			return err
		}
	}
}

// download copies the remote file name to the local file dst.
func download(ctx context.Context, name, dst string) (err error) {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return errorf("%s: %w", name, err)
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, name)
	if err != nil {
		return errorf("opening %s: %w", name, err)
	}
	defer r.Close()
	f, err := os.Create(dst)
	if err != nil {
		return errorf("copying %s: %w", name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = errorf("copying %s: %w", name, cerr)
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return errorf("copying %s: %w", name, err)
	}
	return nil
}

// writeOutput writes doc to the file name: atomically for a local file,
// through Beam's filesystem package for a name with a scheme.
func writeOutput(ctx context.Context, name string, doc []byte) error {
	if !remote(name) {
		err := atomicfile.Write(name, func(w io.Writer) error {
			_, err := w.Write(doc)
			return err
		})
		if err != nil {
			return errorf("writing %s: %w", name, err)
		}
		return nil
	}
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return errorf("%s: %w", name, err)
	}
	defer fs.Close()
	if err := filesystem.Write(ctx, fs, name, doc); err != nil {
		return errorf("writing %s: %w", name, err)
	}
	return nil
}

// readOutput reads the file name, local or with a scheme.
func readOutput(ctx context.Context, name string) ([]byte, error) {
	if !remote(name) {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, errorf("reading the output: %w", err)
		}
		return b, nil
	}
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return nil, errorf("%s: %w", name, err)
	}
	defer fs.Close()
	b, err := filesystem.Read(ctx, fs, name)
	if err != nil {
		return nil, errorf("reading %s: %w", name, err)
	}
	return b, nil
}

// errNoShards is an empty shard list.
var errNoShards = errorf("no shards")
