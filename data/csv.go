package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseCSV reads comma-separated rows (tab-separated when the first line has
// tabs and no commas) from r. The first line is a header when one of its
// fields is not a number. With labelCol the last column holds the labels and
// the others the predictions; otherwise every column is a prediction column.
func parseCSV(name string, r io.Reader, labelCol bool) (*table, *labelColumn, error) {
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
	t := &table{positions: positions{file: name, lines: []int32{}}}
	var lc *labelColumn
	width := 0
	header := true // a header is allowed until the first data row
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
			return nil, nil, &Error{File: name, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
		}
		line, _ := cr.FieldPos(0)
		if header {
			header = false
			if isHeader(rec) {
				continue
			}
		}
		if width == 0 {
			width = len(rec)
			t.cols = width
			if labelCol {
				if width < 2 {
					return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: need prediction columns and a label column, got %d column", ErrShape, width)}
				}
				t.cols = width - 1
				lc = &labelColumn{positions: positions{file: name, lines: []int32{}}, col: width}
			}
		}
		if len(rec) != width {
			return nil, nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %d fields, the first row has %d", ErrRagged, len(rec), width)}
		}
		for c, f := range rec {
			v, err := parseNumber(f)
			if err != nil {
				return nil, nil, &Error{File: name, Line: line, Column: c + 1, Err: err}
			}
			if c < t.cols {
				t.values = append(t.values, v)
			} else {
				lc.values = append(lc.values, v)
				lc.lines = append(lc.lines, int32(line))
			}
		}
		t.lines = append(t.lines, int32(line))
	}
	return t, lc, nil
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
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
