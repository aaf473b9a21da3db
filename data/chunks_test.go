package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readChunks reads name in chunks of rows rows and joins them; it checks
// Offset, the chunk sizes and that the end is io.EOF for good.
func readChunks(t *testing.T, name string, opts Options, rows int) (*Set, error) {
	t.Helper()
	c, err := OpenChunks(name, opts, rows)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var all *Set
	var done int64
	for {
		s, err := c.Next()
		if err == io.EOF {
			if _, err := c.Next(); err != io.EOF {
				t.Fatalf("Next after io.EOF: %v", err)
			}
			if c.BytesRead() != c.Size() && FormatOf(name) != "parquet" {
				t.Errorf("BytesRead %d, Size %d", c.BytesRead(), c.Size())
			}
			return all, nil
		}
		if err != nil {
			return nil, err
		}
		// A chunk's weights may be all zero; the rest is as Load's.
		noW := *s
		noW.Weights = nil
		checkSetLabels(t, &noW, nil, false)
		if s.Weights != nil && (len(s.Weights) != s.N || slices.ContainsFunc(s.Weights, func(w float64) bool { return !(w >= 0 && w <= math.MaxFloat64) })) {
			t.Fatalf("chunk weights %v", s.Weights)
		}
		if s.N > rows {
			t.Fatalf("chunk of %d rows, asked for %d", s.N, rows)
		}
		if c.Offset() != done {
			t.Fatalf("Offset %d, want %d", c.Offset(), done)
		}
		done += int64(s.N)
		if all == nil {
			all = s
			// Copy, so that appending never writes into a chunk.
			all.Probs = slices.Clone(s.Probs)
			all.Labels = slices.Clone(s.Labels)
			all.Logits = slices.Clone(s.Logits)
			all.Weights = slices.Clone(s.Weights)
			continue
		}
		if s.K != all.K || s.Binary != all.Binary || (s.Labels == nil) != (all.Labels == nil) || (s.Logits == nil) != (all.Logits == nil) || (s.Weights == nil) != (all.Weights == nil) {
			t.Fatalf("chunk at %d differs in kind from the first: K %d/%d", c.Offset(), s.K, all.K)
		}
		all.N += s.N
		all.Probs = append(all.Probs, s.Probs...)
		all.Labels = append(all.Labels, s.Labels...)
		all.Logits = append(all.Logits, s.Logits...)
		all.Weights = append(all.Weights, s.Weights...)
		all.Renormalized += s.Renormalized
		all.Rounded += s.Rounded
	}
}

// equalBits reports whether two float slices hold the same bits (nil and
// empty differ).
func equalBits(a, b []float64) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// matchSet fails the test unless got and want are the same set, bit for bit.
func matchSet(t *testing.T, got, want *Set) {
	t.Helper()
	switch {
	case got.N != want.N || got.K != want.K || got.Binary != want.Binary || got.File != want.File:
		t.Fatalf("N, K, Binary, File = %d %d %v %q, want %d %d %v %q", got.N, got.K, got.Binary, got.File, want.N, want.K, want.Binary, want.File)
	case !equalBits(got.Probs, want.Probs):
		t.Fatal("Probs differ")
	case !equalBits(got.Logits, want.Logits):
		t.Fatal("Logits differ")
	case !equalBits(got.Weights, want.Weights):
		t.Fatalf("Weights differ: %d and %d", len(got.Weights), len(want.Weights))
	case (got.Labels == nil) != (want.Labels == nil) || !slices.Equal(got.Labels, want.Labels):
		t.Fatal("Labels differ")
	case got.Renormalized != want.Renormalized || got.Rounded != want.Rounded:
		t.Fatalf("Renormalized, Rounded = %d %d, want %d %d", got.Renormalized, got.Rounded, want.Renormalized, want.Rounded)
	}
}

