package recal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestLoadFileMessages: every failure of LoadFile names the file, says
// what is wrong without Go's terms and wraps ErrInput (and the decoder's
// or the file system's error where there is one).
func TestLoadFileMessages(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"garbage.json": "garbage",
		"type.json":    `{"schema_version":"x"}`,
		"unknown.json": `{"schema_version":1,"method":"temperature","input":"logits","k":3,"temperature":1,"x":2}`,
		"version.json": `{"schema_version":2}`,
		"method.json":  `{"schema_version":1,"method":"nope"}`,
		"badtype.json": `{"schema_version":1,"method":"temperature","input":"logits","k":3,"temperature":"hot"}`,
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	cases := map[string]string{
		"garbage.json": "garbage.json: not a calib map: not valid JSON at byte 1: invalid character 'g'",
		"type.json":    `type.json: not a calib map: "schema_version" holds a JSON string, want a whole number`,
		"unknown.json": `unknown.json: not a calib map: temperature map: unknown field "x"`,
		"version.json": "version.json: not a calib map: schema_version 2, want 1",
		"method.json":  `method.json: not a calib map: unknown method "nope"`,
		"badtype.json": `badtype.json: not a calib map: "temperature" holds a JSON string, want a number`,
		"missing.json": "missing.json: no such map file",
		"":             ": is a directory, want a map file (the JSON written by calib fit)",
	}
	for name, want := range cases {
		_, err := LoadFile(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)+want[strings.Index(want, ":"):]) || !errors.Is(err, ErrInput) {
			t.Errorf("%q: %v, want ErrInput with %q", name, err, want)
			continue
		}
		for _, bad := range []string{"Go struct", " json: ", "recal:", "float64"} {
			if strings.Contains(err.Error(), bad) {
				t.Errorf("%q: %q in %q", name, bad, err)
			}
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "garbage.json")); !errors.Is(err, ErrSchema) {
		t.Errorf("garbage: %v is not ErrSchema", err)
	}
	var se *json.SyntaxError
	if _, err := LoadFile(filepath.Join(dir, "garbage.json")); !errors.As(err, &se) {
		t.Errorf("garbage: %v does not wrap the decoder's error", err)
	}
}

// TestSaveFileRoundTrip: SaveFile writes the map with the provenance given
// (LoadFile reads both back) and replaces a file whole.
func TestSaveFileRoundTrip(t *testing.T) {
	name := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(name, []byte("old"), 0o644)
	for _, c := range fitAll(t, 200) {
		if err := SaveFile(name, c, &data.Provenance{Command: "calib fit"}); err != nil {
			t.Fatal(err)
		}
		got, err := LoadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", c.Info().Method, err)
		}
		var prov bytes.Buffer
		if h := got.Info(); h.Method != c.Info().Method || json.Compact(&prov, h.Provenance) != nil || prov.String() != `{"calib_version":"","command":"calib fit","options":null}` {
			t.Errorf("%s: loaded %+v", c.Info().Method, h)
		}
	}
	if es, _ := os.ReadDir(filepath.Dir(name)); len(es) != 1 {
		t.Errorf("left %d files", len(es))
	}
}

// TestParseMethods: "" is every method, a list its methods in its order, a
// list of empty items none; an unknown name lists the valid ones.
func TestParseMethods(t *testing.T) {
	if ms, err := ParseMethods(""); err != nil || !slices.Equal(ms, methodList) {
		t.Errorf("all: %v, %v", ms, err)
	}
	if ms, err := ParseMethods(" platt,spline "); err != nil || !slices.Equal(ms, []Method{MethodPlatt, MethodSpline}) {
		t.Errorf("list: %v, %v", ms, err)
	}
	if ms, err := ParseMethods(","); err != nil || ms == nil || len(ms) != 0 {
		t.Errorf("empty items: %#v, %v", ms, err)
	}
	_, err := ParseMethods("spline,nope")
	if !errors.Is(err, ErrInput) || err.Error() != `unknown method "nope" (valid: `+strings.Join(MethodNames(), ", ")+")" {
		t.Errorf("unknown: %v", err)
	}
	if n := MethodNames(); len(n) != len(methodList) || n[0] != "spline" {
		t.Errorf("MethodNames %v", n)
	}
}

// TestColumnsAndApplyErrors: a map's files hold K columns above K = 2 and
// either one or two at K = 2; Apply's errors name the file and are the
// input's.
func TestColumnsAndApplyErrors(t *testing.T) {
	if (Header{K: 5}).Columns() != 5 || (Header{K: 2}).Columns() != 0 {
		t.Error("Columns")
	}
	c := fitAll(t, 200)[0] // K = 3
	s := &data.Set{File: "two.csv", N: 2, K: 2, Probs: []float64{0.5, 0.5, 0.2, 0.8}, Labels: []int{0, 1}}
	_, err := Apply(c, s)
	if !errors.Is(err, ErrInput) || !strings.HasPrefix(err.Error(), "two.csv: ") || !strings.Contains(err.Error(), "the map is for K = 3, the input has K = 2") {
		t.Errorf("Apply: %v", err)
	}
	s.File = ""
	if _, err := Apply(c, s); err == nil || strings.HasPrefix(err.Error(), ":") {
		t.Errorf("Apply without a file name: %v", err)
	}
}
