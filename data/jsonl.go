package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// jsonRow is one JSON Lines record; the values are checked by hand so that
// errors speak of the file, not of Go types.
type jsonRow struct {
	Probs  json.RawMessage `json:"probs"`
	Logits json.RawMessage `json:"logits"`
	Label  json.RawMessage `json:"label"`
	Weight json.RawMessage `json:"weight"`
}

// parseJSONL reads one JSON object per line: {"probs": [...], "label": k}
// or {"logits": [...], "label": k}. Blank lines are skipped; other keys are
// ignored. With needLabel every row must carry a label; otherwise the labels
// are read when every row has one.
func parseJSONL(name string, r io.Reader, needLabel bool) (*table, *labelColumn, error) {
	p := &jsonlParser{name: name, br: newTextReader(r), needLabel: needLabel}
	t, lc, missing, err := p.read(0)
	if err != nil {
		return nil, nil, err
	}
	if missing > 0 || len(lc.values) == 0 {
		lc = nil
	}
	return t, lc, nil
}

// jsonlParser reads the rows of a JSON Lines file a batch at a time (read),
// keeping what the first row decided (probabilities or logits, their
// number, whether rows carry weights) for the rest of the file: parseJSONL
// reads a whole file in one batch, a Chunks reads it in many.
type jsonlParser struct {
	name      string
	br        *bufio.Reader
	needLabel bool
	// stream marks streamed reading of a file that holds the labels: a
	// label on the first row asks one of every row, as the file cannot
	// be read twice.
	stream    bool
	kind      string // "probs" or "logits", fixed by the first row
	cols      int    // values of a row, fixed by the first row
	line      int    // lines read
	firstLine int    // line of the first row; 0 before it
	weighted  bool   // the first row has a "weight"
	labelled  bool   // the first row has a "label"
	eof       bool
}

// read parses the next max rows (all the rest when max <= 0) into a new
// table and label column (with the labels of the rows that have one) and
// returns them with the number of rows without a label. After the last row
// it returns a table with no rows.
func (p *jsonlParser) read(max int) (*table, *labelColumn, int, error) {
	name := p.name
	t := &table{positions: positions{file: name, lines: []int32{}}, digits: []int8{}, cols: p.cols, logits: p.kind == "logits"}
	if p.weighted {
		t.weights = &weightColumn{positions: positions{file: name, lines: []int32{}}}
	}
	lc := &labelColumn{positions: positions{file: name, lines: []int32{}}}
	missing := 0
	for n := 0; !p.eof && (max <= 0 || n < max); {
		l, rerr := p.br.ReadBytes('\n')
		if len(l) == 0 && rerr != nil {
			if rerr != io.EOF {
				return nil, nil, 0, &Error{File: name, Line: p.line + 1, Err: fmt.Errorf("%w: %w", ErrRead, rerr)}
			}
			p.eof = true
			break
		}
		p.line++
		line := p.line
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		perr := func(err error) *Error { return &Error{File: name, Line: line, Err: err} }
		if l[0] != '{' {
			return nil, nil, 0, perr(fmt.Errorf("%w: want a JSON object such as {\"probs\": [...], \"label\": 0}, got %s", ErrSyntax, jsonKind(l)))
		}
		var row jsonRow
		if err := json.Unmarshal(l, &row); err != nil {
			var se *json.SyntaxError
			if string(l) == "{" {
				return nil, nil, 0, perr(fmt.Errorf("%w: a JSON document over several lines, not JSON Lines (one object such as {\"probs\": [...], \"label\": 0} per line); a calibration map from calib fit is given with --calibrator", ErrSyntax))
			}
			if errors.As(err, &se) {
				return nil, nil, 0, perr(fmt.Errorf("%w: not valid JSON at character %d: %s", ErrSyntax, se.Offset, se.Error()))
			}
			return nil, nil, 0, perr(fmt.Errorf("%w: not valid JSON", ErrSyntax))
		}
		if err := checkKeys(l); err != nil {
			return nil, nil, 0, perr(err)
		}
		probs, logits := present(row.Probs), present(row.Logits)
		key := "probs"
		switch {
		case probs && logits:
			return nil, nil, 0, perr(fmt.Errorf("%w: both \"probs\" and \"logits\"", ErrSyntax))
		case probs && p.kind == "logits":
			return nil, nil, 0, perr(fmt.Errorf("%w: \"probs\" after rows with \"logits\"", ErrSyntax))
		case logits && p.kind == "probs":
			return nil, nil, 0, perr(fmt.Errorf("%w: \"logits\" after rows with \"probs\"", ErrSyntax))
		case logits:
			key = "logits"
		case !probs:
			return nil, nil, 0, perr(fmt.Errorf("%w: no \"probs\" or \"logits\" array", ErrSyntax))
		}
		p.kind = key
		t.logits = key == "logits"
		raw := row.Probs
		if logits {
			raw = row.Logits
		}
		before := len(t.values)
		var d int8
		var err error
		if t.values, d, err = appendNumbers(t.values, raw, key); err != nil {
			return nil, nil, 0, perr(err)
		}
		k := len(t.values) - before
		if k == 0 {
			return nil, nil, 0, perr(fmt.Errorf("%w: empty %q array", ErrShape, key))
		}
		if p.cols == 0 {
			p.cols = k
			t.cols = k
		} else if k != p.cols {
			return nil, nil, 0, perr(fmt.Errorf("%w: %d values, the first row has %d", ErrRagged, k, p.cols))
		}
		t.lines = append(t.lines, int32(line))
		t.digits = append(t.digits, d)
		first := p.firstLine == 0
		if first {
			p.firstLine = line
			p.labelled = present(row.Label)
		}
		if err := p.weight(t, row.Weight, line, first); err != nil {
			return nil, nil, 0, perr(err)
		}
		n++
		if !present(row.Label) {
			switch {
			case p.needLabel:
				return nil, nil, 0, perr(fmt.Errorf("%w: the line has no \"label\"; add one or give a labels file", ErrNoLabels))
			case p.stream && p.labelled:
				return nil, nil, 0, perr(fmt.Errorf("%w: the line has no \"label\", line %d has one; streamed rows need a label on every row or on none", ErrNoLabels, p.firstLine))
			}
			missing++
			continue
		}
		y, err := jsonLabel(row.Label)
		if err != nil {
			return nil, nil, 0, perr(err)
		}
		lc.values = append(lc.values, y)
		lc.lines = append(lc.lines, int32(line))
	}
	return t, lc, missing, nil
}

