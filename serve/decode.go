package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// RequestError is a request the server refuses (HTTP 4xx): Field names
// the JSON field (and row, column or element) at fault.
type RequestError struct {
	Status int // the HTTP status; 0 means 400
	Field  string
	Err    error
}

func (e *RequestError) Error() string {
	msg := e.Err.Error()
	if e.Field == "" || len(msg) > len(e.Field) && msg[:len(e.Field)] == e.Field && msg[len(e.Field)] == ':' {
		return msg
	}
	return e.Field + ": " + msg
}

func (e *RequestError) Unwrap() error { return e.Err }

func badRequest(field, format string, args ...any) error {
	return &RequestError{Field: field, Err: fmt.Errorf(format, args...)}
}

// matrix is a batch of rows decoded from JSON: n rows of cols values,
// row-major; nested says whether the JSON held rows (an array of arrays)
// or one row (an array of numbers).
type matrix struct {
	values []float64
	n      int
	cols   int
	nested bool
}

// maxCols bounds the columns of a row (the classes of a map).
const maxCols = 1 << 20

// decodeMatrix decodes raw, one row (an array of numbers) or a batch (an
// array of rows of the same length), of at most maxRows rows. Its errors
// name field and the 1-based row and column: JSON has no NaN or
// infinity, so a string, null or a number out of float64's range is
// refused where it stands.
func decodeMatrix(raw json.RawMessage, field string, maxRows int) (*matrix, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(field, "missing: want an array of rows of numbers (or one row)")
	}
	if raw[0] != '[' {
		return nil, badRequest(field, "want an array of rows of numbers (or one row), not %s", jsonKind(raw))
	}
	if m := fastMatrix(raw, maxRows); m != nil {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // [
		return nil, badRequest(field, "%v", err)
	}
	m := &matrix{}
	first := true
	for dec.More() {
		if first {
			first = false
			// The first element says which form: a number (one row) or
			// an array (rows).
			var peek json.RawMessage
			if err := dec.Decode(&peek); err != nil {
				return nil, badRequest(field, "not valid JSON: %v", err)
			}
			peek = bytes.TrimSpace(peek)
			if len(peek) > 0 && peek[0] == '[' {
				m.nested = true
				if err := m.addRow(peek, field, 1); err != nil {
					return nil, err
				}
				continue
			}
			v, err := number(peek, field+": column 1")
			if err != nil {
				return nil, err
			}
			m.values = append(m.values, v)
			continue
		}
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, badRequest(field, "not valid JSON: %v", err)
		}
		if m.nested {
			if m.n >= maxRows {
				return nil, &RequestError{Status: 413, Field: field, Err: fmt.Errorf("more than %d rows: send smaller batches", maxRows)}
			}
			if err := m.addRow(el, field, m.n+1); err != nil {
				return nil, err
			}
			continue
		}
		if len(m.values) >= maxCols {
			return nil, badRequest(field, "more than %d values in one row", maxCols)
		}
		v, err := number(el, fmt.Sprintf("%s: column %d", field, len(m.values)+1))
		if err != nil {
			return nil, err
		}
		m.values = append(m.values, v)
	}
	if !m.nested {
		m.n, m.cols = 1, len(m.values)
	}
	if m.n == 0 || m.cols == 0 {
		return nil, badRequest(field, "no values: want at least one row of at least one number")
	}
	return m, nil
}

// fastMatrix decodes raw with encoding/json's own float parsing (the
// same strconv.ParseFloat) when it holds nothing but numbers in one row
// or in rows of one length, within the bounds; nil means "take the slow
// path", which finds and names what is wrong. JSON's null would read as
// 0 in a []float64, so a body with any letter but e and E goes slow.
func fastMatrix(raw []byte, maxRows int) *matrix {
	for _, c := range raw {
		switch {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E', c == '[', c == ']', c == ',', c == ' ', c == '\n', c == '\t', c == '\r':
		default:
			return nil
		}
	}
	i := 1
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\t' || raw[i] == '\r') {
		i++
	}
	if i < len(raw) && raw[i] == '[' {
		var rows [][]float64
		if json.Unmarshal(raw, &rows) != nil || len(rows) == 0 || len(rows) > maxRows || len(rows[0]) == 0 || len(rows[0]) > maxCols {
			return nil
		}
		m := &matrix{n: len(rows), cols: len(rows[0]), nested: true, values: make([]float64, 0, len(rows)*len(rows[0]))}
		for _, r := range rows {
			if len(r) != m.cols {
				return nil
			}
			m.values = append(m.values, r...)
		}
		return m
	}
	var row []float64
	if json.Unmarshal(raw, &row) != nil || len(row) == 0 || len(row) > maxCols {
		return nil
	}
	return &matrix{values: row, n: 1, cols: len(row)}
}

// addRow appends the row raw (row i, 1-based) to m.
func (m *matrix) addRow(raw json.RawMessage, field string, i int) error {
	where := fmt.Sprintf("%s: row %d", field, i)
	if len(raw) == 0 || raw[0] != '[' {
		return badRequest(where, "want an array of numbers, not %s (rows must all be arrays, or the field one row of numbers)", jsonKind(raw))
	}
	var row []json.RawMessage
	if err := json.Unmarshal(raw, &row); err != nil {
		return badRequest(where, "not valid JSON: %v", err)
	}
	if i == 1 {
		if len(row) > maxCols {
			return badRequest(where, "%d values: at most %d", len(row), maxCols)
		}
		m.cols = len(row)
	} else if len(row) != m.cols {
		return badRequest(where, "%d values, row 1 has %d: every row must have as many", len(row), m.cols)
	}
	for j, el := range row {
		v, err := number(el, fmt.Sprintf("%s, column %d", where, j+1))
		if err != nil {
			return err
		}
		m.values = append(m.values, v)
	}
	m.n++
	return nil
}

// number parses one JSON number (where names it in errors).
func number(raw json.RawMessage, where string) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, badRequest(where, "want a number, not %s (JSON has no NaN or infinity)", jsonKind(raw))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, badRequest(where, "%s is out of float64's range", raw)
		}
		return 0, badRequest(where, "%s is not a number", raw)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) { // unreachable for JSON numbers; kept for clarity
		return 0, badRequest(where, "not a finite number")
	}
	return v, nil
}

// jsonKind names the JSON value raw starts with, for messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		if len(raw) <= 24 {
			return "the string " + string(raw)
		}
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
