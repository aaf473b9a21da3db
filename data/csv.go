package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// labelNames are the header names (any case) that make the last CSV column
// the label column.
var labelNames = []string{"label", "labels", "y", "target", "targets", "class"}

// csvLayout says where the label column of a CSV file is.
type csvLayout struct {
	labels bool    // the last column holds the labels (the file must have one)
	detect bool    // find a label column by the header, k or the content
	only   bool    // a labels file: one column, all labels
	k      int     // Options.K: the expected number of prediction columns (0: unknown)
	tol    float64 // row-sum tolerance, to find a label column by content
	logits bool    // the predictions are logits: no finding by content
	plain  bool    // a weights file: no weight column either
}

// labelColumn reports whether the last of width columns holds labels, as
// far as the layout and the header (nil when none) tell.
func (l csvLayout) labelColumn(header []string, width int) bool {
	switch {
	case l.only || l.labels:
		return true
	case !l.detect:
		return false
	case len(header) == width && slices.Contains(labelNames, strings.ToLower(strings.TrimSpace(header[width-1]))):
		return true
	}
	return l.k > 0 && width == l.k+1
}

// byContent reports whether the label column may still be found by the
// content of a file of width columns.
func (l csvLayout) byContent(header []string, width int) bool {
	return l.detect && header == nil && l.k == 0 && !l.logits && width >= 2
}

// parseCSV reads comma-separated rows (tab-separated when the first line has
// tabs and no commas) from r. The first line is a header when one of its
// fields is not a number. The layout says which column, if any, holds the
// labels; the others are the predictions.
func parseCSV(name string, r io.Reader, lay csvLayout) (*table, *labelColumn, error) {
	br := newTextReader(r)
	first, _ := br.Peek(1 << 16)
	first, _, _ = bytes.Cut(first, []byte{'\n'})
	cr := csv.NewReader(br)
	if bytes.IndexByte(first, '\t') >= 0 && bytes.IndexByte(first, ',') < 0 {
		cr.Comma = '\t'
	}
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	t := &table{positions: positions{file: name, lines: []int32{}}, digits: []int8{}}
	var (
		lc       *labelColumn
		header   []string
		heads    []int8 // decimals of the first width-1 columns, while the label column may be found by content
		width    int
		labelCol bool
		started  bool // a header is allowed until the first row
		wc       = -1 // 0-based column of the weights in the file, or -1
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, &Error{File: name, Line: pe.Line, Column: pe.Column, Err: fmt.Errorf("%w: %v", ErrSyntax, pe.Err)}
			}
			return nil, nil, &Error{File: name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
		}
		line, _ := cr.FieldPos(0)
		if !started {
			started = true
			if isHeader(rec) {
				if wc = weightColumnOf(rec); wc >= 0 && !lay.only && !lay.plain {
					if len(rec) == 1 {
						return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: a weight column and no prediction columns", ErrShape)}
					}
					t.weights = &weightColumn{positions: positions{file: name, lines: []int32{}}, col: wc + 1}
					rec = slices.Delete(slices.Clone(rec), wc, wc+1)
				} else {
					wc = -1
				}
				header = slices.Clone(rec)
				continue
			}
		}
		if t.weights != nil {
			if wc >= len(rec) {
				return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %d fields, the header has %d", ErrRagged, len(rec), len(header)+1)}
			}
			v, err := parseNumber(rec[wc])
			if err != nil {
				return nil, nil, &Error{File: name, Line: line, Column: wc + 1, Err: fmt.Errorf("weight: %w", err)}
			}
			t.weights.values = append(t.weights.values, v)
			t.weights.lines = append(t.weights.lines, int32(line))
			rec = slices.Delete(rec, wc, wc+1)
		}
		// fileCol is the 1-based column in the file of field c of rec.
		fileCol := func(c int) int {
			if t.weights != nil && c >= wc {
				return c + 2
			}
			return c + 1
		}
		if width == 0 {
			width = len(rec)
			labelCol = lay.labelColumn(header, width)
			t.cols = width
			switch {
			case lay.only && width != 1:
				return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: a labels file has one column, got %d", ErrShape, width)}
			case labelCol && !lay.only && width < 2:
				return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: need prediction columns and a label column, got %d column", ErrShape, width)}
			case labelCol:
				t.cols = width - 1
				lc = &labelColumn{positions: positions{file: name, lines: []int32{}}, col: fileCol(width - 1)}
			case lay.byContent(header, width):
				heads = []int8{}
			}
		}
		if len(rec) != width {
			return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %d fields, the first row has %d", ErrRagged, len(rec), width)}
		}
		row, head := noDecimals, noDecimals
		for c, f := range rec {
			f = strings.TrimSpace(f)
			if labelCol && c == width-1 {
				y, err := parseLabel(f)
				if err != nil {
					return nil, nil, &Error{File: name, Line: line, Column: fileCol(c), Err: err}
				}
				lc.values = append(lc.values, y)
				lc.lines = append(lc.lines, int32(line))
				continue
			}
			v, err := parseNumber(f)
			if err != nil {
				return nil, nil, &Error{File: name, Line: line, Column: fileCol(c), Err: err}
			}
			t.values = append(t.values, v)
			d := decimals(f)
			if c < width-1 {
				head = coarsestDecimals(head, d)
			}
			row = coarsestDecimals(row, d)
		}
		t.lines = append(t.lines, int32(line))
		t.digits = append(t.digits, row)
		if heads != nil {
			heads = append(heads, head)
		}
	}
	if heads != nil && looksLabelled(t, heads, lay.tol) {
		lc = splitLabels(t, heads)
	}
	t.labelHint = lc == nil
	return t, lc, nil
}

