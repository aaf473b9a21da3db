package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonRow is one JSON Lines record.
type jsonRow struct {
	Probs  *[]float64   `json:"probs"`
	Logits *[]float64   `json:"logits"`
	Label  *json.Number `json:"label"`
}

// parseJSONL reads one JSON object per line: {"probs": [...], "label": k}
// or {"logits": [...], "label": k}. Blank lines are skipped; other keys are
// ignored. With needLabel every row must carry a label.
func parseJSONL(name string, r io.Reader, needLabel bool) (*table, *labelColumn, error) {
	t := &table{positions: positions{file: name, lines: []int32{}}}
	var lc *labelColumn
	if needLabel {
		lc = &labelColumn{positions: positions{file: name, lines: []int32{}}}
	}
	br := newTextReader(r)
	kind := "" // "probs" or "logits", fixed by the first row
	line := 0
	for {
		l, rerr := br.ReadBytes('\n')
		if len(l) == 0 && rerr != nil {
			if rerr != io.EOF {
				return nil, nil, &Error{File: name, Line: line + 1, Err: fmt.Errorf("%w: %v", ErrSyntax, rerr)}
			}
			break
		}
		line++
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		p := &Error{File: name, Line: line}
		perr := func(err error) *Error { e := *p; e.Err = err; return &e }
		var row jsonRow
		if err := json.Unmarshal(l, &row); err != nil {
			return nil, nil, perr(fmt.Errorf("%w: %v", ErrSyntax, err))
		}
		var vals []float64
		switch {
		case row.Probs != nil && row.Logits != nil:
			return nil, nil, perr(fmt.Errorf("%w: both \"probs\" and \"logits\"", ErrSyntax))
		case row.Probs != nil:
			vals = *row.Probs
			if kind == "logits" {
				return nil, nil, perr(fmt.Errorf("%w: \"probs\" after rows with \"logits\"", ErrSyntax))
			}
			kind = "probs"
		case row.Logits != nil:
			vals = *row.Logits
			if kind == "probs" {
				return nil, nil, perr(fmt.Errorf("%w: \"logits\" after rows with \"probs\"", ErrSyntax))
			}
			kind = "logits"
		default:
			return nil, nil, perr(fmt.Errorf("%w: no \"probs\" or \"logits\" array", ErrSyntax))
		}
		if len(vals) == 0 {
			return nil, nil, perr(fmt.Errorf("%w: empty %q array", ErrShape, kind))
		}
		if t.cols == 0 {
			t.cols = len(vals)
		} else if len(vals) != t.cols {
			return nil, nil, perr(fmt.Errorf("%w: %d values, the first row has %d", ErrRagged, len(vals), t.cols))
		}
		t.values = append(t.values, vals...)
		t.lines = append(t.lines, int32(line))
		if !needLabel {
			continue
		}
		if row.Label == nil {
			return nil, nil, perr(fmt.Errorf("%w: no \"label\" (or give a labels file)", ErrLabel))
		}
		y, err := row.Label.Float64()
		if err != nil {
			return nil, nil, perr(fmt.Errorf("%w: %q is not a number", ErrLabel, truncate(row.Label.String())))
		}
		lc.values = append(lc.values, y)
		lc.lines = append(lc.lines, int32(line))
	}
	t.logits = kind == "logits"
	return t, lc, nil
}
