package data

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// checkSet asserts the invariants of every Set the loaders return.
func checkSet(t *testing.T, s *Set, err error) {
	t.Helper()
	checkSetLabels(t, s, err, true)
}

// checkSetLabels is checkSet where labels may be absent unless
// needLabels.
func checkSetLabels(t *testing.T, s *Set, err error, needLabels bool) {
	t.Helper()
	if err != nil {
		if s != nil {
			t.Fatalf("both a set and an error %v", err)
		}
		if _, ok := err.(*Error); !ok {
			t.Fatalf("error %T %v is not a *data.Error", err, err)
		}
		return
	}
	if s.N <= 0 || s.K < 2 || len(s.Probs) != s.N*s.K || ((needLabels || s.Labels != nil) && len(s.Labels) != s.N) {
		t.Fatalf("bad shape n=%d K=%d len=%d/%d", s.N, s.K, len(s.Probs), len(s.Labels))
	}
	for i := 0; i < s.N; i++ {
		sum := 0.0
		for _, v := range s.Row(i) {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("row %d: probability %v", i, v)
			}
			sum += v
		}
		if !(math.Abs(sum-1) <= 1e-6*float64(s.K)+1e-9) {
			t.Fatalf("row %d sums to %v", i, sum)
		}
		if s.Labels != nil && (s.Labels[i] < 0 || s.Labels[i] >= s.K) {
			t.Fatalf("row %d: label %d", i, s.Labels[i])
		}
	}
	if s.Weights != nil {
		if err := mathx.CheckWeights(s.Weights, s.N); err != nil {
			t.Fatalf("weights passed the loader: %v", err)
		}
	}
}

