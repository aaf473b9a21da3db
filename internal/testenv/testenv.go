// Package testenv tells the tests how thorough to be.
//
// A plain `go test ./...` runs every check at a size that keeps the whole
// suite within a couple of minutes on a small machine. Some checks are
// statistical (Monte Carlo ground truths, convergence in n, training runs)
// and are stronger at larger sizes; those sizes run only when the
// environment variable CALIB_THOROUGH is 1. The CI script (.ci/run) runs
// `CALIB_THOROUGH=1 go test ./...`, so the thorough suite still guards
// every change; set the variable locally before touching an estimator:
//
//	CALIB_THOROUGH=1 go test ./kde/
//
// Tests that honour it do so in one of two ways: they run a smaller size by
// default that still checks the same property (with a tolerance for that
// size), and the full size under Thorough; or, where a smaller size would
// prove nothing new, they skip by default and say so in the skip message.
// `go test -short` skips the slow parts as before, whatever the variable.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
)

// Thorough reports whether the environment variable CALIB_THOROUGH is set
// to 1: whether the tests should run their slow, full-size checks.
func Thorough() bool {
	return os.Getenv("CALIB_THOROUGH") == "1"
}

// ZeroOne sets every positive weight of w to 1: a mask, the integer
// weights that are their own normalised form (mean 1 over the rows of
// positive weight), so that the estimators that read weights as counts
// (package metric's EqualMass, DebiasedL2, the Doane and sqrt rules) see
// the rows of weight 1 and nothing of the others: the set with the rows of
// weight 0 dropped.
func ZeroOne(w []float64) {
	for i, v := range w {
		if v > 0 {
			w[i] = 1
		}
	}
}

// DemoSet is the directory name of the real prediction set that `calib
// demo` embeds (cmd/calib/internal/demo): the CIFAR-10 ResNet-110 (Brier
// score) validation and test logits.
const DemoSet = "cifar10_resnet110-brier"

// DemoFiles returns the paths of the demo set's split ("val" or "test"):
// its logits (.npy, float32) and its labels (.npy). The library's tests
// read the set from these files with data.Load (Options.Logits); only the
// command's packages may import the embedding package.
func DemoFiles(split string) (logits, labels string) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: no caller information")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "cmd", "calib", "internal", "demo", DemoSet)
	return filepath.Join(dir, split+"_logits.npy"), filepath.Join(dir, split+"_labels.npy")
}
