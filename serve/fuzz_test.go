package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/calib-dev/calib/monitor"
)

// fuzzMemory is the most a decoder may allocate for one fuzz input (the
// inputs are a few KiB): a decoder sizes what it allocates by the bytes
// it reads, never by a count or shape the input claims. The fuzz
// process also runs under this memory limit.
const fuzzMemory = 64 << 20

// bounded runs f, failing t if it allocated more than fuzzMemory bytes
// (an allocation bomb; one past the machine's memory ends the fuzz
// process instead, which fails the fuzzer as well).
func bounded(t *testing.T, in []byte, f func()) {
	t.Helper()
	debug.SetMemoryLimit(fuzzMemory)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > fuzzMemory {
		t.Fatalf("%.100q: %d MiB allocated for %d bytes of input", in, got>>20, len(in))
	}
}

// FuzzDecodeMatrix: any bytes decode to rows or a RequestError, never a
// panic; decoded rows are finite, n x cols, within the row bound; the
// decoder allocates at most fuzzMemory.
func FuzzDecodeMatrix(f *testing.F) {
	for _, s := range []string{`[[0.2, 0.8], [0.5, 0.5]]`, `[0.1, 0.9]`, `[]`, `[[]]`, `[[1], [1, 2]]`, `["NaN"]`, `[1e999]`, `null`, `{"a": 1}`, `[[[1]]]`, `[-0, 1E-400]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m *matrix
		var err error
		bounded(t, b, func() { m, err = decodeMatrix(json.RawMessage(b), "probs", 50) })
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: %T %v, want a RequestError", b, err, err)
			}
			return
		}
		if m.n < 1 || m.cols < 1 || len(m.values) != m.n*m.cols || m.n > 50 {
			t.Fatalf("%q: %d rows of %d, %d values", b, m.n, m.cols, len(m.values))
		}
		for _, v := range m.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %v", b, v)
			}
		}
	})
}

// FuzzTensorData: any bytes and any claimed shape (within the server's
// bounds on rows and columns) give the shape's number of finite values or
// a RequestError, never a panic, allocating at most fuzzMemory; FP32
// values are float32s.
func FuzzTensorData(f *testing.F) {
	for _, s := range []string{`[[0.2, 0.8], [0.5, 0.5]]`, `[0.2, 0.8, 0.5, 0.5]`, `[[0.2], 0.8, [0.5, 0.5]]`, `[1e39, 0, 0, 0]`, `[[[[1]]]]`, `"x"`} {
		f.Add([]byte(s), false, uint32(2), uint32(2))
		f.Add([]byte(s), true, uint32(2), uint32(2))
	}
	f.Add([]byte(`[1]`), false, uint32(DefaultMaxRows-1), uint32(maxCols-1)) // the shape bomb: [100000, 1048576]
	f.Fuzz(func(t *testing.T, b []byte, fp32 bool, rows, cols uint32) {
		n, c := int(rows%DefaultMaxRows)+1, int(cols%maxCols)+1
		var x []float64
		var err error
		bounded(t, b, func() { x, err = tensorData(json.RawMessage(b), "data", n, c, fp32) })
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: %T %v, want a RequestError", b, err, err)
			}
			return
		}
		if len(x) != n*c {
			t.Fatalf("%q: %d values for [%d, %d]", b, len(x), n, c)
		}
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) || (fp32 && v != float64(float32(v))) {
				t.Fatalf("%q: %v", b, v)
			}
		}
	})
}

// FuzzObserve: any body to /v1/observe and /v1/outcome is answered 200
// or 4xx with a one-line JSON error, never a panic or a 5xx, allocating
// at most fuzzMemory.
func FuzzObserve(f *testing.F) {
	st, err := monitor.Open(f.TempDir(), monitor.StoreOptions{Sync: monitor.SyncNone, SnapshotEvery: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	s, err := New(Options{Store: st, MaxRows: 50})
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range []string{
		`{"probs": [[0.2, 0.8], [0.5, 0.5]], "labels": [1, null], "ids": ["", "a"], "slice": "s", "time": 1764000000}`,
		`{"logits": [1, 2], "labels": [0], "times": ["2026-11-29T12:00:00Z"], "weights": [2]}`,
		`{"probs": [0.5, 0.5], "labels": [3]}`, `{"probs": [0.5, 0.5], "labels": [1.5]}`, `{"probs": [0.5, 0.5], "labels": ["1"]}`,
		`{"probs": [0.5, 0.5], "labels": [1], "time": -1}`, `{"probs": [0.5, 0.5], "labels": [1], "request_id": "r"}`,
	} {
		f.Add([]byte(b), false)
	}
	f.Add([]byte(`{"ids": ["a"], "labels": [0]}`), true)
	f.Add([]byte(`{"ids": ["a", "b"], "labels": [0, null]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, outcome bool) {
		path := "/v1/observe/m"
		if outcome {
			path = "/v1/outcome/m"
		}
		w := httptest.NewRecorder()
		bounded(t, body, func() { s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))) })
		if w.Code != http.StatusOK && (w.Code < 400 || w.Code >= 500) {
			t.Fatalf("%q: status %d: %s", body, w.Code, w.Body)
		}
		if w.Code != http.StatusOK {
			var e struct{ Error string }
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "" || strings.Contains(e.Error, "\n") {
				t.Fatalf("%q: %d %q: want a one-line JSON error", body, w.Code, w.Body)
			}
		}
	})
}

// FuzzLabels: the one-scan label decoder agrees with the general one
// wherever it answers.
func FuzzLabels(f *testing.F) {
	for _, s := range []string{`[0, 1, null, 2]`, `[01]`, `[1.0]`, `[-1]`, `[null]`, `[ 3 ,4 ]`, `[1,]`, `[123456789012]`} {
		f.Add([]byte(s), 4, true)
		f.Add([]byte(s), 1, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, n int, nullOK bool) {
		if n < 0 || n > 100 {
			return
		}
		var fast []int
		bounded(t, b, func() { fast = fastLabels(b, n, nullOK) })
		if fast == nil {
			return
		}
		var els []json.RawMessage
		if err := json.Unmarshal(b, &els); err != nil || len(els) != n {
			t.Fatalf("%q: the fast path read %v, JSON says %v (%d elements)", b, fast, err, len(els))
		}
		for i, el := range els {
			want := monitor.NoLabel
			if string(bytes.TrimSpace(el)) != "null" {
				if err := json.Unmarshal(el, &want); err != nil {
					t.Fatalf("%q: element %d %s: %v", b, i, el, err)
				}
			}
			if fast[i] != want {
				t.Fatalf("%q: element %d: fast %d, JSON %d", b, i, fast[i], want)
			}
		}
	})
}
