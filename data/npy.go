package data

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// npyMagic starts every NPY file.
const npyMagic = "\x93NUMPY"

// array is a decoded NPY array, in C (row-major) order.
type array struct {
	shape  []int
	values []float64
	float  bool // the dtype was a float type
}

// dtype is a decoded NPY descr: byte order, kind (f, i, u or b) and item
// size in bytes.
type dtype struct {
	order binary.ByteOrder
	kind  byte
	size  int
}

// parseDtype decodes the NPY descr of a simple numeric type: '<' or '>'
// (little- or big-endian; '|' for one byte), then f4, f8, i1..i8, u1..u8 or
// b1 (bool).
func parseDtype(s string) (dtype, error) {
	bad := fmt.Errorf("dtype %q not supported (want float32 or float64, an integer type or bool)", truncate(s))
	if len(s) != 3 {
		return dtype{}, bad
	}
	dt := dtype{order: binary.LittleEndian, kind: s[1], size: int(s[2] - '0')}
	switch s[0] {
	case '<':
	case '>':
		dt.order = binary.BigEndian
	case '|':
		if dt.size != 1 {
			return dtype{}, bad
		}
	default:
		return dtype{}, bad
	}
	switch {
	case dt.kind == 'f' && (dt.size == 4 || dt.size == 8),
		(dt.kind == 'i' || dt.kind == 'u') && (dt.size == 1 || dt.size == 2 || dt.size == 4 || dt.size == 8),
		dt.kind == 'b' && dt.size == 1:
		return dt, nil
	}
	return dtype{}, bad
}

// decode converts len(dst) items of type dt from b into dst.
func (dt dtype) decode(dst []float64, b []byte) {
	o := dt.order
	switch int(dt.kind)<<4 | dt.size {
	case 'f'<<4 | 4:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(o.Uint32(b[4*i:])))
		}
	case 'f'<<4 | 8:
		for i := range dst {
			dst[i] = math.Float64frombits(o.Uint64(b[8*i:]))
		}
	case 'i'<<4 | 1:
		for i := range dst {
			dst[i] = float64(int8(b[i]))
		}
	case 'u'<<4 | 1:
		for i := range dst {
			dst[i] = float64(b[i])
		}
	case 'b'<<4 | 1:
		for i := range dst {
			dst[i] = float64(min(b[i], 1))
		}
	case 'i'<<4 | 2:
		for i := range dst {
			dst[i] = float64(int16(o.Uint16(b[2*i:])))
		}
	case 'u'<<4 | 2:
		for i := range dst {
			dst[i] = float64(o.Uint16(b[2*i:]))
		}
	case 'i'<<4 | 4:
		for i := range dst {
			dst[i] = float64(int32(o.Uint32(b[4*i:])))
		}
	case 'u'<<4 | 4:
		for i := range dst {
			dst[i] = float64(o.Uint32(b[4*i:]))
		}
	case 'i'<<4 | 8:
		for i := range dst {
			dst[i] = float64(int64(o.Uint64(b[8*i:])))
		}
	case 'u'<<4 | 8:
		for i := range dst {
			dst[i] = float64(o.Uint64(b[8*i:]))
		}
	}
}

