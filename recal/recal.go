// Package recal fits post-hoc recalibration maps on validation predictions
// and applies them to new predictions, with a JSON form that round-trips
// exactly so that a map fitted once can be applied in a service.
//
// Every map is a Calibrator. Its JSON object always has
//
//	"schema_version": 1,
//	"method":         "temperature" | "spline" | ...,
//	"input":          "logits" | "probabilities",
//	"k":              number of classes,
//
// plus the method's own parameters (documented on each type and in
// docs/maps.md). Maps whose input is logits read logits; given probabilities they
// use log p as logits (softmax(log p) = p). Maps whose input is
// probabilities read probabilities; given logits they use softmax(z).
package recal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
)

// SchemaVersion is the version of the JSON form written by Save.
const SchemaVersion = 1

// Input kinds of a map.
const (
	InputLogits        = "logits"
	InputProbabilities = "probabilities"
)

// Calibrator is a fitted recalibration map.
type Calibrator interface {
	// Info returns the common fields of the map.
	Info() Header
	// Calibrate returns the calibrated probabilities (n×K, rows on the
	// simplex) of n predictions given as probabilities (n×K) and, when
	// available, logits (n×K; nil otherwise).
	Calibrate(probs, logits []float64, k int) ([]float64, error)
}

// Header holds the fields every map's JSON object has.
type Header struct {
	SchemaVersion int    `json:"schema_version"`
	Method        string `json:"method"`
	Input         string `json:"input"`
	K             int    `json:"k"`
	// Provenance says what made the map (calib fit writes the tool's
	// version, the command, its options and the input); free-form JSON,
	// kept as read, not used to map.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// SetProvenance sets the map's Provenance (a pointer method, so that every
// map type, which embeds Header, has it).
func (h *Header) SetProvenance(p json.RawMessage) { h.Provenance = p }

// Info returns h itself (so that types embedding Header satisfy Calibrator).
func (h Header) Info() Header { return h }

// Columns is the number of prediction columns of a file that the map
// reads (data.Options.K): K above 2; 0 for K = 2, whose files may hold one
// column (p1) or two, so that the loader decides.
func (h Header) Columns() int {
	if h.K > 2 {
		return h.K
	}
	return 0
}

// checkInput checks the input of the map's Calibrate (see checkPredictions;
// the logits are checked where the map reads them: a logits-input map given
// them, or any map given no probabilities) and returns the number of rows.
// Its errors wrap ErrInput.
func (h Header) checkInput(probs, logits []float64, k int) (int, error) {
	if k != h.K {
		return 0, fmt.Errorf("recal: %s map: %w: the map is for K = %d, the input has K = %d", h.Method, ErrInput, h.K, k)
	}
	readLogits := len(logits) > 0 && (h.Input == InputLogits || len(probs) == 0)
	n, err := checkPredictions(probs, logits, k, readLogits)
	if err != nil {
		return 0, fmt.Errorf("recal: %s map: %w", h.Method, err)
	}
	return n, nil
}

// logitsOf returns logits for a logits-input map: the given logits, or
// log p (-Inf for p = 0) when only probabilities are available.
func logitsOf(probs, logits []float64) []float64 {
	if len(logits) > 0 {
		return logits
	}
	z := make([]float64, len(probs))
	for i, p := range probs {
		z[i] = math.Log(p)
	}
	return z
}

// Save writes the map as one indented JSON object, with every array of
// numbers on one line.
func Save(w io.Writer, c Calibrator) error {
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return fmt.Errorf("recal: save %s map: %w", c.Info().Method, err)
	}
	_, err = w.Write(append(inlineArrays(b), '\n'))
	return err
}

// SaveFile writes c to the file name as Save does, atomically (the file is
// either the old one or the whole map), with provenance, when not nil, as
// the map's "provenance" (what made the map).
func SaveFile(name string, c Calibrator, provenance *data.Provenance) error {
	if err := Record(c, provenance); err != nil {
		return err
	}
	return atomicfile.Write(name, func(w io.Writer) error { return Save(w, c) })
}

