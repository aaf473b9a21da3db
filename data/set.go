// Package data holds prediction sets (a classifier's predicted probabilities
// and the true labels), reads them from CSV, NPY, NPZ, JSON Lines and Parquet
// files, whole (Load) or a chunk of rows at a time (Chunks), and validates
// them.
//
// A Set is n samples by K classes of probabilities in row-major order plus one
// integer label in 0..K-1 per sample. Logits are turned into probabilities by
// a numerically stable float64 softmax (a single logit column by the sigmoid).
// A file with a single probability (or logit) column is the binary case: the
// column is p1 = P(label = 1), the Set holds the two columns (1-p1, p1) and
// Binary is true.
//
// Every problem in the input is reported as an *Error naming the file, the
// 1-based line (text formats) or row (array formats) and the column; the
// loaders never panic, whatever the bytes.
package data

import (
	"cmp"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
)

// DefaultTolerance is the largest accepted |sum_k p_k - 1| of a probability
// row when Options.Tolerance is zero.
const DefaultTolerance = 1e-6

// Set is a validated prediction set.
type Set struct {
	N, K   int       // samples and classes (K = 2 for binary one-column input)
	Probs  []float64 // N×K probabilities, row-major; every row in the simplex
	Labels []int     // N labels in 0..K-1; nil when read with Options.Unlabeled from input without labels
	// Logits holds the raw logits (N×K, or N×1 for binary input) when the
	// input held logits, else nil.
	Logits []float64
	// Weights holds one sample weight per row (finite, >= 0, not all
	// zero), or nil, meaning every weight is 1. Every weighted function in
	// calib takes these last and follows the same rule. Set them with
	// SetWeights, which checks them.
	Weights []float64
	// WeightScale is the factor that the weights as given were divided
	// by in a Set returned by ScaledWeights; 0 or 1 means as given. The weights as given
	// are Weights times WeightScale.
	WeightScale float64
	// Binary reports one-column input: Probs holds (1-p1, p1) and only then
	// is the binary notion defined.
	Binary bool
	// File is the predictions file name ("" for in-memory sets).
	File string
	// Renormalized counts the rows divided by their sum because
	// Options.Renormalize was set and the sum was off by more than the
	// tolerance.
	Renormalized int
	// Rounded counts the rows of a text file (CSV, JSON Lines) divided by
	// their sum because their values were rounded to d decimals and the
	// sum was off by more than the tolerance but by no more than that
	// rounding explains (see MaxRoundingError). Callers may warn.
	Rounded int
}

// Row returns the probabilities of sample i (a slice of s.Probs, not a copy).
func (s *Set) Row(i int) []float64 { return s.Probs[i*s.K : (i+1)*s.K] }

// Column returns p1, the probability of label 1, of a binary set, or the k-th
// column of any set, as a new slice.
func (s *Set) Column(k int) []float64 {
	c := make([]float64, s.N)
	for i := range c {
		c[i] = s.Probs[i*s.K+k]
	}
	return c
}

// SetWeights checks w (nil, or s.N finite weights >= 0, not all zero) and
// stores it in s.Weights; the error is an *Error wrapping ErrWeights.
func (s *Set) SetWeights(w []float64) error {
	if err := mathx.CheckWeights(w, s.N); err != nil {
		return &Error{File: s.File, Err: err}
	}
	s.Weights = w
	return nil
}

// ScaledWeights returns s when its weights are nil or already scaled,
// else a shallow copy whose weights are scaled by mathx.ScaleWeights (a
// power of two that puts the largest in [0.5, 1); constant weights become
// 1) with WeightScale recording the factor: what calib's entry points
// (evaluate.Evaluate, report.Build, compare.Compare, recal.Fit, the CLI's
// loader) do first, so that any finite positive weights give the answer
// of their normalised form, without overflow.
func (s *Set) ScaledWeights() *Set {
	w, f := mathx.ScaleWeights(s.Weights)
	if f == 1 {
		return s
	}
	c := *s
	c.Weights, c.WeightScale = w, cmp.Or(s.WeightScale, 1)*f
	return &c
}

// GivenWeightSum is the sum of the weights as given (Weights times
// WeightScale; +Inf where it overflows float64), or N without weights.
func (s *Set) GivenWeightSum() float64 {
	return mathx.WeightSum(s.Weights, s.N) * cmp.Or(s.WeightScale, 1)
}

