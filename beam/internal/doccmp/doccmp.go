// Package doccmp compares two `calib eval --json` documents for the tests
// of the Beam pipeline: the same keys, strings and booleans, and numbers
// equal to a relative tolerance.
package doccmp

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Diff returns the differences between the JSON documents got and want,
// sorted: a key of one missing from the other, a string, boolean or null
// that differs, or numbers a and b with
//
//	|a - b| > tol x max(|a|, |b|, 1e-3)
//
// (relative, with an absolute floor of tol x 1e-3 for values near 0, whose
// rounding is relative to the terms that cancel, not to the result). Keys
// named in skip are left out at every depth (timings, provenance). A
// document that is not JSON is one difference.
func Diff(got, want []byte, tol float64, skip ...string) []string {
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return []string{fmt.Sprintf("got: %v", err)}
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return []string{fmt.Sprintf("want: %v", err)}
	}
	var diffs []string
	var walk func(path string, g, w any)
	walk = func(path string, g, w any) {
		switch wv := w.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want an object", path, g))
				return
			}
			for k, y := range wv {
				if slices.Contains(skip, k) {
					continue
				}
				x, ok := gv[k]
				if !ok {
					diffs = append(diffs, fmt.Sprintf("%s.%s: missing", path, k))
					continue
				}
				walk(path+"."+k, x, y)
			}
			for k := range gv {
				if _, ok := wv[k]; !ok && !slices.Contains(skip, k) {
					diffs = append(diffs, fmt.Sprintf("%s.%s: not in the reference", path, k))
				}
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want %d items", path, g, len(wv)))
				return
			}
			for i := range wv {
				walk(fmt.Sprintf("%s[%d]", path, i), gv[i], wv[i])
			}
		case float64:
			gv, ok := g.(float64)
			if !ok || math.Abs(gv-wv) > tol*max(math.Abs(gv), math.Abs(wv), 1e-3) {
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", path, g, wv))
			}
		default:
			if g != w {
				diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", path, g, w))
			}
		}
	}
	walk("", g, w)
	slices.Sort(diffs)
	return diffs
}
