//go:build cgo

package main

/*
#include <stdint.h>
*/
import "C"

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// accumulator is a streamed evaluation fed batch by batch (calib eval
// --stream's passes): its own rows are the source "batches of accumulator
// <random hex>", numbered in the order they are added. The first pass
// adds them to sums (evaluate.Sums); where the metrics need a second
// (KernelPass: ece_variational's maps, the kernel sums at sampled points,
// data-dependent bins), Pass begins it and the same rows, in the same
// order, go to ks. id is its handle.
type accumulator struct {
	sync.Mutex
	id     int64
	sums   *evaluate.Sums
	ks     *evaluate.KernelSums // the second pass's sums, once begun
	input  data.Options
	name   string
	source string
	rows   int64 // the first pass's rows (the next row's number)
}

// passes returns the number of passes the accumulator's metrics make and
// the one it is in.
func (a *accumulator) passes() (passes, current int) {
	passes, current = 1, 1
	if a.sums.KernelPass() {
		passes = 2
	}
	if a.ks != nil {
		current = 2
	}
	return passes, current
}

// handle is calib_stream_new's answer.
type handle struct {
	Handle int64  `json:"handle"`
	Passes int    `json:"passes"`
	Pass   int    `json:"pass"`
	Source string `json:"source"`
}

var accumulators = struct {
	sync.Mutex
	next int64
	m    map[int64]*accumulator
}{m: map[int64]*accumulator{}}

func accumulatorOf(h C.int64_t) (*accumulator, error) {
	accumulators.Lock()
	defer accumulators.Unlock()
	a := accumulators.m[int64(h)]
	if a == nil {
		return nil, fmt.Errorf("accumulator %d: no such accumulator (freed?)", h)
	}
	return a, nil
}

// withAccumulator runs f, the body of an entry point, on the accumulator
// of handle h, locked, inside guard.
// cancelled is the answer to err, an error of the input's, or codeCancelled
// where call was cancelled (calib_cancel): the accumulator is left as it
// was before the call.
func cancelled(call C.int64_t, err error) (string, int, error) {
	if ctx := contextOf(call); ctx.Err() != nil {
		return "", codeCancelled, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return "", codeInput, err
}

func withAccumulator(h C.int64_t, out **C.char, f func(a *accumulator) (string, int, error)) C.int {
	return guard(out, func() (string, int, error) {
		a, err := accumulatorOf(h)
		if err != nil {
			return "", codeInput, err
		}
		a.Lock()
		defer a.Unlock()
		return f(a)
	})
}

func register(a *accumulator) (string, error) {
	accumulators.Lock()
	defer accumulators.Unlock()
	accumulators.next++
	a.id = accumulators.next
	if a.source == "" {
		// The rows' source is unique across processes too, so that the
		// states of accumulators filled in several processes merge.
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			panic(err) // crypto/rand does not fail on supported systems
		}
		a.source = fmt.Sprintf("batches of accumulator %x", u)
	}
	accumulators.m[a.id] = a
	passes, current := a.passes()
	b, err := json.Marshal(handle{Handle: a.id, Passes: passes, Pass: current, Source: a.source})
	return string(b), err
}

// streamRequest is calib_stream_new's JSON document.
type streamRequest struct {
	Name    string          `json:"name"`    // what the messages call the batches
	Options json.RawMessage `json:"options"` // calib eval's flags
	State   json.RawMessage `json:"state"`   // a state from calib_stream_state to start from
	// Source names the rows of a restored accumulator (its handle's
	// source), Kernel its second pass's state (calib_stream_kernel_state).
	Source string          `json:"source"`
	Kernel json.RawMessage `json:"kernel_state"`
}