// Require returns an *Error wrapping ErrTooFew when the set has fewer than
// min samples; what names the estimator that needs them.
func (s *Set) Require(min int, what string) error {
	if s.N >= min {
		return nil
	}
	return &Error{File: s.File, Err: fmt.Errorf("%w: %s needs at least %d samples, got %d", ErrTooFew, what, min, s.N)}
}

// Options says how to read and check a prediction file.
type Options struct {
	// Format is one of "csv", "npy", "npz", "jsonl", "parquet"; "" picks
	// it by the file's extension (.csv/.txt, .npy, .npz, .jsonl/.ndjson,
	// .parquet).
	Format string
	// Labels names a separate labels file (.npy, or text with one integer
	// per line and an optional header); "" means the labels are in the
	// predictions file.
	Labels string
	// Weights names a sample-weights file for Load (.npy, or text with one
	// number per line and an optional header); "" means the weights, if
	// any, are in the predictions file: a CSV column headed weight,
	// weights or sample_weight, a "weight" key on every JSON Lines row, or
	// an NPZ array named weights. Without either, Set.Weights is nil (all
	// 1). Giving both is an error.
	Weights string
	// Logits says the prediction columns are logits, not probabilities.
	// JSON Lines rows with a "logits" key and NPZ arrays named "logits" are
	// logits whatever this says.
	Logits bool
	// Renormalize divides rows whose sum is off by more than the tolerance
	// by their sum instead of failing; Set.Renormalized counts them.
	Renormalize bool
	// Tolerance is the largest accepted |row sum - 1|; zero means
	// DefaultTolerance.
	Tolerance float64
	// Unlabeled reads predictions whose labels are optional: JSON Lines
	// rows need no "label", and a CSV file may have no label column.
	// Labels present in the file are still read (Set.Labels is nil
	// exactly when there are none), as is a labels file, if given. A CSV
	// column is taken for labels, when the labels may be absent (Unlabeled
	// or a labels file), if the header names it label, labels, y, target,
	// targets or class, if K says so, or, without a header or K, if it is
	// the last column, holds integers in 0..C-2 (C columns) and reading it
	// as labels makes every row sum to 1 while reading it as a prediction
	// does not.
	Unlabeled bool
	// K is the number of prediction columns the caller expects in a CSV
	// file (1 for one-column binary input); 0 means unknown. A file with
	// K+1 columns then has its labels in the last column, whatever the
	// other options say.
	K int
	// Columns names the columns of a Parquet file; its zero value names
	// the defaults (see ColumnNames).
	Columns ColumnNames
	// ZeroWeightFile lets OpenChunks read a file whose weights are all
	// zero without an error: a shard of a larger set, whose total weight
	// the caller checks (evaluate.Stream does).
	ZeroWeightFile bool
}

// tolerance returns the row-sum tolerance the options ask for.
func (o Options) tolerance() float64 {
	if o.Tolerance == 0 {
		return DefaultTolerance
	}
	return o.Tolerance
}

// table is a parsed but not yet validated prediction matrix.
type table struct {
	positions
	cols   int
	values []float64 // rows × cols
	logits bool
	// digits holds, for each row of a text file, the smallest number of
	// decimals its values were written with (-1: some value is not plain
	// decimal notation); nil when not known (array formats).
	digits []int8
	// labelHint says the last column may be a label column read as a
	// prediction (CSV without a detected label column).
	labelHint bool
	// weights holds the sample weights the file carries (a CSV weight
	// column, JSON Lines "weight" keys, an NPZ "weights" array); nil when
	// it carries none.
	weights *weightColumn
}

func (t *table) rows() int {
	if t.cols == 0 {
		return 0
	}
	return len(t.values) / t.cols
}

// labelColumn is a parsed label vector with the position of each label.
type labelColumn struct {
	positions
	values []float64 // as read; checked to be integers in build
	col    int       // column of the labels in their file (1-based; 0 when not a column)
}