// weight appends the "weight" of the row at line (the table's newest row;
// first: the file's first row) to t.weights: every row has one, or none
// has.
func (p *jsonlParser) weight(t *table, raw json.RawMessage, line int, first bool) error {
	has := present(raw)
	switch {
	case has && !p.weighted && !first:
		return fmt.Errorf("%w: \"weight\" here but not on line %d; give every row a weight or none", ErrWeights, p.firstLine)
	case !has && p.weighted:
		return fmt.Errorf("%w: no \"weight\" here but on line %d; give every row a weight or none", ErrWeights, p.firstLine)
	case !has:
		return nil
	case t.weights == nil:
		p.weighted = true
		t.weights = &weightColumn{positions: positions{file: t.file, lines: []int32{}}}
	}
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		return fmt.Errorf("%w: \"weight\" must be a number, got %s", ErrWeights, jsonKind(raw))
	}
	t.weights.values = append(t.weights.values, v)
	t.weights.lines = append(t.weights.lines, int32(line))
	return nil
}

// present reports whether a key was given a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// appendNumbers appends the numbers of the JSON array raw (valid JSON,
// the value of key) to dst and returns the largest number of decimals they
// were written with (-1 when not known).
func appendNumbers(dst []float64, raw []byte, key string) ([]float64, int8, error) {
	notNumbers := func(what string) error {
		return fmt.Errorf("%w: %q must be an array of numbers, got %s", ErrSyntax, key, what)
	}
	if raw[0] != '[' {
		return dst, 0, notNumbers(jsonKind(raw))
	}
	d := noDecimals
	for i := skipSpace(raw, 1); i < len(raw) && raw[i] != ']'; {
		if c := raw[i]; c != '-' && !isDigit(c) {
			return dst, 0, notNumbers(jsonKind(raw[i:]) + " in the array")
		}
		j := i
		for j < len(raw) && raw[j] != ',' && raw[j] != ']' && skipSpace(raw, j) == j {
			j++
		}
		s := string(raw[i:j])
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return dst, 0, fmt.Errorf("%w: %q is out of the float64 range", ErrNotFinite, truncate(s))
		}
		dst = append(dst, v)
		d = coarsestDecimals(d, decimals(s))
		if i = skipSpace(raw, j); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return dst, d, nil
}

// jsonLabel reads the value of "label": a number, or a string holding one.
func jsonLabel(raw []byte) (float64, error) {
	s := string(raw)
	switch {
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("%w: not valid JSON", ErrSyntax)
		}
	case raw[0] != '-' && !isDigit(raw[0]):
		return 0, fmt.Errorf("%w: \"label\" must be a non-negative integer, got %s", ErrLabel, jsonKind(raw))
	}
	return parseLabel(s)
}

// jsonKind names the kind of the JSON value that b starts with.
func jsonKind(b []byte) string {
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return fmt.Sprintf("%q", truncate(string(b)))
}

// skipSpace returns the index of the first byte of b at or after i that is
// not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// rowKeys are the keys of a JSON Lines row that calib reads.
var rowKeys = [...]string{"probs", "logits", "label", "weight"}

// checkKeys refuses a row object l that holds a key of rowKeys twice or in
// another case ("PROBS"): Go's JSON decoder would keep the last or match
// it without a word. A key is a quoted string followed by a colon; the
// values calib reads hold no strings, so a match elsewhere is in another
// key's string value, which it skips.
func checkKeys(l []byte) error {
	var seen [len(rowKeys)]int
	for i := 0; i < len(l); i++ {
		if l[i] != '"' || (i > 0 && l[i-1] == '\\') {
			continue
		}
		for k, key := range rowKeys {
			if i+len(key)+1 >= len(l) || l[i+len(key)+1] != '"' || !bytes.EqualFold(l[i+1:i+1+len(key)], []byte(key)) {
				continue
			}
			j := i + len(key) + 2
			for j < len(l) && (l[j] == ' ' || l[j] == '\t') {
				j++
			}
			if j >= len(l) || l[j] != ':' {
				continue
			}
			if got := string(l[i+1 : i+1+len(key)]); got != key {
				return fmt.Errorf("%w: key %q: calib reads %q (keys are lowercase)", ErrSyntax, got, key)
			}
			if seen[k]++; seen[k] > 1 {
				return fmt.Errorf("%w: key %q given twice", ErrSyntax, key)
			}
		}
	}
	return nil
}