// Record sets the map's "provenance" (what made the map) to provenance, when
// not nil, so that Save writes it.
func Record(c Calibrator, provenance *data.Provenance) error {
	if provenance == nil {
		return nil
	}
	b, err := json.Marshal(provenance)
	if err != nil {
		return fmt.Errorf("recal: provenance: %w", err)
	}
	if p, ok := c.(interface{ SetProvenance(json.RawMessage) }); ok {
		p.SetProvenance(b)
	}
	return nil
}

// inlineArrays returns the indented JSON b with the whitespace removed
// inside every array that holds no object, array or string.
func inlineArrays(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch {
		case inString:
			inString = escaped || ch != '"'
			escaped = !escaped && ch == '\\'
		case ch == '"':
			inString = true
		case ch == '[':
			if j := scalarArrayEnd(b, i); j > 0 {
				for _, v := range b[i:j] {
					if v != ' ' && v != '\n' && v != '\t' && v != '\r' {
						out = append(out, v)
					}
				}
				i = j - 1
				continue
			}
		}
		out = append(out, ch)
	}
	return out
}

// scalarArrayEnd returns the index just past the array opened at b[i] if it
// holds no object, array or string, else 0.
func scalarArrayEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case ']':
			return j + 1
		case '[', '{', '"':
			return 0
		}
	}
	return 0
}

// ErrSchema is wrapped by Load's errors for files that are not calib maps:
// not JSON, another schema version, an unknown method or key, arrays of the
// wrong length. It wraps ErrInput.
var ErrSchema error = &kindError{"not a calib map", ErrInput}

// ErrMap is wrapped by Load's errors for maps of the right form whose values
// cannot be those of a fitted map (the error names the field): a
// probability outside [0, 1], a non-finite number, a temperature <= 0,
// negative beta coefficients, isotonic values or scores out of order, an
// input kind other than the method's. It wraps ErrInput.
var ErrMap error = &kindError{"invalid map", ErrInput}

// Load reads a map written by Save (or by an earlier version of calib: a
// spline curve may hold its "calibrated" values) and checks its form
// (ErrSchema) and values (ErrMap). Its errors say what is wrong in the
// user's terms, without Go's type names: "not a calib map: not valid JSON
// at byte 1: ...", "not a calib map: \"k\" holds a JSON string, want a
// whole number", "invalid map: isotonic map: maps[0].y[1] = 5, want a
// probability in [0, 1]".
func Load(r io.Reader) (Calibrator, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read map: %w", err)
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, jsonError{err})
	}
	if h.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%w: schema_version %d, want %d", ErrSchema, h.SchemaVersion, SchemaVersion)
	}
	c := newMap(Method(h.Method))
	if c == nil {
		return nil, fmt.Errorf("%w: unknown method %q", ErrSchema, h.Method)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, fmt.Errorf("%w: %w", ErrSchema, jsonError{err})
		}
		return nil, fmt.Errorf("%w: %s map: %w", ErrSchema, h.Method, jsonError{err})
	}
	if missing := missingKeys(b, c); len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s map: no %s (a map written by calib fit has every field)", ErrSchema, h.Method, strings.Join(missing, ", "))
	}
	if err := validate(c); err != nil {
		kind := ErrSchema
		if _, ok := err.(valueError); ok {
			kind = ErrMap
		}
		return nil, fmt.Errorf("%w: %s map: %v", kind, h.Method, err)
	}
	return c, nil
}

// missingKeys returns the top-level keys that c, decoded from b, writes
// (its fields without omitempty) but that b lacks, quoted and sorted: a
// missing number would read as 0 and change the map without a word.
func missingKeys(b []byte, c Calibrator) []string {
	var in, out map[string]json.RawMessage
	enc, err := json.Marshal(c)
	if json.Unmarshal(b, &in) != nil || err != nil || json.Unmarshal(enc, &out) != nil {
		return nil // Load's other checks report these
	}
	var missing []string
	for k := range out {
		if _, ok := in[k]; !ok {
			missing = append(missing, strconv.Quote(k))
		}
	}
	sort.Strings(missing)
	return missing
}

// LoadFile reads the map file name with Load. Its errors name the file
// ("m.json: no such map file", "m.json: is a directory, want a map file
// (the JSON written by calib fit)", "m.json: " and Load's error) and all
// wrap ErrInput.
func LoadFile(name string) (Calibrator, error) {
	st, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, asInput(fmt.Errorf("%s: no such map file", name))
	case err != nil:
		return nil, asInput(err)
	case st.IsDir():
		return nil, asInput(fmt.Errorf("%s: is a directory, want a map file (the JSON written by calib fit)", name))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, asInput(err)
	}
	defer f.Close()
	c, err := Load(f)
	if err != nil {
		return nil, asInput(fmt.Errorf("%s: %w", name, err))
	}
	return c, nil
}