// newAccumulator parses the options as calib eval --stream does and
// starts from the state, if any: its first pass's sums, its rows' source
// and its second pass's sums.
func newAccumulator(r streamRequest) (*accumulator, error) {
	set, err := settings(r.Options)
	if err != nil {
		return nil, err
	}
	d, err := decodeEval(set, r.Name, true)
	if err != nil {
		return nil, err
	}
	so, in := d.eval, d.input
	s, err := evaluate.NewSums(so)
	if err != nil {
		return nil, err
	}
	if len(r.State) > 0 && string(r.State) != "null" {
		if err := s.UnmarshalJSON(r.State); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
	}
	if len(r.Source) > maxSource {
		return nil, fmt.Errorf("source: %d bytes, want at most %d", len(r.Source), maxSource)
	}
	a := &accumulator{sums: s, input: in, name: r.Name, rows: s.N()} // rows numbered on from the state's
	if a.name == "" {
		a.name = "batch"
	}
	kernel := len(r.Kernel) > 0 && string(r.Kernel) != "null"
	// The state's source names its rows; without rows a fresh one (copies
	// of one empty state, filled apart, then merge).
	if s.N() > 0 || kernel {
		a.source = r.Source
	}
	if kernel {
		if !s.KernelPass() {
			return nil, fmt.Errorf("kernel_state: the metrics %s make one pass", so.Metrics)
		}
		a.ks = new(evaluate.KernelSums)
		if err := a.ks.UnmarshalJSON(r.Kernel); err != nil {
			return nil, fmt.Errorf("kernel_state: %w", err)
		}
		if err := a.secondPassRows(); err != nil {
			return nil, fmt.Errorf("kernel_state: %w", err)
		}
		if b, nb := a.ks.Block(); b != 0 || nb != 1 || a.ks.N() > s.N() {
			return nil, fmt.Errorf("kernel_state: block %d of %d, %d rows for a first pass of %d", b, nb, a.ks.N(), s.N())
		}
	}
	return a, nil
}

// secondPassRows reports a first pass whose rows a second cannot give
// again in order: every row must be the accumulator's own, numbered from
// 0 (the second pass numbers them so).
func (a *accumulator) secondPassRows() error {
	if a.sums.N() == 0 {
		return fmt.Errorf("%s: no rows in the first pass", a.name)
	}
	if rs := a.sums.Rows(); len(rs) != 1 || rs[0].Source != a.source || rs[0].From != 0 || rs[0].To != a.sums.N() {
		return fmt.Errorf("%s: the first pass holds rows of %d runs or sources (merged accumulators, or a restored state and more rows): a second pass gives the rows again to the accumulator that added them all; evaluate sets spread over several accumulators with calib eval --stream or evaluate", a.name, len(rs))
	}
	return nil
}

// maxSource bounds the length of a restored accumulator's source name.
const maxSource = 256

//export calib_stream_new
func calib_stream_new(req *C.char, out **C.char) C.int {
	return guard(out, func() (string, int, error) {
		var r streamRequest
		if err := json.Unmarshal([]byte(C.GoString(req)), &r); err != nil {
			return inputError("request: %v", err)
		}
		a, err := newAccumulator(r)
		if err != nil {
			return "", codeInput, err
		}
		h, err := register(a)
		if err != nil {
			return "", codeFailure, err
		}
		return h, codeOK, nil
	})
}

// calib_stream_add adds a batch of rows to accumulator h (in its second
// pass, the next rows of the first pass again) and returns the rows added
// so far; call is a cancellation handle (calib_call_new; 0: none): the
// second pass's kernel sums stop with code 130, the batch not added.
//
//export calib_stream_add
func calib_stream_add(call, h C.int64_t, x unsafe.Pointer, dtype C.int, n, cols C.int64_t, labels unsafe.Pointer, ldtype C.int, weights *C.double, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		first, where := a.rows, "of the stream"
		if a.ks != nil {
			first, where = a.ks.N(), "of the second pass"
		}
		name := fmt.Sprintf("%s (rows %d to %d %s)", a.name, first+1, first+int64(n), where)
		arr, err := arrays(x, dtype, n, cols, labels, ldtype, weights, name)
		if err != nil {
			return "", codeInput, err
		}
		if n == 0 { // the rows added so far, as for any batch
			if a.ks != nil {
				return fmt.Sprint(a.ks.N()), codeOK, nil
			}
			return fmt.Sprint(a.sums.N()), codeOK, nil
		}
		s, err := arr.Load(name, a.input)
		if err != nil {
			return "", codeInput, err
		}
		b := &data.Batch{Set: s, Source: a.source, Offset: first}
		if a.ks != nil {
			if first+int64(n) > a.sums.N() {
				return inputError("%s: the second pass would hold %d rows, the first holds %d (the second must add the same rows in the same order)", name, first+int64(n), a.sums.N())
			}
			if err := a.ks.Add(contextOf(call), b, 0); err != nil {
				return cancelled(call, err)
			}
			return fmt.Sprint(a.ks.N()), codeOK, nil
		}
		if err := a.sums.Add(b); err != nil {
			return "", codeInput, err
		}
		a.rows += int64(n)
		return fmt.Sprint(a.sums.N()), codeOK, nil
	})
}