// New builds a Set from in-memory probabilities (or logits when logits is
// true): values holds n rows of cols entries, cols = 1 meaning the binary
// case; labels may be nil with opts.Unlabeled. It applies the same checks
// as the file loaders; errors name rows.
func New(values []float64, cols int, labels []int, logits bool, opts Options) (*Set, error) {
	if cols < 1 {
		return nil, &Error{Err: fmt.Errorf("%w: %d columns", ErrShape, cols)}
	}
	if len(values)%cols != 0 {
		return nil, &Error{Err: fmt.Errorf("%w: %d values do not make rows of %d", ErrShape, len(values), cols)}
	}
	t := &table{cols: cols, values: values, logits: logits}
	var lc *labelColumn // nil labels: none (allowed with opts.Unlabeled)
	if labels != nil {
		lc = &labelColumn{values: make([]float64, len(labels))}
		for i, y := range labels {
			lc.values[i] = float64(y)
		}
	}
	return build(t, lc, opts)
}

// build validates a table and its labels and returns the Set.
func build(t *table, lc *labelColumn, opts Options) (*Set, error) {
	n := t.rows()
	if n == 0 {
		return nil, &Error{File: t.file, Err: ErrEmpty}
	}
	if lc == nil && !opts.Unlabeled {
		return nil, &Error{File: t.file, Err: fmt.Errorf("%w: add a label column or give a labels file", ErrNoLabels)}
	}
	if lc != nil && len(lc.values) != n {
		return nil, &Error{File: t.file, Err: fmt.Errorf("%w: %d prediction rows, %d labels", ErrLength, n, len(lc.values))}
	}
	tol := opts.tolerance()
	if !(tol > 0) || math.IsInf(tol, 0) {
		return nil, fmt.Errorf("row-sum tolerance %g: must be positive and finite", tol)
	}
	for i, v := range t.values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, t.err(i/t.cols, i%t.cols+1, fmt.Errorf("%w: %v", ErrNotFinite, v))
		}
	}
	logits := t.logits || opts.Logits
	s := &Set{N: n, K: t.cols, File: t.file, Binary: t.cols == 1}
	if t.weights != nil {
		w, err := t.weights.check(n)
		if err != nil {
			return nil, err
		}
		s.Weights = w
	}
	if s.Binary {
		s.K = 2
	}
	switch {
	case logits && s.Binary:
		s.Logits = t.values
		s.Probs = make([]float64, n*s.K)
		for i, z := range t.values {
			p := Sigmoid(z)
			s.Probs[2*i], s.Probs[2*i+1] = 1-p, p
		}
	case logits:
		s.Logits = t.values
		s.Probs = make([]float64, n*s.K)
		for i := 0; i < n; i++ {
			Softmax(s.Probs[i*s.K:(i+1)*s.K], t.values[i*s.K:(i+1)*s.K])
		}
	default:
		if err := checkProbs(s, t, tol, opts.Renormalize); err != nil {
			return nil, err
		}
	}
	if lc == nil {
		return s, nil
	}
	s.Labels = make([]int, n)
	for i, v := range lc.values {
		if v != math.Trunc(v) || math.IsInf(v, 0) {
			return nil, lc.err(i, lc.col, fmt.Errorf("%w: %v is not an integer", ErrLabel, v))
		}
		if v < 0 || v >= float64(s.K) {
			return nil, lc.err(i, lc.col, fmt.Errorf("%w: %v is outside 0..%d", ErrLabel, v, s.K-1))
		}
		s.Labels[i] = int(v)
	}
	return s, nil
}