// checkChunksMatchLoad reads name whole with Load and in chunks of 1, 7
// and 1,000 rows, and checks that the chunks join to Load's set.
func checkChunksMatchLoad(t *testing.T, name string, opts Options) *Set {
	t.Helper()
	want, err := Load(name, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	for _, rows := range []int{1, 7, 1000} {
		got, err := readChunks(t, name, opts, rows)
		if err != nil {
			t.Fatalf("rows %d: %v", rows, err)
		}
		matchSet(t, got, want)
	}
	return want
}

// writeTemp writes b to the file name in a new temporary directory and
// returns its path.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// goldenSet reads a golden CSV set of the repository (real values with
// full float64 digits, a header and a label column).
func goldenSet(t *testing.T, name string) *Set {
	t.Helper()
	s, err := Load(filepath.Join("../testdata/golden/ecekde", name), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestChunksMatchLoadCSV: the golden CSV files, and variants of one (no
// header with the label column found by content, a weight column, tabs,
// a labels file, rounded rows, binary, logits), read in chunks of 1, 7 and
// 1,000 rows join to what Load returns, bit for bit.
func TestChunksMatchLoadCSV(t *testing.T) {
	files, err := filepath.Glob("../testdata/golden/ecekde/*.csv")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { checkChunksMatchLoad(t, f, Options{}) })
	}
	s := goldenSet(t, "c04_n1000_k10.csv")
	var noHeader, weighted, tabs, labels, rounded, binary, logits bytes.Buffer
	fmt.Fprintln(&weighted, "p0,p1,p2,p3,p4,p5,weight,p6,p7,p8,p9,label")
	fmt.Fprintln(&binary, "p1,label")
	for i := range s.N {
		row := s.Row(i)
		f := func(sep string, vs []float64) string {
			parts := make([]string, len(vs))
			for k, v := range vs {
				parts[k] = fmt.Sprint(v)
			}
			return strings.Join(parts, sep)
		}
		fmt.Fprintf(&noHeader, "%s,%d\n", f(",", row), s.Labels[i])
		fmt.Fprintf(&weighted, "%s,%d,%s,%d\n", f(",", row[:6]), i%3, f(",", row[6:]), s.Labels[i])
		fmt.Fprintf(&tabs, "%s\t%d\n", f("\t", row), s.Labels[i])
		fmt.Fprintf(&labels, "%d\n", s.Labels[i])
		r := make([]string, len(row))
		for k, v := range row {
			r[k] = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(&rounded, "%s,%d\n", strings.Join(r, ","), s.Labels[i])
		fmt.Fprintf(&binary, "%v,%d\n", row[1]/(row[0]+row[1]), s.Labels[i]%2)
		fmt.Fprintf(&logits, "%s,%d\n", f(",", []float64{math.Log(row[0]), math.Log(row[1]), float64(i%5) - 2}), s.Labels[i]%3)
	}
	dir := t.TempDir()
	write := func(name string, b *bytes.Buffer) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lf := write("labels.txt", &labels)
	for _, c := range []struct {
		name string
		b    *bytes.Buffer
		opts Options
	}{
		{"noheader.csv", &noHeader, Options{}},
		{"noheader-unlabeled.csv", &noHeader, Options{Unlabeled: true}},
		{"noheader-labelsfile.csv", &noHeader, Options{Labels: lf}},
		{"weighted.csv", &weighted, Options{}},
		{"tabs.tsv", &tabs, Options{}},
		{"rounded.csv", &rounded, Options{}},
		{"binary.csv", &binary, Options{}},
		{"logits.csv", &logits, Options{Logits: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := checkChunksMatchLoad(t, write(c.name, c.b), c.opts)
			switch c.name {
			case "noheader.csv", "noheader-unlabeled.csv", "noheader-labelsfile.csv":
				if s.K != 10 || s.Labels == nil {
					t.Fatalf("K %d, labels %v: the label column was not found by content", s.K, s.Labels != nil)
				}
			case "weighted.csv":
				if s.Weights == nil {
					t.Fatal("no weights")
				}
			case "rounded.csv":
				if s.Rounded == 0 {
					t.Fatal("no rounded rows")
				}
			case "binary.csv":
				if !s.Binary {
					t.Fatal("not binary")
				}
			}
		})
	}
	// The text labels file the other way: predictions without labels.
	var preds bytes.Buffer
	for i := range s.N {
		for k, v := range s.Row(i) {
			if k > 0 {
				preds.WriteByte(',')
			}
			fmt.Fprint(&preds, v)
		}
		preds.WriteByte('\n')
	}
	checkChunksMatchLoad(t, write("preds.csv", &preds), Options{Labels: lf, Weights: write("w.txt", bytes.NewBufferString(strings.Repeat("0.5\n", s.N)))})
}

// TestChunksLabelWindow: a CSV file without a header whose label column is
// found by content is decided on the first window of rows; past the window
// the rows keep that layout, and with every row labelled alike the chunks
// still join to Load's set.
func TestChunksLabelWindow(t *testing.T) {
	s := goldenSet(t, "c04_n1000_k10.csv")
	var b bytes.Buffer
	for i := range s.N {
		fmt.Fprintf(&b, "%s,%d\n", strings.Trim(jsonFloats(s.Row(i)), "[]"), s.Labels[i])
	}
	name := writeTemp(t, "w.csv", b.Bytes())
	want, err := Load(name, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range []int{1, 7, 50, 64} {
		c, err := OpenChunks(name, Options{}, rows)
		if err != nil {
			t.Fatal(err)
		}
		c.src.(*csvSource).window = 50
		got, err := readAllChunks(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		matchSet(t, got, want)
	}
}

// TestChunksMatchLoadJSONL: JSON Lines made from a golden set (probs,
// logits, weights, labels optional) in chunks join to what Load returns.
func TestChunksMatchLoadJSONL(t *testing.T) {
	s := goldenSet(t, "c11_n400_k5_near_faces.csv")
	var probs, logits, weighted, unlabeled, some, labels bytes.Buffer
	for i := range s.N {
		if i%50 == 0 {
			fmt.Fprintf(&some, "{\"probs\": %s, \"label\": %d}\n", jsonFloats(s.Row(i)), s.Labels[i])
		} else {
			fmt.Fprintf(&some, "{\"probs\": %s}\n", jsonFloats(s.Row(i)))
		}
		fmt.Fprintln(&labels, s.Labels[i])
		row := s.Row(i)
		fmt.Fprintf(&probs, "{\"probs\": %s, \"label\": %d}\n\n", jsonFloats(row), s.Labels[i])
		z := make([]float64, len(row))
		for k, v := range row {
			z[k] = math.Log(v + 1e-9)
		}
		fmt.Fprintf(&logits, "{\"logits\":%s,\"label\":\"%d\",\"id\":%d}\n", jsonFloats(z), s.Labels[i], i)
		fmt.Fprintf(&weighted, "{\"probs\":%s,\"label\":%d,\"weight\":%d}\n", jsonFloats(row), s.Labels[i], i%4)
		fmt.Fprintf(&unlabeled, "{\"probs\":%s}\n", jsonFloats(row))
	}
	for _, c := range []struct {
		name string
		b    []byte
		opts Options
	}{
		{"probs.jsonl", probs.Bytes(), Options{}},
		{"logits.jsonl", logits.Bytes(), Options{}},
		{"weighted.jsonl", weighted.Bytes(), Options{}},
		{"unlabeled.jsonl", unlabeled.Bytes(), Options{Unlabeled: true}},
		{"labelled-optional.jsonl", probs.Bytes(), Options{Unlabeled: true}},
		{"some-labels-and-file.jsonl", some.Bytes(), Options{Labels: writeTemp(t, "y.txt", labels.Bytes())}},
	} {
		t.Run(c.name, func(t *testing.T) { checkChunksMatchLoad(t, writeTemp(t, c.name, c.b), c.opts) })
	}
}

func jsonFloats(vs []float64) string {
	parts := make([]string, len(vs))
	for k, v := range vs {
		parts[k] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestChunksMatchLoadNPY: the real CIFAR-10 logits (float32) with their
// int64 labels, and the same labels and weights as text, in chunks join to
// what Load returns.
func TestChunksMatchLoadNPY(t *testing.T) {
	preds := filepath.Join(demoDir, "val_logits.npy")
	labels := filepath.Join(demoDir, "val_labels.npy")
	s := checkChunksMatchLoad(t, preds, Options{Logits: true, Labels: labels})
	if s.N < 1000 {
		t.Fatalf("only %d rows", s.N)
	}
	var lt, wt bytes.Buffer
	fmt.Fprintln(&lt, "label")
	for i, y := range s.Labels {
		fmt.Fprintln(&lt, y)
		fmt.Fprintln(&wt, float64(i%7)/2)
	}
	var wn bytes.Buffer
	w := make([]float64, s.N)
	for i := range w {
		w[i] = float64(i % 3)
	}
	if err := WriteNPY(&wn, w, 1); err != nil {
		t.Fatal(err)
	}
	checkChunksMatchLoad(t, preds, Options{Logits: true, Labels: writeTemp(t, "labels.csv", lt.Bytes()), Weights: writeTemp(t, "w.txt", wt.Bytes())})
	checkChunksMatchLoad(t, preds, Options{Logits: true, Labels: labels, Weights: writeTemp(t, "w.npy", wn.Bytes())})
	checkChunksMatchLoad(t, preds, Options{Logits: true, Unlabeled: true})
	// Probabilities, float64, binary (one column).
	var pb bytes.Buffer
	if err := WriteNPY(&pb, s.Column(3), 1); err != nil {
		t.Fatal(err)
	}
	bl := make([]float64, s.N)
	for i, y := range s.Labels {
		bl[i] = float64(min(y, 1))
	}
	var lb bytes.Buffer
	if err := WriteNPY(&lb, bl, 1); err != nil {
		t.Fatal(err)
	}
	b := checkChunksMatchLoad(t, writeTemp(t, "p1.npy", pb.Bytes()), Options{Labels: writeTemp(t, "y.npy", lb.Bytes())})
	if !b.Binary {
		t.Fatal("not binary")
	}
}

// TestChunksErrorLines: a bad value late in a file is reported at its real
// line (text) or row (arrays), whatever the chunk size.
func TestChunksErrorLines(t *testing.T) {
	var csv, jsonl bytes.Buffer
	fmt.Fprintln(&csv, "p0,p1,label")
	fmt.Fprintln(&jsonl) // blank: the rows start on line 2 as in the CSV file
	for line := 2; line <= 3000; line++ {
		if line == 2503 {
			fmt.Fprintln(&csv, "0.5,x,1")
			fmt.Fprintln(&jsonl, `{"probs": [0.5, -0.5], "label": 1}`)
			continue
		}
		fmt.Fprintln(&csv, "0.25,0.75,1")
		fmt.Fprintln(&jsonl, `{"probs": [0.25, 0.75], "label": 1}`)
	}
	vals := make([]float64, 2*3000)
	for i := range 3000 {
		vals[2*i], vals[2*i+1] = 0.25, 0.75
	}
	vals[2*2502+1] = 1.5 // row 2503
	var npy, labels bytes.Buffer
	if err := WriteNPY(&npy, vals, 2); err != nil {
		t.Fatal(err)
	}
	if err := WriteNPY(&labels, make([]float64, 3000), 1); err != nil {
		t.Fatal(err)
	}
	var pq bytes.Buffer
	if err := WriteParquet(&pq, vals, 2, make([]int, 3000), nil, ParquetWriteOptions{RowGroupRows: 128}); err != nil {
		t.Fatal(err)
	}
	lf := writeTemp(t, "y.npy", labels.Bytes())
	for _, c := range []struct {
		name      string
		b         []byte
		opts      Options
		line, row int
		col       int
		is        error
	}{
		{"bad.csv", csv.Bytes(), Options{}, 2503, 0, 2, ErrSyntax},
		{"bad.jsonl", jsonl.Bytes(), Options{}, 2503, 0, 2, ErrNegative},
		{"bad.npy", npy.Bytes(), Options{Labels: lf}, 0, 2503, 2, ErrAboveOne},
		{"bad.parquet", pq.Bytes(), Options{}, 0, 2503, 2, ErrAboveOne},
	} {
		name := writeTemp(t, c.name, c.b)
		_, lerr := Load(name, c.opts)
		for _, rows := range []int{1, 100, 1000} {
			_, err := readChunks(t, name, c.opts, rows)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, c.is) || e.Line != c.line || e.Row != c.row || e.Column != c.col {
				t.Fatalf("%s, rows %d: %v, want line %d, row %d, column %d: %v", c.name, rows, err, c.line, c.row, c.col, c.is)
			}
			if err.Error() != lerr.Error() {
				t.Errorf("%s: Chunks says %q, Load %q", c.name, err, lerr)
			}
		}
	}
}

// TestChunksErrors: what only streaming can find, and the refusals.
func TestChunksErrors(t *testing.T) {
	var short, long bytes.Buffer
	if err := WriteNPY(&short, make([]float64, 9), 1); err != nil {
		t.Fatal(err)
	}
	if err := WriteNPY(&long, make([]float64, 11), 1); err != nil {
		t.Fatal(err)
	}
	preds := filepath.Join(demoDir, "val_logits.npy")
	csv10 := writeTemp(t, "p.csv", []byte(strings.Repeat("0.5,0.5\n", 10)))
	for _, c := range []struct {
		name string
		file string
		opts Options
		is   error
		msg  string
	}{
		{"npz", writeTemp(t, "a.npz", []byte("PK")), Options{}, ErrFormat, "cannot be streamed"},
		{"npy-lengths", preds, Options{Logits: true, Labels: writeTemp(t, "y.npy", short.Bytes())}, ErrLength, "labels"},
		{"npy-no-labels", preds, Options{Logits: true}, ErrNoLabels, "labels file"},
		{"text-labels-short", csv10, Options{Labels: writeTemp(t, "y.txt", []byte(strings.Repeat("1\n", 9)))}, ErrLength, "ends after 9 labels"},
		{"text-labels-long", csv10, Options{Labels: writeTemp(t, "y.txt", []byte(strings.Repeat("1\n", 11)))}, ErrLength, "more labels"},
		{"npy-labels-long", csv10, Options{Labels: writeTemp(t, "y.npy", long.Bytes())}, ErrLength, "more labels"},
		{"weights-short", csv10, Options{Unlabeled: true, Weights: writeTemp(t, "w.txt", []byte(strings.Repeat("1\n", 9)))}, ErrWeights, "9 weights"},
		{"weights-long", csv10, Options{Unlabeled: true, Weights: writeTemp(t, "w.txt", []byte(strings.Repeat("1\n", 12)))}, ErrWeights, "more weights"},
		{"weights-zero", csv10, Options{Unlabeled: true, Weights: writeTemp(t, "w.txt", []byte(strings.Repeat("0\n", 10)))}, ErrWeights, "all 10 weights are zero"},
		{"ragged", writeTemp(t, "r.csv", []byte(strings.Repeat("0.5,0.5,1\n", 10)+"0.2,0.3,0.5,1\n")), Options{}, ErrRagged, "the first row has 3"},
		{"jsonl-label-dropped", writeTemp(t, "l.jsonl", []byte("{\"probs\":[1,0],\"label\":0}\n{\"probs\":[1,0]}\n")), Options{Unlabeled: true}, ErrNoLabels, "line 1 has one"},
		{"empty", writeTemp(t, "e.csv", []byte("p0,p1,label\n")), Options{}, ErrEmpty, ""},
	} {
		_, err := readChunks(t, c.file, c.opts, 3)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.is, c.msg)
		}
		if _, ok := err.(*Error); !ok {
			t.Errorf("%s: %T is not an *Error", c.name, err)
		}
	}
	// Zero weights in one chunk are fine when others are positive.
	s, err := readChunks(t, csv10, Options{Unlabeled: true, Weights: writeTemp(t, "w.txt", []byte(strings.Repeat("0\n", 9)+"1\n"))}, 3)
	if err != nil || s.N != 10 {
		t.Fatal(s, err)
	}
	if _, err := OpenChunks(filepath.Join(t.TempDir(), "missing.csv"), Options{}, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	// Next after Close fails, and the default chunk size applies.
	whole, err := Load(preds, Options{Logits: true, Unlabeled: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenChunks(preds, Options{Logits: true, Unlabeled: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Next(); err != nil || s.N != min(autoFirstRows, whole.N) {
		t.Fatal(s, err)
	}
	c.Close()
	if _, err := c.Next(); err == nil || err == io.EOF {
		t.Fatalf("Next after Close: %v", err)
	}
}

// TestShards: a file, a glob, a directory (sorted, hidden and unknown files
// left out, not recursive) and the errors.
func TestShards(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.csv", "a.npy", "c.parquet", ".hidden.csv", "notes.md", "sub/d.csv"} {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(ns ...string) []string {
		for i, n := range ns {
			ns[i] = filepath.Join(dir, n)
		}
		return ns
	}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{filepath.Join(dir, "b.csv"), j("b.csv")},
		{dir, j("a.npy", "b.csv", "c.parquet")},
		{filepath.Join(dir, "*.csv"), j(".hidden.csv", "b.csv")},
		{filepath.Join(dir, "[a-b]*"), j("a.npy", "b.csv")},
		{filepath.Join(dir, "*"), j(".hidden.csv", "a.npy", "b.csv", "c.parquet", "notes.md")},
	} {
		got, err := Shards(c.pattern)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Shards(%q) = %q, %v; want %q", c.pattern, got, err, c.want)
		}
	}
	for _, p := range []string{filepath.Join(dir, "*.jsonl"), filepath.Join(dir, "nope.csv"), filepath.Join(dir, "sub", "x"), filepath.Join(dir, "[")} {
		_, err := Shards(p)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrRead) || e.File != p {
			t.Errorf("Shards(%q): %v", p, err)
		}
	}
	if _, err := Shards(filepath.Join(dir, "nope.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no match: %v", err)
	}
	empty := filepath.Join(dir, "sub2")
	os.Mkdir(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "x.md"), nil, 0o644)
	if _, err := Shards(empty); !errors.Is(err, ErrRead) || !strings.Contains(err.Error(), "no prediction files") {
		t.Errorf("empty directory: %v", err)
	}
}

// FuzzChunksCSV: CSV read in chunks never panics, errors are *Error, and
// a file that Load reads and whose layout does not depend on its content
// (a header) joins to Load's set.
func FuzzChunksCSV(f *testing.F) {
	f.Add([]byte("p0,p1,label\n0.3,0.7,1\n0.9,0.1,0\n"), uint8(1))
	f.Add([]byte("0.5,0.5,0\n0.5,0.5\n"), uint8(2))
	f.Add([]byte("0.5\t0.5\t1\n0.25\t0.75\t0\n"), uint8(1))
	f.Add([]byte("weight,p0,p1,label\n2,0.25,0.75,1\n0,0.5,0.5,0\n0,1,0,0\n"), uint8(1))
	f.Add([]byte("p,label\n0.3,1\n\"0.9\",0\n0.1,\"1\n"), uint8(3))
	f.Add([]byte("0.333,0.333,0.333,2\n0.5,0.5,0,1\n0.2,0.8,0,1\n"), uint8(1))
	f.Add([]byte("\xef\xbb\xbfp0,p1,y\n1,0,0\n0,1,1\n"), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, rows uint8) {
		name := filepath.Join(t.TempDir(), "f.csv")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{}, {Unlabeled: true, Renormalize: true}, {Logits: true}} {
			got, err := readChunks(t, name, opts, int(rows%8)+1)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T %v is not a *data.Error", err, err)
				}
				continue
			}
			if got != nil && isHeader(firstRecord(b)) {
				want, err := Load(name, opts)
				if err != nil {
					t.Fatalf("chunks read it, Load says %v", err)
				}
				matchSet(t, got, want)
			}
		}
	})
}

