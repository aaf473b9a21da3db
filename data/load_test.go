package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
	"gonum.org/v1/gonum/mat"
)

const demoDir = "../cmd/calib/internal/demo/cifar10_resnet110-brier"

func TestGoldenCSVLoads(t *testing.T) {
	s, err := Load("../testdata/golden/ecekde/c02_n200_k3.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 200 || s.K != 3 || s.Binary || s.Logits != nil {
		t.Fatalf("got n=%d K=%d binary=%v", s.N, s.K, s.Binary)
	}
	// First data row of the file: 0.000637...,0.0138...,0.985...,2 (checked by hand).
	for k := 0; k < 3; k++ {
		if s.Probs[k] < 0 || s.Probs[k] > 1 {
			t.Fatalf("bad probability %v", s.Probs[k])
		}
	}
}

// TestRealLogits loads every real logit set of the embedded demo data (NPY,
// float32 logits, int64 labels) and checks the softmax and the accuracy the
// data's README states (val 94.82 %, test 94.52 %).
func TestRealLogits(t *testing.T) {
	for split, acc := range map[string]float64{"val": 0.9482, "test": 0.9452} {
		s, err := Load(filepath.Join(demoDir, split+"_logits.npy"), Options{Logits: true, Labels: filepath.Join(demoDir, split+"_labels.npy")})
		if err != nil {
			t.Fatal(err)
		}
		if s.K != 10 || s.Logits == nil {
			t.Fatalf("%s: K=%d", split, s.K)
		}
		correct := 0
		for i := 0; i < s.N; i++ {
			row := s.Row(i)
			sum, best := 0.0, 0
			for k, v := range row {
				sum += v
				if v > row[best] {
					best = k
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("%s row %d sums to %v", split, i, sum)
			}
			if best == s.Labels[i] {
				correct++
			}
		}
		if got := float64(correct) / float64(s.N); math.Abs(got-acc) > 1e-9 {
			t.Errorf("%s accuracy %v, want %v", split, got, acc)
		}
	}
}

// writeNPY builds an NPY file by hand (so Fortran order and odd dtypes can
// be tested).
func writeNPY(descr string, fortran bool, shape string, payload any) []byte {
	var body bytes.Buffer
	binary.Write(&body, binary.LittleEndian, payload)
	fo := "False"
	if fortran {
		fo = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, fo, shape)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.Write(npy.Magic[:])
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(body.Bytes())
	return b.Bytes()
}

func TestNPYFortranOrder(t *testing.T) {
	// The 3x2 matrix [[0.2,0.8],[0.6,0.4],[1,0]] stored column by column.
	c := writeNPY("<f8", false, "(3, 2)", []float64{0.2, 0.8, 0.6, 0.4, 1, 0})
	f := writeNPY("<f8", true, "(3, 2)", []float64{0.2, 0.6, 1, 0.8, 0.4, 0})
	lab := writeNPY("<i4", false, "(3,)", []int32{1, 0, 0})
	sc, err := Parse("c.npy", c, "l.npy", lab, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := Parse("f.npy", f, "l.npy", lab, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Probs {
		if sc.Probs[i] != sf.Probs[i] {
			t.Fatalf("Fortran order not transposed: %v vs %v", sf.Probs, sc.Probs)
		}
	}
	// float32 one-column logits: binary set.
	b := writeNPY("<f4", false, "(3,)", []float32{0, 2, -40})
	s, err := Parse("b.npy", b, "l.npy", lab, Options{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Binary || s.K != 2 || s.Probs[1] != 0.5 || math.Abs(s.Probs[3]-1/(1+math.Exp(-2))) > 1e-16 || s.Probs[5] <= 0 {
		t.Fatalf("binary logits: %+v", s)
	}
}

func TestNPZ(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "p.npz")
	logits := mat.NewDense(2, 3, []float64{1, 2, 3, 0, 0, 9})
	if err := npz.Write(name, map[string]any{"logits": logits, "labels": []int64{2, 0}}); err != nil {
		t.Fatal(err)
	}
	s, err := Load(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 3)
	Softmax(want, []float64{1, 2, 3})
	if s.N != 2 || s.K != 3 || s.Logits == nil || s.Probs[2] != want[2] || s.Labels[0] != 2 {
		t.Fatalf("%+v", s)
	}
	bad := filepath.Join(dir, "q.npz")
	if err := npz.Write(bad, map[string]any{"x": []float64{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, Options{}); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "want one named probs") {
		t.Fatalf("npz without predictions: %v", err)
	}
}

func TestJSONL(t *testing.T) {
	in := "{\"probs\": [0.1, 0.9], \"label\": 1}\n\n{\"probs\": [0.5, 0.5], \"label\": 0, \"id\": \"x\"}\n"
	s, err := Parse("a.jsonl", []byte(in), "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 2 || s.K != 2 || s.Labels[0] != 1 {
		t.Fatalf("%+v", s)
	}
	s, err = Parse("a.jsonl", []byte("{\"logits\":[0,0,0],\"label\":2}\n{\"logits\":[1,0,0],\"label\":2.0}"), "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Logits == nil || math.Abs(s.Probs[0]-1.0/3) > 1e-15 {
		t.Fatalf("logits: %+v", s)
	}
}

// TestErrors checks that each kind of bad input gives the right sentinel and
// a one-line message naming the file, the line or row, and the column.
func TestErrors(t *testing.T) {
	lab3 := writeNPY("<i8", false, "(2,)", []int64{0, 3})
	tests := []struct {
		name, file, content string
		labels              []byte
		opts                Options
		want                error
		msg                 string
	}{
		{"nan", "a.csv", "p0,p1,label\n0.5,0.5,0\nNaN,0.5,1\n", nil, Options{}, ErrNotFinite, "a.csv: line 3, column 1:"},
		{"inf", "a.csv", "0.5,0.5,0\n0.5,inf,1\n", nil, Options{}, ErrNotFinite, "a.csv: line 2, column 2:"},
		{"negative", "a.csv", "0.5,0.5,0\n0.5,-0.5,1\n", nil, Options{}, ErrNegative, "line 2, column 2"},
		{"above one", "a.csv", "1.5,-0.5,1\n", nil, Options{}, ErrAboveOne, "line 1, column 1"},
		{"row sum", "a.csv", "h1,h2,h3\n0.5,0.5,0\n0.5,0.6,1\n", nil, Options{}, ErrRowSum, "a.csv: line 3:"},
		{"label not integer", "a.csv", "0.5,0.5,0.5\n", nil, Options{}, ErrLabel, "line 1, column 3"},
		{"label range", "a.csv", "0.5,0.5,2\n", nil, Options{}, ErrLabel, "outside 0..1"},
		{"label negative", "a.csv", "0.5,0.5,-1\n", nil, Options{}, ErrLabel, "line 1, column 3"},
		{"ragged", "a.csv", "0.5,0.5,0\n0.5,0.5\n", nil, Options{}, ErrRagged, "a.csv: line 2:"},
		{"syntax", "a.csv", "0.5,0.5,0\n0.5,x,1\n", nil, Options{}, ErrSyntax, "line 2, column 2"},
		{"empty", "a.csv", "", nil, Options{}, ErrEmpty, "a.csv: no samples"},
		{"header only", "a.csv", "p0,p1,label\n", nil, Options{}, ErrEmpty, "a.csv"},
		{"one column", "a.csv", "0.5\n0.5\n", nil, Options{}, ErrShape, "need prediction columns and a label column"},
		{"length", "a.csv", "0.5,0.5\n0.4,0.6\n0.1,0.9\n", lab3, Options{}, ErrLength, "3 prediction rows, 2 labels"},
		{"label file range", "a.csv", "0.5,0.5\n0.4,0.6\n", lab3, Options{}, ErrLabel, "l.npy: row 2, column 1"},
		{"jsonl ragged", "a.jsonl", "{\"probs\":[0.5,0.5],\"label\":0}\n{\"probs\":[1],\"label\":0}\n", nil, Options{}, ErrRagged, "a.jsonl: line 2"},
		{"jsonl no label", "a.jsonl", "{\"probs\":[0.5,0.5]}\n", nil, Options{}, ErrLabel, "line 1"},
		{"jsonl syntax", "a.jsonl", "{\"probs\":[0.5,0.5],\"label\":0\n", nil, Options{}, ErrSyntax, "line 1"},
		{"jsonl mixed", "a.jsonl", "{\"probs\":[0.5,0.5],\"label\":0}\n{\"logits\":[0.5,0.5],\"label\":0}\n", nil, Options{}, ErrSyntax, "line 2"},
		{"npy no labels", "a.npy", string(writeNPY("<f8", false, "(1, 2)", []float64{0.5, 0.5})), nil, Options{}, ErrLabel, "give a labels file"},
		{"npy 3d", "a.npy", string(writeNPY("<f8", false, "(1, 1, 2)", []float64{0.5, 0.5})), lab3, Options{}, ErrShape, "3-dimensional"},
		{"npy truncated", "a.npy", string(writeNPY("<f8", false, "(2, 2)", []float64{0.5, 0.5})), lab3, Options{}, ErrFormat, "needs 32 data bytes"},
		{"npy dtype", "a.npy", string(writeNPY("<c16", false, "(1,)", []float64{0.5, 0.5})), lab3, Options{}, ErrFormat, "dtype"},
		{"npy int preds", "a.npy", string(writeNPY("<i8", false, "(2,)", []int64{0, 1})), lab3, Options{}, ErrFormat, "float32 or float64"},
		{"not npy", "a.npy", "hello world, this is not numpy", lab3, Options{}, ErrFormat, "bad magic"},
		{"format", "a.xyz", "0.5,0.5,0\n", nil, Options{}, ErrFormat, "--format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file, []byte(tc.content), "l.npy", tc.labels, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("%v is not a *data.Error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) || strings.Contains(msg, "\n") {
				t.Errorf("message %q does not contain %q on one line", msg, tc.msg)
			}
		})
	}
}

func TestRenormalize(t *testing.T) {
	in := "0.5,0.6,1\n0.2,0.8,0\n"
	if _, err := Parse("a.csv", []byte(in), "", nil, Options{}); !errors.Is(err, ErrRowSum) {
		t.Fatalf("got %v", err)
	}
	s, err := Parse("a.csv", []byte(in), "", nil, Options{Renormalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Renormalized != 1 || math.Abs(s.Probs[0]-0.5/1.1) > 1e-16 || s.Probs[2] != 0.2 {
		t.Fatalf("%+v", s)
	}
	// Within the tolerance nothing changes.
	s, err = Parse("a.csv", []byte("0.5,0.5000001,1\n"), "", nil, Options{Tolerance: 1e-6})
	if err != nil || s.Renormalized != 0 {
		t.Fatalf("%v %+v", err, s)
	}
}

// TestByteOrderMark checks that a leading UTF-8 BOM does not turn the first
// data row into a header (CSV) or a syntax error (JSON Lines).
func TestByteOrderMark(t *testing.T) {
	s, err := Parse("a.csv", []byte("\xef\xbb\xbf0.5,0.5,1\n0.2,0.8,0\n"), "", nil, Options{})
	if err != nil || s.N != 2 {
		t.Fatalf("CSV with BOM: %v %+v", err, s)
	}
	s, err = Parse("a.jsonl", []byte("\xef\xbb\xbf{\"probs\":[0.5,0.5],\"label\":1}\n"), "", nil, Options{})
	if err != nil || s.N != 1 {
		t.Fatalf("JSONL with BOM: %v %+v", err, s)
	}
}

func TestBinaryCSV(t *testing.T) {
	s, err := Parse("b.csv", []byte("p,label\n0.3,1\n0.9,0\n"), "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Binary || s.K != 2 || s.Probs[0] != 0.7 || s.Probs[1] != 0.3 {
		t.Fatalf("%+v", s)
	}
}

func TestLabelsTextFile(t *testing.T) {
	dir := t.TempDir()
	p, l := filepath.Join(dir, "p.csv"), filepath.Join(dir, "y.txt")
	os.WriteFile(p, []byte("0.1,0.9\n0.6,0.4\n"), 0o644)
	os.WriteFile(l, []byte("label\n1\n0\n"), 0o644)
	s, err := Load(p, Options{Labels: l})
	if err != nil {
		t.Fatal(err)
	}
	if s.K != 2 || s.Labels[0] != 1 || s.Labels[1] != 0 {
		t.Fatalf("%+v", s)
	}
	if _, err := Load(filepath.Join(dir, "missing.csv"), Options{}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestLogitsHint: predictions read as probabilities that look like logits
// (an entry below -0.01 or above 1, or entries in [0, 1] whose row sum is
// off 1 by more than 0.1) get the hint "(logits? use --logits)"; a
// rounding-sized negative entry and a row sum off by 0.05 do not.
func TestLogitsHint(t *testing.T) {
	const hint = "(logits? use --logits)"
	npy := func(vals ...float64) []byte { return writeNPY("<f8", false, fmt.Sprintf("(1, %d)", len(vals)), vals) }
	lab := writeNPY("<i8", false, "(1,)", []int64{0})
	for _, c := range []struct {
		name    string
		file    []byte
		want    error
		hinted  bool
		message string
	}{
		{"negative logit", npy(0.5, -1.3, 0.2), ErrNegative, true, "row 1, column 2: negative probability: -1.3"},
		{"above one", npy(2.5, 1.3, 0.2), ErrAboveOne, true, "row 1, column 1: probability above 1: 2.5"},
		{"rounding negative", npy(1, -1e-9, 0), ErrNegative, false, "negative probability: -1e-09"},
		{"logits in [0, 1]", npy(0.9, 0.8, 0.6), ErrRowSum, true, "columns 1-3 sum to 2.3"},
		{"sigmoid outputs", npy(0.3, 0.2, 0.1), ErrRowSum, true, "columns 1-3 sum to 0.59"},
		{"near 1", npy(0.5, 0.3, 0.25), ErrRowSum, false, "sum to 1.05"},
	} {
		_, err := Parse("p.npy", c.file, "l.npy", lab, Options{})
		if !errors.Is(err, c.want) || strings.Contains(fmt.Sprint(err), hint) != c.hinted || !strings.Contains(fmt.Sprint(err), c.message) {
			t.Errorf("%s: error %v; want %v containing %q, the hint %v", c.name, err, c.want, c.message, c.hinted)
		}
	}
}
