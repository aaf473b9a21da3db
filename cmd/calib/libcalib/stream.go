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
	"fmt"
	"sync"
	"unsafe"

	"github.com/calib-dev/calib/cmd/calib/internal/cli"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// accumulator is a streamed evaluation fed batch by batch (calib eval
// --stream's first pass, evaluate.Sums): its own rows are the source
// "batches of accumulator <random hex>", numbered in the order they are
// added. id is its handle.
type accumulator struct {
	sync.Mutex
	id     int64
	sums   *evaluate.Sums
	input  data.Options
	name   string
	source string
	rows   int64
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

func register(a *accumulator) string {
	accumulators.Lock()
	defer accumulators.Unlock()
	accumulators.next++
	id := accumulators.next
	// The rows' source is unique across processes too, so that the
	// states of accumulators filled in several processes merge.
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	a.id, a.source = id, fmt.Sprintf("batches of accumulator %x", u)
	accumulators.m[id] = a
	return fmt.Sprint(id)
}

// streamRequest is calib_stream_new's JSON document.
type streamRequest struct {
	Name    string          `json:"name"`    // what the messages call the batches
	Options json.RawMessage `json:"options"` // calib eval's flags
	State   json.RawMessage `json:"state"`   // a state from calib_stream_state to start from
}

// newAccumulator parses the options as calib eval --stream does, starts
// from the state, if any, and refuses the metrics that need a second pass
// over the data (the kernel sums at the evaluation points).
func newAccumulator(r streamRequest) (*accumulator, error) {
	flags, err := Args(r.Options)
	if err != nil {
		return nil, err
	}
	so, in, err := cli.StreamOptions(flags)
	if err != nil {
		return nil, err
	}
	s, err := evaluate.NewSums(so)
	if err != nil {
		return nil, err
	}
	if len(r.State) > 0 && string(r.State) != "null" {
		if err := s.UnmarshalJSON(r.State); err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
	}
	if s.KernelPass() {
		return nil, fmt.Errorf("%s: the metrics %s need a second pass over the data (ece_variational: its maps are fitted between the passes; ece_kde, ece_witness, mmce and sharpness: the kernel sums at sampled points; binned metrics with data-dependent bins: the scores near the edges); an accumulator makes one pass: choose one-pass metrics (ece_bin or mce with --bin-rule fixed, ks, brier, nll, accuracy, confidence, ...) or evaluate the whole set", r.Name, so.Metrics)
	}
	if r.Name == "" {
		r.Name = "batch"
	}
	// Rows are numbered on from the state's in the messages.
	return &accumulator{sums: s, input: in, name: r.Name, rows: s.N()}, nil
}

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
		return register(a), codeOK, nil
	})
}

//export calib_stream_add
func calib_stream_add(h C.int64_t, x unsafe.Pointer, dtype C.int, n, cols C.int64_t, labels unsafe.Pointer, ldtype C.int, weights *C.double, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		name := fmt.Sprintf("%s (rows %d to %d of the stream)", a.name, a.rows+1, a.rows+int64(n))
		arr, err := arrays(x, dtype, n, cols, labels, ldtype, weights, name)
		if err != nil {
			return "", codeInput, err
		}
		if n == 0 {
			return "0", codeOK, nil
		}
		s, err := arr.Load(name, a.input)
		if err != nil {
			return "", codeInput, err
		}
		if err := a.sums.Add(&evaluate.Batch{Set: s, Source: a.source, Offset: a.rows}); err != nil {
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

//export calib_stream_finish
func calib_stream_finish(h C.int64_t, out **C.char) C.int {
	return withAccumulator(h, out, func(a *accumulator) (string, int, error) {
		ev, err := evaluate.Finish(a.sums, nil)
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
