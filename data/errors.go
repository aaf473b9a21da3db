package data

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calib-dev/calib/internal/mathx"
)

// Sentinel errors. Every error returned by the loaders wraps one of them in an
// *Error that says where the problem is, so callers can test the kind of
// problem with errors.Is and show the position with Error().
var (
	ErrNotFinite = errors.New("not a finite number")
	ErrNegative  = errors.New("negative probability")
	ErrAboveOne  = errors.New("probability above 1")
	ErrRowSum    = errors.New("row does not sum to 1")
	ErrLabel     = errors.New("bad label")
	// ErrNoLabels (a kind of ErrLabel) says the predictions file holds no
	// labels and no labels file was given; a caller names its own way of
	// giving one.
	ErrNoLabels = fmt.Errorf("%w: no labels", ErrLabel)
	ErrRagged   = errors.New("ragged row")
	ErrEmpty    = errors.New("no samples")
	ErrLength   = errors.New("predictions and labels differ in length")
	ErrShape    = errors.New("wrong shape")
	ErrTooFew   = errors.New("too few samples")
	ErrSyntax   = errors.New("syntax error")
	ErrFormat   = errors.New("unsupported format")
	// ErrRead is a file that cannot be opened or read; the *Error wraps
	// the operating system's error too (errors.Is(err, fs.ErrNotExist)
	// holds for a missing file).
	ErrRead = errors.New("cannot read the file")
	// ErrWeights is a sample weight that is negative, NaN or infinite,
	// weights that are all zero, or a number of weights that differs from
	// the number of samples (the same value as the library's weight check
	// returns everywhere).
	ErrWeights = mathx.ErrWeights
	// ErrIsDir is a directory given where a file is wanted.
	ErrIsDir = errors.New("is a directory")
)

// Error is a problem in an input file. It names the file and, where they
// apply, the 1-based line (text formats: CSV, JSON Lines, label text files) or
// row (array formats: NPY, NPZ) and the 1-based column. Err wraps one of the
// sentinel errors of this package.
type Error struct {
	File   string // file name as given; "" for in-memory input
	Line   int    // 1-based line in a text file; 0 when not known or not text
	Row    int    // 1-based row of an array file; 0 when not known or not an array
	Column int    // 1-based column; 0 when the problem is not tied to one column
	Err    error
}

// Error formats the position and the problem on one line, for example
//
//	preds.csv: line 7, column 3: negative probability: -0.25
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("input")
	}
	sep := ": "
	if e.Line > 0 {
		fmt.Fprintf(&b, "%sline %d", sep, e.Line)
		sep = ", "
	}
	if e.Row > 0 {
		fmt.Fprintf(&b, "%srow %d", sep, e.Row)
		sep = ", "
	}
	if e.Column > 0 {
		fmt.Fprintf(&b, "%scolumn %d", sep, e.Column)
	}
	b.WriteString(": ")
	b.WriteString(oneLine(e.Err.Error()))
	return b.String()
}

// Unwrap returns the wrapped problem.
func (e *Error) Unwrap() error { return e.Err }

// oneLine keeps error text on a single line whatever the input held.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// positions maps the rows of a parsed table or label vector to their place
// in the file: a text line, or for array formats the row itself.
type positions struct {
	file  string
	lines []int32 // 1-based line of each row in a text file; nil for array files (row = base + index + 1)
	base  int     // rows of an array file before the first row here (a streamed chunk); 0 for a whole file
}

// where names row i (0-based): "line 7" in a text file, "row 7" otherwise.
func (p *positions) where(i int) string {
	if p.lines != nil {
		return fmt.Sprintf("line %d", p.lines[i])
	}
	return fmt.Sprintf("row %d", p.base+i+1)
}

// err returns the *Error for row i (0-based) and 1-based column col (0: none).
func (p *positions) err(i, col int, err error) *Error {
	e := &Error{File: p.file, Column: col, Err: err}
	if p.lines != nil {
		e.Line = int(p.lines[i])
	} else {
		e.Row = p.base + i + 1
	}
	return e
}
