package recal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// loadEdited saves c, applies edit to its JSON object and loads the result.
func loadEdited(t *testing.T, c Calibrator, edit func(m map[string]any)) (Calibrator, error) {
	t.Helper()
	var buf bytes.Buffer
	if err := Save(&buf, c); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return Load(bytes.NewReader(b))
}

// at returns the JSON value at the path of keys and indices under m.
func at(m map[string]any, path ...any) any {
	var v any = m
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v
}

// set sets the JSON value at the path (the last element a key or an
// index) under m.
func set(m map[string]any, x any, path ...any) {
	parent := at(m, path[:len(path)-1]...)
	switch p := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[p] = x
	case int:
		parent.([]any)[p] = x
	}
}

// TestLoadRejectsBadValues : Load checks the values of a
// map as well as its form. An isotonic map whose y[3] was edited to 5 (which
// made every row one-hot) fails with ErrMap (a kind of ErrInput, not
// ErrSchema) and a message naming the field; so do the other edits below,
// while form errors keep ErrSchema. Every unedited map loads.
func TestLoadRejectsBadValues(t *testing.T) {
	maps := map[string]Calibrator{}
	for _, c := range fitAll(t, 300) {
		name := c.Info().Method
		if iso, ok := c.(*Isotonic); ok && iso.Mode == ModeOneVsRest {
			name = "isotonic-ovr"
		}
		maps[name] = c
		if _, err := loadEdited(t, c, func(map[string]any) {}); err != nil {
			t.Fatalf("%s: unedited map: %v", name, err)
		}
	}
	// The y of the isotonic map must have at least 5 points to edit.
	if n := len(maps["isotonic"].(*Isotonic).Maps[0].Y); n < 5 {
		t.Fatalf("isotonic map with %d points", n)
	}
	cases := []struct {
		method string
		edit   func(m map[string]any)
		kind   error
		want   string
	}{
		{"isotonic", func(m map[string]any) { set(m, 5.0, "maps", 0, "y", 3) }, ErrMap, "maps[0].y[3] = 5, want a probability in [0, 1]"},
		{"isotonic", func(m map[string]any) { set(m, -0.5, "maps", 0, "y", 0) }, ErrMap, "maps[0].y[0] = -0.5, want a probability in [0, 1]"},
		{"isotonic", func(m map[string]any) {
			y := at(m, "maps", 0, "y").([]any)
			y[3], y[4] = y[4], y[3]
			if y[3] == y[4] {
				y[4] = 0.0
			}
		}, ErrMap, "maps[0].y[4] = "},
		{"isotonic", func(m map[string]any) { set(m, -1.0, "maps", 0, "x", 2) }, ErrMap, "maps[0].x[2] = -1 is below the value before it"},
		{"isotonic-ovr", func(m map[string]any) { set(m, 1.5, "maps", 2, "y", 1) }, ErrMap, "maps[2].y[1] = 1.5"},
		{"isotonic", func(m map[string]any) { set(m, []any{0.5}, "maps", 0, "y") }, ErrSchema, "point map with"},
		{"histogram", func(m map[string]any) { set(m, 1.25, "values", 2) }, ErrMap, "values[2] = 1.25, want a probability in [0, 1]"},
		{"histogram", func(m map[string]any) { set(m, 2.0, "edges", 1) }, ErrMap, "edges[2] = "},
		{"temperature", func(m map[string]any) { set(m, 0.0, "temperature") }, ErrMap, "temperature = 0, want a finite number > 0"},
		{"temperature", func(m map[string]any) { set(m, -1.0, "temperature") }, ErrMap, "temperature = -1"},
		{"temperature", func(m map[string]any) { set(m, InputProbabilities, "input") }, ErrMap, `input "probabilities", want "logits"`},
		{"dirichlet-odir", func(m map[string]any) { set(m, InputLogits, "input") }, ErrMap, `input "logits", want "probabilities"`},
		{"matrix-odir", func(m map[string]any) { set(m, -0.1, "lambda") }, ErrMap, "lambda = -0.1, want a finite number >= 0"},
		{"vector", func(m map[string]any) { set(m, []any{1.0}, "w") }, ErrSchema, "1 weights and 3 intercepts"},
		{"log-spline", func(m map[string]any) { set(m, -100.0, "knots", 1) }, ErrMap, "knots[1] = -100 is not above the knot before it"},
		{"log-spline", func(m map[string]any) { set(m, []any{1.0}, "hinges") }, ErrSchema, "hinges"},
		{"log-spline", func(m map[string]any) { set(m, InputProbabilities, "input") }, ErrMap, `input "probabilities", want "logits"`},
		{"beta", func(m map[string]any) { set(m, -2.0, "a") }, ErrMap, "a = -2, want a finite number >= 0"},
		{"platt", func(m map[string]any) { set(m, "nope", "mode") }, ErrSchema, `mode "nope"`},
		{"spline", func(m map[string]any) {
			s := at(m, "top1", "scores").([]any)
			s[1], s[2] = s[2], s[1]
		}, ErrMap, "top1.scores[2] = "},
		{"spline", func(m map[string]any) {
			v := at(m, "top1", "knot_values").([]any)
			v[2] = v[2].(float64) + 0.01
		}, ErrMap, "top1.second_derivatives[1] = "},
		{"spline", func(m map[string]any) { set(m, 3.0, "top2", "second_derivatives", 2) }, ErrMap, "top2.second_derivatives[2] = 3, want "},
		{"spline", func(m map[string]any) {
			// An old-format curve whose recalibrated values were edited.
			n := len(at(m, "within_top2", "scores").([]any))
			c := make([]any, n)
			for i := range c {
				c[i] = 0.5
			}
			set(m, c, "within_top2", "calibrated")
		}, ErrMap, "within_top2.calibrated[0] = 0.5, want "},
		{"spline", func(m map[string]any) { set(m, []any{0.5}, "top1", "scores") }, ErrSchema, "1 scores"},
		{"spline", func(m map[string]any) { set(m, 1.0, "top1", "extra") }, ErrSchema, `unknown field "extra"`},
	}
	for _, c := range cases {
		_, err := loadEdited(t, maps[c.method], c.edit)
		other := ErrSchema
		if c.kind == ErrSchema {
			other = ErrMap
		}
		if !errors.Is(err, c.kind) || !errors.Is(err, ErrInput) || errors.Is(err, other) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want %v containing %q", c.method, err, c.kind, c.want)
		}
	}
}