// jsonError is an error of the JSON decoder in the user's terms: where the
// syntax breaks, which key holds what kind of value, with no Go type names
// and no "json: " prefix. It wraps the decoder's error.
type jsonError struct{ err error }

func (e jsonError) Unwrap() error { return e.err }

func (e jsonError) Error() string {
	if se, ok := errors.AsType[*json.SyntaxError](e.err); ok {
		return fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, se)
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](e.err); ok {
		return fmt.Sprintf("%q holds a JSON %s, want a %s", te.Field, te.Value, jsonKind(te.Type.Kind()))
	}
	return strings.ReplaceAll(e.err.Error(), "json: ", "")
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "whole number"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "object"
}

// valueError is an error of validate about a value (ErrMap) rather than the
// form of a map (ErrSchema).
type valueError struct{ msg string }

func (e valueError) Error() string { return e.msg }

// badValue returns a valueError.
func badValue(format string, a ...any) error { return valueError{fmt.Sprintf(format, a...)} }

// within returns err about a part of a map as an error about the field of
// that name (a valueError stays one).
func within(field string, err error) error {
	if v, ok := err.(valueError); ok {
		return valueError{field + "." + v.msg}
	}
	return fmt.Errorf("%s: %w", field, err)
}

// inputOf is the input kind each method reads.
var inputOf = map[string]string{
	"temperature": InputLogits, MethodVector: InputLogits, MethodMatrix: InputLogits,
	MethodDirichlet: InputProbabilities, "spline": InputProbabilities, "isotonic": InputProbabilities,
	"histogram": InputProbabilities, "platt": InputProbabilities, "beta": InputProbabilities,
	string(MethodLogSpline): InputLogits, string(MethodBoost): InputLogits,
}

// validate checks a loaded map; errors about values are valueErrors.
func validate(c Calibrator) error {
	h := c.Info()
	if h.K < 2 {
		return fmt.Errorf("k = %d", h.K)
	}
	if h.Input != InputLogits && h.Input != InputProbabilities {
		return fmt.Errorf("input %q", h.Input)
	}
	if want := inputOf[h.Method]; h.Input != want {
		return badValue("input %q, want %q for method %s", h.Input, want, h.Method)
	}
	if v, ok := c.(interface{ valid() error }); ok {
		return v.valid()
	}
	return nil
}

// checkFinite returns a valueError naming field[i] for the first value of v
// that is not finite.
func checkFinite(field string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return badValue("%s[%d] = %v, want a finite number", field, i, x)
		}
	}
	return nil
}

// checkProbabilities returns a valueError naming field[i] for the first
// value of v outside [0, 1].
func checkProbabilities(field string, v []float64) error {
	for i, x := range v {
		if !(x >= 0 && x <= 1) {
			return badValue("%s[%d] = %v, want a probability in [0, 1]", field, i, x)
		}
	}
	return nil
}

// checkNumber returns a valueError naming the parameter when v is not
// finite or is below lo (-Inf: no bound).
func checkNumber(name string, v, lo float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return badValue("%s = %v, want a finite number", name, v)
	case v < lo:
		return badValue("%s = %v, want a finite number >= %v", name, v, lo)
	}
	return nil
}

// firstError returns the first error that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSorted returns a valueError naming field[i] for the first value of v
// that is below the one before it.
func checkSorted(field string, v []float64) error {
	for i := 1; i < len(v); i++ {
		if !(v[i] >= v[i-1]) {
			return badValue("%s[%d] = %v is below the value before it, %v: want non-decreasing values", field, i, v[i], v[i-1])
		}
	}
	return nil
}

// softmaxRows returns the row-wise softmax of z (n×k).
func softmaxRows(z []float64, k int) []float64 {
	p := make([]float64, len(z))
	for i := 0; i < len(z)/k; i++ {
		mathx.Softmax(p[i*k:(i+1)*k], z[i*k:(i+1)*k])
	}
	return p
}
