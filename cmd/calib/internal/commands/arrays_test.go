package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

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

func execJSON(t *testing.T, args []string, arrays map[string]data.Arrays) any {
	t.Helper()
	var out bytes.Buffer
	code, err := execArgs(context.Background(), args, arrays, &out, io.Discard)
	if code != ExitOK || err != nil {
		t.Fatalf("calib %s: exit %d: %v", strings.Join(args, " "), code, err)
	}
	var v any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return withoutRun(v)
}

// TestExecArraysMatchFiles: a set passed in memory gives what the same set
// read from its file gives, for eval, test and bandwidth.
func TestExecArraysMatchFiles(t *testing.T) {
	const file = "../../../../testdata/golden/ecekde/c04_n1000_k10.csv"
	s, err := data.Load(file, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]data.Arrays{"probs": {Values: slices.Clone(s.Probs), Cols: s.K, Labels: s.Labels}}
	for _, args := range [][]string{
		{"eval", "--json", "--progress=false", "--metrics", "ece_bin,ks,brier,ece_witness", "--ci", "--ci-resamples", "20"},
		{"test", "--json", "--resamples", "99"},
		{"bandwidth", "--json", "--progress=false", "--mode", "top_label"},
	} {
		fromFile := execJSON(t, append([]string{args[0], file}, args[1:]...), nil)
		fromArrays := execJSON(t, append([]string{args[0], "probs"}, args[1:]...), a)
		if !reflect.DeepEqual(fromFile, fromArrays) {
			t.Errorf("calib %s: arrays and file differ", args[0])
		}
	}
}

func TestExecArraysRefusals(t *testing.T) {
	p := []float64{0.5, 0.5, 0.25, 0.7, 0.1, 0.9}
	a := map[string]data.Arrays{"probs": {Values: p, Cols: 2, Labels: []int{0, 1, 1}}}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "probs", "--stream"}, "array in memory"},
		{[]string{"eval", "probs", "--labels", "y.npy"}, "pass the labels and weights as arrays"},
		{[]string{"eval", "probs"}, "probs: row 2: row does not sum to 1"},
	} {
		code, err := execArgs(context.Background(), c.args, a, io.Discard, io.Discard)
		if code != ExitInput || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("calib %s: exit %d, %v; want exit 2 and %q", strings.Join(c.args, " "), code, err, c.want)
		}
	}
	// --renormalize works on a copy: the caller's buffer is unchanged.
	if code, err := execArgs(context.Background(), []string{"eval", "probs", "--renormalize", "--metrics", "brier"}, a, io.Discard, io.Discard); code != ExitOK {
		t.Fatalf("--renormalize: exit %d: %v", code, err)
	}
	if p[2] != 0.25 || p[3] != 0.7 {
		t.Errorf("--renormalize wrote into the caller's array: %v", p)
	}
}

// TestFitToStdout: calib fit -o - prints the map that -o FILE writes.
func TestFitToStdout(t *testing.T) {
	const file = "../../../../testdata/golden/ecekde/c04_n1000_k10.csv"
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code, err := execArgs(context.Background(), []string{"fit", file, "--method", "isotonic", "-o", "-", "--progress=false"}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("fit -o -: %v", err)
	}
	if code, err := execArgs(context.Background(), []string{"fit", file, "--method", "isotonic", "-o", dir + "/m.json", "--progress=false"}, nil, io.Discard, io.Discard); code != ExitOK {
		t.Fatalf("fit -o FILE: %v", err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(readFile(t, dir+"/m.json"), &b); err != nil {
		t.Fatal(err)
	}
	delete(a, "provenance")
	delete(b, "provenance")
	if !reflect.DeepEqual(a, b) || !strings.Contains(errOut.String(), "isotonic map fitted") {
		t.Errorf("fit -o - printed another map, or no summary on stderr (%q)", errOut.String())
	}
}

const golden = "../../../../testdata/golden/ecekde/"

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkRunArrays is the Go side of the Python package's overhead
// (scripts/python_bench.py overhead): calib eval on arrays in memory, the
// first 1,000 rows of the CIFAR-10 DenseNet-121 validation logits, as the
// C ABI runs it (New, Set, Run).
func BenchmarkRunArrays(b *testing.B) {
	s, err := data.Load("../../../../testdata/realsets/cifar10_densenet121-flsd53/logits.npy", data.Options{Logits: true, Labels: "../../../../testdata/realsets/cifar10_densenet121-flsd53/labels.npy"})
	if err != nil {
		b.Fatal(err)
	}
	a := map[string]data.Arrays{"logits": {Values: s.Logits[:1000*s.K], Cols: s.K, Labels: s.Labels[:1000]}}
	for _, c := range []struct{ name, metrics string }{{"default", ""}, {"brier", "brier"}} {
		set := []Setting{{"json", "true"}, {"progress", "false"}, {"logits", "true"}}
		if c.metrics != "" {
			set = append(set, Setting{"metrics", c.metrics})
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd := New("eval")
				err := cmd.Set(set)
				if err == nil {
					err = cmd.Run(context.Background(), []string{"logits"}, Input{Arrays: a})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// execArgs runs the command line args (without the program name) as
// calib does, with the arrays standing for the names that key them: the
// flags parsed by the command's own flag set.
func execArgs(ctx context.Context, args []string, arrays map[string]data.Arrays, stdout, stderr io.Writer) (int, error) {
	c := New(args[0])
	if err := c.Flags().Parse(args[1:]); err != nil {
		return Code(ctx, InputError(FlagError(err)))
	}
	if err := c.CheckArgs(c.Flags().Args()); err != nil {
		return Code(ctx, err)
	}
	return Code(ctx, c.Run(ctx, c.Flags().Args(), Input{Stdout: stdout, Stderr: stderr, Arrays: arrays}))
}

// TestConstructorNames: New(name) builds the command of that name, for
// every command All lists.
func TestConstructorNames(t *testing.T) {
	for _, c := range All() {
		if got := New(c.Name()); got == nil || got.Name() != c.Name() || got.Use() != c.Use() {
			t.Errorf("New(%q) = %v", c.Name(), got)
		}
	}
	if New("nope") != nil {
		t.Error("New(nope) is a command")
	}
}

// TestRunOnce: Run checks the arguments (no panic on none), and a command
// runs once: what it parsed from its flags is its state.
func TestRunOnce(t *testing.T) {
	a := map[string]data.Arrays{"probs": {Values: []float64{0.2, 0.8, 0.6, 0.4, 0.3, 0.7}, Cols: 2, Labels: []int{1, 0, 1}}}
	c := New("eval")
	if err := c.Run(context.Background(), nil, Input{Arrays: a}); err == nil || !strings.Contains(err.Error(), "takes 1 argument(s), got 0") {
		t.Errorf("no argument: %v", err)
	}
	c = New("eval")
	if err := c.Set([]Setting{{"metrics", "brier"}, {"json", "true"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), []string{"probs"}, Input{Arrays: a}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), []string{"probs"}, Input{Arrays: a}); err == nil || !strings.Contains(err.Error(), "has run") {
		t.Errorf("second run: %v", err)
	}
}
