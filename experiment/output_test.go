package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/report"
)

// fakeResult is a Result with one row and no figure.
type fakeResult struct {
	Rows []int `json:"rows"`
}

func (r *fakeResult) WriteTable(w io.Writer) error {
	_, err := io.WriteString(w, "the table\n")
	return err
}
func (r *fakeResult) Figures() map[string]report.Figure { return nil }

// nanResult does not encode as JSON.
type nanResult struct {
	fakeResult
	X float64
}

// TestSaveProvenance: Save writes the table, the JSON with the provenance
// key added (and without it for nil), and nothing else; a result that does
// not encode (a NaN) keeps its table and returns the error; WriteSummary
// prints the table, the time and the files.
func TestSaveProvenance(t *testing.T) {
	dir := t.TempDir()
	files, err := Save(dir, "fake", &fakeResult{Rows: []int{1, 2}}, &data.Provenance{Command: "calib experiment fake"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Written{filepath.Join(dir, "fake.txt"), filepath.Join(dir, "fake.json")}); !slices.Equal(files, want) {
		t.Errorf("wrote %v, want %v", files, want)
	}
	bad := t.TempDir()
	kept, err := Save(bad, "nan", &nanResult{X: math.NaN()}, nil)
	if err == nil || !strings.Contains(err.Error(), "nan JSON") || !slices.Equal(kept, Written{filepath.Join(bad, "nan.txt")}) {
		t.Errorf("a NaN: wrote %v, %v", kept, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "fake.json"))
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || got["provenance"].(map[string]any)["command"] != "calib experiment fake" || len(got["rows"].([]any)) != 2 {
		t.Errorf("JSON %s: %v", b, err)
	}
	if _, err := Save(dir, "fake", &fakeResult{}, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "fake.json")); !bytes.Equal(b, []byte("{\n \"rows\": null\n}\n")) {
		t.Errorf("without provenance: %q", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d files in the directory, want 2 (no temporary file left)", len(es))
	}
	var out bytes.Buffer
	if err := WriteSummary(&out, &fakeResult{}, files, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if want := "the table\n\n2 s; wrote:\n  " + files[0] + "\n  " + files[1] + "\n"; out.String() != want {
		t.Errorf("summary %q, want %q", out.String(), want)
	}
}

// TestLoadLogitDir reads the embedded set's folder as a logit folder; a
// missing folder is a *data.Error.
func TestLoadLogitDir(t *testing.T) {
	s, err := LoadLogitDir("../cmd/calib/internal/demo/cifar10_resnet110-brier", "val")
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 5000 || s.K != 10 || s.Logits == nil {
		t.Errorf("n %d, K %d", s.N, s.K)
	}
	if r := RealSetOf("x", s); r.Name != "x" || r.K != 10 || len(r.Labels) != 5000 {
		t.Errorf("RealSetOf: %s %d", r.Name, r.K)
	}
	var de *data.Error
	if _, err := LoadLogitDir(t.TempDir(), "test"); !errors.As(err, &de) || !errors.Is(err, data.ErrRead) {
		t.Errorf("missing folder: %v", err)
	}
}

// TestParseClasses: a list of integers; anything else names the option.
func TestParseClasses(t *testing.T) {
	if cls, err := ParseClasses(" 3, 5,7"); err != nil || !slices.Equal(cls, []int{3, 5, 7}) {
		t.Errorf("%v, %v", cls, err)
	}
	if _, err := ParseClasses("0,a,2"); err == nil || err.Error() != `classes "0,a,2": three integers a,b,c` {
		t.Errorf("%v", err)
	}
}
