package data

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAllNPYRows reads every row of an NPY stream in batches of batch rows
// (for the tests and the fuzz target: the streamed values of a file).
func readAllNPYRows(b []byte, batch int) ([]float64, int, int, error) {
	nr, err := NewNPYRows(bytes.NewReader(b), "f.npy")
	if err != nil {
		return nil, 0, 0, err
	}
	rows, cols := nr.Shape()
	out := make([]float64, 0, min(rows*cols, 1<<20))
	dst := make([]float64, batch*cols)
	for {
		k, err := nr.Read(dst)
		if err == io.EOF {
			return out, rows, cols, nil
		}
		if err != nil {
			return nil, 0, 0, err
		}
		out = append(out, dst[:k*cols]...)
	}
}

// TestNPYRowsMatchesLoad: streaming the real .npy files (float32 logits,
// int64 labels) in batches of 1, 7 and 1,000 rows gives the values and the
// shape parseNPY gives, bit for bit; bad streams are refused with the row.
func TestNPYRowsMatchesLoad(t *testing.T) {
	for _, f := range []string{"test_logits.npy", "test_labels.npy", "val_logits.npy"} {
		b, err := os.ReadFile(filepath.Join(demoDir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := parseNPY(f, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{1, 7, 1000} {
			got, rows, cols, err := readAllNPYRows(b, batch)
			if err != nil {
				t.Fatalf("%s, batches of %d: %v", f, batch, err)
			}
			if rows != want.shape[0] || len(got) != len(want.values) || (len(want.shape) == 2 && cols != want.shape[1]) {
				t.Fatalf("%s: shape %d x %d, %d values; want %v, %d values", f, rows, cols, len(got), want.shape, len(want.values))
			}
			for i, v := range got {
				if math.Float64bits(v) != math.Float64bits(want.values[i]) {
					t.Fatalf("%s, batches of %d: value %d = %v, want %v", f, batch, i, v, want.values[i])
				}
			}
		}
	}
	real := writeNPY("<f8", false, "(3, 2)", []float64{1, 2, 3, 4, 5, 6})
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", real[:len(real)-4], "inside row 3 of 3"},
		{"trailing", append(append([]byte{}, real...), 0), "bytes after the last of the 3 rows"},
		{"fortran", writeNPY("<f8", true, "(3, 2)", []float64{1, 2, 3, 4, 5, 6}), "Fortran-order"},
		{"3-D", writeNPY("<f8", false, "(1, 1, 1)", []float64{1}), "3-dimensional"},
		{"no columns", writeNPY("<f8", false, "(1, 0)", []float64{}), "no columns"},
		{"magic", []byte("NUMPY\x01\x00abcdef"), "bad magic"},
		{"version", []byte("\x93NUMPY\x03\x00\x10\x00"), "version 3"},
		{"huge header", []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f"), "header length"},
	} {
		_, _, _, err := readAllNPYRows(c.b, 2)
		var de *Error
		if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *Error with %q", c.name, err, c.want)
		}
	}
	nr, err := NewNPYRows(bytes.NewReader(real), "r.npy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nr.Read(make([]float64, 1)); err == nil {
		t.Error("Read into room for 1 value of a 2-column row: no error")
	}
	if _, err := nr.Read(make([]float64, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := nr.Read(make([]float64, 6)); err != io.EOF {
		t.Errorf("after the last row: %v, want io.EOF", err)
	}
}

// FuzzNPYRows: the streamed reader agrees with parseNPY on any bytes: where
// parseNPY reads a C-order (n,) or (n, K) array, the stream gives its
// values bit for bit; where parseNPY refuses the file, so does the stream.
func FuzzNPYRows(f *testing.F) {
	f.Add(writeNPY("<f4", false, "(4, 3)", []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
	f.Add(writeNPY("<i8", false, "(5,)", []int64{0, 1, 2, 3, 4}))
	f.Add(writeNPY(">f8", false, "(2, 2)", []float64{0.5, 0.25, 1, 0}))
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f"))
	f.Add(writeNPY("<f8", false, "(1, 0)", []float64{})) // found by the fuzzer: no columns
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := parseNPY("f.npy", b)
		got, _, _, gerr := readAllNPYRows(b, 3)
		if werr != nil {
			if gerr == nil {
				t.Fatalf("parseNPY refuses (%v) but the stream reads %d values", werr, len(got))
			}
			return
		}
		h, _, _ := npyHeader(b)
		if h.fortran && len(h.shape) == 2 && h.shape[1] > 1 || len(h.shape) == 0 || len(h.shape) == 2 && h.shape[1] == 0 {
			return // refused by the stream on purpose (not row by row, or no columns)
		}
		if gerr != nil {
			t.Fatalf("parseNPY reads %v but the stream fails: %v", want.shape, gerr)
		}
		if len(got) != len(want.values) {
			t.Fatalf("%d values streamed, parseNPY %d", len(got), len(want.values))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want.values[i]) {
				t.Fatalf("value %d: %v, parseNPY %v", i, got[i], want.values[i])
			}
		}
	})
}