// parseNPY decodes an NPY file held in b. The shape in the header is
// checked against the data size before anything is allocated, and
// Fortran-order arrays are transposed to C order.
func parseNPY(name string, b []byte) (*array, error) {
	bad := func(format string, args ...any) error {
		return &Error{File: name, Err: fmt.Errorf("%w: NPY: "+format, append([]any{ErrFormat}, args...)...)}
	}
	h, off, err := npyHeader(b)
	if err != nil {
		return nil, bad("%v", err)
	}
	dt, err := parseDtype(h.descr)
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(h.shape) > 2 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: %d-dimensional array %v, want (n,) or (n, K)", ErrShape, len(h.shape), h.shape)}
	}
	count := 1
	for _, s := range h.shape {
		if s > 0 && count > math.MaxInt32/s {
			return nil, bad("shape %v out of range", h.shape)
		}
		count *= s
	}
	if want := len(b) - off; count*dt.size != want {
		return nil, bad("shape %v of %s needs %d data bytes, the file has %d", h.shape, h.descr, count*dt.size, want)
	}
	a := &array{shape: h.shape, float: dt.kind == 'f', values: make([]float64, count)}
	dt.decode(a.values, b[off:])
	if h.fortran && len(h.shape) == 2 {
		rows, cols := h.shape[0], h.shape[1]
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

// npyDict is the header dictionary of an NPY file.
type npyDict struct {
	descr   string
	fortran bool
	shape   []int
}

// npyHeader checks the magic, version and header of an NPY file and returns
// the header dictionary and the offset of the data.
func npyHeader(b []byte) (npyDict, int, error) {
	n, off, err := npyHeaderLen(b)
	if err != nil {
		return npyDict{}, 0, err
	}
	if n < 0 || n > len(b)-off {
		return npyDict{}, 0, fmt.Errorf("header length %d beyond the end of the file", n)
	}
	h, err := parseNPYDict(string(b[off : off+n]))
	if err != nil {
		return npyDict{}, 0, err
	}
	return h, off + n, nil
}

// npyHeaderLen checks the magic and version at the start of an NPY file
// (the first 10 bytes, 12 for version 2) and returns the length of the
// header dictionary and its offset.
func npyHeaderLen(b []byte) (n, off int, err error) {
	if len(b) < 10 || string(b[:6]) != npyMagic {
		return 0, 0, fmt.Errorf("not an NPY file (bad magic)")
	}
	switch b[6] {
	case 1:
		return int(binary.LittleEndian.Uint16(b[8:10])), 10, nil
	case 2:
		if len(b) < 12 {
			return 0, 0, fmt.Errorf("truncated header")
		}
		return int(binary.LittleEndian.Uint32(b[8:12])), 12, nil
	case 3:
		return 0, 0, fmt.Errorf("version 3 (UTF-8 field names) not supported")
	}
	return 0, 0, fmt.Errorf("version %d not supported", b[6])
}

// parseNPYDict parses the header dictionary, a Python literal such as
//
//	{'descr': '<f8', 'fortran_order': False, 'shape': (4, 2), }
//
// (any key order, either quote, optional trailing commas, Python 2 longs
// such as 4L), followed by white space.
func parseNPYDict(s string) (npyDict, error) {
	var h npyDict
	p := &pyScanner{s: s}
	malformed := func(why string) error {
		return fmt.Errorf("malformed header %q: %s", truncateTo(strings.TrimSpace(s), 120), why)
	}
	if !p.take('{') {
		return h, malformed("not a dictionary")
	}
	seen := map[string]bool{}
	for !p.take('}') {
		key, ok := p.str()
		if !ok || !p.take(':') {
			return h, malformed("want 'key': value")
		}
		switch key {
		case "descr":
			if h.descr, ok = p.str(); !ok {
				return h, malformed("structured dtypes are not supported")
			}
		case "fortran_order":
			switch w := p.word(); w {
			case "True", "False":
				h.fortran = w == "True"
			default:
				return h, malformed("fortran_order must be True or False")
			}
		case "shape":
			if h.shape, ok = p.tuple(); !ok {
				return h, malformed("shape must be a tuple of non-negative integers")
			}
		default:
			return h, malformed(fmt.Sprintf("unexpected key %q", truncate(key)))
		}
		seen[key] = true
		if !p.take(',') && !p.peek('}') {
			return h, malformed("want ',' or '}'")
		}
	}
	if len(seen) != 3 {
		return h, malformed("want the keys descr, fortran_order and shape")
	}
	if strings.TrimSpace(p.s[p.i:]) != "" {
		return h, malformed("text after the dictionary")
	}
	return h, nil
}

// pyScanner reads the few Python literals of an NPY header.
type pyScanner struct {
	s string
	i int
}

func (p *pyScanner) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// peek reports whether the next non-space byte is c.
func (p *pyScanner) peek(c byte) bool {
	p.space()
	return p.i < len(p.s) && p.s[p.i] == c
}

// take consumes c if it is the next non-space byte.
func (p *pyScanner) take(c byte) bool {
	if !p.peek(c) {
		return false
	}
	p.i++
	return true
}

// str reads a quoted string without escapes.
func (p *pyScanner) str() (string, bool) {
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, true
}

// word reads a run of letters and digits.
func (p *pyScanner) word() string {
	p.space()
	j := p.i
	for j < len(p.s) && (isDigit(p.s[j]) || ('a' <= p.s[j]|0x20 && p.s[j]|0x20 <= 'z')) {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w
}

// tuple reads a tuple of non-negative integers: (), (4,), (4, 2).
func (p *pyScanner) tuple() ([]int, bool) {
	if !p.take('(') {
		return nil, false
	}
	shape := []int{}
	for !p.take(')') {
		w := strings.TrimSuffix(p.word(), "L")
		if w == "" || len(w) > 18 {
			return nil, false
		}
		n := 0
		for _, c := range []byte(w) {
			if !isDigit(c) {
				return nil, false
			}
			n = n*10 + int(c-'0')
		}
		shape = append(shape, n)
		if !p.take(',') && !p.peek(')') {
			return nil, false
		}
	}
	return shape, true
}

// arrayTable turns a decoded prediction array of shape (n,) or (n, K) into a
// table.
func arrayTable(name string, a *array) (*table, error) {
	if !a.float {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: predictions must be float32 or float64; an integer array is a labels file: give it with --labels (for shards, a glob of one per shard), not as predictions", ErrFormat)}
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

// parseNPZ reads an NPZ archive (a zip of NPY files, stored or deflated,
// named NAME.npy as numpy writes them or NAME) holding a prediction array
// (named one of npzPredNames; "logits" means logits) and optionally a label
// array (named one of npzLabelNames).
func parseNPZ(name string, b []byte) (*table, *labelColumn, error) {
	bad := func(format string, args ...any) error {
		return &Error{File: name, Err: fmt.Errorf("%w: NPZ: "+format, append([]any{ErrFormat}, args...)...)}
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, nil, bad("not a valid zip archive")
	}
	var keys []string
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		k := strings.TrimSuffix(f.Name, ".npy")
		if members[k] == nil {
			keys = append(keys, k)
			members[k] = f
		}
	}
	// find returns the one array named one of names; two such arrays
	// (probs and logits that may disagree) are an error, not a choice.
	var twice error
	find := func(names []string) string {
		found := ""
		for _, n := range names {
			if members[n] != nil {
				if found != "" && twice == nil {
					twice = bad("both %q and %q arrays; keep one (calib would not know which to use)", found, n)
				}
				if found == "" {
					found = n
				}
			}
		}
		return found
	}
	read := func(key string) (*array, error) {
		f := members[key]
		if f.UncompressedSize64 > maxFileSize {
			return nil, bad("array %q larger than %d bytes", key, int64(maxFileSize))
		}
		rc, err := f.Open()
		if err != nil {
			if errors.Is(err, zip.ErrAlgorithm) {
				return nil, bad("array %q: compression method %d not supported (want stored or deflated)", key, f.Method)
			}
			return nil, bad("array %q: damaged archive", key)
		}
		defer rc.Close()
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(rc, maxFileSize+1))
		switch {
		case err != nil && errors.Is(err, zip.ErrChecksum):
			return nil, bad("array %q: checksum mismatch (damaged archive)", key)
		case err != nil:
			return nil, bad("array %q: damaged archive", key)
		case n > maxFileSize:
			return nil, bad("array %q larger than %d bytes", key, int64(maxFileSize))
		}
		return parseNPY(name+":"+key, buf.Bytes())
	}
	pk, wk, lk := find(npzPredNames), find(npzWeightNames), find(npzLabelNames)
	if twice != nil {
		return nil, nil, twice
	}
	if pk == "" {
		return nil, nil, bad("has arrays %v; want one named %s", keys, strings.Join(npzPredNames, ", "))
	}
	a, err := read(pk)
	if err != nil {
		return nil, nil, err
	}
	t, err := arrayTable(name+":"+pk, a)
	if err != nil {
		return nil, nil, err
	}
	t.logits = pk == "logits"
	if wk != "" {
		wa, err := read(wk)
		if err != nil {
			return nil, nil, err
		}
		if len(wa.shape) > 2 || (len(wa.shape) == 2 && wa.shape[1] != 1) {
			return nil, nil, &Error{File: name + ":" + wk, Err: fmt.Errorf("%w: weights need shape (n,) or (n, 1), got %v", ErrShape, wa.shape)}
		}
		t.weights = &weightColumn{positions: positions{file: name + ":" + wk}, values: wa.values, col: 1}
	}
	if lk == "" {
		return t, nil, nil
	}
	la, err := read(lk)
	if err != nil {
		return nil, nil, err
	}
	if len(la.shape) > 2 || (len(la.shape) == 2 && la.shape[1] != 1) {
		return nil, nil, &Error{File: name + ":" + lk, Err: fmt.Errorf("%w: labels need shape (n,) or (n, 1), got %v", ErrShape, la.shape)}
	}
	return t, &labelColumn{positions: positions{file: name + ":" + lk}, values: la.values, col: 1}, nil
}
