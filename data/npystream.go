package data

import (
	"errors"
	"fmt"
	"io"
)

// maxNPYHeader bounds the header a stream may announce (real headers are
// under 1 KiB; NPY version 2 allows a 4 GiB length field).
const maxNPYHeader = 1 << 20

// NPYRows reads the rows of an NPY array from a stream in batches, never
// holding the whole array: the first part of streamed evaluation (issue
// 18) for prediction files larger than memory. The array is (n,) (one
// column) or (n, K) with K >= 1 in C order; a Fortran-order array is
// refused (its rows are not contiguous in the file), and so is one with no
// columns. Values decode as Load decodes them
// (float32 and integer types widened to float64).
type NPYRows struct {
	name       string
	r          io.Reader
	dt         dtype
	rows, cols int
	done       int
	buf        []byte
}

// NewNPYRows reads the header of the NPY stream r (name names it in
// errors, which are *Error wrapping ErrFormat or ErrShape).
func NewNPYRows(r io.Reader, name string) (*NPYRows, error) {
	bad := func(format string, args ...any) error {
		return &Error{File: name, Err: fmt.Errorf("%w: NPY: "+format, append([]any{ErrFormat}, args...)...)}
	}
	pre := make([]byte, 12)
	if _, err := io.ReadFull(r, pre[:10]); err != nil {
		return nil, bad("not an NPY file (%v)", err)
	}
	if pre[6] == 2 && string(pre[:6]) == npyMagic {
		if _, err := io.ReadFull(r, pre[10:12]); err != nil {
			return nil, bad("truncated header")
		}
	}
	n, off, err := npyHeaderLen(pre)
	if err != nil {
		return nil, bad("%v", err)
	}
	if n > maxNPYHeader {
		return nil, bad("header length %d (at most %d)", n, maxNPYHeader)
	}
	head := make([]byte, off+n)
	copy(head, pre[:off])
	if _, err := io.ReadFull(r, head[off:]); err != nil {
		return nil, bad("header length %d beyond the end of the file", n)
	}
	h, _, err := npyHeader(head)
	if err != nil {
		return nil, bad("%v", err)
	}
	dt, err := parseDtype(h.descr)
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(h.shape) == 0 || len(h.shape) > 2 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: %d-dimensional array %v, want (n,) or (n, K)", ErrShape, len(h.shape), h.shape)}
	}
	if h.fortran && len(h.shape) == 2 && h.shape[1] > 1 {
		return nil, bad("Fortran-order array %v: its rows are not contiguous, so it cannot be read row by row (save it in C order)", h.shape)
	}
	rows, cols := h.shape[0], 1
	if len(h.shape) == 2 {
		cols = h.shape[1]
	}
	if cols < 1 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: shape %v has no columns", ErrShape, h.shape)}
	}
	if rows < 0 || cols > maxNPYHeader {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: shape %v", ErrShape, h.shape)}
	}
	return &NPYRows{name: name, r: r, dt: dt, rows: rows, cols: cols}, nil
}

// Shape returns the number of rows and of columns (1 for a (n,) array).
func (nr *NPYRows) Shape() (rows, cols int) { return nr.rows, nr.cols }

// Float reports whether the array's dtype is a float type.
func (nr *NPYRows) Float() bool { return nr.dt.kind == 'f' }

// Read decodes the next rows into dst, as many as len(dst)/cols (at least
// one row must fit) and as are left, and returns how many. After the last
// row it returns 0, io.EOF. A stream that ends before its header's rows,
// or holds bytes after them, is an *Error naming the row.
func (nr *NPYRows) Read(dst []float64) (int, error) {
	k := min(len(dst)/nr.cols, nr.rows-nr.done)
	if len(dst) < nr.cols {
		return 0, fmt.Errorf("data: NPYRows.Read: room for %d values, a row has %d", len(dst), nr.cols)
	}
	if k == 0 {
		var one [1]byte
		if m, _ := io.ReadFull(nr.r, one[:]); m > 0 {
			return 0, &Error{File: nr.name, Row: nr.rows, Err: fmt.Errorf("%w: NPY: bytes after the last of the %d rows of the header's shape", ErrFormat, nr.rows)}
		}
		return 0, io.EOF
	}
	need := k * nr.cols * nr.dt.size
	if cap(nr.buf) < need {
		nr.buf = make([]byte, need)
	}
	b := nr.buf[:need]
	if m, err := io.ReadFull(nr.r, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			row := nr.done + m/(nr.cols*nr.dt.size) + 1
			return 0, &Error{File: nr.name, Row: row, Err: fmt.Errorf("%w: NPY: the data end inside row %d of %d", ErrFormat, row, nr.rows)}
		}
		return 0, &Error{File: nr.name, Row: nr.done + 1, Err: err}
	}
	nr.dt.decode(dst[:k*nr.cols], b)
	nr.done += k
	return k, nil
}
