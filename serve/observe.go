package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/monitor"
)

// ObserveRequest is the body of POST /v1/observe/{model}: the model's
// predictions (Probs or Logits, one row or rows; through the served map
// Map first when given) and their labels, each a class index or null for
// an outcome that POST /v1/outcome/{model} will bring under the row's id.
type ObserveRequest struct {
	Probs  json.RawMessage `json:"probs,omitempty"`
	Logits json.RawMessage `json:"logits,omitempty"`
	// Map names a served map that the predictions go through before they
	// are observed (what the model's users receive); "" observes them as
	// they are.
	Map         string `json:"map,omitempty"`
	Renormalize bool   `json:"renormalize,omitempty"`
	// Labels holds one class index (0..K-1) or null per row.
	Labels json.RawMessage `json:"labels"`
	// Weights holds one weight (finite, >= 0) per row, or is absent: all
	// 1. A model is observed with weights on every request or none.
	Weights json.RawMessage `json:"weights,omitempty"`
	// IDs holds one prediction id per row ("" for none); a row without
	// a label needs one.
	IDs []string `json:"ids,omitempty"`
	// Slice names the rows' slice ("" is "default").
	Slice string `json:"slice,omitempty"`
	// Time is the predictions' time (Unix seconds, or an RFC 3339
	// string); Times one per row. Without either, the time the request
	// arrived.
	Time  json.RawMessage `json:"time,omitempty"`
	Times json.RawMessage `json:"times,omitempty"`
	// RequestID, if given, makes the request idempotent: a request
	// whose id was recorded is not counted again (a retry after a
	// timeout is safe).
	RequestID string `json:"request_id,omitempty"`
}

// OutcomeRequest is the body of POST /v1/outcome/{model}: the labels of
// predictions observed without one, by id.
type OutcomeRequest struct {
	IDs       []string        `json:"ids"`
	Labels    json.RawMessage `json:"labels"`
	RequestID string          `json:"request_id,omitempty"`
}

// ObserveResponse is the answer of both: what was recorded, once it is
// on disk (the log's sequence number LSN). Counted rows are in the sums;
// Pending rows wait for their outcome; Unmatched outcome rows found their
// prediction gone (joined or expired meanwhile); Duplicate says the
// request id was recorded before and nothing was done.
type ObserveResponse struct {
	Model string `json:"model"`
	monitor.Applied
}

// errNoMonitor answers the monitor endpoints of a server without one.
var errNoMonitor = &RequestError{Status: http.StatusNotFound, Err: errors.New("monitors are off: start calib serve with --data STATE_DIR")}

// observe answers POST /v1/observe/{model}.
func (s *Server) observe(w http.ResponseWriter, r *http.Request) error {
	if s.o.Store == nil {
		return errNoMonitor
	}
	received := time.Now().UnixNano()
	var req ObserveRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	field, x, err := s.predictions(req.Probs, req.Logits)
	if err != nil {
		return err
	}
	rec := &monitor.Record{Kind: monitor.Observe, Model: r.PathValue("model"), Slice: req.Slice, RequestID: req.RequestID, Time: received}
	if req.Map != "" {
		m, err := s.mapOf(req.Map)
		if err != nil {
			return err
		}
		if rec.Probs, err = m.Apply(x.values, x.cols, field == "logits", req.Renormalize, field); err != nil {
			return err
		}
		rec.K = m.K()
	} else {
		set, err := data.New(x.values, x.cols, nil, field == "logits", data.Options{Unlabeled: true, Logits: field == "logits", Renormalize: req.Renormalize})
		if err != nil {
			return dataError(err, field)
		}
		rec.Probs, rec.K = set.Probs, set.K
	}
	if rec.Labels, err = decodeLabels(req.Labels, x.n, true); err != nil {
		return err
	}
	if len(req.Weights) > 0 {
		if rec.Weights, err = decodeVector(req.Weights, "weights", x.n); err != nil {
			return err
		}
	}
	if req.IDs != nil {
		if len(req.IDs) != x.n {
			return badRequest("ids", "%d ids for %d rows", len(req.IDs), x.n)
		}
		rec.IDs = req.IDs
	}
	if len(req.Time) > 0 && len(req.Times) > 0 {
		return badRequest("", "give \"time\" or \"times\", not both")
	}
	if len(req.Time) > 0 {
		t, err := decodeTime(req.Time, "time")
		if err != nil {
			return err
		}
		rec.Times = make([]int64, x.n)
		for i := range rec.Times {
			rec.Times[i] = t
		}
	}
	if len(req.Times) > 0 {
		if rec.Times, err = decodeTimes(req.Times, x.n); err != nil {
			return err
		}
	}
	return s.submit(w, r, rec)
}

