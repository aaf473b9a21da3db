package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/calib-dev/calib/data"
)

// The Open Inference Protocol v2 (KServe's and Triton's REST API): a map is
// a model of that name whose version is Map.Version; it takes one input
// tensor, "probs" or "logits", of shape [N, C] and datatype FP64 or FP32,
// its data nested or flat, and answers one output tensor "probs" [N, K]
// FP64.

// InferRequest is the body of POST /v2/models/{name}/infer.
type InferRequest struct {
	ID         string          `json:"id,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Inputs     []InferTensor   `json:"inputs"`
	Outputs    []InferOutput   `json:"outputs,omitempty"`
}

// InferTensor is an input or output tensor of the protocol.
type InferTensor struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data"`
}

// InferOutput is a requested output.
type InferOutput struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// InferResponse is the answer of an inference.
type InferResponse struct {
	ModelName    string              `json:"model_name"`
	ModelVersion string              `json:"model_version"`
	ID           string              `json:"id,omitempty"`
	Outputs      []InferOutputTensor `json:"outputs"`
}

// InferOutputTensor is an output tensor: FP64 data, flat, row-major.
type InferOutputTensor struct {
	Name     string    `json:"name"`
	Shape    []int64   `json:"shape"`
	Datatype string    `json:"datatype"`
	Data     []float64 `json:"data"`
}

