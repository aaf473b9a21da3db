//go:build cgo

package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSettings: the options object becomes the flags it sets, in order.
func TestSettings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // NAME=VALUE
		err  string
	}{
		{``, nil, ""},
		{`null`, nil, ""},
		{`{}`, nil, ""},
		{`{"metrics": ["ece_kde", "ks"], "ci": true, "seed": 18446744073709551615, "ci_level": 0.9, "mode": null}`,
			[]string{"metrics=ece_kde,ks", "ci=true", "seed=18446744073709551615", "ci-level=0.9"}, ""},
		{`{"p": [1, 2.5], "exact": false, "convention": "sklearn"}`, []string{"p=1,2.5", "exact=false", "convention=sklearn"}, ""},
		{`[1]`, nil, "want a JSON object"},
		{`{"json": false}`, nil, "set by the caller"},
		{`{"labels": "y.npy"}`, nil, "set by the caller"},
		{`{"-x": 1}`, nil, "not a flag name"},
		{`{"seed=3": 1}`, nil, "not a flag name"},
		{`{"ci level": 1}`, nil, "not a flag name"},
		{`{"bins": {"a": 1}}`, nil, "want a number"},
		{`{"p": [[1]]}`, nil, "element 0"},
		{`{"p": [null]}`, nil, "element 0"},
		{`{"bins": 15`, nil, "not closed"},
		{`{"bins": 15} {}`, nil, "data after"},
		// The key as the caller spelled it; NaN and infinities named.
		{`{"ks_r": {"a": 1}}`, nil, `"ks_r": want a number`},
		{`{"smece_sigma": NaN}`, nil, `"smece_sigma": not a JSON value (NaN and infinities are not JSON numbers)`},
		{`{"bandwidth": Infinity}`, nil, `"bandwidth": not a JSON value`},
	} {
		set, err := settings([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("settings(%s): error %v, want one with %q", c.in, err, c.err)
			}
			continue
		}
		var got []string
		for _, s := range set {
			got = append(got, s.Name+"="+s.Value)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("settings(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzSettings: any bytes give flags or an error, never a panic; accepted
// options give one flag name per non-null key.
func FuzzSettings(f *testing.F) {
	for _, s := range []string{`{"metrics": ["ece_kde"], "ci": true}`, `{"p": [1, 2]}`, `{"a": null}`, `{`, `[]`, `{"x": "a,b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args, err := settings(b)
		if err != nil {
			return
		}
		for _, a := range args {
			if a.Name == "" || strings.HasPrefix(a.Name, "-") || strings.ContainsAny(a.Name, "=_ ") {
				t.Fatalf("settings(%q) gave the flag name %q", b, a.Name)
			}
		}
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			n := 0
			for _, v := range m {
				if v != nil {
					n++
				}
			}
			if len(m) == len(args)+countNull(m) && n != len(args) {
				t.Fatalf("settings(%q): %d flags for %d non-null keys", b, len(args), n)
			}
		}
	})
}

func countNull(m map[string]any) int {
	n := 0
	for _, v := range m {
		if v == nil {
			n++
		}
	}
	return n
}