// outcome answers POST /v1/outcome/{model}.
func (s *Server) outcome(w http.ResponseWriter, r *http.Request) error {
	if s.o.Store == nil {
		return errNoMonitor
	}
	received := time.Now().UnixNano()
	var req OutcomeRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	if len(req.IDs) == 0 {
		return badRequest("ids", "missing: the ids of the predictions whose labels these are")
	}
	if len(req.IDs) > s.o.MaxRows {
		return &RequestError{Status: http.StatusRequestEntityTooLarge, Field: "ids", Err: fmt.Errorf("%d rows: at most %d (--max-rows)", len(req.IDs), s.o.MaxRows)}
	}
	labels, err := decodeLabels(req.Labels, len(req.IDs), false)
	if err != nil {
		return err
	}
	rec := &monitor.Record{Kind: monitor.Outcome, Model: r.PathValue("model"), RequestID: req.RequestID, Time: received, IDs: req.IDs, Labels: labels}
	return s.submit(w, r, rec)
}

// submit records rec and answers with what was done.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, rec *monitor.Record) error {
	out, err := s.o.Store.Submit(r.Context(), rec)
	var ce *monitor.CheckError
	switch {
	case errors.As(err, &ce):
		status := http.StatusBadRequest
		if ce.NotFound {
			status = http.StatusNotFound
		}
		return &RequestError{Status: status, Err: ce}
	case err != nil:
		return &RequestError{Status: http.StatusServiceUnavailable, Err: err}
	}
	writeJSON(w, http.StatusOK, ObserveResponse{Model: rec.Model, Applied: out})
	return nil
}

