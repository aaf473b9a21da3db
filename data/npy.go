package data

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
)

// array is a decoded NPY array, in C (row-major) order.
type array struct {
	shape  []int
	values []float64
	float  bool // the dtype was a float type
}

// dtypes maps the accepted NPY dtypes to their item size.
var dtypes = map[string]int{
	"<f4": 4, "<f8": 8,
	"|i1": 1, "<i1": 1, "<i2": 2, "<i4": 4, "<i8": 8,
	"|u1": 1, "<u1": 1, "<u2": 2, "<u4": 4, "<u8": 8,
}

// parseNPY decodes an NPY file held in b. The header is read by
// github.com/sbinet/npyio; its shape is checked against the data size before
// any data is read, and Fortran-order arrays (which npyio returns
// untransposed) are transposed here.
func parseNPY(name string, b []byte) (a *array, err error) {
	bad := func(format string, args ...any) error {
		return &Error{File: name, Err: fmt.Errorf("%w: NPY: "+format, append([]any{ErrFormat}, args...)...)}
	}
	hdrEnd, err := npyHeaderEnd(b)
	if err != nil {
		return nil, bad("%v", err)
	}
	// npyio slices the header dictionary without bounds checks; a malformed
	// dictionary must come back as an error, never as a panic.
	defer func() {
		if r := recover(); r != nil {
			a, err = nil, bad("malformed header")
		}
	}()
	r, err := npy.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, bad("%v", err)
	}
	d := r.Header.Descr
	size, ok := dtypes[d.Type]
	if !ok {
		return nil, bad("dtype %q not supported (want little-endian float32/float64 or an integer type)", d.Type)
	}
	if len(d.Shape) > 2 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: %d-dimensional array %v, want (n,) or (n, K)", ErrShape, len(d.Shape), d.Shape)}
	}
	count := 1
	for _, s := range d.Shape {
		if s < 0 || (s > 0 && count > math.MaxInt32/s) {
			return nil, bad("shape %v out of range", d.Shape)
		}
		count *= s
	}
	if want := len(b) - hdrEnd; count*size != want {
		return nil, bad("shape %v of %s needs %d data bytes, the file has %d", d.Shape, d.Type, count*size, want)
	}
	a = &array{shape: slices.Clone(d.Shape), float: d.Type[1] == 'f', values: make([]float64, count)}
	if err := readNPYData(r, d.Type, a.values); err != nil {
		return nil, bad("%v", err)
	}
	if d.Fortran && len(d.Shape) == 2 {
		rows, cols := d.Shape[0], d.Shape[1]
		t := make([]float64, count)
		for c := 0; c < cols; c++ {
			for i := 0; i < rows; i++ {
				t[i*cols+c] = a.values[c*rows+i]
			}
		}
		a.values = t
	}
	return a, nil
}

// npyHeaderEnd checks the magic, version and header length of an NPY file
// and returns the offset of its data.
func npyHeaderEnd(b []byte) (int, error) {
	if len(b) < 10 || !bytes.Equal(b[:6], npy.Magic[:]) {
		return 0, fmt.Errorf("not an NPY file (bad magic)")
	}
	var n, off int
	switch b[6] {
	case 1:
		n, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return 0, fmt.Errorf("truncated header")
		}
		n, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
		if b[6] == 3 {
			return 0, fmt.Errorf("version 3 (UTF-8 field names) not supported")
		}
	default:
		return 0, fmt.Errorf("version %d not supported", b[6])
	}
	if n > len(b)-off {
		return 0, fmt.Errorf("header length %d beyond the end of the file", n)
	}
	h := string(b[off : off+n])
	if !strings.HasSuffix(strings.TrimRight(h, " "), "\n") || !strings.Contains(h, "}") ||
		!strings.Contains(h, "'descr': ") || !strings.Contains(h, "'fortran_order': ") || !strings.Contains(h, "'shape': ") {
		return 0, fmt.Errorf("malformed header %q", truncate(strings.TrimSpace(h)))
	}
	return off + n, nil
}

