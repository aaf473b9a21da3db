package cli

import (
	"context"
	"io"
	"testing"
)

// The command-level benchmarks of BENCHMARKS.md ("calib eval and calib
// demo before and after the library refactor"): each runs a whole command through
// Main, output discarded, progress off. The same file runs on older
// commits (Main's signature has not changed), so benchstat compares them.
//
//	go test ./cmd/calib/internal/cli -run '^$' -bench 'Command' -count 6

const benchSet = "../../../../testdata/golden/ecekde/c04_n1000_k10.csv"

func benchCommand(b *testing.B, args ...string) {
	for b.Loop() {
		if code := Main(context.Background(), append(args, "--progress=false"), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

// BenchmarkCommandEval: calib eval with no flags (every metric, every
// notion) on n = 1,000, K = 10.
func BenchmarkCommandEval(b *testing.B) { benchCommand(b, "eval", benchSet, "--json") }

// BenchmarkCommandEvalCI: the same with bootstrap intervals.
func BenchmarkCommandEvalCI(b *testing.B) { benchCommand(b, "eval", benchSet, "--ci", "--json") }

// BenchmarkCommandDemo: calib demo (the embedded CIFAR-10 set, n = 10,000:
// metrics, recalibration comparison, the report).
func BenchmarkCommandDemo(b *testing.B) { benchCommand(b, "demo") }

// demoTest is the embedded CIFAR-10 ResNet-110 test split of calib demo
// (n = 10,000, K = 10, logits).
const demoTest = "../demo/cifar10_resnet110-brier/"

// BenchmarkCommandEvalDemoTest: calib eval with no flags (every metric,
// canonical, marginal and top-label ECE^KDE) on the demo's test split,
// n = 10,000, K = 10.
func BenchmarkCommandEvalDemoTest(b *testing.B) {
	benchCommand(b, "eval", demoTest+"test_logits.npy", "--labels", demoTest+"test_labels.npy", "--logits", "--json")
}
