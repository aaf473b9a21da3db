package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/calib-dev/calib/data"
)

// runBeam runs calib-beam (this test binary as a subprocess, see
// TestMain) in dir with args and returns its output and exit status.
func runBeam(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd, out, errb := beamCmd(t, dir, args...)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func beamCmd(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CALIB_BEAM_ARGS="+string(a))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// beamShards writes shards of the golden K = 3 set (and a K = 10 one,
// when mixed) under dir/name and returns name.
func beamShards(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, name), 0o755)
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

func golden(t *testing.T, name string) (header string, rows []string) {
	t.Helper()
	b, err := os.ReadFile("../../../testdata/golden/ecekde/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	return lines[0], lines[1:]
}

// oneLine checks that stderr is one line of calib-beam's, without the
// runner's log or report.
func oneLine(t *testing.T, what, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "calib-beam: ") || strings.Contains(l, "DataSource") || strings.Contains(l, "time=") || strings.Contains(l, "<<calib-error") {
			t.Errorf("%s: stderr is not calib-beam's lines: %q", what, stderr)
			return
		}
	}
}

// TestBeamHostileInputs: every bad option and every data error of a
// shard comes out as one line naming the flag, or the shard and row, with
// exit 2, before the pipeline starts where it can (it came out as the
// last of about 30 lines of Prism internals, exit 1); empty shards are
// skipped and named; --labels (Dataflow's job labels) is not taken for
// the labels files.
func TestBeamHostileInputs(t *testing.T) {
	dir := t.TempDir()
	h3, r3 := golden(t, "c02_n200_k3.csv")
	h10, r10 := golden(t, "c04_n1000_k10.csv")
	good := beamShards(t, dir, "good", map[string]string{
		"part-0.csv": h3 + strings.Join(r3[:120], ""), "part-1.csv": h3 + strings.Join(r3[120:], ""),
		"part-2.csv": h3, "part-3.csv": "", "_SUCCESS": "",
	})
	mixed := beamShards(t, dir, "mixed", map[string]string{"a.csv": h3 + strings.Join(r3, ""), "b.csv": h10 + strings.Join(r10[:50], "")})
	badRow := beamShards(t, dir, "badrow", map[string]string{"a.csv": h3 + strings.Join(r3[:100], ""), "b.csv": h3 + strings.Join(r3[100:150], "") + "0.2,0.3,0.5,7\n"})
	s, err := data.Load("../../../testdata/golden/ecekde/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pq bytes.Buffer
	if err := data.WriteParquet(&pq, s.Probs, s.K, s.Labels, nil, data.ParquetWriteOptions{}); err != nil {
		t.Fatal(err)
	}
	trunc := beamShards(t, dir, "trunc", map[string]string{"a.parquet": pq.String(), "b.parquet": pq.String()[:pq.Len()/2]})
	os.WriteFile(filepath.Join(dir, "x.npz"), []byte("PK\x03\x04 not really"), 0o644)

	stdout, stderr, code := runBeam(t, dir, "--input", good, "--metrics", "ece_bin,brier")
	if code != 0 || !strings.Contains(stdout, `"n":200`) || !strings.Contains(stderr, "part-2.csv") || !strings.Contains(stderr, "part-3.csv") {
		t.Errorf("empty shards: exit %d, stdout %.80q, stderr %q", code, stdout, stderr)
	}
	oneLine(t, "empty shards", stderr)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", mixed, "--metrics", "ece_bin"}, "b.csv (rows from 1): 10 columns"},
		{[]string{"--input", badRow, "--metrics", "ece_bin"}, "b.csv: line 52, column 4: bad label"},
		{[]string{"--input", trunc, "--metrics", "ece_bin"}, "b.parquet"},
		{[]string{"--input", "x.npz"}, "x.npz"},
		{[]string{"--input", "nope/*.csv"}, "no file matches"},
		{[]string{"--input", good, "--ks-r", "4", "--metrics", "ks"}, "--ks-r 4"},
		{[]string{"--input", good, "--max-cells", "1", "--metrics", "ece_bin"}, "--max-cells"},
		{[]string{"--input", good, "--eval-blocks", "5000", "--eval-points", "200", "--metrics", "ece_kde"}, "--eval-blocks 5000"},
		{[]string{"--input", good, "--eval-points", "200"}, "--eval-points applies to ece_kde"},
		{[]string{"--input", good, "--async"}, "--async: calib-beam waits for the pipeline"},
		{[]string{"--input", good, "--dry_run"}, "--dry_run: the runners calib-beam runs through do not honour it"},
		{[]string{"--input", good, "extra"}, `"extra": calib-beam takes flags only`},
		{[]string{"--input", good, "--logits", "--tolerance", "0.1"}, "--tolerance and --renormalize apply to probabilities"},
		{[]string{"--input", good, "--eval-blocks", "0"}, "--eval-blocks"},
		{[]string{"--input", good, "--labels", "y.npy"}, "--label-files"},
		{[]string{"--input", good, "--rows", "0"}, "--rows"},
		{[]string{"--input", good, "--workers", "-1"}, "--workers"},
		{[]string{"--input", good, "--eval-points", "x"}, "--eval-points"},
		{[]string{"--input", good, "--metrics", "nope"}, "unknown metric"},
		{[]string{"--input", good, "--bins", "abc"}, "invalid value \"abc\" for flag -bins"},
		{[]string{"--input", good, "--mode", "binary"}, "binary"},
		{[]string{"--input", good, "--label-files", "nope/*.npy"}, "no file matches"},
		{[]string{"--input", good, "--runner", "bogus", "--output", filepath.Join(dir, "out.json")}, `--runner "bogus": not a runner (registered: `},
		{[]string{"--input", good, "--runner", "bogus", "--output", "-"}, `--runner "bogus": not a runner`},
		{[]string{"--input", good, "--metrics", "brier", "--ks-r", "1"}, "--ks-r applies to ks, and none is computed"},
	} {
		_, stderr, code := runBeam(t, dir, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 with %q", c.args, code, stderr, c.want)
		}
		if !strings.Contains(stderr, "flag provided but not defined") && !strings.Contains(stderr, "invalid value") {
			oneLine(t, strings.Join(c.args, " "), stderr)
		}
	}
	// --verbose shows the runner's report as well.
	_, stderr, code = runBeam(t, dir, "--input", badRow, "--metrics", "ece_bin", "--verbose")
	if code != 2 || !strings.Contains(stderr, "line 52") || !strings.Contains(stderr, "time=") {
		t.Errorf("--verbose: exit %d: %.300q", code, stderr)
	}
}

