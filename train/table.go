// Package train trains classifiers whose calibration calib measures:
// tabular data sets, reproducible splits and standardisation (table.go),
// the training losses of the ECE^KDE paper (section 5) as GoMLX graphs
// on the pure-Go backend (backends/simplego): KDECanonical, the
// differentiable ECE^KDE term of KDE-XE, with a composite Lgamma and the
// per-batch LOO bandwidth (kdeloss.go); MMCE, focal loss and label
// smoothing; the training loop Fit (fit.go) and the saved Model (model.go).
package train

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/data"
)

// Table is a tabular classification data set: N rows of D numeric
// features (row-major) and a label in 0..K-1 per row.
type Table struct {
	File     string
	Names    []string  // the D feature names
	X        []float64 // N×D
	Labels   []int
	N, D, K  int
	Counts   []int // rows per class
	Constant []int // features with one value in every row
}

// ReadTable reads a CSV with a header line: the feature columns, then a
// column named "label" holding integers 0..K-1 (the layout of
// shared/data/tabular); a name ending in .gz is decompressed. Errors name
// the file, the 1-based line and the column, with the data package's
// sentinels (data.ErrNotFinite, data.ErrRagged, data.ErrLabel,
// data.ErrSyntax, data.ErrTooFew).
func ReadTable(name string) (*Table, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	return ParseTable(name, r)
}

// ParseTable is ReadTable on a reader; name is used in errors.
func ParseTable(name string, r io.Reader) (*Table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	t := &Table{File: name}
	line := 0
	fail := func(col int, sentinel error, format string, args ...any) error {
		return &data.Error{File: name, Line: line, Column: col, Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
	}
	maxLabel := -1
	for sc.Scan() {
		line++
		text := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if text == "" {
			continue
		}
		fields := strings.Split(text, ",")
		if t.Names == nil {
			if strings.TrimSpace(fields[len(fields)-1]) != "label" || len(fields) < 2 {
				return nil, fail(len(fields), data.ErrFormat, "the header must end with a column named label, got %q", text)
			}
			for _, f := range fields[:len(fields)-1] {
				t.Names = append(t.Names, strings.TrimSpace(f))
			}
			t.D = len(t.Names)
			continue
		}
		if len(fields) != t.D+1 {
			return nil, fail(len(fields), data.ErrRagged, "%d fields, the header has %d", len(fields), t.D+1)
		}
		for c, f := range fields[:t.D] {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, fail(c+1, data.ErrSyntax, "%q is not a number", f)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fail(c+1, data.ErrNotFinite, "feature %s is %v", t.Names[c], v)
			}
			t.X = append(t.X, v)
		}
		l, err := strconv.Atoi(strings.TrimSpace(fields[t.D]))
		if err != nil || l < 0 {
			return nil, fail(t.D+1, data.ErrLabel, "label %q is not an integer >= 0", fields[t.D])
		}
		t.Labels = append(t.Labels, l)
		maxLabel = max(maxLabel, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t.N, t.K = len(t.Labels), maxLabel+1
	if t.Names == nil {
		return nil, &data.Error{File: name, Err: fmt.Errorf("%w: no header", data.ErrEmpty)}
	}
	if t.N < 2 || t.K < 2 {
		return nil, &data.Error{File: name, Err: fmt.Errorf("%w: %d rows of %d classes, need at least 2 of 2", data.ErrTooFew, t.N, t.K)}
	}
	t.Counts = make([]int, t.K)
	for _, l := range t.Labels {
		t.Counts[l]++
	}
	for c := 0; c < t.D; c++ {
		same := true
		for i := 1; i < t.N && same; i++ {
			same = t.X[i*t.D+c] == t.X[c]
		}
		if same {
			t.Constant = append(t.Constant, c)
		}
	}
	return t, nil
}

// Split is a partition of the rows of a table into train, validation and
// test sets (row indices, each in increasing order).
type Split struct {
	Train, Val, Test []int
	Seed             uint64
}

// ErrEmptyPart is returned when a split fraction leaves a part empty.
var ErrEmptyPart = errors.New("train: a part of the split is empty")

// StratifiedSplit splits the rows of labels (classes 0..k-1) into train,
// validation and test parts with the fractions val and test (the rest is
// train), class by class: each class's rows are shuffled with PCG(seed, 7)
// (classes in order) and cut at round(val n_c) and round((val + test) n_c),
// so every part keeps the class proportions and the split depends only on
// the labels and the seed. Classes with fewer than 3 rows go to train.
func StratifiedSplit(labels []int, k int, val, test float64, seed uint64) (*Split, error) {
	if !(val > 0 && test > 0 && val+test < 1) {
		return nil, fmt.Errorf("train: split fractions val %v and test %v: need positive fractions summing below 1", val, test)
	}
	byClass := make([][]int, k)
	for i, l := range labels {
		if l < 0 || l >= k {
			return nil, fmt.Errorf("train: label %d of row %d outside 0..%d", l, i, k-1)
		}
		byClass[l] = append(byClass[l], i)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	part := make([]int8, len(labels)) // 0 train, 1 val, 2 test
	for _, rows := range byClass {
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		if len(rows) < 3 {
			continue
		}
		nv := int(math.Round(val * float64(len(rows))))
		nt := int(math.Round((val + test) * float64(len(rows))))
		for j, i := range rows {
			switch {
			case j < nv:
				part[i] = 1
			case j < nt:
				part[i] = 2
			}
		}
	}
	s := &Split{Seed: seed}
	for i, p := range part {
		switch p {
		case 0:
			s.Train = append(s.Train, i)
		case 1:
			s.Val = append(s.Val, i)
		default:
			s.Test = append(s.Test, i)
		}
	}
	if len(s.Train) == 0 || len(s.Val) == 0 || len(s.Test) == 0 {
		return nil, fmt.Errorf("%w: %d train, %d validation, %d test rows", ErrEmptyPart, len(s.Train), len(s.Val), len(s.Test))
	}
	return s, nil
}

// Standardizer maps each feature to (x - Mean) / Scale, with the mean and
// standard deviation of the rows it was fitted on (Scale 1 for a constant
// feature, so it maps to 0).
type Standardizer struct {
	Mean, Scale []float64
}

// FitStandardizer fits a Standardizer on the rows idx of x (n×d).
func FitStandardizer(x []float64, d int, idx []int) *Standardizer {
	s := &Standardizer{Mean: make([]float64, d), Scale: make([]float64, d)}
	n := float64(len(idx))
	for _, i := range idx {
		for c := 0; c < d; c++ {
			s.Mean[c] += x[i*d+c] / n
		}
	}
	for _, i := range idx {
		for c := 0; c < d; c++ {
			dv := x[i*d+c] - s.Mean[c]
			s.Scale[c] += dv * dv
		}
	}
	for c := range s.Scale {
		s.Scale[c] = math.Sqrt(s.Scale[c] / n)
		if !(s.Scale[c] > 0) {
			s.Scale[c] = 1
		}
	}
	return s
}

// Apply returns the standardised rows idx of x (len(idx)×d).
func (s *Standardizer) Apply(x []float64, d int, idx []int) []float64 {
	out := make([]float64, 0, len(idx)*d)
	for _, i := range idx {
		for c := 0; c < d; c++ {
			out = append(out, (x[i*d+c]-s.Mean[c])/s.Scale[c])
		}
	}
	return out
}
