package train

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/calib-dev/calib/kde"
)

// BenchmarkLoss times the value and the gradient (in the logits) of each
// training loss on one mini-batch of B = 128 (the study's batch) for K = 4,
// 7 and 26 (vehicle, shuttle, letter): the cost a training step adds on
// top of the MLP. kde-fixed is KDECanonical at h = 0.1 (written-out
// gradient), kde-autodiff the same term left to automatic differentiation,
// kde-loo KDECanonical with the per-batch LOO choice over the 20
// bandwidths of kde.DefaultGrid.
func BenchmarkLoss(b *testing.B) {
	backend, err := simplego.New("")
	if err != nil {
		b.Fatal(err)
	}
	xe := func(lg, oh *G.Node) *G.Node {
		return G.Neg(G.ReduceAllMean(G.ReduceSum(G.Mul(oh, G.LogSoftmax(lg, -1)), -1)))
	}
	losses := []struct {
		name string
		fn   func(lg, oh *G.Node) *G.Node
	}{
		{"xe", xe},
		{"kde-autodiff", func(lg, oh *G.Node) *G.Node {
			return G.Add(xe(lg, oh), kdeAutodiff(lg, oh, G.Scalar(lg.Graph(), dtypes.Float64, 0.1), 1))
		}},
		{"kde-fixed", func(lg, oh *G.Node) *G.Node {
			return G.Add(xe(lg, oh), KDECanonical(lg, oh, G.Scalar(lg.Graph(), dtypes.Float64, 0.1), 1))
		}},
		{"kde-loo", func(lg, oh *G.Node) *G.Node {
			return G.Add(xe(lg, oh), KDECanonical(lg, oh, LOOBandwidth(lg, kde.DefaultGrid()), 1))
		}},
		{"mmce", func(lg, oh *G.Node) *G.Node { return G.Add(xe(lg, oh), MMCE(lg, oh, 0.4)) }},
	}
	const batchSize = 128
	for _, k := range []int{4, 7, 26} {
		logits, _, onehot := batch(rand.New(rand.NewPCG(1, uint64(k))), batchSize, k)
		lt, ot := tensors.FromValue(logits), tensors.FromValue(onehot)
		for _, l := range losses {
			b.Run(fmt.Sprintf("%s/K=%d", l.name, k), func(b *testing.B) {
				exec := G.MustNewExec(backend, func(lg, oh *G.Node) (*G.Node, *G.Node) {
					v := l.fn(lg, oh)
					return v, G.Gradient(v, lg)[0]
				})
				if _, err := exec.Exec(lt, ot); err != nil { // compile outside the timing
					b.Fatal(err)
				}
				b.ResetTimer()
				for b.Loop() {
					out, err := exec.Exec(lt, ot)
					if err != nil {
						b.Fatal(err)
					}
					for _, t := range out {
						t.FinalizeAll()
					}
				}
			})
		}
	}
}
