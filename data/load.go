package data

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Formats lists the accepted values of Options.Format.
var Formats = []string{"csv", "npy", "npz", "jsonl"}

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
	}
	return ""
}

// Load reads and validates the prediction file name (and the labels file
// opts.Labels, if any). Text formats are parsed as they are read.
func Load(name string, opts Options) (*Set, error) {
	format, err := formatFor(name, opts)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lb []byte
	if opts.Labels != "" {
		if lb, err = readFile(opts.Labels); err != nil {
			return nil, err
		}
	}
	return parse(format, name, f, opts.Labels, lb, opts)
}

// Parse reads a prediction set from in-memory file contents: preds is the
// content of the file named name, labels that of the labels file named
// labelsName (nil when the labels are in the predictions file). Names pick
// formats as in Load and appear in errors.
func Parse(name string, preds []byte, labelsName string, labels []byte, opts Options) (*Set, error) {
	format, err := formatFor(name, opts)
	if err != nil {
		return nil, err
	}
	return parse(format, name, bytes.NewReader(preds), labelsName, labels, opts)
}

// formatFor returns the format of a predictions file.
func formatFor(name string, opts Options) (string, error) {
	format := opts.Format
	if format == "" {
		format = FormatOf(name)
		if format == "" {
			return "", &Error{File: name, Err: fmt.Errorf("%w: cannot tell the format from the extension %q; use --format (%s)", ErrFormat, filepath.Ext(name), strings.Join(Formats, ", "))}
		}
	}
	if !slices.Contains(Formats, format) {
		return "", &Error{File: name, Err: fmt.Errorf("%w: format %q; valid: %s", ErrFormat, format, strings.Join(Formats, ", "))}
	}
	return format, nil
}

func parse(format, name string, r io.Reader, labelsName string, labels []byte, opts Options) (*Set, error) {
	sep := labels != nil
	var (
		t   *table
		lc  *labelColumn
		err error
	)
	switch format {
	case "csv":
		t, lc, err = parseCSV(name, r, !sep && !opts.Unlabeled)
	case "jsonl":
		t, lc, err = parseJSONL(name, r, !sep && !opts.Unlabeled)
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
		if lc, err = parseLabels(labelsName, labels); err != nil {
			return nil, err
		}
	}
	if lc == nil && format == "npy" && !opts.Unlabeled {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: an NPY file holds no labels: give a labels file (--labels)", ErrLabel)}
	}
	return build(t, lc, opts)
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
	t, _, err := parseCSV(name, bytes.NewReader(b), false)
	if err != nil {
		return nil, err
	}
	if t.cols != 1 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: a labels file has one column, got %d", ErrShape, t.cols)}
	}
	return &labelColumn{positions: t.positions, values: t.values, col: 1}, nil
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(name, f)
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
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n > maxFileSize {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: file larger than %d bytes", ErrFormat, int64(maxFileSize))}
	}
	return buf.Bytes(), nil
}