// TestBeamInterrupt: SIGINT stops calib-beam with status 130 and the
// line "interrupted" (it exited 1 with "rpc error: code = Canceled").
func TestBeamInterrupt(t *testing.T) {
	dir := t.TempDir()
	const d = "../../../cmd/calib/internal/demo/cifar10_resnet110-brier/"
	abs, _ := filepath.Abs(d)
	cmd, out, errb := beamCmd(t, dir, "--input", filepath.Join(abs, "test_logits.npy"), "--label-files", filepath.Join(abs, "test_labels.npy"), "--logits", "--eval-points", "all", "--metrics", "ece_kde")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted") || out.Len() != 0 {
		t.Errorf("exit %v, stderr %q, stdout %.80q", err, errb.String(), out.String())
	}
}

// FuzzFlags parses any arguments as calib-beam's flags and checks them
// (config.options, before any file is read): an error is a usageError or
// the flag package's, never a panic.
func FuzzFlags(f *testing.F) {
	for _, a := range []string{
		"--input x --eval-points 200 --eval-blocks 3",
		"--input x --metrics ece_kde,ks --mode top_label --p 1,2 --ks-r 1,2,3",
		"--input x --bandwidth 0.05 --binning equal_mass --bin-rule doane --bins 7",
		"--input x --eval-points all --max-cells 10 --ks-cells 64 --rows 5",
	} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var c config
		fs := flag.NewFlagSet("calib-beam", flag.ContinueOnError)
		fs.SetOutput(new(bytes.Buffer))
		c.register(fs)
		if fs.Parse(strings.Fields(line)) != nil {
			return
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if _, err := c.options(set); err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("%q: %v is not a usage error", line, err)
			}
		}
	})
}
