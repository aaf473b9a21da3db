package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unsafe"
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

// fastMatrix decodes raw when it holds nothing but JSON numbers in one
// row or in rows of one length, within the bounds, by one scan without
// reflection (the numbers parsed by strconv.ParseFloat, as encoding/json
// does, after a check of JSON's number grammar); nil means "take the slow
// path", which finds and names what is wrong.
func fastMatrix(raw []byte, maxRows int) *matrix {
	sc := scanner{b: raw}
	if !sc.byte('[') {
		return nil
	}
	sc.space()
	if sc.peek() != '[' {
		row := sc.numbers(nil)
		if row == nil || !sc.byte(']') || !sc.end() || len(row) > maxCols {
			return nil
		}
		return &matrix{values: row, n: 1, cols: len(row)}
	}
	m := &matrix{nested: true}
	for {
		if !sc.byte('[') {
			return nil
		}
		before := len(m.values)
		m.values = sc.numbers(m.values)
		if m.values == nil || !sc.byte(']') {
			return nil
		}
		n := len(m.values) - before
		if m.n == 0 {
			m.cols = n
		}
		if n != m.cols || n == 0 || n > maxCols {
			return nil
		}
		if m.n++; m.n > maxRows {
			return nil
		}
		if sc.byte(',') {
			continue
		}
		if sc.byte(']') && sc.end() {
			return m
		}
		return nil
	}
}

// scanner reads JSON arrays of numbers.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// byte skips white space and c, reporting whether c was there.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// numbers appends the numbers of a comma-separated list (at least one)
// to out; nil when something else stands there.
func (s *scanner) numbers(out []float64) []float64 {
	if out == nil {
		out = make([]float64, 0, 16)
	}
	for {
		s.space()
		j := jsonNumber(s.b[s.i:])
		if j == 0 {
			return nil
		}
		v, err := strconv.ParseFloat(unsafe.String(&s.b[s.i], j), 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
		s.i += j
		if !s.byte(',') {
			return out
		}
	}
}

// jsonNumber returns the length of the JSON number b starts with (0: none):
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) int {
	i := 0
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
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
