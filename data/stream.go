package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Shard is one prediction file of a streamed set, with its own labels and
// weights files ("" when the labels or weights, if any, are in the file).
type Shard struct {
	File, Labels, Weights string
}

// Files returns a Source that reads the prediction files names (shards of
// one set, read in the order given; see Shards) in chunks of rows rows
// (<= 0: data's default) with OpenChunks, never a whole file, each
// with the labels and weights files of opts (for one file). It is
// ShardFiles with those shards.
func Files(names []string, opts Options, rows int, transform func(*Set) (*Set, error)) Source {
	shards := make([]Shard, len(names))
	for i, n := range names {
		shards[i] = Shard{File: n, Labels: opts.Labels, Weights: opts.Weights}
	}
	return ShardFiles(shards, opts, rows, transform)
}

// ShardFiles returns a Source that reads the shards in the order given, in
// chunks of rows rows (<= 0: data's default) with OpenChunks (the
// options opts, their Labels and Weights replaced by each shard's). Each
// batch is named by its file name as given and its rows' index in the
// file. transform, if not nil, is applied to every chunk (a calibration
// map). Of several shards, one that holds no rows (an empty file, a CSV
// of its header alone: Spark and Beam write such part files) is skipped
// and named by Skipped; a shard that is not a regular file (a pipe) can be
// read by the first pass only: a second pass is a *StreamError saying so.
func ShardFiles(shards []Shard, opts Options, rows int, transform func(*Set) (*Set, error)) Source {
	// A shard may have only zero weights; the stream checks the total.
	opts.ZeroWeightFile = opts.ZeroWeightFile || len(shards) > 1
	return &fileSource{shards: shards, opts: opts, rows: rows, transform: transform}
}

type fileSource struct {
	shards    []Shard
	opts      Options
	rows      int
	transform func(*Set) (*Set, error)
	passes    int
	skipped   []string // empty shards, each once
}

// Skipped names the shards skipped because they hold no rows.
func (f *fileSource) Skipped() []string { return f.skipped }

// Size returns the total size in bytes of the files (0 for those that
// cannot be read: Open reports them).
func (f *fileSource) Size() int64 {
	var n int64
	for _, sh := range f.shards {
		if st, err := os.Stat(sh.File); err == nil {
			n += st.Size()
		}
	}
	return n
}

func (f *fileSource) Open() (Batches, error) {
	if len(f.shards) == 0 {
		return nil, &StreamError{Err: fmt.Errorf("%w: no prediction files", ErrEmpty)}
	}
	if f.passes++; f.passes > 1 {
		for _, sh := range f.shards {
			for _, name := range []string{sh.File, sh.Labels, sh.Weights} {
				if st, err := os.Stat(name); name != "" && err == nil && !st.Mode().IsRegular() {
					return nil, &StreamError{Source: name, Err: errors.New("a pipe or device cannot be read twice, and the metrics asked for need a second pass (ece_kde, sharpness, mmce, ece_witness, and the binned metrics with equal-mass bins or the doane or sqrt rule): give a file, or --metrics that need one pass (ece_bin, mce and ece_bin_debiased with fixed equal-width bins, ks, brier, nll, accuracy, confidence)")}
				}
			}
		}
	}
	return &fileBatches{src: f}, nil
}

type fileBatches struct {
	src   *fileSource
	next  int // index of the next file to open
	cur   *Chunks
	rows  int64 // rows of the current file so far
	done  int64 // bytes of the files already closed
	shard string
}

// Read returns the bytes read so far by this pass.
func (b *fileBatches) Read() int64 {
	if b.cur != nil {
		return b.done + b.cur.BytesRead()
	}
	return b.done
}

// empty reports an error of a shard without rows that a stream of several
// shards skips.
func (b *fileBatches) empty(err error) bool {
	return len(b.src.shards) > 1 && b.rows == 0 && errors.Is(err, ErrEmpty)
}

// skip closes the current shard (if open) and records it as skipped.
func (b *fileBatches) skip() {
	if b.cur != nil {
		b.done += b.cur.Size()
		b.cur.Close()
		b.cur = nil
	}
	if !slices.Contains(b.src.skipped, b.shard) {
		b.src.skipped = append(b.src.skipped, b.shard)
	}
}