//export calib_stream_merge
func calib_stream_merge(h, other C.int64_t, out **C.char) C.int {
	return guard(out, func() (string, int, error) {
		a, err := accumulatorOf(h)
		if err != nil {
			return "", codeInput, err
		}
		b, err := accumulatorOf(other)
		if err != nil {
			return "", codeInput, err
		}
		if a == b {
			return inputError("an accumulator cannot be merged into itself (its rows would count twice)")
		}
		// Both locked, the lower handle first (two merges the other way
		// round cannot deadlock); Merge reads b and copies what it keeps.
		first, second := a, b
		if b.id < a.id {
			first, second = b, a
		}
		first.Lock()
		defer first.Unlock()
		second.Lock()
		defer second.Unlock()
		if a.ks != nil || b.ks != nil {
			return inputError("an accumulator in its second pass does not merge: the second pass gives the first's rows again, in the same order, to the accumulator that made the first (merge the first passes, then begin the second)")
		}
		if err := a.sums.Merge(b.sums); err != nil {
			return "", codeInput, err
		}
		return fmt.Sprint(a.sums.N()), codeOK, nil
	})
}

//export calib_stream_state
func calib_stream_state(h C.int64_t, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		b, err := json.Marshal(a.sums)
		if err != nil {
			return "", codeFailure, err
		}
		return string(b), codeOK, nil
	})
}

// secondPassAdvice is the one line finish() answers before the second
// pass of metrics that need one: which of them need it, what to call,
// and the metrics asked for less those, which make one pass (brier, nll,
// accuracy and confidence where every metric asked for needs two).
func secondPassAdvice(a *accumulator) string {
	two := a.sums.SecondPassMetrics()
	var one evaluate.MetricSet
	for _, m := range a.sums.Metrics() {
		if !slices.Contains(two, m) {
			one = append(one, m)
		}
	}
	if len(one) == 0 {
		one = evaluate.MetricSet{evaluate.Brier, evaluate.NLL, evaluate.Accuracy, evaluate.Confidence}
	}
	verb := "needs"
	if len(two) > 1 {
		verb = "need"
	}
	return fmt.Sprintf("%s: finish() before the second pass: %s %s a second pass over the rows: call second_pass(), add the same rows again in the same order, then finish(); where the rows can be read only once, make the accumulator with metrics=%q (one pass)", a.name, two, verb, one.String())
}

// calib_stream_pass begins the second pass of accumulator h (the maps
// and points chosen on the first pass's samples) and returns "2"; call is
// a cancellation handle (0: none): cancelled, the accumulator stays in
// its first pass.
//
//export calib_stream_pass
func calib_stream_pass(call, h C.int64_t, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		if passes, current := a.passes(); passes == 1 {
			return inputError("%s: the metrics make one pass: finish() needs no second", a.name)
		} else if current == 2 {
			return inputError("%s: the second pass has begun", a.name)
		}
		if err := a.secondPassRows(); err != nil {
			return "", codeInput, err
		}
		ks, err := a.sums.KernelSumsContext(contextOf(call), 0, 1)
		if err != nil {
			return cancelled(call, fmt.Errorf("%s: %w", a.name, err))
		}
		a.ks = ks
		return "2", codeOK, nil
	})
}

//export calib_stream_kernel_state
func calib_stream_kernel_state(h C.int64_t, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		if a.ks == nil {
			return "null", codeOK, nil
		}
		b, err := json.Marshal(a.ks)
		if err != nil {
			return "", codeFailure, err
		}
		return string(b), codeOK, nil
	})
}

//export calib_stream_finish
func calib_stream_finish(h C.int64_t, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		if a.sums.KernelPass() && a.ks == nil && a.sums.N() > 0 {
			return "", codeInput, errors.New(secondPassAdvice(a))
		}
		if a.ks != nil && a.ks.N() != a.sums.N() {
			return inputError("%s: the second pass has %d of the first's %d rows: add them all, in the same order, before finish()", a.name, a.ks.N(), a.sums.N())
		}
		ev, err := evaluate.Finish(a.sums, a.ks)
		if err != nil {
			return "", codeInput, fmt.Errorf("%s: %w", a.name, err)
		}
		var buf bytes.Buffer
		if err := evaluate.WriteJSON(&buf, ev); err != nil {
			return "", codeFailure, err
		}
		return buf.String(), codeOK, nil
	})
}

//export calib_stream_free
func calib_stream_free(h C.int64_t) {
	accumulators.Lock()
	delete(accumulators.m, int64(h))
	accumulators.Unlock()
}
