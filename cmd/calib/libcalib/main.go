//go:build cgo

// Command libcalib is calib's C ABI: built with
//
//	go build -buildmode=c-shared -o libcalib.so ./cmd/calib/libcalib
//
// it is a shared library (and libcalib.h, its header) that the Python
// package python/calib loads. Every entry point takes contiguous arrays by
// pointer and, where the command line has flags, a JSON object of options
// whose keys are the options the library declares (evaluate.OptionSpecs,
// calibtest.OptionSpecs, bandwidth.OptionSpecs, recal.FitOptionSpecs,
// which are also the flags of the calib command, without the dashes; "_"
// may stand for "-") and whose values are what the option takes: true or
// false, a number, a string, or a list (joined by commas):
//
//	{"metrics": ["ece_kde", "ks"], "ci": true, "seed": 3}
//
// calib_run runs an evaluation, a test, a bandwidth selection or a fit on
// the arrays by calling the library (evaluate, calibtest, bandwidth,
// recal) with the options its packages parse, and returns the JSON that
// calib eval, test and bandwidth --json print, or the map that calib fit
// -o writes: the same checks, messages and numbers as the command line on
// a file holding the arrays. calib_apply applies a map;
// calib_ece_kde_grad returns an ECE^KDE estimate and its gradient.
//
// Return codes: 0 success; 2 bad input or options (the message is the
// command line's, which names the array, the 1-based row and column and
// what is wrong); 1 any other failure; 130 cancelled (calib_cancel); 3 a
// Go panic, recovered at the boundary: the library then refuses every
// later call with code 4, for its state is not known to be sound. A
// message (the result or the error) is returned in *out, allocated with
// malloc: free it with calib_free.
//
// Cancellation: calib_call_new returns a handle; a call given it stops
// (code 130) soon after another thread calls calib_cancel(handle);
// calib_call_free releases it. Handle 0 means not cancellable.
//
// Arrays: x holds n rows of cols predictions, row-major, float64 (dtype
// 0; read in place, never copied or written) or float32 (dtype 1;
// converted); labels n integers of int32 (ldtype 1), int64 (2) or float64
// (3, each a whole number), or none (0); weights n float64 or NULL.
package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/recal"
)

func main() {}

// Return codes of the entry points.
const (
	codeOK        = 0
	codeFailure   = 1
	codeInput     = 2
	codePanic     = 3
	codePoisoned  = 4
	codeCancelled = 130
)

// Data types of x and labels.
const (
	dtypeFloat64 = 0
	dtypeFloat32 = 1

	labelsNone    = 0
	labelsInt32   = 1
	labelsInt64   = 2
	labelsFloat64 = 3
)

// poisoned holds the message of the first recovered panic; once set, every
// call is refused.
var poisoned atomic.Pointer[string]

// call is a cancellable call's context and its cancel function.
type call struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// calls maps a cancellation handle to its call.
var calls = struct {
	sync.Mutex
	next int64
	m    map[int64]call
}{m: map[int64]call{}}

//export calib_call_new
func calib_call_new() C.int64_t {
	ctx, cancel := context.WithCancel(context.Background())
	calls.Lock()
	defer calls.Unlock()
	calls.next++
	calls.m[calls.next] = call{ctx, cancel}
	return C.int64_t(calls.next)
}

// callOf returns the call of handle h (the zero call for 0 or an unknown
// handle).
func callOf(h C.int64_t) call {
	calls.Lock()
	defer calls.Unlock()
	return calls.m[int64(h)]
}

//export calib_cancel
func calib_cancel(h C.int64_t) {
	if c := callOf(h); c.cancel != nil {
		c.cancel()
	}
}

//export calib_call_free
func calib_call_free(h C.int64_t) {
	calib_cancel(h) // releases the context's resources
	calls.Lock()
	delete(calls.m, int64(h))
	calls.Unlock()
}

// contextOf returns the context of handle h (Background for 0 or an
// unknown handle).
func contextOf(h C.int64_t) context.Context {
	if c := callOf(h); c.ctx != nil {
		return c.ctx
	}
	return context.Background()
}

//export calib_free
func calib_free(p *C.char) { C.free(unsafe.Pointer(p)) }

//export calib_version
func calib_version() *C.char { return C.CString(data.Version()) }

