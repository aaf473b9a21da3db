package data

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Formats returns the accepted values of Options.Format.
func Formats() []string { return slices.Clone(loadFormats) }

var loadFormats = []string{"csv", "npy", "npz", "jsonl", "parquet"}

// maxFileSize bounds what the loaders read into memory (8 GiB).
const maxFileSize = 8 << 30

// FormatOf returns the format the loaders pick for a file name by its
// extension, or "" when the extension is not known.
func FormatOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv", ".txt", ".tsv":
		return "csv"
	case ".npy":
		return "npy"
	case ".npz":
		return "npz"
	case ".jsonl", ".ndjson", ".json":
		return "jsonl"
	case ".parquet":
		return "parquet"
	}
	return ""
}

// Load reads and validates the prediction file name (and the labels file
// opts.Labels, if any). Text formats are parsed as they are read; a Parquet
// file is read through Chunks, its chunks joined. A file that cannot be
// opened, or a directory, is an *Error wrapping ErrRead or ErrIsDir.
func Load(name string, opts Options) (*Set, error) {
	f, err := openFile(name, "a prediction file")
	if err != nil {
		return nil, err
	}
	format, err := formatFor(name, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	if format == "parquet" {
		c, err := openChunksFile(f, name, format, opts, 0)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return readAllChunks(c)
	}
	defer f.Close()
	var lb []byte
	if opts.Labels != "" {
		if lb, err = readFile(opts.Labels, "a labels file"); err != nil {
			return nil, err
		}
		if lb == nil {
			lb = []byte{} // an empty labels file is still a labels file
		}
	}
	var w *weightColumn
	if opts.Weights != "" {
		b, err := readFile(opts.Weights, "a weights file")
		if err != nil {
			return nil, err
		}
		if w, err = parseWeights(opts.Weights, b); err != nil {
			return nil, err
		}
	}
	return parse(format, name, f, opts.Labels, lb, w, opts)
}

// readFile reads a whole side file (labels, weights; what says which, as
// openFile), up to maxFileSize bytes.
func readFile(name, what string) ([]byte, error) {
	f, err := openFile(name, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(name, f)
}

// openFile opens a file to read; what says what it should be ("a
// prediction file") for the error about a directory.
func openFile(name, what string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the name is already in the *Error
		}
		return nil, &Error{File: name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &Error{File: name, Err: fmt.Errorf("%w, want %s", ErrIsDir, what)}
	}
	return f, nil
}

// Parse reads a prediction set from in-memory file contents: preds is the
// content of the file named name, labels that of the labels file named
// labelsName (nil when the labels are in the predictions file). Names pick
// formats as in Load and appear in errors. Weights in the predictions file
// are read; opts.Weights is not (read a weights file's contents with
// ParseWeights and give them to Set.SetWeights).
func Parse(name string, preds []byte, labelsName string, labels []byte, opts Options) (*Set, error) {
	format, err := formatFor(name, opts)
	if err != nil {
		return nil, err
	}
	if format == "parquet" {
		c := &Chunks{name: name, opts: opts, size: int64(len(preds))}
		br := bytes.NewReader(preds)
		var lin *input
		if labels != nil {
			lr := bytes.NewReader(labels)
			lin = &input{name: labelsName, r: lr, ra: lr, size: int64(len(labels))}
		}
		if err := c.init(format, input{name: name, r: br, ra: br, size: int64(len(preds))}, lin, nil, 0); err != nil {
			return nil, err
		}
		return readAllChunks(c)
	}
	return parse(format, name, bytes.NewReader(preds), labelsName, labels, nil, opts)
}

// formatFor returns the format of a predictions file.
func formatFor(name string, opts Options) (string, error) {
	format := opts.Format
	if format == "" {
		format = FormatOf(name)
		if format == "" {
			return "", &Error{File: name, Err: fmt.Errorf("%w: cannot tell the format from the extension %q; use --format (%s)", ErrFormat, filepath.Ext(name), strings.Join(loadFormats, ", "))}
		}
	}
	if !slices.Contains(loadFormats, format) {
		return "", &Error{File: name, Err: fmt.Errorf("%w: format %q; valid: %s", ErrFormat, format, strings.Join(loadFormats, ", "))}
	}
	return format, nil
}

// parse reads a predictions file and its labels; w holds the weights of a
// weights file (nil when none).
func parse(format, name string, r io.Reader, labelsName string, labels []byte, w *weightColumn, opts Options) (*Set, error) {
	sep := labels != nil
	inFile := !sep && !opts.Unlabeled // the labels must be in the predictions file
	var (
		t   *table
		lc  *labelColumn
		err error
	)
	switch format {
	case "csv":
		t, lc, err = parseCSV(name, r, csvLayout{labels: inFile, detect: !inFile, k: opts.K, tol: opts.tolerance(), logits: opts.Logits})
	case "jsonl":
		t, lc, err = parseJSONL(name, r, inFile)
	default: // npy, npz: read whole
		var b []byte
		if b, err = readAll(name, r); err != nil {
			return nil, err
		}
		if format == "npy" {
			t, err = parseNPYTable(name, b)
		} else {
			t, lc, err = parseNPZ(name, b)
		}
	}
	if err != nil {
		return nil, err
	}
	if sep {
		fl, err := parseLabels(labelsName, labels)
		if err != nil {
			return nil, err
		}
		if err := sameLabels(lc, fl); err != nil {
			return nil, err
		}
		if lc == nil {
			lc = fl
		}
	}
	if w != nil {
		if err := attachWeights(t, w); err != nil {
			return nil, err
		}
	}
	if lc == nil && format == "npy" && !opts.Unlabeled {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: an NPY file holds none; give a labels file", ErrNoLabels)}
	}
	return build(t, lc, opts)
}

// sameLabels checks that the labels of the predictions file (nil when it
// has none: then build checks the labels file's length against the rows)
// agree with those of the labels file, in number and value; it names the
// first row where they differ.
func sameLabels(own, file *labelColumn) error {
	if own == nil {
		return nil
	}
	if len(own.values) != len(file.values) {
		return &Error{File: file.file, Err: fmt.Errorf("%w: %d labels for the %d rows of the predictions file", ErrShape, len(file.values), len(own.values))}
	}
	for i, v := range own.values {
		if w := file.values[i]; v != w {
			return own.err(i, own.col, fmt.Errorf("%w: the label column says %v, %s %s says %v", ErrLabel, v, file.file, file.where(i), w))
		}
	}
	return nil
}

// parseLabels reads a labels file: NPY (any integer dtype, or floats that
// are whole numbers; shape (n,) or (n, 1)) or text with one label per line
// and an optional header line.
func parseLabels(name string, b []byte) (*labelColumn, error) {
	if FormatOf(name) == "npy" {
		a, err := parseNPY(name, b)
		if err != nil {
			return nil, err
		}
		if len(a.shape) > 2 || (len(a.shape) == 2 && a.shape[1] != 1) {
			return nil, &Error{File: name, Err: fmt.Errorf("%w: labels need shape (n,) or (n, 1), got %v", ErrShape, a.shape)}
		}
		return &labelColumn{positions: positions{file: name}, values: a.values, col: 1}, nil
	}
	_, lc, err := parseCSV(name, bytes.NewReader(b), csvLayout{only: true})
	if err != nil {
		return nil, err
	}
	if lc == nil { // no rows
		lc = &labelColumn{positions: positions{file: name, lines: []int32{}}, col: 1}
	}
	return lc, nil
}

// readAll reads r (the file name) into memory, up to maxFileSize bytes.
func readAll(name string, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() <= maxFileSize {
			buf.Grow(int(st.Size()) + 1)
		}
	}
	n, err := io.Copy(&buf, io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	if n > maxFileSize {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: file larger than %d bytes", ErrFormat, int64(maxFileSize))}
	}
	return buf.Bytes(), nil
}
