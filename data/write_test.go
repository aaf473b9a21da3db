package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWriteFile: the extension picks the format; both read back as written
// (the CSV with its labels), and a failed write leaves no file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	probs, labels := []float64{0.25, 0.75, 0.6, 0.4}, []int{1, 0}
	for _, name := range []string{"p.csv", "p.npy"} {
		file := filepath.Join(dir, name)
		if err := WriteFile(file, probs, 2, labels); err != nil {
			t.Fatal(err)
		}
		o := Options{}
		if FormatOf(name) == "npy" {
			o = Options{Unlabeled: true}
		}
		s, err := Load(file, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Probs, probs) || (FormatOf(name) == "csv" && !slices.Equal(s.Labels, labels)) {
			t.Errorf("%s: read %v %v", name, s.Probs, s.Labels)
		}
	}
	if err := WriteFile(filepath.Join(dir, "no", "p.csv"), probs, 2, nil); err == nil {
		t.Error("a missing directory: no error")
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d files, want 2", len(es))
	}
}
