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
// lexically (ShardsOf without the files it skipped).
func Shards(pattern string) ([]string, error) {
	files, _, err := ShardsOf(pattern)
	return files, err
}

// ShardsOf returns the prediction files that pattern names, sorted
// lexically, and the files of a directory it skipped, each with the
// reason: the file itself; for a directory, its regular files, not
// recursively, but for hidden files (a name starting with ".", left out
// without a word), the markers and summaries that Spark, Hadoop and Beam
// write beside their part files (a name starting with "_": _SUCCESS,
// _metadata, ...), files of no format FormatOf knows, and .txt and .json
// files beside shards of another format (notes.txt or metadata.json
// beside .csv or .parquet shards); otherwise the regular
// files that match the pattern in the syntax of filepath.Glob, none
// skipped. A pattern that matches no file, a malformed pattern and a
// directory without prediction files are *Error values wrapping ErrRead
// (and fs.ErrNotExist when nothing matches).
func ShardsOf(pattern string) (files, skipped []string, err error) {
	st, err := os.Stat(pattern)
	switch {
	case err == nil && st.IsDir():
		return dirShards(pattern)
	case err == nil:
		return []string{pattern}, nil, nil
	case !errors.Is(err, fs.ErrNotExist):
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, &Error{File: pattern, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, nil, &Error{File: pattern, Err: fmt.Errorf("%w: malformed pattern: %w", ErrRead, err)}
	}
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
			files = append(files, m)
		}
	}
	if len(files) == 0 {
		return nil, nil, &Error{File: pattern, Err: fmt.Errorf("%w: no file matches the pattern: %w", ErrRead, fs.ErrNotExist)}
	}
	slices.Sort(files)
	return files, nil, nil
}

// dirShards returns the prediction files of the directory dir and the
// files it skipped (see ShardsOf).
func dirShards(dir string) (files, skipped []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, &Error{File: dir, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	var candidates []string
	exts := map[string]bool{} // the extensions of the candidates
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); strings.HasPrefix(name, ".") || err != nil || !st.Mode().IsRegular() {
			continue
		}
		switch {
		case strings.HasPrefix(name, "_"):
			skipped = append(skipped, name+" (a marker or summary file, as Spark and Hadoop write)")
		case FormatOf(name) == "":
			skipped = append(skipped, name+" (not a prediction file: "+strings.Join(knownExtensions, ", ")+")")
		default:
			candidates = append(candidates, p)
			exts[strings.ToLower(filepath.Ext(name))] = true
		}
	}
	// .txt and .json are also the extensions of notes and metadata: beside
	// shards of a format of its own (.csv, .parquet, .npy, ...) such a
	// file is skipped, not read as a shard.
	var strong []string
	for ext := range exts {
		if !weakExtensions[ext] {
			strong = append(strong, ext)
		}
	}
	slices.Sort(strong)
	for _, p := range candidates {
		if ext := strings.ToLower(filepath.Ext(p)); weakExtensions[ext] && len(strong) > 0 {
			skipped = append(skipped, fmt.Sprintf("%s (a %s file beside %s shards: notes or metadata, not read)", filepath.Base(p), ext, strings.Join(strong, ", ")))
			continue
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return nil, nil, &Error{File: dir, Err: fmt.Errorf("%w: the directory holds no prediction files (%s)", ErrRead, strings.Join(knownExtensions, ", "))}
	}
	slices.Sort(files)
	slices.Sort(skipped)
	return files, skipped, nil
}

// weakExtensions are the extensions of prediction files that notes and
// metadata share (see ShardsOf).
var weakExtensions = map[string]bool{".txt": true, ".json": true}

// knownExtensions lists the extensions FormatOf knows, for messages.
var knownExtensions = []string{".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".json", ".npy", ".npz", ".parquet"}