// registry is calib_registry's answer: the names the Go library accepts,
// for the Python package's constants.
type registry struct {
	Methods      []string `json:"methods"`       // calib fit's methods (recal.Methods)
	LogitMethods []string `json:"logit_methods"` // those that need logits (recal.Method.NeedsLogits)
	// Options maps each command a request may name (runs) to the
	// options a request may give: its package's declarations
	// (evaluate.OptionSpecs, calibtest.OptionSpecs, bandwidth.OptionSpecs,
	// recal.FitOptionSpecs) and the input's (inputSpecs).
	Options map[string]map[string]option `json:"options"`
	// Readers names, by command, the options that only some choices
	// read (metrics, tests, objectives, methods) and those choices.
	Readers map[string]map[string][]string `json:"readers"`
}

// option is one option of a command in the registry.
type option struct {
	Type    string `json:"type"`    // bool, int, uint64, float64 or string (a list: comma-separated)
	Default string `json:"default"` // its default, as text ("" for none)
}

// commandOptions are the options of test, bandwidth and fit, by command.
var commandOptions = map[string]func() []optionspec.Option{
	"test":      calibtest.OptionSpecs,
	"bandwidth": bandwidth.OptionSpecs,
	"fit":       recal.FitOptionSpecs,
}

//export calib_registry
func calib_registry() *C.char {
	r := registry{Methods: recal.MethodNames(), LogitMethods: []string{}, Options: map[string]map[string]option{}, Readers: map[string]map[string][]string{}}
	for _, m := range recal.Methods() {
		if m.NeedsLogits() {
			r.LogitMethods = append(r.LogitMethods, string(m))
		}
	}
	r.Options["eval"], r.Readers["eval"] = evalOptionTypes(), evalReaders()
	for name, specs := range commandOptions {
		opts, readers := map[string]option{}, map[string][]string{}
		for _, o := range specs() {
			opts[o.Name] = option{o.Kind.String(), o.Default}
			if o.ReadBy != nil {
				readers[o.Name] = o.ReadBy
			}
		}
		for _, o := range inputSpecs {
			opts[o.Name] = option{o.Kind.String(), o.Default}
		}
		r.Options[name], r.Readers[name] = opts, readers
	}
	b, _ := json.Marshal(r)
	return C.CString(string(b))
}

// guard runs f, the body of an entry point, and turns what it returns into
// a code and *out: the result on success, else the error's one-line
// message. A panic is recovered here (and poisons the library); a
// poisoned library runs nothing.
func guard(out **C.char, f func() (string, int, error)) (code C.int) {
	if out == nil {
		return codeInput // nowhere to say anything
	}
	if msg := poisoned.Load(); msg != nil {
		*out = C.CString("calib: the library stopped after an internal error in an earlier call (" + *msg + "); restart the process")
		return codePoisoned
	}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v", r)
			poisoned.CompareAndSwap(nil, &msg)
			*out = C.CString("calib: internal error (" + msg + "); the library refuses further calls: restart the process. Please report it with this stack: " + oneLine(string(debug.Stack())))
			code = codePanic
		}
	}()
	res, c, err := f()
	if err != nil {
		*out = C.CString(oneLine(err.Error()))
		return C.int(c)
	}
	*out = C.CString(res)
	return codeOK
}

// oneLine is s on one line (line breaks as spaces), as the command line
// prints a message.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// inputError is an error in the arrays or options (code 2).
func inputError(format string, args ...any) (string, int, error) {
	return "", codeInput, fmt.Errorf(format, args...)
}

// values returns the n×cols predictions at x: the caller's float64 buffer
// itself, or float32 values converted.
func values(x unsafe.Pointer, dtype C.int, n, cols C.int64_t) ([]float64, error) {
	if n < 0 || cols < 1 || n > math.MaxInt32 || cols > math.MaxInt32 || (n > 0 && x == nil) {
		return nil, fmt.Errorf("predictions: shape (%d, %d): want n >= 0 rows of at least 1 column", n, cols)
	}
	// Both factors fit an int32, so the product fits an int64.
	if int64(n)*int64(cols) > maxValues {
		return nil, fmt.Errorf("predictions: shape (%d, %d): %d values, more than %d", n, cols, int64(n)*int64(cols), int64(maxValues))
	}
	size := int(n) * int(cols)
	if size == 0 {
		return []float64{}, nil
	}
	switch dtype {
	case dtypeFloat64:
		return unsafe.Slice((*float64)(x), size), nil
	case dtypeFloat32:
		f := unsafe.Slice((*float32)(x), size)
		v := make([]float64, size)
		for i, x := range f {
			v[i] = float64(x)
		}
		return v, nil
	}
	return nil, fmt.Errorf("predictions: data type code %d: want float64 (0) or float32 (1)", dtype)
}