// firstRecord returns the fields of the first line of b, split at commas
// (enough to tell a header for FuzzChunksCSV).
func firstRecord(b []byte) []string {
	line, _, _ := bytes.Cut(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), []byte("\n"))
	if bytes.ContainsAny(line, "\"\t\r") {
		return nil
	}
	return strings.Split(string(line), ",")
}

// TestChunkAutoRows: with rows <= 0 the first chunk has autoFirstRows rows
// and the next about DefaultChunkBytes of predictions (2^17 / K rows,
// within autoFirstRows..DefaultChunkRows), and the chunks hold every row
// once, in order.
func TestChunkAutoRows(t *testing.T) {
	for k, want := range map[int]int{1: DefaultChunkRows, 2: DefaultChunkRows, 10: 13107, 100: 1310, 1000: autoFirstRows} {
		if got := autoRows(k); got != want {
			t.Errorf("autoRows(%d) = %d, want %d", k, got, want)
		}
	}
	const n, k = 30000, 10
	var b strings.Builder
	for i := range n {
		for m := range k {
			v := 0.01
			if m == i%k {
				v = 0.91
			}
			fmt.Fprintf(&b, "%g,", v)
		}
		fmt.Fprintf(&b, "%d\n", i%k)
	}
	name := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenChunks(name, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var sizes []int
	total := 0
	for {
		s, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.Labels[0] != total%k {
			t.Fatalf("chunk at row %d starts with label %d", total, s.Labels[0])
		}
		sizes = append(sizes, s.N)
		total += s.N
	}
	if want := []int{1024, 13107, 13107, n - 1024 - 2*13107}; !slices.Equal(sizes, want) {
		t.Errorf("chunk sizes %v, want %v", sizes, want)
	}
}