func (b *fileBatches) Next() (*Batch, error) {
	for {
		if b.cur == nil {
			if b.next >= len(b.src.shards) {
				return nil, io.EOF
			}
			sh := b.src.shards[b.next]
			b.next++
			b.shard, b.rows = sh.File, 0
			opts := b.src.opts
			opts.Labels, opts.Weights = sh.Labels, sh.Weights
			c, err := OpenChunks(sh.File, opts, b.src.rows)
			if b.empty(err) {
				b.skip()
				continue
			}
			if err != nil {
				return nil, err
			}
			b.cur = c
		}
		s, err := b.cur.Next()
		if err == io.EOF {
			b.done += b.cur.Size()
			err = b.cur.Close()
			b.cur = nil
			if err != nil {
				return nil, err
			}
			continue
		}
		if b.empty(err) {
			b.skip()
			continue
		}
		if err != nil {
			return nil, err
		}
		b.rows += int64(s.N)
		if b.src.transform != nil {
			if s, err = b.src.transform(s); err != nil {
				return nil, err
			}
		}
		return &Batch{Set: s, Source: b.shard, Shard: b.next - 1, Offset: b.cur.Offset()}, nil
	}
}

func (b *fileBatches) Close() error {
	if b.cur != nil {
		return b.cur.Close()
	}
	return nil
}

// Batch is a chunk of rows of a streamed set: a validated Set of its
// rows, the name of the shard it comes from, the position of that shard in
// the stream's list of shards (0 for one file) and the index of its first
// row in that shard. Source and Offset identify its rows (no row may be
// added twice); Shard and Offset place them in the stream for the sample of
// evaluation points, which never reads the name.
type Batch struct {
	*Set
	Source string
	Shard  int
	Offset int64
}

// RowsError returns err as the StreamError of the batch's rows: its
// source and its first row (1-based).
func (b *Batch) RowsError(err error) error {
	return &StreamError{Source: b.Source, Row: b.Offset + 1, Err: err}
}

// StreamError is an error in the data of a stream rather than in the
// options or the code: a shard whose columns, kind (probabilities or
// logits) or weights differ from the stream's, a batch without labels, a
// stream without rows or positive weights. Source names the shard ("" for
// the whole stream) and Row the first row of its chunk (1-based; 0 when
// none). calib exits 2 on it.
type StreamError struct {
	Source string
	Row    int64
	Err    error
}

func (e *StreamError) Error() string {
	switch {
	case e.Source == "":
		return e.Err.Error()
	case e.Row > 0:
		return fmt.Sprintf("%s (rows from %d): %v", e.Source, e.Row, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// Source is a streamed set that can be read more than once (the kernel
// estimators read it twice): Open starts a new pass.
type Source interface {
	Open() (Batches, error)
}

// Batches yields the batches of one pass; Next returns io.EOF after the
// last one.
type Batches interface {
	Next() (*Batch, error)
	Close() error
}

// SetSource returns a Source that reads the in-memory set s in batches of
// rows rows (<= 0: 65,536) named s.File: a streamed evaluation of a set
// that fits in memory, or one shard of several.
func SetSource(s *Set, rows int) Source {
	if rows <= 0 {
		rows = 1 << 16
	}
	return &setSource{s: s, rows: rows}
}

type setSource struct {
	s    *Set
	rows int
}

func (src *setSource) Open() (Batches, error) { return &setBatches{src: src}, nil }

type setBatches struct {
	src  *setSource
	next int
}

func (b *setBatches) Close() error { return nil }

func (b *setBatches) Next() (*Batch, error) {
	s := b.src.s
	if b.next >= s.N {
		return nil, io.EOF
	}
	i0, i1 := b.next, min(s.N, b.next+b.src.rows)
	b.next = i1
	return &Batch{Set: s.Rows(i0, i1), Source: s.File, Offset: int64(i0)}, nil
}

// Rows returns rows i0..i1-1 of s as a set sharing s's memory (the
// counts Renormalized and Rounded are not split: they are 0).
func (s *Set) Rows(i0, i1 int) *Set {
	r := &Set{N: i1 - i0, K: s.K, Probs: s.Probs[i0*s.K : i1*s.K], Binary: s.Binary, File: s.File}
	if s.Labels != nil {
		r.Labels = s.Labels[i0:i1]
	}
	if s.Weights != nil {
		r.Weights = s.Weights[i0:i1]
	}
	if s.Logits != nil {
		c := len(s.Logits) / s.N
		r.Logits = s.Logits[i0*c : i1*c]
	}
	return r
}
