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

// checkHeader refuses headers that would have the columns misread: a
// first field without a name (the unnamed index column that pandas'
// DataFrame.to_csv writes unless index=False: its row numbers would be
// read as a prediction column), and a label column (labelNames) that is
// not the last, where calib reads the labels.
//
// wc is the index of the weight column in the file (-1: none), already
// removed from header, so that the messages give the file's column numbers.
func checkHeader(header []string, wc int, lay csvLayout) error {
	if lay.only || lay.plain || len(header) < 2 {
		return nil
	}
	fileCol := func(c int) int {
		if wc >= 0 && c >= wc {
			return c + 2
		}
		return c + 1
	}
	if strings.TrimSpace(header[0]) == "" {
		return fmt.Errorf("%w: column %d has no name in the header: the row index that pandas' DataFrame.to_csv writes unless index=False; write the file with index=False (or drop that column)", ErrShape, fileCol(0))
	}
	for c, h := range header[:len(header)-1] {
		if slices.Contains(labelNames, strings.ToLower(strings.TrimSpace(h))) {
			return fmt.Errorf("%w: the header names column %d %q, but calib reads the labels from the last column: put the label column last (the prediction columns first, in class order)", ErrShape, fileCol(c), strings.TrimSpace(h))
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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
	p := newCSVParser(name, r, lay)
	t, lc, heads, err := p.read(0)
	if err != nil {
		return nil, nil, err
	}
	if heads != nil && looksLabelled(t, heads, lay.tol) {
		lc = splitLabels(t, heads)
	}
	t.labelHint = lc == nil
	return t, lc, nil
}

// csvParser reads the rows of a CSV file a batch at a time (read), keeping
// what the first rows decided (header, weight column, width, label column)
// for the rest of the file: parseCSV reads a whole file in one batch, a
// Chunks reads it in many.
type csvParser struct {
	name      string
	lay       csvLayout
	cr        *csv.Reader
	header    []string
	width     int  // fields of a row, known after the first row
	labelCol  bool // the last field holds the labels
	byContent bool // the label column may still be found by content (heads are kept)
	started   bool // a header is allowed until the first row
	weighted  bool // the header named a weight column
	wc        int  // 0-based column of the weights in the file, or -1
	eof       bool
}

// newCSVParser starts reading the CSV file r (named name) with the layout
// lay.
func newCSVParser(name string, r io.Reader, lay csvLayout) *csvParser {
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
	return &csvParser{name: name, lay: lay, cr: cr, wc: -1}
}

// fileCol is the 1-based column in the file of field c of a record whose
// weight field was removed.
func (p *csvParser) fileCol(c int) int {
	if p.weighted && c >= p.wc {
		return c + 2
	}
	return c + 1
}

// newTable returns an empty table (and label column, when the layout has
// one) for the next rows.
func (p *csvParser) newTable() (*table, *labelColumn) {
	t := &table{positions: positions{file: p.name, lines: []int32{}}, digits: []int8{}}
	if p.weighted {
		t.weights = &weightColumn{positions: positions{file: p.name, lines: []int32{}}, col: p.wc + 1}
	}
	var lc *labelColumn
	if p.width > 0 {
		t.cols = p.width
		if p.labelCol {
			t.cols = p.width - 1
			lc = &labelColumn{positions: positions{file: p.name, lines: []int32{}}, col: p.fileCol(p.width - 1)}
		}
	}
	return t, lc
}

// read parses the next max rows (all the rest when max <= 0) into a new
// table and returns it, the label column (nil when the layout has none)
// and, while the label column may still be found by content, the decimals
// of each row without its last field (else nil). After the last row it
// returns a table with no rows.
func (p *csvParser) read(max int) (*table, *labelColumn, []int8, error) {
	name, lay := p.name, p.lay
	t, lc := p.newTable()
	var heads []int8 // decimals of the first width-1 columns, while the label column may be found by content
	if p.byContent {
		heads = []int8{}
	}
	for n := 0; !p.eof && (max <= 0 || n < max); {
		rec, err := p.cr.Read()
		if err == io.EOF {
			p.eof = true
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, nil, &Error{File: name, Line: pe.Line, Column: pe.Column, Err: fmt.Errorf("%w: %v", ErrSyntax, pe.Err)}
			}
			return nil, nil, nil, &Error{File: name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
		}
		line, _ := p.cr.FieldPos(0)
		if !p.started {
			p.started = true
			if isHeader(rec) {
				if p.wc = weightColumnOf(rec); p.wc >= 0 && !lay.only && !lay.plain {
					if len(rec) == 1 {
						return nil, nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: a weight column and no prediction columns", ErrShape)}
					}
					p.weighted = true
					t.weights = &weightColumn{positions: positions{file: name, lines: []int32{}}, col: p.wc + 1}
					rec = slices.Delete(slices.Clone(rec), p.wc, p.wc+1)
				} else {
					p.wc = -1
				}
				p.header = slices.Clone(rec)
				if err := checkHeader(rec, p.wc, lay); err != nil {
					return nil, nil, nil, &Error{File: name, Line: line, Err: err}
				}
				continue
			}
		}
		if p.weighted {
			wc := p.wc
			if wc >= len(rec) {
				return nil, nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %d fields, the header has %d", ErrRagged, len(rec), len(p.header)+1)}
			}
			v, err := parseNumber(rec[wc])
			if err != nil {
				return nil, nil, nil, &Error{File: name, Line: line, Column: wc + 1, Err: fmt.Errorf("weight: %w", err)}
			}
			t.weights.values = append(t.weights.values, v)
			t.weights.lines = append(t.weights.lines, int32(line))
			rec = slices.Delete(rec, wc, wc+1)
		}
		// The first row against the header: fewer fields than it names, or
		// one more and empty (a trailing comma), is refused; one more with
		// a value is a label column the header does not name.
		if trailing := len(rec) == len(p.header)+1 && strings.TrimSpace(rec[len(rec)-1]) == ""; p.width == 0 && p.header != nil && (len(rec) < len(p.header) || trailing) {
			msg := fmt.Errorf("%w: %d fields, the header has %d", ErrRagged, len(rec)+b2i(p.weighted), len(p.header)+b2i(p.weighted))
			if trailing {
				msg = fmt.Errorf("%w (a trailing comma: the last field is empty)", msg)
			}
			return nil, nil, nil, &Error{File: name, Line: line, Err: msg}
		}
		if p.width == 0 {
			width := len(rec)
			p.width = width
			p.labelCol = lay.labelColumn(p.header, width)
			t.cols = width
			switch {
			case lay.only && width != 1:
				return nil, nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: a labels file has one column, got %d", ErrShape, width)}
			case p.labelCol && !lay.only && width < 2:
				return nil, nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: need prediction columns and a label column, got %d column", ErrShape, width)}
			case p.labelCol:
				t.cols = width - 1
				lc = &labelColumn{positions: positions{file: name, lines: []int32{}}, col: p.fileCol(width - 1)}
			case lay.byContent(p.header, width):
				p.byContent = true
				heads = []int8{}
			}
		}
		width := p.width
		if len(rec) != width {
			return nil, nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %d fields, the first row has %d", ErrRagged, len(rec), width)}
		}
		row, head := noDecimals, noDecimals
		for c, f := range rec {
			f = strings.TrimSpace(f)
			if p.labelCol && c == width-1 {
				y, err := parseLabel(f)
				if err != nil {
					return nil, nil, nil, &Error{File: name, Line: line, Column: p.fileCol(c), Err: err}
				}
				lc.values = append(lc.values, y)
				lc.lines = append(lc.lines, int32(line))
				continue
			}
			v, err := parseNumber(f)
			if err != nil {
				return nil, nil, nil, &Error{File: name, Line: line, Column: p.fileCol(c), Err: err}
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
		n++
	}
	return t, lc, heads, nil
}

// fixLabels ends the search for a label column by content (streamed
// reading decides it on the first rows): labelled says the last column
// holds the labels.
func (p *csvParser) fixLabels(labelled bool) {
	p.byContent = false
	p.labelCol = p.labelCol || labelled
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