// maxValues bounds the number of predictions of one call (2^40, 8 TiB of
// float64): past it no buffer can be the caller's.
const maxValues = 1 << 40

// labelsOf returns the n labels at p (nil for ldtype 0); float64 labels
// must be whole numbers.
func labelsOf(p unsafe.Pointer, ldtype C.int, n C.int64_t, name string) ([]int, error) {
	if ldtype == labelsNone {
		return nil, nil
	}
	if n > 0 && p == nil {
		return nil, fmt.Errorf("labels: NULL pointer for %d labels", n)
	}
	y := make([]int, n)
	switch ldtype {
	case labelsInt32:
		for i, v := range unsafe.Slice((*int32)(p), n) {
			y[i] = int(v)
		}
	case labelsInt64:
		for i, v := range unsafe.Slice((*int64)(p), n) {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, &data.Error{File: name, Row: i + 1, Err: fmt.Errorf("%w: %d is outside the range of labels", data.ErrLabel, v)}
			}
			y[i] = int(v)
		}
	case labelsFloat64:
		for i, v := range unsafe.Slice((*float64)(p), n) {
			switch {
			case v != math.Trunc(v) || math.IsInf(v, 0):
				return nil, &data.Error{File: name, Row: i + 1, Err: fmt.Errorf("%w: %v is not an integer", data.ErrLabel, v)}
			case math.Abs(v) > math.MaxInt32:
				return nil, &data.Error{File: name, Row: i + 1, Err: fmt.Errorf("%w: %v is outside the range of labels", data.ErrLabel, v)}
			}
			y[i] = int(v)
		}
	default:
		return nil, fmt.Errorf("labels: data type code %d: want int32 (1), int64 (2) or float64 (3)", ldtype)
	}
	return y, nil
}

// arrays gathers the caller's arrays.
func arrays(x unsafe.Pointer, dtype C.int, n, cols C.int64_t, labels unsafe.Pointer, ldtype C.int, weights *C.double, name string) (data.Arrays, error) {
	v, err := values(x, dtype, n, cols)
	if err != nil {
		return data.Arrays{}, err
	}
	y, err := labelsOf(labels, ldtype, n, name)
	if err != nil {
		return data.Arrays{}, err
	}
	a := data.Arrays{Values: v, Cols: int(cols), Labels: y}
	if weights != nil {
		a.Weights = unsafe.Slice((*float64)(unsafe.Pointer(weights)), n)
	}
	return a, nil
}

//export calib_input_address
func calib_input_address(x unsafe.Pointer, dtype C.int, n, cols C.int64_t) C.uintptr_t {
	v, err := values(x, dtype, n, cols)
	if err != nil || len(v) == 0 {
		return 0
	}
	return C.uintptr_t(uintptr(unsafe.Pointer(&v[0])))
}

// request is calib_run's JSON document.
type request struct {
	Command string          `json:"command"` // eval, test, bandwidth or fit
	Name    string          `json:"name"`    // what the messages call the predictions ("probs")
	Options json.RawMessage `json:"options"` // the command's flags
}

// setting is one option of a request: its name as a flag's (dashes) and
// its value as the flag's text.
type setting struct{ Name, Value string }

// runs are the commands calib_run runs, each on the arrays as the
// command line runs it on a file holding them.
var runs = map[string]func(ctx context.Context, set []setting, name string, a data.Arrays) (string, int, error){
	"eval":      runEval,
	"test":      runTest,
	"bandwidth": runBandwidth,
	"fit":       runFit,
}

// reserved are the flags of the command line that calib_run sets itself
// or that name files.
var reserved = []string{"json", "progress", "output", "o", "labels", "weights", "format", "help", "h", "calibrator"}