// monitorReport answers GET /v1/monitor/{model}?slice=S&windows=N.
func (s *Server) monitorReport(w http.ResponseWriter, r *http.Request) error {
	if s.o.Store == nil {
		return errNoMonitor
	}
	q := monitor.Query{Slice: r.URL.Query().Get("slice")}
	if v := r.URL.Query().Get("windows"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			return badRequest("windows", "%q: want the number of most recent windows (0: all, -1: none)", v)
		}
		q.Windows = n
	}
	budget := time.Duration(s.reportTimeout.Load())
	ctx, cancel := context.WithTimeout(r.Context(), budget)
	defer cancel()
	rep, err := s.o.Store.Monitor().ReportContext(ctx, r.PathValue("model"), q)
	var ce *monitor.CheckError
	switch {
	case errors.As(err, &ce):
		return &RequestError{Status: http.StatusNotFound, Err: ce}
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		return &RequestError{Status: http.StatusServiceUnavailable, Err: fmt.Errorf("the report takes longer than its %v (each slice's total and each window is one evaluation, about 50 ms + 0.2 ms x K on one core): ask for fewer with ?windows=N (-1: none), or one slice with ?slice=S", budget)}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// dataError turns data.New's error into a RequestError naming field
// ("probs: row 2, column 3: ..."), the flag --renormalize spelt as the
// request's "renormalize".
func dataError(err error, field string) error {
	var de *data.Error
	if errors.As(err, &de) {
		e := *de
		e.File = field
		msg := strings.ReplaceAll(e.Error(), "--renormalize rescales rows", `"renormalize": true rescales rows`)
		return &RequestError{Err: errors.New(msg)}
	}
	return &RequestError{Field: field, Err: err}
}

// decodeLabels decodes an array of n labels: integers >= 0, or null
// (nullOK: monitor.NoLabel) for an outcome to come.
func decodeLabels(raw json.RawMessage, n int, nullOK bool) ([]int, error) {
	if out := fastLabels(raw, n, nullOK); out != nil {
		return out, nil
	}
	els, err := array(raw, "labels", n)
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, el := range els {
		if string(el) == "null" {
			if !nullOK {
				return nil, badRequest(fmt.Sprintf("labels: row %d", i+1), "null: an outcome gives every row's label")
			}
			out[i] = monitor.NoLabel
			continue
		}
		v, err := strconv.Atoi(string(el))
		if err != nil || v < 0 {
			return nil, badRequest(fmt.Sprintf("labels: row %d", i+1), "want a class index (an integer >= 0)%s, not %s", map[bool]string{true: " or null", false: ""}[nullOK], clip(el))
		}
		out[i] = v
	}
	return out, nil
}

// fastLabels decodes an array of exactly n labels that are all small
// non-negative integers in JSON's form (or null, when nullOK) in one
// scan; nil means "take the slow path", which names what is wrong.
func fastLabels(raw []byte, n int, nullOK bool) []int {
	sc := scanner{b: raw}
	if !sc.byte('[') {
		return nil
	}
	out := make([]int, 0, n)
	for len(out) < n {
		sc.space()
		switch {
		case nullOK && bytes.HasPrefix(sc.b[sc.i:], []byte("null")):
			sc.i += 4
			out = append(out, monitor.NoLabel)
		default:
			j := sc.i
			v := 0
			for sc.i < len(sc.b) && sc.b[sc.i] >= '0' && sc.b[sc.i] <= '9' && sc.i-j < 9 {
				v = 10*v + int(sc.b[sc.i]-'0')
				sc.i++
			}
			if sc.i == j || sc.b[j] == '0' && sc.i-j > 1 {
				return nil
			}
			out = append(out, v)
		}
		if len(out) < n && !sc.byte(',') {
			return nil
		}
	}
	if !sc.byte(']') || !sc.end() {
		return nil
	}
	return out
}

// decodeVector decodes an array of n numbers.
func decodeVector(raw json.RawMessage, field string, n int) ([]float64, error) {
	els, err := array(raw, field, n)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, el := range els {
		if out[i], err = number(el, fmt.Sprintf("%s: row %d", field, i+1)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeTimes decodes an array of n times.
func decodeTimes(raw json.RawMessage, n int) ([]int64, error) {
	els, err := array(raw, "times", n)
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i, el := range els {
		if out[i], err = decodeTime(el, fmt.Sprintf("times: row %d", i+1)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeTime decodes a time: Unix seconds (a number) or an RFC 3339
// string, as Unix nanoseconds.
func decodeTime(raw json.RawMessage, where string) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, badRequest(where, "not a JSON string")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, badRequest(where, "%q is not an RFC 3339 time (2026-11-29T12:00:00Z)", s)
		}
		if y := t.UTC().Year(); y < 1970 || y >= 2242 {
			return 0, badRequest(where, "%q: want a time from 1970 to 2241", s)
		}
		return t.UnixNano(), nil
	}
	v, err := number(raw, where)
	if err != nil {
		return 0, err
	}
	if !(v > 0 && v < 1<<33) { // 1970 to 2242
		return 0, badRequest(where, "%v is not a time in Unix seconds", v)
	}
	return int64(math.Round(v * 1e9)), nil
}

// array splits a JSON array of n elements.
func array(raw json.RawMessage, field string, n int) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(field, "missing: want an array of %d (one per row)", n)
	}
	var els []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &els) != nil {
		return nil, badRequest(field, "want an array of %d (one per row), not %s", n, jsonKind(raw))
	}
	if len(els) != n {
		return nil, badRequest(field, "%d values for %d rows", len(els), n)
	}
	for i := range els {
		els[i] = bytes.TrimSpace(els[i])
	}
	return els, nil
}

// clip shortens a JSON value for a message.
func clip(raw []byte) string {
	if len(raw) > 24 {
		return string(raw[:21]) + "..."
	}
	return string(raw)
}

// adminReset answers POST /v1/admin/reset/{model}?slice=S: the alarms
// of the slice (or of every slice) start again, through the log.
func (s *Server) adminReset(w http.ResponseWriter, r *http.Request) error {
	if s.o.Store == nil {
		return errNoMonitor
	}
	rec := &monitor.Record{Kind: monitor.Reset, Model: r.PathValue("model"), Slice: r.URL.Query().Get("slice")}
	return s.submit(w, r, rec)
}
