package evaluate

import (
	"fmt"
	"io"
	"os"

	"github.com/calib-dev/calib/data"
)

// Files returns a Source that reads the prediction files names (shards of
// one set, read in the order given; see data.Shards) in chunks of rows rows
// (<= 0: data's default) with data.OpenChunks, never a whole file. Each
// batch is named by its file name as given and its rows' index in the
// file. transform, if not nil, is applied to every chunk (a calibration
// map).
func Files(names []string, opts data.Options, rows int, transform func(*data.Set) (*data.Set, error)) Source {
	// A shard may have only zero weights; the stream checks the total.
	opts.ZeroWeightFile = opts.ZeroWeightFile || len(names) > 1
	return &fileSource{names: names, opts: opts, rows: rows, transform: transform}
}

type fileSource struct {
	names     []string
	opts      data.Options
	rows      int
	transform func(*data.Set) (*data.Set, error)
}

// Size returns the total size in bytes of the files (0 for those that
// cannot be read: Open reports them).
func (f *fileSource) Size() int64 {
	var n int64
	for _, name := range f.names {
		if st, err := os.Stat(name); err == nil {
			n += st.Size()
		}
	}
	return n
}

func (f *fileSource) Open() (Batches, error) {
	if len(f.names) == 0 {
		return nil, fmt.Errorf("evaluate: %w: no prediction files", data.ErrEmpty)
	}
	return &fileBatches{src: f}, nil
}

type fileBatches struct {
	src  *fileSource
	next int // index of the next file to open
	cur  *data.Chunks
	done int64 // bytes of the files already closed
}

// Read returns the bytes read so far by this pass.
func (b *fileBatches) Read() int64 {
	if b.cur != nil {
		return b.done + b.cur.BytesRead()
	}
	return b.done
}

func (b *fileBatches) Next() (*Batch, error) {
	for {
		if b.cur == nil {
			if b.next >= len(b.src.names) {
				return nil, io.EOF
			}
			c, err := data.OpenChunks(b.src.names[b.next], b.src.opts, b.src.rows)
			if err != nil {
				return nil, err
			}
			b.cur = c
			b.next++
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
		if err != nil {
			return nil, err
		}
		if b.src.transform != nil {
			if s, err = b.src.transform(s); err != nil {
				return nil, err
			}
		}
		return &Batch{Set: s, Source: b.src.names[b.next-1], Offset: b.cur.Offset()}, nil
	}
}

func (b *fileBatches) Close() error {
	if b.cur != nil {
		return b.cur.Close()
	}
	return nil
}