// checkProbs checks the range of every entry and the sum of every row (or
// renormalises rows when asked) and sets s.Probs: the table's own values
// (renormalised in place), or for one column the pairs (1-p1, p1). A row of
// a text file whose sum is off by more than tol but by no more than the
// rounding of its decimals explains is renormalised and counted in
// s.Rounded.
func checkProbs(s *Set, t *table, tol float64, renormalize bool) error {
	if s.Binary {
		s.Probs = make([]float64, 2*s.N)
	} else {
		s.Probs = t.values
	}
	for i := 0; i < s.N; i++ {
		row := t.values[i*t.cols : (i+1)*t.cols]
		for k, v := range row {
			if v < 0 {
				return t.err(i, k+1, fmt.Errorf("%w: %v%s", ErrNegative, v, logitsHintIf(v < -maxRounding)))
			}
			if v > 1 {
				hint := ""
				switch {
				case k == len(row)-1 && lastIsLabel(t, row):
					hint = labelHint
				case !t.logits:
					hint = logitsHint
				}
				return t.err(i, k+1, fmt.Errorf("%w: %v%s", ErrAboveOne, v, hint))
			}
		}
		if s.Binary {
			s.Probs[2*i], s.Probs[2*i+1] = 1-row[0], row[0]
			continue
		}
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		dev := math.Abs(sum - 1)
		if dev <= tol {
			continue
		}
		rounded := t.digits != nil && dev <= MaxRoundingError(len(row), int(t.digits[i]))
		if (!rounded && !renormalize) || sum == 0 {
			hint := hintIf(lastIsLabel(t, row))
			if hint == "" {
				hint = logitsHintIf(dev > farFromOne)
			}
			return t.err(i, 0, fmt.Errorf("%w: columns 1-%d sum to %.17g (tolerance %g; --renormalize rescales rows)%s", ErrRowSum, t.cols, sum, tol, hint))
		}
		for k := range row {
			row[k] /= sum
		}
		if rounded {
			s.Rounded++
		} else {
			s.Renormalized++
		}
	}
	return nil
}

// maxRounding caps the row-sum error MaxRoundingError accepts.
const maxRounding = 1e-2

// MaxRoundingError returns the largest |row sum - 1| explained by writing
// k probabilities that sum to 1 with d decimals: k * 0.5 * 10^-d (plus a
// relative 1e-9 and the float64 error of the sum), capped at 1e-2 so that
// no row off by more than 1 % passes whatever its decimals (d <= 2 for
// k >= 2). d < 0 means the decimals are not known: the result is 0.
func MaxRoundingError(k, d int) float64 {
	if d < 0 || k < 2 {
		return 0
	}
	return min(maxRounding, float64(k)*0.5*math.Pow(10, -float64(d))*(1+1e-9)) + float64(k)*0x1p-50
}

// rowFits reports whether row passes checkProbs as a probability row: every
// entry in [0, 1] and, for two or more entries, a sum within tol of 1 or
// within what the rounding to d decimals explains.
func rowFits(row []float64, d int8, tol float64) bool {
	sum := 0.0
	for _, v := range row {
		if !(v >= 0 && v <= 1) {
			return false
		}
		sum += v
	}
	dev := math.Abs(sum - 1)
	return len(row) < 2 || dev <= tol || dev <= MaxRoundingError(len(row), int(d))
}

// labelHint is the hint added to the error about a row whose last column
// looks like a label.
const labelHint = "; is the last column a label? name it 'label' in a header"

// logitsHint is the hint added to the error about a value or a row of
// predictions read as probabilities that looks like logits: an entry
// above 1, one below -1e-2 (a rounding error of a probability is far
// smaller), or a row of entries in [0, 1] whose sum is off 1 by more
// than farFromOne (sigmoid outputs of several classes, or logits that
// happen to lie in [0, 1]).
const logitsHint = " (logits? use --logits)"

// farFromOne is the row-sum error past which the row-sum error suggests
// logits: 10 times the largest error that rounding explains (maxRounding).
const farFromOne = 10 * maxRounding

func logitsHintIf(ok bool) string {
	if ok {
		return logitsHint
	}
	return ""
}

func hintIf(ok bool) string {
	if ok {
		return labelHint
	}
	return ""
}

// lastIsLabel reports whether a row of a CSV file read without a label
// column looks like probabilities followed by a label: a whole number >= 1
// last, the others summing to 1 within 1e-2 (so the row sums to a whole
// number >= 2) or being a single probability p1.
func lastIsLabel(t *table, row []float64) bool {
	if !t.labelHint || len(row) < 2 {
		return false
	}
	last, sum := row[len(row)-1], 0.0
	for _, v := range row[:len(row)-1] {
		sum += v
	}
	return last >= 1 && last == math.Trunc(last) && (len(row) == 2 || math.Abs(sum-1) <= maxRounding)
}

// Softmax writes the softmax of the logits z into dst (len(dst) == len(z)),
// in float64 and stably: p_k = exp(z_k - max z) / sum_m exp(z_m - max z).
func Softmax(dst, z []float64) { mathx.Softmax(dst, z) }

// Sigmoid returns 1 / (1 + exp(-z)) without overflow for any finite z.
func Sigmoid(z float64) float64 { return mathx.Sigmoid(z) }
