// Package goldenjson compares JSON outputs with golden files in tests: it
// drops the keys that change from run to run (times, the tool version) at
// every level and lists where two decoded values differ.
package goldenjson

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Volatile are the keys whose values change from run to run or from build
// to build: times and the provenance (tool version).
var Volatile = []string{"seconds", "eval_seconds", "fit_seconds", "provenance"}

// Definitions are the keys the library refactor added to every JSON entry so that
// it states how to recompute its value (evaluate's definition keys). The
// golden files were made before them: a test drops them from the output
// and then compares exactly, so that nothing else may change.
var Definitions = []string{"estimator", "kernel", "bin_rule", "bin_edges", "ci_resamples", "ci_seed", "ci_exact", "seed", "weighted"}

// Decode decodes b and drops the Volatile keys at every level.
func Decode(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return Drop(v, Volatile...), nil
}

// Drop removes keys from every object in v (in place) and returns v.
func Drop(v any, keys ...string) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(x, k)
		}
		for k, e := range x {
			x[k] = Drop(e, keys...)
		}
	case []any:
		for i, e := range x {
			x[i] = Drop(e, keys...)
		}
	}
	return v
}

// Diff lists where got differs from want: objects key by key (with extra
// true, keys of got that want lacks are allowed: new keys of a later
// version), arrays element by element, numbers and strings exactly.
func Diff(path string, want, got any, extra bool) []string {
	return diff(path, want, got, extra, 0)
}

// DiffWithin is Diff without extra keys where two numbers are the same
// when |got - want| <= rel |want|: for outputs computed by sums added in
// another order.
func DiffWithin(path string, want, got any, rel float64) []string {
	return diff(path, want, got, false, rel)
}

// RequireWithin fails t where the JSON document got (decoded by Decode)
// differs from want by more than DiffWithin's rel, listing every place.
func RequireWithin(t testing.TB, path string, want any, got []byte, rel float64) {
	t.Helper()
	g, err := Decode(got)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d := DiffWithin(path, want, g, rel); d != nil {
		t.Fatalf("%s", strings.Join(d, "\n"))
	}
}

func diff(path string, want, got any, extra bool, rel float64) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %T, want an object", path, got)}
		}
		var out []string
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			out = append(out, diff(path+"."+k, w[k], gv, extra, rel)...)
		}
		if !extra {
			for _, k := range sortedKeys(g) {
				if _, ok := w[k]; !ok {
					out = append(out, fmt.Sprintf("%s.%s: not in the golden file", path, k))
				}
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %s, want %d elements", path, short(got), len(w))}
		}
		var out []string
		for i := range w {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], extra, rel)...)
		}
		return out
	case float64:
		if g, ok := got.(float64); ok && math.Abs(g-w) <= rel*math.Abs(w) {
			return nil
		}
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want))}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// DecodeOutput decodes a JSON output for comparison with a golden file:
// Decode, then the Definitions keys dropped as well.
func DecodeOutput(b []byte) (any, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return Drop(v, Definitions...), nil
}

// CompareFile lists where the JSON output got differs from the golden file
// name: both decoded, the Volatile keys dropped from both and the
// Definitions keys from got (DecodeOutput), then compared exactly.
func CompareFile(got []byte, name string) ([]string, error) {
	g, err := DecodeOutput(got)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	want, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Diff("", want, g, false), nil
}
