package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: Write leaves the old file when the writer fails and no
// temporary file behind; a write that succeeds replaces the file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.csv")
	os.WriteFile(name, []byte("old"), 0o644)
	err := Write(name, func(w io.Writer) error { w.Write([]byte("partial")); return fmt.Errorf("disk full") })
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("error %v, want the writer's", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("file %q after a failed write", b)
	}
	if err := WriteBytes(name, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "new" {
		t.Errorf("file %q", b)
	}
	if st, _ := os.Stat(name); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left %d files", len(es))
	}
	if err := WriteBytes(filepath.Join(dir, "no", "x"), nil); err == nil {
		t.Error("write into a missing directory: no error")
	}
}

// TestCheck: each refusal names the file and says why; a writable name
// passes and leaves nothing behind.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		name string
		exts []string
		want string // "" means no error
	}{
		{filepath.Join(dir, "out.csv"), []string{"npy", "csv"}, ""},
		{filepath.Join(dir, "OUT.CSV"), []string{"csv"}, ""},
		{filepath.Join(dir, "out"), nil, ""},
		{"", []string{"csv"}, ""},
		{filepath.Join(dir, "out.txt"), []string{"npy", "csv"}, "out.txt: the file name must end in .npy or .csv"},
		{dir, nil, dir + ": is a directory, want a file name"},
		{filepath.Join(dir, "no", "x.csv"), nil, "x.csv: the directory " + filepath.Join(dir, "no") + " does not exist"},
		{filepath.Join(file, "x.csv"), nil, "x.csv: " + file + " is not a directory"},
	}
	for _, c := range cases {
		err := Check(c.name, c.exts...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasSuffix(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.name)):
			t.Errorf("%q: %v, want %q", c.name, err, c.want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("Check left %d files", len(es))
	}
}

// TestPrepareDir: a new directory is made with its parents; a file is
// refused.
func TestPrepareDir(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := PrepareDir(sub); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(sub); err != nil || !st.IsDir() {
		t.Fatalf("%s not made: %v", sub, err)
	}
	if err := PrepareDir(sub); err != nil {
		t.Errorf("existing directory: %v", err)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	if err := PrepareDir(file); err == nil || err.Error() != file+": is a file, want a directory" {
		t.Errorf("file: %v", err)
	}
	if err := PrepareDir(filepath.Join(file, "x")); err == nil || !strings.Contains(err.Error(), "cannot create the directory") {
		t.Errorf("under a file: %v", err)
	}
}