// TestSaveInlineArrays checks Save's layout: arrays of numbers on one line,
// arrays of objects and strings (brackets inside them included) untouched.
func TestSaveInlineArrays(t *testing.T) {
	in := "{\n \"a\": \"x [1, 2] \\\" [3]\",\n \"b\": [\n  1,\n  -2.5e-7\n ],\n \"c\": [\n  {\n   \"d\": [\n    3\n   ]\n  }\n ],\n \"e\": [\n  \"f\"\n ]\n}"
	want := "{\n \"a\": \"x [1, 2] \\\" [3]\",\n \"b\": [1,-2.5e-7],\n \"c\": [\n  {\n   \"d\": [3]\n  }\n ],\n \"e\": [\n  \"f\"\n ]\n}"
	if got := string(inlineArrays([]byte(in))); got != want {
		t.Errorf("inlineArrays:\n%s\nwant\n%s", got, want)
	}
}

// TestLoadRejectsMissingFields: a map without one of the fields calib fit
// writes (a number missing would read as 0: a Platt map without "a" gives
// every row the same confidence) is refused, naming the field, for every
// method and every such field.
func TestLoadRejectsMissingFields(t *testing.T) {
	for _, c := range fitAll(t, 300) {
		var buf bytes.Buffer
		if err := Save(&buf, c); err != nil {
			t.Fatal(err)
		}
		var keys map[string]any
		if err := json.Unmarshal(buf.Bytes(), &keys); err != nil {
			t.Fatal(err)
		}
		for key := range keys {
			if key == "provenance" || key == "top2" || key == "within_top2" {
				continue // free-form; a spline's curves past the top 1, which maps of earlier versions lack, optional
			}
			_, err := loadEdited(t, c, func(m map[string]any) { delete(m, key) })
			if err == nil || !errors.Is(err, ErrSchema) {
				t.Errorf("%s without %q: %v", c.Info().Method, key, err)
			}
		}
	}
}
