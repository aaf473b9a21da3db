package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestFitToStdout: calib fit -o - prints the map that -o FILE writes.
func TestFitToStdout(t *testing.T) {
	const file = "../../../../testdata/golden/ecekde/c04_n1000_k10.csv"
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code, err := execArgs(context.Background(), []string{"fit", file, "--method", "isotonic", "-o", "-", "--progress=false"}, &out, &errOut); code != ExitOK {
		t.Fatalf("fit -o -: %v", err)
	}
	if code, err := execArgs(context.Background(), []string{"fit", file, "--method", "isotonic", "-o", dir + "/m.json", "--progress=false"}, io.Discard, io.Discard); code != ExitOK {
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

// execArgs runs the command line args (without the program name) as
// calib does: the flags parsed by the command's own flag set.
func execArgs(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	c := New(args[0])
	if err := c.Flags().Parse(args[1:]); err != nil {
		return Code(ctx, InputError(FlagError(err)))
	}
	if err := c.CheckArgs(c.Flags().Args()); err != nil {
		return Code(ctx, err)
	}
	return Code(ctx, c.Run(ctx, c.Flags().Args(), Input{Stdout: stdout, Stderr: stderr}))
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
	const file = golden + "c02_n200_k3.csv"
	c := New("eval")
	if err := c.Run(context.Background(), nil, Input{}); err == nil || !strings.Contains(err.Error(), "takes 1 argument(s), got 0") {
		t.Errorf("no argument: %v", err)
	}
	c = New("eval")
	if err := c.Flags().Parse([]string{"--metrics", "brier", "--json"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), []string{file}, Input{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), []string{file}, Input{}); err == nil || !strings.Contains(err.Error(), "has run") {
		t.Errorf("second run: %v", err)
	}
}
