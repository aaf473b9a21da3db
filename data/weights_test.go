package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbinet/npyio"
)

// TestWeightsInFiles reads the same three weighted rows from a CSV weight
// column (any position, any of the header names), JSON Lines "weight" keys,
// an NPZ array and a separate weights file (text and NPY).
func TestWeightsInFiles(t *testing.T) {
	want := []float64{2, 0, 0.5}
	probs := []float64{0.2, 0.8, 0.6, 0.4, 0.5, 0.5}
	labels := []int{1, 0, 1}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	npy := func(v any) []byte {
		var b bytes.Buffer
		if err := npyio.Write(&b, v); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	cases := map[string]struct {
		file string
		opts Options
	}{
		"csv first":   {write("a.csv", []byte("weight,p0,p1,label\n2,0.2,0.8,1\n0,0.6,0.4,0\n0.5,0.5,0.5,1\n")), Options{}},
		"csv middle":  {write("b.csv", []byte("p0,Sample_Weight,p1,label\n0.2,2,0.8,1\n0.6,0,0.4,0\n0.5,0.5,0.5,1\n")), Options{}},
		"csv last":    {write("c.csv", []byte("p0,p1,label,weights\n0.2,0.8,1,2\n0.6,0.4,0,0\n0.5,0.5,1,0.5\n")), Options{}},
		"jsonl":       {write("d.jsonl", []byte("{\"probs\":[0.2,0.8],\"label\":1,\"weight\":2}\n{\"probs\":[0.6,0.4],\"label\":0,\"weight\":0}\n{\"probs\":[0.5,0.5],\"label\":1,\"weight\":0.5}\n")), Options{}},
		"text file":   {write("e.csv", []byte("0.2,0.8,1\n0.6,0.4,0\n0.5,0.5,1\n")), Options{Weights: write("w.txt", []byte("weight\n2\n0\n0.5\n"))}},
		"npy file":    {write("f.csv", []byte("0.2,0.8,1\n0.6,0.4,0\n0.5,0.5,1\n")), Options{Weights: write("w.npy", npy(want))}},
		"npy integer": {write("g.csv", []byte("0.2,0.8,1\n0.6,0.4,0\n0.5,0.5,1\n")), Options{Weights: write("wi.npy", npy([]int32{2, 0, 1}))}},
	}
	for name, c := range cases {
		s, err := Load(c.file, c.opts)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		w := want
		if name == "npy integer" {
			w = []float64{2, 0, 1}
		}
		if !slices.Equal(s.Weights, w) || !slices.Equal(s.Probs, probs) || !slices.Equal(s.Labels, labels) {
			t.Errorf("%s: weights %v probs %v labels %v; want %v %v %v", name, s.Weights, s.Probs, s.Labels, w, probs, labels)
		}
	}
	s, err := Load(cases["text file"].file, Options{})
	if err != nil || s.Weights != nil {
		t.Errorf("no weights: got %v, %v; want nil weights", s.Weights, err)
	}
}

// TestWeightErrors: every bad weight is an *Error wrapping ErrWeights that
// names where it is.
func TestWeightErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("p.csv", "0.2,0.8,1\n0.6,0.4,0\n")
	for _, c := range []struct {
		file, weights, want string
	}{
		{write("neg.csv", "p0,p1,label,weight\n0.2,0.8,1,1\n0.6,0.4,0,-2\n"), "", "line 3, column 4: invalid sample weights: weight -2"},
		{write("zero.csv", "weight,p0,p1,label\n0,0.2,0.8,1\n0,0.6,0.4,0\n"), "", "all 2 weights are zero"},
		{write("text.csv", "weight,p0,p1,label\nabc,0.2,0.8,1\n"), "", "line 2, column 1"},
		{write("mixed.jsonl", "{\"probs\":[0.2,0.8],\"label\":1}\n{\"probs\":[0.6,0.4],\"label\":0,\"weight\":1}\n"), "", "line 2: invalid sample weights: \"weight\" here but not on line 1"},
		{write("missing.jsonl", "{\"probs\":[0.2,0.8],\"label\":1,\"weight\":1}\n{\"probs\":[0.6,0.4],\"label\":0}\n"), "", "no \"weight\" here but on line 1"},
		{write("str.jsonl", "{\"probs\":[0.2,0.8],\"label\":1,\"weight\":\"1\"}\n"), "", "\"weight\" must be a number, got a string"},
		{plain, write("short.txt", "1\n"), "1 weights for the 2 prediction rows"},
		{plain, write("nan.txt", "1\nNaN\n"), "nan.txt: line 2"},
		{plain, write("two.txt", "1,2\n3,4\n"), "a weights file has one column, got 2"},
		{write("both.csv", "p0,p1,label,weight\n0.2,0.8,1,1\n0.6,0.4,0,1\n"), write("w.txt", "1\n1\n"), "has a weight column and a weights file"},
		{plain, filepath.Join(dir, "absent.txt"), "absent.txt"},
	} {
		_, err := Load(c.file, Options{Weights: c.weights})
		var de *Error
		if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (weights %q): got %v, want an *Error with %q", filepath.Base(c.file), c.weights, err, c.want)
			continue
		}
		if !strings.Contains(c.want, "absent") && !errors.Is(err, ErrWeights) && !strings.Contains(c.want, "column 1") && !strings.Contains(c.want, "one column") {
			t.Errorf("%s: %v does not wrap ErrWeights", filepath.Base(c.file), err)
		}
	}
	s, err := Parse("p.csv", []byte("0.2,0.8,1\n0.6,0.4,0\n"), "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWeights([]float64{1, -1}); !errors.Is(err, ErrWeights) {
		t.Errorf("SetWeights(negative) = %v, want ErrWeights", err)
	}
	if err := s.SetWeights([]float64{1, 3}); err != nil || s.Weights[1] != 3 {
		t.Errorf("SetWeights(valid) = %v, weights %v", err, s.Weights)
	}
}
