package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Shards returns the prediction files that pattern names, sorted
// lexically: the file itself; for a directory, its regular files whose
// format FormatOf knows, not recursively, hidden files (a name starting with
// ".") left out; otherwise the regular files that match the pattern in the
// syntax of filepath.Glob. A pattern that matches no file, a malformed
// pattern and a directory without prediction files are *Error values
// wrapping ErrRead (and fs.ErrNotExist when nothing matches).
func Shards(pattern string) ([]string, error) {
	st, err := os.Stat(pattern)
	switch {
	case err == nil && st.IsDir():
		return dirShards(pattern)
	case err == nil:
		return []string{pattern}, nil
	case !errors.Is(err, fs.ErrNotExist):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: pattern, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, &Error{File: pattern, Err: fmt.Errorf("%w: malformed pattern: %w", ErrRead, err)}
	}
	var files []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
			files = append(files, m)
		}
	}
	if len(files) == 0 {
		return nil, &Error{File: pattern, Err: fmt.Errorf("%w: no file matches the pattern: %w", ErrRead, fs.ErrNotExist)}
	}
	slices.Sort(files)
	return files, nil
}

// dirShards returns the prediction files of the directory dir.
func dirShards(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: dir, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || FormatOf(name) == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		return nil, &Error{File: dir, Err: fmt.Errorf("%w: the directory holds no prediction files (%s)", ErrRead, strings.Join(knownExtensions, ", "))}
	}
	slices.Sort(files)
	return files, nil
}

// knownExtensions lists the extensions FormatOf knows, for messages.
var knownExtensions = []string{".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".json", ".npy", ".npz", ".parquet"}