// readNPYData reads the array data of dtype typ into dst as float64.
func readNPYData(r *npy.Reader, typ string, dst []float64) error {
	switch typ[1:] {
	case "f4":
		return readAs[float32](r, dst)
	case "f8":
		return readAs[float64](r, dst)
	case "i1":
		return readAs[int8](r, dst)
	case "i2":
		return readAs[int16](r, dst)
	case "i4":
		return readAs[int32](r, dst)
	case "i8":
		return readAs[int64](r, dst)
	case "u1":
		return readAs[uint8](r, dst)
	case "u2":
		return readAs[uint16](r, dst)
	case "u4":
		return readAs[uint32](r, dst)
	case "u8":
		return readAs[uint64](r, dst)
	}
	return fmt.Errorf("dtype %q not supported", typ)
}

func readAs[T float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](r *npy.Reader, dst []float64) error {
	var v []T
	if err := r.Read(&v); err != nil {
		return err
	}
	if len(v) != len(dst) {
		return fmt.Errorf("read %d values, want %d", len(v), len(dst))
	}
	for i, x := range v {
		dst[i] = float64(x)
	}
	return nil
}

// arrayTable turns a decoded prediction array of shape (n,) or (n, K) into a
// table.
func arrayTable(name string, a *array) (*table, error) {
	if !a.float {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: predictions must be float32 or float64", ErrFormat)}
	}
	t := &table{positions: positions{file: name}, values: a.values}
	switch len(a.shape) {
	case 1:
		t.cols = 1
	case 2:
		t.cols = a.shape[1]
	default:
		return nil, &Error{File: name, Err: fmt.Errorf("%w: predictions need shape (n,) or (n, K), got %v", ErrShape, a.shape)}
	}
	if t.cols == 0 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: shape %v has no columns", ErrShape, a.shape)}
	}
	return t, nil
}

func parseNPYTable(name string, b []byte) (*table, error) {
	a, err := parseNPY(name, b)
	if err != nil {
		return nil, err
	}
	return arrayTable(name, a)
}

// Array names recognised in NPZ archives.
var (
	npzPredNames  = []string{"probs", "probabilities", "logits", "predictions", "preds", "p"}
	npzLabelNames = []string{"labels", "label", "y", "targets"}
)

// parseNPZ reads an NPZ archive holding a prediction array (named one of
// npzPredNames; "logits" means logits) and optionally a label array (named
// one of npzLabelNames).
func parseNPZ(name string, b []byte) (t *table, lc *labelColumn, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, lc, err = nil, nil, &Error{File: name, Err: fmt.Errorf("%w: NPZ: malformed archive", ErrFormat)}
		}
	}()
	zr, err := npz.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, nil, &Error{File: name, Err: fmt.Errorf("%w: NPZ: %v", ErrFormat, err)}
	}
	keys := zr.Keys()
	find := func(names []string) string {
		for _, n := range names {
			if slices.Contains(keys, n) {
				return n
			}
		}
		return ""
	}
	read := func(key string) (*array, error) {
		rc, err := zr.Open(key)
		if err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("%w: NPZ array %q: %v", ErrFormat, key, err)}
		}
		defer rc.Close()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(rc); err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("%w: NPZ array %q: %v", ErrFormat, key, err)}
		}
		return parseNPY(name+":"+key, buf.Bytes())
	}
	pk := find(npzPredNames)
	if pk == "" {
		return nil, nil, &Error{File: name, Err: fmt.Errorf("%w: NPZ has arrays %v; want one named %s", ErrFormat, keys, strings.Join(npzPredNames, ", "))}
	}
	a, err := read(pk)
	if err != nil {
		return nil, nil, err
	}
	if t, err = arrayTable(name+":"+pk, a); err != nil {
		return nil, nil, err
	}
	t.logits = pk == "logits"
	if lk := find(npzLabelNames); lk != "" {
		la, err := read(lk)
		if err != nil {
			return nil, nil, err
		}
		if len(la.shape) > 2 || (len(la.shape) == 2 && la.shape[1] != 1) {
			return nil, nil, &Error{File: name + ":" + lk, Err: fmt.Errorf("%w: labels need shape (n,) or (n, 1), got %v", ErrShape, la.shape)}
		}
		lc = &labelColumn{positions: positions{file: name + ":" + lk}, values: la.values, col: 1}
	}
	return t, lc, nil
}