func readSeed(f *testing.F, name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzCSV(f *testing.F) {
	f.Add(readSeed(f, "../testdata/golden/ecekde/c13_n24_k3_grad.csv"))
	f.Add(readSeed(f, "../testdata/golden/ecekde/c07_n100_k4_onehot_row.csv"))
	f.Add([]byte("p,label\n0.3,1\n0.9,0\n"))
	f.Add([]byte("0.5,0.5,0\n0.5,0.5\n"))
	f.Add([]byte("0.5\t0.5\t1\n"))
	f.Add([]byte("\"0.5\",\"0.5\",1\n\"0.5,0.5,1\n"))
	f.Add([]byte("1e400,0,0\nNaN,1,0\n-0,1,1\n"))
	f.Add([]byte("0.333333,0.333333,0.333333,2\n0.5,0.5,0,1\n"))
	f.Add([]byte("p0,p1,Label\n0.25,0.75,1\n"))
	f.Add([]byte("weight,p0,p1,label\n2,0.25,0.75,1\n0,0.5,0.5,0\n"))
	f.Add([]byte("p0,p1,sample_weight\n0.25,0.75,-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("f.csv", b, "", nil, Options{})
		checkSet(t, s, err)
		s, err = Parse("f.csv", b, "", nil, Options{Logits: true, Renormalize: true})
		checkSet(t, s, err)
		s, err = Parse("f.csv", b, "", nil, Options{Unlabeled: true})
		checkSetLabels(t, s, err, false)
		s, err = Parse("f.csv", b, "y.txt", []byte("1\n0\n"), Options{K: 2})
		checkSet(t, s, err)
	})
}

func FuzzJSONL(f *testing.F) {
	f.Add([]byte("{\"probs\": [0.1, 0.9], \"label\": 1}\n{\"probs\": [0.5, 0.5], \"label\": 0}\n"))
	f.Add([]byte("{\"logits\": [1e308, -1e308, 0], \"label\": 2}\n"))
	f.Add([]byte("{\"probs\": [1], \"label\": 1.5}\n{\"probs\": []}\n"))
	f.Add([]byte("{\"probs\": [0.5, 0.5], \"label\": \"x\"}\n{"))
	f.Add([]byte("{\"probs\": [0.1, 0.9], \"label\": 1, \"weight\": 2.5}\n{\"probs\": [0.5, 0.5], \"label\": 0, \"weight\": 0}\n"))
	f.Add([]byte("{\"probs\": [0.1, 0.9], \"label\": 1}\n{\"probs\": [0.5, 0.5], \"label\": 0, \"weight\": \"1\"}\n"))
	f.Add([]byte("{\"probs\": [0.333333, 0.333333, 0.333333], \"label\": \"2\"}\n[{\"logits\": null}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("f.jsonl", b, "", nil, Options{})
		checkSet(t, s, err)
		s, err = Parse("f.jsonl", b, "", nil, Options{Unlabeled: true})
		checkSetLabels(t, s, err, false)
	})
}

func FuzzNPY(f *testing.F) {
	// A real file: the first 20 rows of the embedded CIFAR-10 validation
	// logits, written back as NPY, and the real label file.
	s, err := Load(filepath.Join(demoDir, "val_logits.npy"), Options{Logits: true, Labels: filepath.Join(demoDir, "val_labels.npy")})
	if err != nil {
		f.Fatal(err)
	}
	head := make([]float32, 20*10)
	for i := range head {
		head[i] = float32(s.Logits[i])
	}
	real := writeNPY("<f4", false, "(20, 10)", head)
	labels := make([]int64, 20)
	for i := range labels {
		labels[i] = int64(s.Labels[i])
	}
	lab := writeNPY("<i8", false, "(20,)", labels)
	f.Add(real, true)
	f.Add(writeNPY("<f8", true, "(2, 10)", make([]float64, 20)), false)
	f.Add(real[:100], true)
	f.Add(append(real[:10:10], []byte("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 10), }\n")...), true)
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f"), true)
	f.Fuzz(func(t *testing.T, b []byte, logits bool) {
		s, err := Parse("f.npy", b, "l.npy", lab, Options{Logits: logits})
		checkSet(t, s, err)
		s, err = Parse("f.csv", real, "l.npy", b, Options{Format: "npy", Logits: true})
		checkSet(t, s, err)
		s, err = Parse("f.npz", b, "", nil, Options{})
		checkSet(t, s, err)
	})
}

func FuzzNPZ(f *testing.F) {
	le := binary.LittleEndian
	_, probs, labels := randomSet(6, 3, 5)
	p := numpyNPY("<f8", false, []int{6, 3}, raw(le, probs))
	y := numpyNPY("<i8", false, []int{6}, raw(le, int64s(labels)))
	yb := numpyNPY("|b1", false, []int{6}, make([]byte, 6))
	z := numpyNPY(">f4", true, []int{6, 3}, make([]byte, 72))
	stored := numpyNPZ(false, npzMember{"probs", p}, npzMember{"labels", y})
	f.Add(stored)
	f.Add(numpyNPZ(true, npzMember{"probs", p}, npzMember{"labels", y}))
	f.Add(numpyNPZ(true, npzMember{"logits", z}, npzMember{"y", yb}))
	f.Add(stored[:len(stored)/2])
	f.Add(numpyNPZ(false, npzMember{"p", y[:90]}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse("f.npz", b, "", nil, Options{})
		checkSet(t, s, err)
		s, err = Parse("f.npz", b, "", nil, Options{Unlabeled: true, Logits: true})
		checkSetLabels(t, s, err, false)
	})
}

func FuzzWeights(f *testing.F) {
	f.Add("w.txt", []byte("weight\n1\n2.5\n0\n"))
	f.Add("w.txt", []byte("1e400\n-0\nNaN\n"))
	f.Add("w.txt", []byte("1,2\n"))
	f.Add("w.npy", []byte("\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }                                                          \n\x00\x00\x00\x00\x00\x00\xf0?"))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		w, err := ParseWeights(name, b)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T %v is not a *data.Error", err, err)
			}
			return
		}
		for i, v := range w {
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("weight %d = %v passed", i, v)
			}
		}
	})
}