// settings decodes the options object into the flags it sets, in order:
// each key (as a flag name: "_" may stand for "-") with its value as the
// flag's text, true or false, a number as written, a string, or a list
// joined by commas; a null is left out.
func settings(options []byte) ([]setting, error) {
	if len(bytes.TrimSpace(options)) == 0 || string(bytes.TrimSpace(options)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(options))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("options: want a JSON object of flags")
	}
	var set []setting
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("options: %v", err)
		}
		name := t.(string) // as the caller spelled it, for the messages
		key := strings.ReplaceAll(name, "_", "-")
		if slices.Contains(reserved, key) {
			return nil, fmt.Errorf("options: %q is set by the caller of the library (the arrays are passed as arrays, the result returned)", t)
		}
		if key == "" || strings.HasPrefix(key, "-") || strings.ContainsAny(key, "= \t\r\n") {
			return nil, fmt.Errorf("options: %q is not a flag name", t)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("options: %q: not a JSON value (NaN and infinities are not JSON numbers): %v", name, err)
		}
		s, ok, err := flagValue(v)
		if err != nil {
			return nil, fmt.Errorf("options: %q: %v", name, err)
		}
		if ok {
			set = append(set, setting{Name: key, Value: s})
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, fmt.Errorf("options: the JSON object is not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("options: data after the JSON object")
	}
	return set, nil
}

