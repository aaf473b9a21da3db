package train

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	gtrain "github.com/gomlx/gomlx/pkg/ml/train"
)

// TestMomentumSGD runs three steps of momentumSGD on the loss
// 0.5 ||w||^2 (gradient w) and compares w with the closed form of
// v <- mu v + w, w <- w - lr v (1e-15).
func TestMomentumSGD(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.New()
	w0 := []float64{1, -2, 0.5}
	model := func(ctx *context.Context, _ any, inputs []*G.Node) []*G.Node {
		w := ctx.VariableWithValue("w", w0).ValueGraph(inputs[0].Graph())
		return []*G.Node{G.Add(w, G.ReduceAllSum(G.MulScalar(inputs[0], 0)))}
	}
	loss := func(_, pred []*G.Node) *G.Node { return G.MulScalar(G.ReduceAllSum(G.Square(pred[0])), 0.5) }
	const lr, mu = 0.1, 0.9
	tr := gtrain.NewTrainer(backend, ctx, model, loss, momentumSGD{lr: lr, mu: mu}, nil, nil)
	w, v := append([]float64(nil), w0...), make([]float64, len(w0))
	for step := 0; step < 3; step++ {
		if _, err := tr.TrainStep(nil, []*tensors.Tensor{tensors.FromValue([]float64{0})}, []*tensors.Tensor{tensors.FromValue([]float64{0})}); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			v[i] = mu*v[i] + w[i]
			w[i] -= lr * v[i]
		}
	}
	got, err := ctx.GetVariableByScopeAndName("/", "w").Value()
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range tensors.MustCopyFlatData[float64](got) {
		if math.Abs(x-w[i]) > 1e-15 {
			t.Errorf("w[%d] = %v, closed form %v", i, x, w[i])
		}
	}
}
