package data

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// writeGeneric writes rows with parquet-go's generic writer (the layouts
// other tools write) and returns the file's bytes.
func writeGeneric[T any](t testing.TB, rows []T, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[T](&b, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// demoSet reads the real CIFAR-10 validation logits as probabilities.
func demoSet(t testing.TB) *Set {
	t.Helper()
	s, err := Load(filepath.Join(demoDir, "val_logits.npy"), Options{Logits: true, Labels: filepath.Join(demoDir, "val_labels.npy")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParquetRoundTrip: the real CIFAR-10 probabilities, labels and
// weights written by WriteParquet (several row groups) are read back by
// Load bit for bit, and in chunks of 1, 7 and 1,000 rows as Load reads
// them.
func TestParquetRoundTrip(t *testing.T) {
	s := demoSet(t)
	w := make([]float64, s.N)
	for i := range w {
		w[i] = float64(i%5) / 4
	}
	for _, c := range []struct {
		labels  []int
		weights []float64
		opts    Options
	}{
		{s.Labels, w, Options{}},
		{s.Labels, nil, Options{}},
		{nil, nil, Options{Unlabeled: true}},
	} {
		var b bytes.Buffer
		if err := WriteParquet(&b, s.Probs, s.K, c.labels, c.weights, ParquetWriteOptions{RowGroupRows: 777}); err != nil {
			t.Fatal(err)
		}
		name := writeTemp(t, "set.parquet", b.Bytes())
		got := checkChunksMatchLoad(t, name, c.opts)
		want := &Set{N: s.N, K: s.K, Probs: s.Probs, Labels: c.labels, Weights: c.weights, File: name}
		matchSet(t, got, want)
		// Parse reads the same bytes the same way.
		p, err := Parse(name, b.Bytes(), "", nil, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		matchSet(t, p, got)
	}
	// Binary (k = 1) with a labels file.
	var b bytes.Buffer
	p1 := s.Column(1)
	y := make([]int, s.N)
	var lt strings.Builder
	for i := range y {
		y[i] = min(s.Labels[i], 1)
		lt.WriteString(string(rune('0' + y[i])))
		lt.WriteByte('\n')
	}
	if err := WriteParquet(&b, p1, 1, nil, nil, ParquetWriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := checkChunksMatchLoad(t, writeTemp(t, "p1.parquet", b.Bytes()), Options{Labels: writeTemp(t, "y.txt", []byte(lt.String()))})
	if !got.Binary || !slices.Equal(got.Labels, y) || !equalBits(got.Column(1), p1) {
		t.Fatal("binary set differs")
	}
}

// TestParquetLayouts: per-class columns, float32 lists, logits, a
// dictionary-encoded label column, custom names and optional columns.
func TestParquetLayouts(t *testing.T) {
	s := demoSet(t)
	n := 300
	type perClass struct {
		Label  int32   `parquet:"label,dict"`
		P0     float64 `parquet:"p0"`
		P1     float64 `parquet:"p1"`
		P2     float64 `parquet:"p2"`
		ID     string  `parquet:"id"`
		Weight float32 `parquet:"weight"`
	}
	type float32List struct {
		Probs []float32 `parquet:"probs,list"`
		Label int64     `parquet:"label"`
	}
	type logitsList struct {
		Logits []float64 `parquet:"logits,list"`
		Label  *int64    `parquet:"label,optional"`
	}
	type custom struct {
		Scores []float64 `parquet:"scores,list"`
		Y      uint8     `parquet:"y"`
		W      int64     `parquet:"w"`
	}
	type logitCols struct {
		Logit0 float64 `parquet:"logit0"`
		Logit1 float64 `parquet:"logit1"`
		Label  bool    `parquet:"label"`
	}
	var pc []perClass
	var fl []float32List
	var ll []logitsList
	var cu []custom
	var lc []logitCols
	var want3, wantF32, wantZ, wantW, wantZ2 []float64
	var y3, y10, y2 []int
	for i := range n {
		row := s.Row(i)
		sum := row[0] + row[1] + row[2]
		p := []float64{row[0] / sum, row[1] / sum, 1 - row[0]/sum - row[1]/sum}
		pc = append(pc, perClass{Label: int32(s.Labels[i] % 3), P0: p[0], P1: p[1], P2: p[2], ID: "x", Weight: float32(i % 2)})
		want3 = append(want3, p...)
		y3 = append(y3, s.Labels[i]%3)
		wantW = append(wantW, float64(i%2))
		f32 := make([]float32, s.K)
		for k, v := range row {
			f32[k] = float32(v)
			wantF32 = append(wantF32, float64(f32[k]))
		}
		fl = append(fl, float32List{Probs: f32, Label: int64(s.Labels[i])})
		y10 = append(y10, s.Labels[i])
		z := make([]float64, s.K)
		for k, v := range row {
			z[k] = math.Log(v)
		}
		wantZ = append(wantZ, z...)
		lab := int64(s.Labels[i])
		ll = append(ll, logitsList{Logits: z, Label: &lab})
		cu = append(cu, custom{Scores: row, Y: uint8(s.Labels[i]), W: int64(i%3 + 1)})
		lc = append(lc, logitCols{Logit0: z[0], Logit1: z[1], Label: s.Labels[i]%2 == 1})
		wantZ2 = append(wantZ2, z[0], z[1])
		y2 = append(y2, s.Labels[i]%2)
	}
	tol := Options{Tolerance: 1e-6}
	// float32 sums are off by up to K float32 roundings: renormalise.
	f32 := Options{Renormalize: true}
	cases := []struct {
		name   string
		b      []byte
		opts   Options
		check  func(*Set) bool
		logits bool
	}{
		{"perclass", writeGeneric(t, pc, parquet.MaxRowsPerRowGroup(50)), tol, func(got *Set) bool {
			return got.K == 3 && equalBits(got.Probs, want3) && slices.Equal(got.Labels, y3) && equalBits(got.Weights, wantW)
		}, false},
		{"float32", writeGeneric(t, fl, parquet.MaxRowsPerRowGroup(64)), f32, func(got *Set) bool {
			want, err := New(slices.Clone(wantF32), s.K, y10, false, f32)
			return err == nil && got.K == s.K && equalBits(got.Probs, want.Probs) && slices.Equal(got.Labels, y10)
		}, false},
		{"logits", writeGeneric(t, ll), Options{}, func(got *Set) bool {
			return equalBits(got.Logits, wantZ) && slices.Equal(got.Labels, y10)
		}, true},
		{"custom", writeGeneric(t, cu), Options{Columns: ColumnNames{Probs: "scores", Label: "y", Weight: "w"}}, func(got *Set) bool {
			return equalBits(got.Probs, s.Probs[:n*s.K]) && slices.Equal(got.Labels, y10) && got.Weights[2] == 3
		}, false},
		{"logitcols", writeGeneric(t, lc), Options{}, func(got *Set) bool {
			return got.K == 2 && !got.Binary && equalBits(got.Logits, wantZ2) && slices.Equal(got.Labels, y2)
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkChunksMatchLoad(t, writeTemp(t, c.name+".parquet", c.b), c.opts)
			if got.N != n || !c.check(got) || (got.Logits != nil) != c.logits {
				t.Fatalf("%s: N %d, K %d: wrong values", c.name, got.N, got.K)
			}
		})
	}
}

// TestParquetErrors: missing, wrong and null columns, ragged lists and
// damaged files are *Error values naming the row and column; none panics.
func TestParquetErrors(t *testing.T) {
	type noLabel struct {
		Probs []float64 `parquet:"probs,list"`
	}
	type stringLabel struct {
		Probs []float64 `parquet:"probs,list"`
		Label string    `parquet:"label"`
	}
	type intProbs struct {
		Probs []int64 `parquet:"probs,list"`
		Label int64   `parquet:"label"`
	}
	type nullLabel struct {
		Probs []float64 `parquet:"probs,list"`
		Label *int64    `parquet:"label,optional"`
	}
	type both struct {
		Probs  []float64 `parquet:"probs,list"`
		Logits []float64 `parquet:"logits,list"`
	}
	type nested struct {
		Probs [][]float64 `parquet:"probs,list"`
	}
	one := int64(1)
	good := make([]nullLabel, 200)
	for i := range good {
		good[i] = nullLabel{Probs: []float64{0.5, 0.5}, Label: &one}
	}
	nulls := slices.Clone(good)
	nulls[150].Label = nil
	ragged := slices.Clone(good)
	ragged[120] = nullLabel{Probs: []float64{0.2, 0.3, 0.5}, Label: &one}
	empty := slices.Clone(good)
	empty[99] = nullLabel{Probs: []float64{}, Label: &one}
	bad := slices.Clone(good)
	bad[180] = nullLabel{Probs: []float64{0.5, math.NaN()}, Label: &one}
	label := slices.Clone(good)
	three := int64(3)
	label[7] = nullLabel{Probs: []float64{0.5, 0.5}, Label: &three}
	var zeros bytes.Buffer
	if err := WriteParquet(&zeros, []float64{0.5, 0.5, 1, 0}, 2, []int{0, 1}, []float64{0, 0}, ParquetWriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rg := parquet.MaxRowsPerRowGroup(64)
	for _, c := range []struct {
		name     string
		b        []byte
		opts     Options
		is       error
		row, col int
		msg      string
	}{
		{"nolabel", writeGeneric(t, []noLabel{{[]float64{1, 0}}}), Options{}, ErrNoLabels, 0, 0, `no "label" column`},
		{"string-label", writeGeneric(t, []stringLabel{{[]float64{1, 0}, "0"}}), Options{}, ErrFormat, 0, 2, "byte array"},
		{"int-probs", writeGeneric(t, []intProbs{{[]int64{1, 0}, 0}}), Options{}, ErrFormat, 0, 1, "want float or double"},
		{"both", writeGeneric(t, []both{{[]float64{1, 0}, []float64{1, 0}}}), Options{Unlabeled: true}, ErrFormat, 0, 0, "keep one"},
		{"nested", writeGeneric(t, []nested{{[][]float64{{1, 0}}}}), Options{Unlabeled: true}, ErrFormat, 0, 1, "nested"},
		{"no-preds", writeGeneric(t, []stringLabel{{nil, "0"}})[:0], Options{}, ErrFormat, 0, 0, "not a Parquet file"},
		{"null-label", writeGeneric(t, nulls, rg), Options{}, ErrLabel, 151, 2, "null label"},
		{"ragged", writeGeneric(t, ragged, rg), Options{}, ErrRagged, 121, 1, "the first row has 2"},
		{"empty-list", writeGeneric(t, empty, rg), Options{}, ErrShape, 100, 1, "empty or null"},
		{"nan", writeGeneric(t, bad, rg), Options{}, ErrNotFinite, 181, 2, "NaN"},
		{"label-range", writeGeneric(t, label, rg), Options{}, ErrLabel, 8, 2, "outside 0..1"},
		{"zero-weights", zeros.Bytes(), Options{}, ErrWeights, 0, 0, "all 2 weights are zero"},
		{"npz-like", []byte("PK\x03\x04 not parquet at all"), Options{}, ErrFormat, 0, 0, "not a Parquet file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := writeTemp(t, c.name+".parquet", c.b)
			for _, rows := range []int{0, 1, 7, 1000} {
				var err error
				if rows == 0 {
					_, err = Load(name, c.opts)
				} else {
					_, err = readChunks(t, name, c.opts, rows)
				}
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, c.is) || e.Row != c.row || e.Column != c.col || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("rows %d: %v (row %d, column %d), want %v at row %d, column %d with %q", rows, err, e.Row, e.Column, c.is, c.row, c.col, c.msg)
				}
			}
		})
	}
	// Without a label column, Unlabeled reads the predictions.
	s, err := Parse("x.parquet", writeGeneric(t, []noLabel{{[]float64{1, 0}}}), "", nil, Options{Unlabeled: true})
	if err != nil || s.Labels != nil || s.N != 1 {
		t.Fatal(s, err)
	}
}

// TestParquetDamaged: every truncation and many byte flips of a real file
// give a set or an *Error, never a panic.
func TestParquetDamaged(t *testing.T) {
	s := demoSet(t)
	var b bytes.Buffer
	if err := WriteParquet(&b, s.Probs[:200*s.K], s.K, s.Labels[:200], nil, ParquetWriteOptions{RowGroupRows: 60}); err != nil {
		t.Fatal(err)
	}
	file := b.Bytes()
	check := func(what string, bs []byte) {
		got, err := Parse("d.parquet", bs, "", nil, Options{})
		checkSet(t, got, err)
		if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrNotFinite) && !errors.Is(err, ErrLabel) &&
			!errors.Is(err, ErrNegative) && !errors.Is(err, ErrAboveOne) && !errors.Is(err, ErrRowSum) && !errors.Is(err, ErrShape) &&
			!errors.Is(err, ErrRagged) && !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrNoLabels) && !errors.Is(err, ErrRead) {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
	}
	for n := 0; n < len(file); n += max(1, len(file)/300) {
		check("truncated", file[:n])
	}
	for i := 0; i < len(file); i += 7 {
		d := slices.Clone(file)
		d[i] ^= 0x5a
		check("flipped", d)
	}
	// A file whose end is cut is refused with a clear message.
	_, err := Load(writeTemp(t, "cut.parquet", file[:len(file)-100]), Options{})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "Parquet") {
		t.Fatalf("truncated file: %v", err)
	}
}

// FuzzParquet: Parse (in memory, as Load through Chunks) never panics on
// any bytes, and a set it returns is valid.
func FuzzParquet(f *testing.F) {
	var b bytes.Buffer
	if err := WriteParquet(&b, []float64{0.25, 0.75, 1, 0, 0.5, 0.5}, 2, []int{1, 0, 1}, []float64{1, 2, 0}, ParquetWriteOptions{RowGroupRows: 2}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	type perClass struct {
		Label int32   `parquet:"label,dict"`
		P0    float32 `parquet:"p0"`
		P1    float32 `parquet:"p1"`
	}
	f.Add(writeGeneric(f, []perClass{{1, 0.25, 0.75}, {0, 1, 0}}))
	type logits struct {
		Logits []float64 `parquet:"logits,list"`
		Label  *int64    `parquet:"label,optional"`
	}
	one := int64(1)
	f.Add(writeGeneric(f, []logits{{[]float64{1, 2}, &one}, {[]float64{3, -1}, nil}}, parquet.Compression(&parquet.Snappy)))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, opts := range []Options{{}, {Unlabeled: true, Renormalize: true}} {
			s, err := Parse("f.parquet", b, "", nil, opts)
			checkSetLabels(t, s, err, !opts.Unlabeled)
		}
	})
}

// BenchmarkParquetChunks reads 100,000 rows of 10 classes from a Parquet
// file in chunks.
func BenchmarkParquetChunks(b *testing.B) {
	s := demoSet(b)
	var probs []float64
	var labels []int
	for len(labels) < 100_000 {
		probs = append(probs, s.Probs...)
		labels = append(labels, s.Labels...)
	}
	var buf bytes.Buffer
	if err := WriteParquet(&buf, probs, s.K, labels, nil, ParquetWriteOptions{}); err != nil {
		b.Fatal(err)
	}
	name := filepath.Join(b.TempDir(), "b.parquet")
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(probs) * 8))
	for b.Loop() {
		c, err := OpenChunks(name, Options{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := c.Next(); err != nil {
				break
			}
		}
		c.Close()
	}
}
