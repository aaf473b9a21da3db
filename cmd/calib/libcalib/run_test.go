//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/cmd/calib/internal/commands"
	"github.com/calib-dev/calib/data"
)

// withoutRun drops what differs between two runs or names the input.
func withoutRun(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != "seconds" && k != "provenance" && k != "file" {
				out[k] = withoutRun(e)
			}
		}
		return out
	case []any:
		for i := range v {
			v[i] = withoutRun(v[i])
		}
	}
	return v
}

// decoded is the JSON text s decoded, withoutRun.
func decoded(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %.200s", err, s)
	}
	return withoutRun(v)
}

const goldenFile = "../../../testdata/golden/ecekde/c04_n1000_k10.csv"

// TestRunsMatchTheCommandLine: eval, test, bandwidth and fit on arrays
// give what the command gives on the file holding them.
func TestRunsMatchTheCommandLine(t *testing.T) {
	s, err := data.Load(goldenFile, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := data.Arrays{Values: slices.Clone(s.Probs), Cols: s.K, Labels: s.Labels}
	for _, c := range []struct {
		command string
		set     []setting
		flags   []string // the command line's own besides the settings
	}{
		{"eval", []setting{{"metrics", "ece_bin,ks,brier,ece_witness"}, {"ci", "true"}, {"ci-resamples", "20"}}, []string{"--json", "--progress=false"}},
		{"test", []setting{{"resamples", "99"}, {"tests", "ks,ece_bin"}}, []string{"--json"}},
		{"bandwidth", []setting{{"mode", "top_label"}}, []string{"--json", "--progress=false"}},
		{"fit", []setting{{"method", "isotonic"}}, []string{"-o", "-", "--progress=false"}},
	} {
		got, code, err := runs[c.command](context.Background(), c.set, "probs", a)
		if code != codeOK {
			t.Fatalf("%s on arrays: code %d: %v", c.command, code, err)
		}
		args := append([]string{goldenFile}, c.flags...)
		for _, s := range c.set {
			args = append(args, "--"+s.Name+"="+s.Value)
		}
		cmd := commands.New(c.command)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := cmd.Run(context.Background(), cmd.Flags().Args(), commands.Input{Stdout: &out, Stderr: io.Discard}); err != nil {
			t.Fatalf("calib %s: %v", c.command, err)
		}
		if !reflect.DeepEqual(decoded(t, got), decoded(t, out.String())) {
			t.Errorf("calib %s: arrays and file differ:\n%.300s\n%.300s", c.command, got, out.String())
		}
	}
}

// TestRunRefusals: the options and arrays each command refuses, with the
// command line's message and code 2.
func TestRunRefusals(t *testing.T) {
	p := []float64{0.5, 0.5, 0.25, 0.7, 0.1, 0.9} // row 2 sums to 0.95
	bad := data.Arrays{Values: p, Cols: 2, Labels: []int{0, 1, 1}}
	a := data.Arrays{Values: []float64{0.5, 0.5, 0.3, 0.7, 0.1, 0.9}, Cols: 2, Labels: []int{0, 1, 1}}
	for _, c := range []struct {
		command string
		set     []setting
		want    string
	}{
		{"eval", []setting{{"stream", "true"}}, "array in memory"},
		{"eval", nil, "probs: row 2: row does not sum to 1"},
		{"eval", []setting{{"frobnicate", "1"}}, "unknown flag: --frobnicate"},
		{"test", []setting{{"resamples", "0"}}, `--resamples "0": want an integer in [1, 1000000]`},
		{"test", []setting{{"tests", "skce"}, {"resamples", "500"}}, "--resamples applies to --tests "},
		{"test", []setting{{"bins", "3"}}, "unknown flag: --bins"},
		{"bandwidth", []setting{{"bandwidth-objective", "reference"}, {"no-refine", "true"}}, "--no-refine applies to --bandwidth-objective loo, not reference"},
		{"fit", nil, "--method is required"},
		{"fit", []setting{{"method", "temperature"}}, "--method temperature needs logits (--logits)"},
		{"fit", []setting{{"method", "isotonic"}, {"logits", "true"}, {"tolerance", "0.1"}}, "--tolerance applies to probabilities"},
		{"fit", []setting{{"method", "isotonic"}, {"tolerance", "2"}}, `--tolerance "2": want a number in (0, 1)`},
	} {
		in := a
		if c.set == nil && c.command == "eval" {
			in = bad
		}
		_, code, err := runs[c.command](context.Background(), c.set, "probs", in)
		if code != codeInput || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: code %d, %v; want 2 and %q", c.command, c.set, code, err, c.want)
		}
	}
	// renormalize works on a copy: the caller's buffer is unchanged.
	if _, code, err := runEval(context.Background(), []setting{{"renormalize", "true"}, {"metrics", "brier"}}, "probs", bad); code != codeOK {
		t.Fatalf("renormalize: code %d: %v", code, err)
	}
	if p[2] != 0.25 || p[3] != 0.7 {
		t.Errorf("renormalize wrote into the caller's array: %v", p)
	}
}

// BenchmarkRunArrays is the Go side of the Python package's overhead
// (scripts/python_bench.py overhead): calib_run's eval on arrays in
// memory, the first 1,000 rows of the CIFAR-10 DenseNet-121 validation
// logits: the options decoded, the arrays read, the library called, the
// JSON written.
func BenchmarkRunArrays(b *testing.B) {
	const dir = "../../../testdata/realsets/cifar10_densenet121-flsd53/"
	s, err := data.Load(dir+"logits.npy", data.Options{Logits: true, Labels: dir + "labels.npy"})
	if err != nil {
		b.Fatal(err)
	}
	a := data.Arrays{Values: s.Logits[:1000*s.K], Cols: s.K, Labels: s.Labels[:1000]}
	for _, c := range []struct{ name, metrics string }{{"default", ""}, {"brier", "brier"}} {
		set := []setting{{"logits", "true"}}
		if c.metrics != "" {
			set = append(set, setting{"metrics", c.metrics})
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, code, err := runEval(context.Background(), set, "logits", a); code != codeOK {
					b.Fatal(err)
				}
			}
		})
	}
}
