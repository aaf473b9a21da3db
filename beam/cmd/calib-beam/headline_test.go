package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// headlineNumbers returns the value and the one interval of the headline
// entry (evaluate.Headline) of a calib eval --json document, checking that
// the interval is its estimator's cross-fit interval alone (no bootstrap
// interval beside it).
func headlineNumbers(t *testing.T, what string, doc []byte) [3]float64 {
	t.Helper()
	var ev evaluate.Evaluation
	if err := json.Unmarshal(doc, &ev); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ev.Headline == nil {
		t.Fatalf("%s: no headline", what)
	}
	return entryNumbers(t, what, ev.Lookup(evaluate.Headline))
}

func entryNumbers(t *testing.T, what string, e *evaluate.Result) [3]float64 {
	t.Helper()
	if e == nil || e.Value == nil {
		t.Fatalf("%s: no headline entry", what)
	}
	iv, ok := e.OneInterval()
	if !ok || iv.Kind != "cross-fit" || e.CI != nil || e.CILevel != nil {
		t.Fatalf("%s: headline interval %+v (ci %v)", what, iv, e.CI)
	}
	return [3]float64{float64(*e.Value), iv.Lo, iv.Hi}
}

// TestHeadlineOnDemoSet: on the demo set (the CIFAR-10 test split that
// calib demo embeds, 10,000 rows, one NPY file with its labels file),
// calib-beam's headline, value and interval, is calib eval --stream's
// (the same two passes, merged on Prism: 1e-12 relative, the sums' order
// aside) and, since every fold's sample holds all its rows at this n, the
// in-memory evaluate.Evaluate's and calib eval's to 1e-12 relative. The
// numbers are computed here, not written: the estimator may change.
func TestHeadlineOnDemoSet(t *testing.T) {
	dir, err := filepath.Abs("../../../cmd/calib/internal/demo/cifar10_resnet110-brier")
	if err != nil {
		t.Fatal(err)
	}
	logits, labels := filepath.Join(dir, "test_logits.npy"), filepath.Join(dir, "test_labels.npy")
	s, err := data.Load(logits, data.Options{Labels: labels, Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lib := entryNumbers(t, "evaluate.Evaluate", ev.Lookup(evaluate.Headline))
	calib := buildCalib(t)
	cli := func(args ...string) []byte {
		t.Helper()
		var out, stderr bytes.Buffer
		cmd := exec.Command(calib, append([]string{"eval", logits, "--labels", labels, "--logits", "--json", "--progress=false"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("calib eval %q: %v: %s", args, err, stderr.String())
		}
		return out.Bytes()
	}
	if got := headlineNumbers(t, "calib eval", cli()); got != lib {
		t.Errorf("calib eval: headline %v, evaluate.Evaluate %v", got, lib)
	}
	stream := headlineNumbers(t, "calib eval --stream", cli("--stream"))
	c, set := parse(t, "--input", logits, "--label-files", labels, "--logits", "--output", "-")
	var out bytes.Buffer
	if err := run(context.Background(), c, set, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := headlineNumbers(t, "calib-beam", out.Bytes())
	for i := range got {
		if d := math.Abs(got[i] - stream[i]); d > 1e-12*math.Abs(stream[i]) {
			t.Errorf("calib-beam: headline number %d %.17g, calib eval --stream's %.17g", i, got[i], stream[i])
		}
		if d := math.Abs(got[i] - lib[i]); d > 1e-12*math.Abs(lib[i]) {
			t.Errorf("calib-beam: headline number %d %.17g, evaluate.Evaluate's %.17g", i, got[i], lib[i])
		}
	}
	t.Logf("evaluate %v, stream %v, calib-beam %v", lib, stream, got)
}
