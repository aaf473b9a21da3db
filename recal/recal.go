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
// plus the method's own parameters (documented on each type and in the
// README). Maps whose input is logits read logits; given probabilities they
// use log p as logits (softmax(log p) = p). Maps whose input is
// probabilities read probabilities; given logits they use softmax(z).
package recal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/calib-dev/calib/data"
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
}

// Info returns h itself (so that types embedding Header satisfy Calibrator).
func (h Header) Info() Header { return h }

func (h Header) check(k int, n int, probs []float64) error {
	if k != h.K {
		return fmt.Errorf("recal: %s map for K = %d applied to K = %d", h.Method, h.K, k)
	}
	if len(probs) != n*k {
		return fmt.Errorf("recal: %d probabilities for K = %d", len(probs), k)
	}
	return nil
}

// logitsOf returns logits for a logits-input map: the given logits, or
// log p (-Inf for p = 0) when only probabilities are available.
func logitsOf(probs, logits []float64) []float64 {
	if logits != nil {
		return logits
	}
	z := make([]float64, len(probs))
	for i, p := range probs {
		z[i] = math.Log(p)
	}
	return z
}

// Save writes the map as one indented JSON object.
func Save(w io.Writer, c Calibrator) error {
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return fmt.Errorf("recal: save %s map: %w", c.Info().Method, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ErrSchema is wrapped by Load's errors for maps it cannot read.
var ErrSchema = errors.New("not a calib map")

// Load reads a map written by Save.
func Load(r io.Reader) (Calibrator, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("recal: %w: %v", ErrSchema, err)
	}
	if h.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("recal: %w: schema_version %d, want %d", ErrSchema, h.SchemaVersion, SchemaVersion)
	}
	var c Calibrator
	switch h.Method {
	case "temperature":
		c = &Temperature{}
	case "spline":
		c = &Spline{}
	case "isotonic":
		c = &Isotonic{}
	case "histogram":
		c = &Histogram{}
	case "platt":
		c = &Platt{}
	case "beta":
		c = &Beta{}
	case MethodVector, MethodMatrix, MethodDirichlet:
		c = &Linear{}
	default:
		return nil, fmt.Errorf("recal: %w: unknown method %q", ErrSchema, h.Method)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("recal: %w: %s map: %v", ErrSchema, h.Method, err)
	}
	if err := validate(c); err != nil {
		return nil, fmt.Errorf("recal: %w: %s map: %v", ErrSchema, h.Method, err)
	}
	return c, nil
}

// validate checks a loaded map.
func validate(c Calibrator) error {
	h := c.Info()
	if h.K < 2 {
		return fmt.Errorf("k = %d", h.K)
	}
	if h.Input != InputLogits && h.Input != InputProbabilities {
		return fmt.Errorf("input %q", h.Input)
	}
	if v, ok := c.(interface{ valid() error }); ok {
		return v.valid()
	}
	return nil
}

// softmaxRows returns the row-wise softmax of z (n×k).
func softmaxRows(z []float64, k int) []float64 {
	p := make([]float64, len(z))
	for i := 0; i < len(z)/k; i++ {
		data.Softmax(p[i*k:(i+1)*k], z[i*k:(i+1)*k])
	}
	return p
}
