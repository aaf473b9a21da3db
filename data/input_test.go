package data

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// formatCSV writes n rows of k values with the verb (e.g. "%.6f") and the
// labels, with a header p0..p{k-1},label.
func formatCSV(v []float64, k int, labels []int, verb string) []byte {
	var b strings.Builder
	for j := range k {
		fmt.Fprintf(&b, "p%d,", j)
	}
	b.WriteString("label\n")
	for i := range len(v) / k {
		for _, x := range v[i*k : (i+1)*k] {
			fmt.Fprintf(&b, verb+",", x)
		}
		fmt.Fprintf(&b, "%d\n", labels[i])
	}
	return []byte(b.String())
}

// TestRoundedDecimals loads 10-class probabilities written with 6 and with 3
// decimals, whose rounding moves row sums past the default tolerance (the
// old loader refused them): each row is renormalised to sum to 1 within
// 1e-12, counted in Rounded, and within the rounding of the clean value.
// Rows off by more than their decimals explain still fail.
func TestRoundedDecimals(t *testing.T) {
	const n, k = 40, 10
	_, probs, labels := randomSet(n, k, 4)
	// Two rows whose rounding errors add up: nine values that round up by
	// 4e-7 (4e-4 with 3 decimals), the tenth making the sum 1.
	probs = append(probs, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 0.0999996, 1-9*0.0999996)
	probs = append(probs, 0.0996, 0.0996, 0.0996, 0.0996, 0.0996, 0.0996, 0.0996, 0.0996, 0.0996, 1-9*0.0996)
	labels = append(labels, 3, 7)
	clean := mustParse(t, "clean.csv", cleanCSV(t, probs, k, labels), "", nil, Options{})
	if clean.Rounded != 0 {
		t.Fatalf("clean file: %d rounded rows", clean.Rounded)
	}
	for _, d := range []int{6, 3} {
		b := formatCSV(probs, k, labels, fmt.Sprintf("%%.%df", d))
		s, err := Parse("r.csv", b, "", nil, Options{})
		if err != nil {
			t.Fatalf("%d decimals: %v", d, err)
		}
		if s.Rounded < 2 || s.Renormalized != 0 {
			t.Fatalf("%d decimals: %d rounded, %d renormalised rows", d, s.Rounded, s.Renormalized)
		}
		// |r_k/S - p_k| <= 0.5e-d + r_k |S - 1| / S <= (K+1) 0.5e-d (1 + 1e-6).
		bound := float64(k+1) * 0.5 * math.Pow(10, -float64(d)) * (1 + 1e-6)
		rounded := 0
		for i := range s.N {
			// The row as written: off by more than the tolerance, it must
			// have been renormalised to sum to 1 within 1e-12.
			written := 0.0
			for _, v := range probs[i*k : (i+1)*k] {
				x, _ := strconv.ParseFloat(fmt.Sprintf("%.*f", d, v), 64)
				written += x
			}
			tol := DefaultTolerance
			if math.Abs(written-1) > DefaultTolerance {
				rounded++
				tol = 1e-12
			}
			sum := 0.0
			for j, v := range s.Row(i) {
				sum += v
				if diff := math.Abs(v - clean.Row(i)[j]); diff > bound {
					t.Fatalf("%d decimals: row %d value %d off by %g > %g", d, i, j, diff, bound)
				}
			}
			if math.Abs(sum-1) > tol {
				t.Fatalf("%d decimals: row %d sums to %v", d, i, sum)
			}
		}
		if s.Rounded != rounded {
			t.Fatalf("%d decimals: %d rounded rows, want %d", d, s.Rounded, rounded)
		}
		if fmt.Sprint(s.Labels) != fmt.Sprint(clean.Labels) {
			t.Fatalf("%d decimals: labels %v", d, s.Labels)
		}
		// JSON Lines follows the same rule.
		var j strings.Builder
		for i := range len(probs) / k {
			j.WriteString(`{"probs": [`)
			for m, v := range probs[i*k : (i+1)*k] {
				if m > 0 {
					j.WriteString(", ")
				}
				fmt.Fprintf(&j, "%.*f", d, v)
			}
			fmt.Fprintf(&j, "], \"label\": %d}\n", labels[i])
		}
		js, err := Parse("r.jsonl", []byte(j.String()), "", nil, Options{})
		if err != nil || js.Rounded != s.Rounded {
			t.Fatalf("%d decimals, JSON Lines: %v (rounded %+v)", d, err, js)
		}
		sameBits(t, "JSON Lines", js.Probs, s.Probs)
	}
	if got := MaxRoundingError(10, 6); got < 5e-6 || got > 5e-6*(1+1e-8) {
		t.Errorf("MaxRoundingError(10, 6) = %g, want 5e-6", got)
	}
	if got := MaxRoundingError(10, 1); got > 1e-2+1e-14 {
		t.Errorf("MaxRoundingError(10, 1) = %g, want the cap 1e-2", got)
	}
	for _, tc := range []struct{ name, in string }{
		{"off by 0.1", "0.5,0.6,1\n"},
		{"beyond 3 decimals", "0.100,0.100,0.100,0.100,0.100,0.100,0.100,0.100,0.100,0.106,1\n"}, // 6e-3 > 10 * 0.5e-3
		{"beyond the cap", "0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.2,1\n"},                        // 0.1 > 1e-2
		{"exact values", "0x1p-1,0x1.001p-1,1\n"},                                                // not decimal: no allowance
	} {
		_, err := Parse("a.csv", []byte(tc.in), "", nil, Options{})
		if !errors.Is(err, ErrRowSum) || !strings.Contains(err.Error(), "a.csv: line 1: row does not sum to 1: columns 1-") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for s, want := range map[string]int8{"0.125": 3, "-1.5e-3": 4, "2": 0, "1e3": 0, "1E-06": 6, "0.500000": 6, ".5": 1, "5.": 0, "inf": -1, "NaN": -1, "0x1p-2": -1, "1e": -1} {
		if got := decimals(s); got != want {
			t.Errorf("decimals(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestLabelColumnWithoutLabels reads the labelled CSV layout (K columns then
// the label) when the caller does not expect labels in the file
// (Unlabeled, as calib apply loads) or gives a labels file: the old loader
// read the label as a fifth probability and failed with "sum to 2".
func TestLabelColumnWithoutLabels(t *testing.T) {
	good := "0.2,0.3,0.4,0.1,1\n0.1,0.1,0.7,0.1,2\n0.25,0.25,0.25,0.25,0\n"
	want := []int{1, 2, 0}
	check := func(what string, s *Set, err error, k int, labels []int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if s.K != k || fmt.Sprint(s.Labels) != fmt.Sprint(labels) || (labels == nil) != (s.Labels == nil) {
			t.Fatalf("%s: K=%d labels %v, want K=%d labels %v", what, s.K, s.Labels, k, labels)
		}
	}
	s, err := Parse("good.csv", []byte(good), "", nil, Options{Unlabeled: true})
	check("unlabeled, by content", s, err, 4, want)
	if s.Probs[2] != 0.4 || s.Probs[6] != 0.7 {
		t.Fatalf("probabilities %v", s.Probs)
	}
	s, err = Parse("good.csv", []byte(good), "y.txt", []byte("1\n2\n0\n"), Options{})
	check("labels file, by content", s, err, 4, want)
	_, err = Parse("good.csv", []byte(good), "y.txt", []byte("label\n1\n1\n0\n"), Options{})
	if !errors.Is(err, ErrLabel) || !strings.Contains(err.Error(), "good.csv: line 2, column 5: bad label: the label column says 2, y.txt line 3 says 1") {
		t.Fatalf("disagreeing labels: %v", err)
	}
	// A labels file of another length than the label column: refused,
	// never ignored.
	for _, y := range []string{"1\n2\n0\n1\n", "1\n2\n"} {
		_, err = Parse("good.csv", []byte(good), "y.txt", []byte(y), Options{})
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "labels for the 3 rows of the predictions file") {
			t.Fatalf("labels file of %q: %v", y, err)
		}
	}
	// Binary: p1 then the label.
	s, err = Parse("b.csv", []byte("0.3,1\n0.9,0\n"), "", nil, Options{Unlabeled: true})
	check("binary", s, err, 2, []int{1, 0})
	// All labels 0: the content cannot tell (every row sums to 1 either
	// way) and the file is read as five prediction columns, unless a
	// header names the label column or K says there are four predictions.
	zeros := "0.2,0.3,0.4,0.1,0\n0.1,0.1,0.7,0.1,0\n"
	s, err = Parse("z.csv", []byte(zeros), "", nil, Options{Unlabeled: true})
	check("zeros", s, err, 5, nil)
	for _, name := range []string{"label", "Labels", "y", "TARGET", " class"} {
		s, err = Parse("z.csv", []byte("a,b,c,d,"+name+"\n"+zeros), "", nil, Options{Unlabeled: true})
		check("header "+name, s, err, 4, []int{0, 0})
	}
	s, err = Parse("z.csv", []byte("a,b,c,d,e\n"+zeros), "", nil, Options{Unlabeled: true})
	check("header without a label name", s, err, 5, nil)
	s, err = Parse("z.csv", []byte(zeros), "", nil, Options{Unlabeled: true, K: 4})
	check("K = 4", s, err, 4, []int{0, 0})
	s, err = Parse("z.csv", []byte(zeros), "", nil, Options{Unlabeled: true, K: 5})
	check("K = 5", s, err, 5, nil)
	// Logits are never told apart by content, but a header or K works.
	lg := "1.5,-2,0.25,2\n0,0,0,1\n"
	s, err = Parse("l.csv", []byte(lg), "", nil, Options{Unlabeled: true, Logits: true})
	check("logits", s, err, 4, nil)
	s, err = Parse("l.csv", []byte(lg), "", nil, Options{Unlabeled: true, Logits: true, K: 3})
	check("logits, K = 3", s, err, 3, []int{2, 1})
	// Without a label column nothing changes.
	s, err = Parse("p.csv", []byte("0.2,0.8\n0.6,0.4\n"), "", nil, Options{Unlabeled: true})
	check("no label column", s, err, 2, nil)
	// A label column that does not fit is not taken: 5 is not in 0..3.
	_, err = Parse("bad.csv", []byte("0.2,0.3,0.4,0.1,5\n"), "", nil, Options{Unlabeled: true})
	if !errors.Is(err, ErrAboveOne) {
		t.Fatalf("label 5: %v", err)
	}
	// The header's label column works with a labels file too, and JSON Lines
	// labels are read when optional.
	s, err = Parse("h.csv", []byte("p0,p1,label\n0.5,0.5,1\n"), "y.txt", []byte("1\n"), Options{})
	check("header and labels file", s, err, 2, []int{1})
	s, err = Parse("a.jsonl", []byte("{\"probs\":[0.5,0.5],\"label\":1}\n"), "", nil, Options{Unlabeled: true})
	check("JSON Lines", s, err, 2, []int{1})
	s, err = Parse("a.jsonl", []byte("{\"probs\":[0.5,0.5],\"label\":1}\n{\"probs\":[0.5,0.5]}\n"), "", nil, Options{Unlabeled: true})
	check("JSON Lines, some labels", s, err, 2, nil)
}

// TestRowSumLabelHint checks that a row that sums to a whole number >= 2
// because of a label column read as a prediction says so.
func TestRowSumLabelHint(t *testing.T) {
	for _, in := range []string{
		"p0,p1,p2,p3,lab\n0.2,0.3,0.4,0.1,1\n",
		"p0,p1,p2,p3,lab\n0.2,0.3,0.4,0.1,3\n",
		"p1,lab\n0.3,1\n",
	} {
		_, err := Parse("h.csv", []byte(in), "", nil, Options{Unlabeled: true})
		if err == nil || !strings.Contains(err.Error(), "is the last column a label? name it 'label' in a header") {
			t.Errorf("%q: %v", in, err)
		}
	}
	_, err := Parse("h.csv", []byte("0.5,0.6,1\n"), "", nil, Options{})
	if err == nil || strings.Contains(err.Error(), "label?") {
		t.Errorf("a row off by 0.1 gets the hint: %v", err)
	}
}

// TestMessagesInUserTerms feeds bad input of every format and checks that
// the messages speak of the file (lines, columns, keys, values) and never of
// Go: no strconv, Go struct, jsonRow, data. or unmarshal.
func TestMessagesInUserTerms(t *testing.T) {
	npyDict := func(dict string) string {
		return "\x93NUMPY\x01\x00" + string(rune(len(dict)+1)) + "\x00" + dict + "\n"
	}
	npy := func(shape string) string {
		return npyDict("{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }")
	}
	tests := []struct {
		file, in, labels string
		opts             Options
		want             error
		msg              string
	}{
		{"a.csv", "p0,p1,label\n0.5,0.5,1\n0.5,abc,1\n", "", Options{}, ErrSyntax, `a.csv: line 3, column 2: syntax error: "abc" is not a number`},
		{"a.csv", "p0,p1,label\n0.5,0.5,x\n", "", Options{}, ErrLabel, `a.csv: line 2, column 3: bad label: "x" is not a non-negative integer`},
		{"a.csv", "0.5,0.5,1\n0.5,1e999,0\n", "", Options{}, ErrNotFinite, `line 2, column 2: not a finite number: "1e999" is out of the float64 range`},
		{"a.csv", "0.5,0.5\n", "label\n1\nx\n", Options{}, ErrLabel, `y.txt: line 3, column 1: bad label: "x" is not a non-negative integer`},
		{"a.csv", "0.5,0.5\n", "1,0\n", Options{}, ErrShape, `a labels file has one column, got 2`},
		{"a.jsonl", "{\"probs\":\"x\",\"label\":1}\n", "", Options{}, ErrSyntax, `a.jsonl: line 1: syntax error: "probs" must be an array of numbers, got a string`},
		{"a.jsonl", "{\"probs\":[0.5,\"x\"],\"label\":1}\n", "", Options{}, ErrSyntax, `"probs" must be an array of numbers, got a string in the array`},
		{"a.jsonl", "{\"logits\":[0.5,[1]],\"label\":1}\n", "", Options{}, ErrSyntax, `"logits" must be an array of numbers, got an array in the array`},
		{"a.jsonl", "{\"probs\":[0.5,1e999],\"label\":1}\n", "", Options{}, ErrNotFinite, `"1e999" is out of the float64 range`},
		{"a.jsonl", "[1,2]\n", "", Options{}, ErrSyntax, `line 1: syntax error: want a JSON object such as {"probs": [...], "label": 0}, got an array`},
		{"a.jsonl", "{\"probs\":[0.5,0.5],\"label\":\"x\"}\n", "", Options{}, ErrLabel, `line 1: bad label: "x" is not a non-negative integer`},
		{"a.jsonl", "{\"probs\":[0.5,0.5],\"label\":[1]}\n", "", Options{}, ErrLabel, `"label" must be a non-negative integer, got an array`},
		{"a.jsonl", "{\"probs\":[0.5,0.5],\"label\":true}\n", "", Options{}, ErrLabel, `got a boolean`},
		{"a.jsonl", "{\"probs\":[0.5,0.5] \"label\":1}\n", "", Options{}, ErrSyntax, `line 1: syntax error: not valid JSON at character 20: invalid character`},
		{"a.jsonl", "{\"probs\":[0.5,0.5],\"label\":1}\n{\"probs\":[0.5,0.5],\"label\":1.5}\n", "", Options{}, ErrLabel, `a.jsonl: line 2: bad label: 1.5 is not an integer`},
		{"a.npy", npy("(x, 2)"), "", Options{Unlabeled: true}, ErrFormat, `a.npy: unsupported format: NPY: malformed header "{'descr': '<f8', 'fortran_order': False, 'shape': (x, 2), }": shape must be a tuple of non-negative integers`},
		{"a.npy", npy("(99999999999999999999, 2)"), "", Options{Unlabeled: true}, ErrFormat, `shape must be a tuple`},
		{"a.npy", npy("(-1,)"), "", Options{Unlabeled: true}, ErrFormat, `shape must be a tuple`},
		{"a.npy", npyDict("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }"), "", Options{Unlabeled: true}, ErrFormat, `structured dtypes are not supported`},
		{"a.npy", npyDict("{'descr': '<f8', 'fortran_order': 0, 'shape': (1,), }"), "", Options{Unlabeled: true}, ErrFormat, `fortran_order must be True or False`},
		{"a.npy", npyDict("{'descr': '<f8', 'shape': (1,), }"), "", Options{Unlabeled: true}, ErrFormat, `want the keys descr, fortran_order and shape`},
		{"a.npy", string(numpyNPY("<f8", false, nil, nil)[:8]) + "\xff\xff{", "", Options{Unlabeled: true}, ErrFormat, `header length 65535 beyond the end of the file`},
		{"a.npy", string(numpyNPY("<U8", false, []int{1}, make([]byte, 32))), "", Options{Unlabeled: true}, ErrFormat, `NPY: dtype "<U8" not supported`},
		{"a.npz", "PK\x03\x04 not really", "", Options{}, ErrFormat, `a.npz: unsupported format: NPZ: not a valid zip archive`},
		{"a.npz", string(numpyNPZ(false, npzMember{"probs", []byte("junk")})), "", Options{}, ErrFormat, `a.npz:probs: unsupported format: NPY: not an NPY file (bad magic)`},
	}
	for _, tc := range tests {
		t.Run(tc.msg, func(t *testing.T) {
			var lb []byte
			if tc.labels != "" {
				lb = []byte(tc.labels)
			}
			_, err := Parse(tc.file, []byte(tc.in), "y.txt", lb, tc.opts)
			var de *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &de) {
				t.Fatalf("got %v, want a *data.Error wrapping %v", err, tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not contain %q", msg, tc.msg)
			}
			for _, bad := range []string{"strconv", "Go struct", "jsonRow", "data.", "unmarshal", "\n"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message %q contains %q", msg, bad)
				}
			}
		})
	}
}

// TestDirectoryAndMissingFile checks that a directory or a missing file, as
// the predictions or the labels, is an *Error naming it (the CLI exits 2 on
// those), with the operating system's error still detectable.
func TestDirectoryAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.csv")
	os.WriteFile(good, []byte("0.5,0.5\n"), 0o644)
	sub := filepath.Join(dir, "preds.csv")
	os.Mkdir(sub, 0o755)
	for _, tc := range []struct {
		name  string
		opts  Options
		want  error
		msg   string
		isErr error
	}{
		{sub, Options{}, ErrIsDir, sub + ": is a directory, want a prediction file", nil},
		{dir, Options{}, ErrIsDir, dir + ": is a directory, want a prediction file", nil},
		{good, Options{Labels: dir}, ErrIsDir, dir + ": is a directory, want a labels file", nil},
		{filepath.Join(dir, "missing.csv"), Options{}, ErrRead, filepath.Join(dir, "missing.csv") + ": cannot read the file: no such file or directory", fs.ErrNotExist},
		{good, Options{Labels: filepath.Join(dir, "y.npy")}, ErrRead, filepath.Join(dir, "y.npy") + ": cannot read the file: ", fs.ErrNotExist},
	} {
		_, err := Load(tc.name, tc.opts)
		var de *Error
		if !errors.As(err, &de) || !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want a *data.Error %q", tc.name, err, tc.msg)
		}
		if tc.isErr != nil && !errors.Is(err, tc.isErr) {
			t.Errorf("%s: %v is not %v", tc.name, err, tc.isErr)
		}
	}
	// An empty labels file is a labels file with no labels.
	empty := filepath.Join(dir, "y.txt")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Load(good, Options{Labels: empty}); !errors.Is(err, ErrLength) {
		t.Errorf("empty labels file: %v", err)
	}
}

// TestJSONLKeysOnceAndLowercase: a row with a key twice, or in another
// case, is refused with its line (Go's decoder would keep the last value,
// or match "PROBS", without a word).
func TestJSONLKeysOnceAndLowercase(t *testing.T) {
	for _, c := range []struct{ row, want string }{
		{`{"probs": [0.2, 0.8], "label": 1, "label": 0}`, `key "label" given twice`},
		{`{"PROBS": [0.2, 0.8], "label": 1}`, `key "PROBS": calib reads "probs"`},
		{`{"probs": [0.2, 0.8], "Label": 1}`, `key "Label": calib reads "label"`},
	} {
		_, err := Parse("r.jsonl", []byte(`{"probs": [0.5, 0.5], "label": 0}`+"\n"+c.row+"\n"), "", nil, Options{})
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.row, err)
		}
	}
	// A string value that looks like a key is not one.
	if _, err := Parse("r.jsonl", []byte(`{"probs": [0.5, 0.5], "label": 0, "note": "\"label\": x"}`+"\n"), "", nil, Options{}); err != nil {
		t.Errorf("a key in a string value: %v", err)
	}
}
