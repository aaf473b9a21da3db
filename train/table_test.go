package train

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestReadVehicle reads the real vehicle table, gzipped (846 x 18, K = 4;
// class counts from the UCI description: bus 218, opel 212, saab 217, van
// 199).
func TestReadVehicle(t *testing.T) {
	tb, err := ReadTable("tabular/vehicle.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	if tb.N != 846 || tb.D != 18 || tb.K != 4 || len(tb.X) != 846*18 || tb.Names[0] != "Comp" {
		t.Fatalf("N %d D %d K %d, %d values, names %v", tb.N, tb.D, tb.K, len(tb.X), tb.Names[:2])
	}
	if !slices.Equal(tb.Counts, []int{218, 212, 217, 199}) || len(tb.Constant) != 0 {
		t.Errorf("counts %v, constant %v", tb.Counts, tb.Constant)
	}
	if tb.X[0] != 95 || tb.Labels[0] != 3 {
		t.Errorf("first row %v label %d", tb.X[:3], tb.Labels[0])
	}
	// A .gz name that is not gzip data is an error naming the file.
	bad := filepath.Join(t.TempDir(), "plain.csv.gz")
	if err := os.WriteFile(bad, []byte("a,label\n1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTable(bad); err == nil || !strings.Contains(err.Error(), "plain.csv.gz") {
		t.Errorf("ReadTable of a plain file named .gz: %v", err)
	}
}

// TestStratifiedSplit: the parts cover the rows once, keep each class's
// share (within one row per class), are identical for a seed and differ for
// another.
func TestStratifiedSplit(t *testing.T) {
	tb, err := ReadTable("tabular/vehicle.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	s, err := StratifiedSplit(tb.Labels, tb.K, 0.2, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(s.Train, s.Val, s.Test)
	slices.Sort(all)
	for i, v := range all {
		if v != i {
			t.Fatalf("the parts do not cover the rows once (at %d: %d)", i, v)
		}
	}
	for c := 0; c < tb.K; c++ {
		count := func(idx []int) int {
			n := 0
			for _, i := range idx {
				if tb.Labels[i] == c {
					n++
				}
			}
			return n
		}
		nc := float64(tb.Counts[c])
		if v, te := count(s.Val), count(s.Test); math.Abs(float64(v)-0.2*nc) > 1 || math.Abs(float64(te)-0.2*nc) > 1 {
			t.Errorf("class %d: %d val, %d test of %v", c, v, te, nc)
		}
	}
	s2, _ := StratifiedSplit(tb.Labels, tb.K, 0.2, 0.2, 1)
	s3, _ := StratifiedSplit(tb.Labels, tb.K, 0.2, 0.2, 2)
	if !slices.Equal(s.Val, s2.Val) || slices.Equal(s.Val, s3.Val) {
		t.Error("split not determined by the seed")
	}
	if _, err := StratifiedSplit(tb.Labels, tb.K, 0.5, 0.5, 1); err == nil {
		t.Error("fractions summing to 1 accepted")
	}
	if _, err := StratifiedSplit([]int{0, 1, 0}, 2, 0.2, 0.2, 1); !errors.Is(err, ErrEmptyPart) {
		t.Errorf("tiny split: %v", err)
	}
}

// TestStandardizer: the fitted rows get mean 0 and standard deviation 1;
// a constant feature maps to 0.
func TestStandardizer(t *testing.T) {
	x := []float64{1, 5, 2, 5, 3, 5, 10, 5}
	idx := []int{0, 1, 2}
	s := FitStandardizer(x, 2, idx)
	z := s.Apply(x, 2, idx)
	if math.Abs(z[0]+z[2]+z[4]) > 1e-12 || math.Abs(z[0]*z[0]+z[2]*z[2]+z[4]*z[4]-3) > 1e-12 || z[1] != 0 || s.Scale[1] != 1 {
		t.Errorf("standardised %v (scale %v)", z, s.Scale)
	}
	if w := s.Apply(x, 2, []int{3}); math.Abs(w[0]-(10-2)/math.Sqrt(2.0/3)) > 1e-12 {
		t.Errorf("held-out row %v", w)
	}
}

// TestParseTableErrors checks that each bad input names the line, the
// column and the problem.
func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		sentinel error
		line     int
	}{
		{"a,b\n1,2\n", data.ErrFormat, 1},
		{"a,label\n1,0\n2\n", data.ErrRagged, 3},
		{"a,label\n1,0\nx,1\n", data.ErrSyntax, 3},
		{"a,label\n1,0\nNaN,1\n", data.ErrNotFinite, 3},
		{"a,label\n1,0\n2,-1\n", data.ErrLabel, 3},
		{"a,label\n1,0\n", data.ErrTooFew, 0},
		{"", data.ErrEmpty, 0},
	} {
		_, err := ParseTable("t.csv", strings.NewReader(tc.in))
		var de *data.Error
		if !errors.Is(err, tc.sentinel) || !errors.As(err, &de) || de.Line != tc.line || !strings.Contains(err.Error(), "t.csv") {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
}

// FuzzParseTable: arbitrary input gives a table or an error, never a panic,
// and a table is consistent.
func FuzzParseTable(f *testing.F) {
	f.Add("a,b,label\n1,2,0\n3,4,1\n")
	f.Add("x,label\n1e308,0\n-0,1\n")
	f.Add("a,label\n1,0\n2\n")
	f.Fuzz(func(t *testing.T, in string) {
		tb, err := ParseTable("f.csv", strings.NewReader(in))
		if err != nil {
			return
		}
		if len(tb.X) != tb.N*tb.D || len(tb.Labels) != tb.N || tb.K < 2 {
			t.Fatalf("inconsistent table %+v", tb)
		}
	})
}