// looksLabelled reports whether the last column of t, read as predictions,
// is a label column: whole numbers in 0..C-2 (C >= 3 columns; 0..1 for C =
// 2) in every row, every row a probability row without it, and not every
// row one with it. heads holds the decimals of the rows without it.
func looksLabelled(t *table, heads []int8, tol float64) bool {
	w := t.cols
	top := float64(max(w-1, 2) - 1)
	whole := false
	for i := range t.rows() {
		row := t.values[i*w : (i+1)*w]
		y := row[w-1]
		if !(y >= 0 && y <= top && y == math.Trunc(y)) || !rowFits(row[:w-1], heads[i], tol) {
			return false
		}
		whole = whole || !rowFits(row, t.digits[i], tol)
	}
	return whole
}

// splitLabels moves the last column of t into a label column; heads holds
// the decimals of the rows without it.
func splitLabels(t *table, heads []int8) *labelColumn {
	w, n := t.cols, t.rows()
	lc := &labelColumn{positions: t.positions, values: make([]float64, n), col: w}
	for i := range n {
		lc.values[i] = t.values[i*w+w-1]
		copy(t.values[i*(w-1):], t.values[i*w:i*w+w-1])
	}
	t.values = t.values[:n*(w-1)]
	t.cols = w - 1
	t.digits = heads
	return lc
}

// newTextReader buffers a text input and drops a leading UTF-8 byte-order
// mark (which spreadsheet programs write).
func newTextReader(r io.Reader) *bufio.Reader {
	br := bufio.NewReaderSize(r, 1<<16)
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	return br
}

// parseNumber parses one field; it accepts surrounding spaces.
func parseNumber(f string) (float64, error) {
	s := strings.TrimSpace(f)
	if s == "" {
		return 0, fmt.Errorf("%w: empty field", ErrSyntax)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("%w: %q is out of the float64 range", ErrNotFinite, truncate(s))
		}
		return 0, fmt.Errorf("%w: %q is not a number", ErrSyntax, truncate(s))
	}
	return v, nil
}

// parseLabel parses a label field: a number, checked to be a label in
// build.
func parseLabel(f string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a non-negative integer", ErrLabel, truncate(f))
	}
	return v, nil
}

// decimals returns the number of decimal places of a number written in
// plain or exponent notation ("0.125": 3, "1.5e-3": 4, "2" and "1e3": 0),
// at most 127, or -1 when s is not of that form (inf, nan, hexadecimal).
func decimals(s string) int8 {
	i, whole, frac := 0, 0, 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for ; i < len(s) && isDigit(s[i]); i++ {
		whole++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDigit(s[i]); i++ {
			frac++
		}
	}
	if whole+frac == 0 {
		return -1
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := i < len(s) && s[i] == '-'
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) {
			return -1
		}
		for ; i < len(s) && isDigit(s[i]); i++ {
			exp = min(exp*10+int(s[i]-'0'), 1000)
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return -1
	}
	return int8(min(max(frac-exp, 0), 127))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// noDecimals starts coarsestDecimals' fold over a row (no value yet).
const noDecimals = int8(127)

// coarsestDecimals combines the decimals of two values of a row: the
// smaller (the coarsest rounding, which bounds every value's rounding error:
// K values off by at most 0.5 x 10^-d_i each are off by at most
// K x 0.5 x 10^-min d_i in sum, so "%.6g" rows, whose small values carry
// more decimals, pass), or -1 when one is not known.
func coarsestDecimals(a, b int8) int8 {
	if a < 0 || b < 0 {
		return -1
	}
	return min(a, b)
}

// isHeader reports whether a record has a field that is not a number.
func isHeader(rec []string) bool {
	for _, f := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				continue
			}
			return true
		}
	}
	return false
}

// truncate shortens a field for an error message.
func truncate(s string) string { return truncateTo(s, 40) }

// truncateTo shortens s to n bytes and "..." for an error message.
func truncateTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