// versioned returns the map of the request's path, checking the version
// the path names, if any.
func (s *Server) versioned(r *http.Request) (*Map, error) {
	m, err := s.mapOf(r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	if v := r.PathValue("version"); v != "" && v != m.Version {
		return nil, &RequestError{Status: http.StatusNotFound, Field: fmt.Sprintf("model %q version %q", m.Name, v), Err: fmt.Errorf("not served (version %s is)", m.Version)}
	}
	return m, nil
}

// infer answers POST /v2/models/{name}[/versions/{version}]/infer.
func (s *Server) infer(w http.ResponseWriter, r *http.Request) error {
	m, err := s.versioned(r)
	if err != nil {
		return err
	}
	var req InferRequest
	var blob []byte // Triton's binary tensor extension: the input's bytes after the JSON header
	if h := r.Header.Get(headerLength); h != "" {
		if blob, err = readBinaryRequest(r, h, &req); err != nil {
			return err
		}
	} else if err := readJSON(r, &req); err != nil {
		return err
	}
	if len(req.Inputs) != 1 {
		return badRequest("inputs", "%d tensors: want one, named \"probs\" or \"logits\"", len(req.Inputs))
	}
	for i, o := range req.Outputs {
		if o.Name != "probs" {
			return badRequest(fmt.Sprintf("outputs[%d].name", i), "%q: the only output is \"probs\"", o.Name)
		}
	}
	in := req.Inputs[0]
	field := "inputs[0]"
	if in.Name != "probs" && in.Name != "logits" {
		return badRequest(field+".name", "%q: want \"probs\" or \"logits\"", in.Name)
	}
	field = fmt.Sprintf("inputs[0] (%s)", in.Name)
	var fp32 bool
	switch in.Datatype {
	case "FP64":
	case "FP32":
		fp32 = true
	default:
		return badRequest(field+".datatype", "%q: want FP64 or FP32", in.Datatype)
	}
	if len(in.Shape) != 2 || in.Shape[0] < 1 || in.Shape[1] < 1 {
		return badRequest(field+".shape", "%v: want [N, C] with N, C >= 1 (rows of C values)", in.Shape)
	}
	n, c := in.Shape[0], in.Shape[1]
	if n > int64(s.o.MaxRows) {
		return &RequestError{Status: http.StatusRequestEntityTooLarge, Field: field + ".shape", Err: fmt.Errorf("%d rows: at most %d; send smaller batches", n, s.o.MaxRows)}
	}
	if c > maxCols {
		return badRequest(field+".shape", "%d columns: at most %d", c, maxCols)
	}
	var values []float64
	if blob != nil {
		values, err = binaryData(in, blob, field, int(n*c), fp32)
	} else {
		values, err = tensorData(in.Data, field+".data", int(n), int(c), fp32)
	}
	if err != nil {
		return err
	}
	out, err := m.Apply(values, int(c), in.Name == "logits", renormalize(req), field)
	if err != nil {
		return err
	}
	s.metrics.rows.WithLabelValues(m.Name).Add(float64(n))
	resp := InferResponse{ModelName: m.Name, ModelVersion: m.Version, ID: req.ID,
		Outputs: []InferOutputTensor{{Name: "probs", Shape: []int64{n, int64(m.K())}, Datatype: "FP64", Data: out}}}
	if binaryOutput(req) {
		return writeBinary(w, resp)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// headerLength is the header of Triton's binary tensor extension: the
// length of the JSON part of a body whose tensors follow it as bytes.
const headerLength = "Inference-Header-Content-Length"

// readBinaryRequest reads a request of the binary tensor extension: h
// bytes of JSON (into req), then the input's bytes, returned.
func readBinaryRequest(r *http.Request, h string, req *InferRequest) ([]byte, error) {
	n, err := strconv.Atoi(h)
	if err != nil || n < 2 {
		return nil, badRequest(headerLength, "%q: want the length of the JSON header in bytes", h)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err // the body limit: 413
	}
	if n > len(body) {
		return nil, badRequest(headerLength, "%d bytes of JSON header, the body has %d", n, len(body))
	}
	if err := decodeObject(bytes.NewReader(body[:n]), req, "the JSON header is not an inference request"); err != nil {
		return nil, err
	}
	return body[n:], nil
}

// binaryData decodes the input's bytes (little-endian FP64 or FP32, the
// size its parameters' binary_data_size says) into want numbers, refusing
// NaN and infinities by element.
func binaryData(in InferTensor, blob []byte, field string, want int, fp32 bool) ([]float64, error) {
	var p struct {
		Size *int `json:"binary_data_size"`
	}
	if len(in.Parameters) > 0 {
		if err := json.Unmarshal(in.Parameters, &p); err != nil {
			return nil, badRequest(field+".parameters", "%v", err)
		}
	}
	if len(in.Data) > 0 {
		return nil, badRequest(field, "data in the JSON header and as bytes: give one")
	}
	width := 8
	if fp32 {
		width = 4
	}
	if p.Size == nil || *p.Size != len(blob) || len(blob) != want*width {
		size := "none"
		if p.Size != nil {
			size = strconv.Itoa(*p.Size)
		}
		return nil, badRequest(field+".parameters.binary_data_size", "%s, %d bytes sent: the shape takes %d bytes of %d-byte values", size, len(blob), want*width, width)
	}
	out := make([]float64, want)
	for i := range out {
		var v float64
		if fp32 {
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
		} else {
			v = math.Float64frombits(binary.LittleEndian.Uint64(blob[8*i:]))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, badRequest(fmt.Sprintf("%s: element %d", field, i), "not a finite number: %v", v)
		}
		out[i] = v
	}
	return out, nil
}

// renormalize reports whether the request's parameters say
// "renormalize": true (rows of probabilities whose sum is off are divided
// by it, as calib apply --renormalize does).
func renormalize(req InferRequest) bool {
	var p struct {
		Renormalize bool `json:"renormalize"`
	}
	return len(req.Parameters) > 0 && json.Unmarshal(req.Parameters, &p) == nil && p.Renormalize
}

// binaryOutput reports whether the request asks for the output as bytes
// (its output's parameters binary_data, or the request's
// binary_data_output).
func binaryOutput(req InferRequest) bool {
	var p struct {
		Binary bool `json:"binary_data"`
		Output bool `json:"binary_data_output"`
	}
	if len(req.Parameters) > 0 && json.Unmarshal(req.Parameters, &p) == nil && p.Output {
		return true
	}
	for _, o := range req.Outputs {
		if len(o.Parameters) > 0 && json.Unmarshal(o.Parameters, &p) == nil && p.Binary {
			return true
		}
	}
	return false
}

// writeBinary writes resp with its output as little-endian FP64 bytes
// after the JSON header (Triton's binary tensor extension).
func writeBinary(w http.ResponseWriter, resp InferResponse) error {
	o := resp.Outputs[0]
	blob := make([]byte, 8*len(o.Data))
	for i, v := range o.Data {
		binary.LittleEndian.PutUint64(blob[8*i:], math.Float64bits(v))
	}
	type binOut struct {
		Name       string         `json:"name"`
		Shape      []int64        `json:"shape"`
		Datatype   string         `json:"datatype"`
		Parameters map[string]int `json:"parameters"`
	}
	head, err := json.Marshal(struct {
		ModelName    string   `json:"model_name"`
		ModelVersion string   `json:"model_version"`
		ID           string   `json:"id,omitempty"`
		Outputs      []binOut `json:"outputs"`
	}{resp.ModelName, resp.ModelVersion, resp.ID, []binOut{{o.Name, o.Shape, o.Datatype, map[string]int{"binary_data_size": len(blob)}}}})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(headerLength, strconv.Itoa(len(head)))
	w.WriteHeader(http.StatusOK)
	w.Write(head)
	w.Write(blob)
	return nil
}

// tensorData decodes a tensor's data, rows of cols numbers or flat, in
// row-major order, into n x cols numbers (an FP32 tensor's values rounded to float32, as
// a float32 file is read). Its errors name field and the element.
func tensorData(raw json.RawMessage, field string, n, cols int, fp32 bool) ([]float64, error) {
	want := n * cols
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, badRequest(field, "want an array of numbers (nested or flat), not %s", jsonKind(raw))
	}
	// Nothing is allocated for the shape before the data could hold it:
	// k numbers take at least 2k + 1 bytes ("[1,1]").
	if most := (len(raw) - 1) / 2; want > most {
		return nil, badRequest(field, "the shape [%d, %d] takes %d values; the data's %d bytes hold at most %d", n, cols, want, len(raw), most)
	}
	if m := fastMatrix(raw, want); m != nil && len(m.values) == want {
		if fp32 {
			for i, v := range m.values {
				if math.Abs(v) > math.MaxFloat32 {
					return nil, badRequest(fmt.Sprintf("%s: element %d", field, i), "%v is out of FP32's range", v)
				}
				m.values[i] = float64(float32(v))
			}
		}
		return m.values, nil
	}
	out := make([]float64, 0, want)
	var walk func(raw json.RawMessage, depth int) error
	walk = func(raw json.RawMessage, depth int) error {
		if depth > 2 {
			return badRequest(field, "nested deeper than the tensor's shape [N, C]")
		}
		var els []json.RawMessage
		if err := json.Unmarshal(raw, &els); err != nil {
			return badRequest(field, "not valid JSON: %v", err)
		}
		if depth == 1 && len(els) != cols {
			return badRequest(field, "a row of %d values: the shape's rows have %d", len(els), cols)
		}
		for _, el := range els {
			el = bytes.TrimSpace(el)
			if len(el) > 0 && el[0] == '[' {
				if err := walk(el, depth+1); err != nil {
					return err
				}
				continue
			}
			if len(out) >= want {
				return badRequest(field, "more than the %d values of the shape", want)
			}
			v, err := number(el, fmt.Sprintf("%s: element %d", field, len(out)))
			if err != nil {
				return err
			}
			if fp32 {
				if math.Abs(v) > math.MaxFloat32 {
					return badRequest(fmt.Sprintf("%s: element %d", field, len(out)), "%v is out of FP32's range", v)
				}
				v = float64(float32(v))
			}
			out = append(out, v)
		}
		return nil
	}
	if err := walk(raw, 0); err != nil {
		return nil, err
	}
	if len(out) != want {
		return nil, badRequest(field, "%d values for the shape's %d", len(out), want)
	}
	return out, nil
}

// live answers GET /v2/health/live: the server runs.
func (s *Server) live(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	return nil
}

// ready answers GET /v2/health/ready: maps are loaded (when a maps
// directory is served), and the monitors' log takes writes (when there
// are monitors: not while the disk is full).
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{"ready": true}
	if s.o.MapsDir != "" && len(s.maps.Load().Names()) == 0 {
		out["ready"], out["maps"] = false, "no map loaded"
	}
	if s.o.Store != nil {
		if err := s.o.Store.Healthy(); err != nil {
			out["ready"], out["monitors"] = false, oneLine(err.Error())
		}
	}
	status := http.StatusOK
	if out["ready"] == false {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, out)
	return nil
}

// modelReady answers GET /v2/models/{name}[/versions/{version}]/ready.
func (s *Server) modelReady(w http.ResponseWriter, r *http.Request) error {
	m, err := s.versioned(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": m.Name, "version": m.Version, "ready": true})
	return nil
}

// serverMetadata answers GET /v2.
func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"name": "calib", "version": data.Version(), "extensions": []string{}})
	return nil
}

// tensorMeta is a tensor of a model's metadata.
type tensorMeta struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// modelMetadata answers GET /v2/models/{name}[/versions/{version}].
func (s *Server) modelMetadata(w http.ResponseWriter, r *http.Request) error {
	m, err := s.versioned(r)
	if err != nil {
		return err
	}
	k := int64(m.K())
	cols := k
	if k == 2 {
		cols = -1 // p1 alone, or both columns
	}
	h := m.Calibrator.Info()
	writeJSON(w, http.StatusOK, map[string]any{
		"name": m.Name, "versions": []string{m.Version}, "platform": "calib-" + h.Method,
		"inputs":  []tensorMeta{{"probs", "FP64", []int64{-1, cols}}, {"logits", "FP64", []int64{-1, cols}}},
		"outputs": []tensorMeta{{"probs", "FP64", []int64{-1, k}}},
	})
	return nil
}
