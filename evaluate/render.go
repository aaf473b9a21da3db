package evaluate

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the evaluation as one JSON object on one line (no NaN
// or Inf: they are null).
func WriteJSON(w io.Writer, out *Evaluation) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// HasPValues reports whether any entry has a p-value.
func (out *Evaluation) HasPValues() bool {
	for _, e := range out.Results {
		if e.PValue != nil {
			return true
		}
	}
	return false
}

// ZeroTimes sets every time of the evaluation to 0 (the total and each
// metric's), the only values of an Evaluation that differ from run to run:
// the JSON then is the same bytes for the same input, options and seed.
func (out *Evaluation) ZeroTimes() {
	out.Seconds = 0
	for _, e := range out.Results {
		if e.Seconds != nil {
			e.Seconds = ptr(0.0)
		}
	}
}
