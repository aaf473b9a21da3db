package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// CalibrateRequest is the body of POST /v1/calibrate/{map}: Probs or
// Logits (exactly one), each one row of numbers or an array of rows.
type CalibrateRequest struct {
	Probs  json.RawMessage `json:"probs,omitempty"`
	Logits json.RawMessage `json:"logits,omitempty"`
	// Renormalize divides a row of probabilities whose sum is off by
	// more than the tolerance (1e-6) by its sum instead of refusing it
	// (calib apply --renormalize).
	Renormalize bool `json:"renormalize,omitempty"`
}

// CalibrateResponse is its answer: the map's name and version and the
// calibrated probabilities, in the request's form (one row, or rows).
type CalibrateResponse struct {
	Map     string `json:"map"`
	Version string `json:"version"`
	Probs   any    `json:"probs"` // []float64 for one row, [][]float64 for rows
}

// calibrate answers POST /v1/calibrate/{name}.
func (s *Server) calibrate(w http.ResponseWriter, r *http.Request) error {
	m, err := s.mapOf(r.PathValue("name"))
	if err != nil {
		return err
	}
	var req CalibrateRequest
	if err := readJSON(r, &req); err != nil {
		return err
	}
	field, x, err := s.predictions(req.Probs, req.Logits)
	if err != nil {
		return err
	}
	out, err := m.Apply(x.values, x.cols, field == "logits", req.Renormalize, field)
	if err != nil {
		return err
	}
	s.metrics.rows.WithLabelValues(m.Name).Add(float64(x.n))
	k := m.K()
	resp := CalibrateResponse{Map: m.Name, Version: m.Version}
	if x.nested {
		rows := make([][]float64, x.n)
		for i := range rows {
			rows[i] = out[i*k : (i+1)*k : (i+1)*k]
		}
		resp.Probs = rows
	} else {
		resp.Probs = out
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// predictions decodes the rows of a /v1 request: probs or logits (exactly
// one), at most MaxRows; field is the one given.
func (s *Server) predictions(probs, logits json.RawMessage) (field string, x *matrix, err error) {
	field, raw := "probs", probs
	switch {
	case len(probs) > 0 && len(logits) > 0:
		return "", nil, badRequest("", "give \"probs\" or \"logits\", not both")
	case len(logits) > 0:
		field, raw = "logits", logits
	case len(probs) == 0:
		return "", nil, badRequest("", "give \"probs\" (rows of probabilities) or \"logits\" (rows of logits)")
	}
	x, err = decodeMatrix(raw, field, s.o.MaxRows)
	return field, x, err
}

// mapOf returns the map name being served, or a 404 RequestError.
func (s *Server) mapOf(name string) (*Map, error) {
	if m := s.maps.Load().Get(name); m != nil {
		return m, nil
	}
	names := s.maps.Load().Names()
	return nil, &RequestError{Status: http.StatusNotFound, Field: "map " + fmt.Sprintf("%q", name), Err: fmt.Errorf("not served (maps: %s)", joinNames(names))}
}

// joinNames lists names for a message, at most 20.
func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		return fmt.Sprintf("%s, ... (%d in all)", joinNames(names[:20]), len(names))
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
