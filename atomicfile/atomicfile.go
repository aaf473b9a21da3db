// Package atomicfile writes output files whole or not at all, and checks,
// before any work, that an output file or directory can be written. The
// CLI, the experiments and train write every output through it, so that an
// interrupted run (Ctrl-C, a full disk, a crash) leaves either the old file
// or the whole new one, never a part.
//
// The errors of Check and PrepareDir start with the name checked and say
// what is wrong in the user's terms ("out.txt: the file name must end in
// .csv"); the CLI puts the flag in front.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Write writes the file name by write into a temporary file of the same
// directory, syncs it, makes it readable by all (0644) and renames it to
// name. On any error the temporary file is removed and name is left as it
// was.
func Write(name string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// WriteBytes writes b to the file name as Write does.
func WriteBytes(name string, b []byte) error {
	return Write(name, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// Check checks that the file name can be written: its extension is one of
// exts, compared without case (none given: any), it is not a directory,
// and its directory exists and is writable (a temporary file is created
// there and removed). An empty name is not checked.
func Check(name string, exts ...string) error {
	if name == "" {
		return nil
	}
	if len(exts) > 0 {
		ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
		ok := false
		for _, e := range exts {
			ok = ok || ext == e
		}
		if !ok {
			return fmt.Errorf("%s: the file name must end in .%s", name, strings.Join(exts, " or ."))
		}
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return fmt.Errorf("%s: is a directory, want a file name", name)
	}
	dir := filepath.Dir(name)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: the directory %s does not exist", name, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", name, dir)
	}
	f, err := os.CreateTemp(dir, ".calib-check-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s", name, dir)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// PrepareDir creates the directory dir (and its parents) and checks that
// files can be written in it.
func PrepareDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s: is a file, want a directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: cannot create the directory (%v)", dir, errors.Unwrap(err))
	}
	return Check(filepath.Join(dir, "x"))
}
