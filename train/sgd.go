package train

import (
	"fmt"

	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// momentumSGD is stochastic gradient descent with (heavy-ball) momentum,
// the PyTorch form: v <- mu v + g, w <- w - lr v, with one velocity per
// trainable variable (zero at the start, kept in the context under
// /sgd_momentum, not trainable). GoMLX's own SGD has no momentum.
type momentumSGD struct {
	lr, mu float64
}

// UpdateGraph implements optimizers.Interface.
func (o momentumSGD) UpdateGraph(ctx *context.Context, g *G.Graph, loss *G.Node) {
	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	// The same variables, in the same order, as BuildTrainableVariablesGradientsGraph.
	var vars []*context.Variable
	for v := range ctx.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v)
		}
	}
	if len(vars) != len(grads) {
		panic(fmt.Sprintf("train: %d gradients for %d trainable variables", len(grads), len(vars)))
	}
	vctx := ctx.In("sgd_momentum").Checked(false)
	for i, v := range vars {
		vel := vctx.VariableWithValue(fmt.Sprintf("velocity_%d", i), tensors.FromShape(v.Shape()))
		vel.Trainable = false
		next := G.Add(G.MulScalar(vel.ValueGraph(g), o.mu), grads[i])
		vel.SetValueGraph(next)
		v.SetValueGraph(G.Sub(v.ValueGraph(g), G.MulScalar(next, o.lr)))
	}
}

// Clear implements optimizers.Interface: it deletes the velocities.
func (o momentumSGD) Clear(ctx *context.Context) error {
	return ctx.In("sgd_momentum").DeleteVariablesInScope()
}

var _ optimizers.Interface = momentumSGD{}
