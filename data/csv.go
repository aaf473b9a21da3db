package data

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseCSV reads comma-separated rows (tab-separated when the first line has
// tabs and no commas). The first line is a header when one of its fields is
// not a number. With labelCol the last column holds the labels and the
// others the predictions; otherwise every column is a prediction column.
func parseCSV(name string, b []byte, labelCol bool) (*table, *labelColumn, error) {
	r := csv.NewReader(bytes.NewReader(b))
	first, _, _ := bytes.Cut(b, []byte{'\n'})
	if bytes.IndexByte(first, '\t') >= 0 && bytes.IndexByte(first, ',') < 0 {
		r.Comma = '\t'
	}
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	r.TrimLeadingSpace = true
	t := &table{file: name}
	var lc *labelColumn
	width := 0
	header := true // a header is allowed until the first data row
	for {
		rec, err := r.Read()
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
		line, _ := r.FieldPos(0)
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
				lc = &labelColumn{col: width}
			}
		}
		p := pos{file: name, line: line}
		if len(rec) != width {
			return nil, nil, p.err(0, fmt.Errorf("%w: %d fields, the first row has %d", ErrRagged, len(rec), width))
		}
		for c, f := range rec {
			v, err := parseNumber(f)
			if err != nil {
				return nil, nil, p.err(c+1, err)
			}
			if c < t.cols {
				t.values = append(t.values, v)
			} else {
				lc.values = append(lc.values, v)
				lc.pos = append(lc.pos, p)
			}
		}
		t.pos = append(t.pos, p)
	}
	return t, lc, nil
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