// flagValue is the text of a flag's value; ok is false for null.
func flagValue(v any) (string, bool, error) {
	switch v := v.(type) {
	case nil:
		return "", false, nil
	case bool:
		return fmt.Sprint(v), true, nil
	case json.Number:
		return v.String(), true, nil
	case string:
		return v, true, nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, ok, err := flagValue(e)
			if _, list := e.([]any); err != nil || !ok || list {
				return "", false, fmt.Errorf("element %d: want a number, string or boolean", i)
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true, nil
	}
	return "", false, fmt.Errorf("want a number, string, boolean, list or null")
}

//export calib_run
func calib_run(h C.int64_t, req *C.char, x unsafe.Pointer, dtype C.int, n, cols C.int64_t, labels unsafe.Pointer, ldtype C.int, weights *C.double, out **C.char) C.int {
	return guard(out, func() (string, int, error) {
		var r request
		if err := json.Unmarshal([]byte(C.GoString(req)), &r); err != nil {
			return inputError("request: %v", err)
		}
		run, ok := runs[r.Command]
		if !ok {
			return inputError("command %q: want eval, test, bandwidth or fit", r.Command)
		}
		if r.Name == "" {
			r.Name = "predictions"
		}
		set, err := settings(r.Options)
		if err != nil {
			return "", codeInput, err
		}
		a, err := arrays(x, dtype, n, cols, labels, ldtype, weights, r.Name)
		if err != nil {
			return "", codeInput, err
		}
		return run(contextOf(h), set, r.Name, a)
	})
}

// applyRequest is calib_apply's JSON document.
type applyRequest struct {
	Map    json.RawMessage `json:"map"`    // the map, as calib fit writes it
	Name   string          `json:"name"`   // what the messages call the predictions
	Logits bool            `json:"logits"` // x holds logits
}

//export calib_apply
func calib_apply(h C.int64_t, req *C.char, x unsafe.Pointer, dtype C.int, n, cols C.int64_t, dst *C.double, dstLen C.int64_t, out **C.char) C.int {
	return guard(out, func() (string, int, error) {
		var r applyRequest
		if err := json.Unmarshal([]byte(C.GoString(req)), &r); err != nil {
			return inputError("request: %v", err)
		}
		if r.Name == "" {
			r.Name = "predictions"
		}
		a, err := arrays(x, dtype, n, cols, nil, labelsNone, nil, r.Name)
		if err != nil {
			return "", codeInput, err
		}
		// As calib apply: the map checked when read, the predictions
		// unlabelled (logits under Logits), then the map applied.
		c, err := recal.Load(bytes.NewReader(r.Map))
		if err != nil {
			return inputError("map: %w", err)
		}
		s, err := a.Load(r.Name, data.Options{Logits: r.Logits, Unlabeled: true})
		if err != nil {
			return "", codeInput, err
		}
		if s, err = recal.Apply(c, s); err != nil {
			return "", codeInput, err
		}
		if dst == nil {
			return inputError("output: a NULL buffer for the %d recalibrated values (n = %d, K = %d)", len(s.Probs), s.N, s.K)
		}
		if int64(len(s.Probs)) != int64(dstLen) {
			return inputError("output: room for %d values, the map gives %d (n = %d, K = %d)", dstLen, len(s.Probs), s.N, s.K)
		}
		copy(unsafe.Slice((*float64)(unsafe.Pointer(dst)), dstLen), s.Probs)
		return fmt.Sprintf(`{"n":%d,"k":%d}`, s.N, s.K), codeOK, nil
	})
}

// gradRequest is calib_ece_kde_grad's JSON document.
type gradRequest struct {
	Name      string  `json:"name"`
	Bandwidth float64 `json:"bandwidth"`
	P         float64 `json:"p"`
	Mode      string  `json:"mode"`   // notion: canonical, top_label, class_wise, binary
	Logits    bool    `json:"logits"` // x holds logits: the gradient is with respect to them
	Exact     bool    `json:"exact"`
}

//export calib_ece_kde_grad
func calib_ece_kde_grad(h C.int64_t, req *C.char, x unsafe.Pointer, dtype C.int, n, cols C.int64_t, labels unsafe.Pointer, ldtype C.int, weights *C.double, grad *C.double, value *C.double, out **C.char) C.int {
	return guard(out, func() (string, int, error) {
		r := gradRequest{P: 1, Mode: "canonical"}
		dec := json.NewDecoder(strings.NewReader(C.GoString(req)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return inputError("options: %v", err)
		}
		if r.Name == "" {
			r.Name = "predictions"
		}
		notion, err := kde.ParseNotion(r.Mode)
		if err != nil {
			return inputError("mode %q: %v", r.Mode, err)
		}
		if !(r.Bandwidth > 0) || math.IsInf(r.Bandwidth, 0) {
			return inputError("bandwidth %v: want a finite number > 0", r.Bandwidth)
		}
		if !(r.P >= 1 && r.P <= kde.MaxP) {
			return inputError("p %v: want a number in [1, %g]", r.P, float64(kde.MaxP))
		}
		a, err := arrays(x, dtype, n, cols, labels, ldtype, weights, r.Name)
		if err != nil {
			return "", codeInput, err
		}
		// The arrays pass the loaders' checks first (messages naming the
		// row and column), then the gradient's own (entries in (0, 1)).
		s, err := a.Load(r.Name, data.Options{Logits: r.Logits})
		if err != nil {
			return "", codeInput, err
		}
		if grad == nil || value == nil {
			return inputError("gradient: NULL output buffer")
		}
		if !r.Logits && s.Binary {
			return inputError("%s: one probability column: pass the two columns (1 - p1, p1), or logits", r.Name)
		}
		// The weights in their normalised form, as calib eval uses them
		// (the same estimate for any common factor).
		w := s.ScaledWeights().Weights
		o := kde.Options{Bandwidth: r.Bandwidth, Exact: r.Exact}
		g := unsafe.Slice((*float64)(unsafe.Pointer(grad)), int(n)*int(cols))
		var v float64
		var got []float64
		ctx := contextOf(h)
		if r.Logits {
			v, got, err = kde.LogitGradient(ctx, g, notion, a.Values, s.Labels, int(cols), r.P, w, o)
		} else {
			v, got, err = kde.Gradient(ctx, g, notion, s.Probs, s.Labels, s.K, r.P, w, o)
		}
		if ctx.Err() != nil {
			return "", codeCancelled, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if err != nil {
			if errors.Is(err, kde.ErrTooFew) || strings.HasPrefix(err.Error(), "kde:") {
				return "", codeInput, fmt.Errorf("%s: %w", r.Name, err)
			}
			return "", codeFailure, err
		}
		if len(got) != len(g) {
			return "", codeFailure, fmt.Errorf("gradient: %d entries for a buffer of %d", len(got), len(g))
		}
		if &got[0] != &g[0] {
			copy(g, got)
		}
		*value = C.double(v)
		return "", codeOK, nil
	})
}

//export calib_debug_panic
func calib_debug_panic(out **C.char) C.int {
	return guard(out, func() (string, int, error) { panic("calib_debug_panic called (a test of the recovery)") })
}
