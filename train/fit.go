package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers/fnn"
	gtrain "github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/calib-dev/calib/kde"
)

// Losses of Config.Loss.
const (
	LossXE    = "xe"     // cross-entropy
	LossKDEXE = "kde-xe" // cross-entropy + lambda * canonical ECE^KDE (CE_p^p) of each mini-batch
	LossMMCE  = "mmce"   // cross-entropy + lambda * MMCE (Kumar et al. 2018, width 0.4) of each mini-batch
	LossFocal = "focal"  // focal loss FL-53 (Mukhoti et al. 2020)
	LossLS    = "ls"     // cross-entropy with labels smoothed by Config.Smoothing
)

// Optimizers of Config.Optimizer.
const (
	OptimizerAdam = "adam"
	OptimizerSGD  = "sgd" // stochastic gradient descent with momentum
)

// Optimizers returns the valid Config.Optimizer values.
func Optimizers() []string { return slices.Clone(optimizerNames) }

var optimizerNames = []string{OptimizerAdam, OptimizerSGD}

// Losses returns the valid Config.Loss values.
func Losses() []string { return slices.Clone(lossNames) }

var lossNames = []string{LossXE, LossKDEXE, LossMMCE, LossFocal, LossLS}

// Config configures Fit. Zero fields take the defaults in brackets.
type Config struct {
	Loss      string  // one of Losses [xe]
	Lambda    float64 // weight of the KDE or MMCE term [0.1]
	Smoothing float64 // label smoothing of LossLS [0.1]
	// Bandwidth is the kernel bandwidth of the KDE term, fixed for the run;
	// 0 selects it for each mini-batch by LOO MLE over kde.DefaultGrid (the
	// paper's rule, LOOBandwidth) [0].
	Bandwidth float64
	P         float64 // exponent of the KDE term [1]
	Layers    int     // hidden layers of the MLP [2]
	Hidden    int     // units per hidden layer [64]
	Dropout   float64 // dropout rate in training [0]
	Epochs    int     // at most [30]
	Batch     int     // mini-batch size; the last incomplete batch of an epoch is dropped [128]
	// Optimizer is "adam" or "sgd" (with momentum Momentum) ["adam"].
	Optimizer string
	Momentum  float64 // momentum of "sgd" [0.9]
	LR        float64 // learning rate [1e-3 for adam, 0.01 for sgd]
	// Patience stops training when the validation NLL has not improved for
	// this many epochs [5]; the returned logits are those of the best epoch.
	Patience int
	Seed     uint64
}

// SetDefaults fills the zero fields with their defaults and checks the
// configuration (Fit does the same on its copy).
func (c *Config) SetDefaults() error {
	if c.Loss == "" {
		c.Loss = LossXE
	}
	if !slices.Contains(lossNames, c.Loss) {
		return fmt.Errorf("train: loss %q (valid: %s)", c.Loss, strings.Join(lossNames, ", "))
	}
	set := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	seti := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Lambda, 0.1)
	set(&c.Smoothing, 0.1)
	set(&c.P, 1)
	if c.Optimizer == "" {
		c.Optimizer = OptimizerAdam
	}
	switch c.Optimizer {
	case OptimizerAdam:
		set(&c.LR, 1e-3)
	case OptimizerSGD:
		set(&c.LR, 0.01)
		set(&c.Momentum, 0.9)
	default:
		return fmt.Errorf("train: optimizer %q (valid: %s, %s)", c.Optimizer, OptimizerAdam, OptimizerSGD)
	}
	seti(&c.Layers, 2)
	seti(&c.Hidden, 64)
	seti(&c.Epochs, 30)
	seti(&c.Batch, 128)
	seti(&c.Patience, 5)
	for _, bad := range []struct {
		fail bool
		msg  string
	}{
		{c.Batch < 2, fmt.Sprintf("batch size %d (at least 2)", c.Batch)},
		{c.Epochs < 1, fmt.Sprintf("%d epochs", c.Epochs)},
		{c.Layers < 0 || c.Hidden < 1, fmt.Sprintf("%d hidden layers of %d units", c.Layers, c.Hidden)},
		{!(c.Bandwidth >= 0), fmt.Sprintf("bandwidth %v (0 for LOO, else positive)", c.Bandwidth)},
		{!(c.P >= 1), fmt.Sprintf("exponent p = %v (at least 1)", c.P)},
		{!(c.Lambda >= 0), fmt.Sprintf("lambda %v (not negative)", c.Lambda)},
		{!(c.Smoothing >= 0 && c.Smoothing < 1), fmt.Sprintf("smoothing %v (in [0, 1))", c.Smoothing)},
		{!(c.LR > 0), fmt.Sprintf("learning rate %v (positive)", c.LR)},
		{!(c.Momentum >= 0 && c.Momentum < 1), fmt.Sprintf("momentum %v (in [0, 1))", c.Momentum)},
		{!(c.Dropout >= 0 && c.Dropout < 1), fmt.Sprintf("dropout %v (in [0, 1))", c.Dropout)},
		{c.Patience < 1, fmt.Sprintf("patience %d", c.Patience)},
	} {
		if bad.fail {
			return fmt.Errorf("train: invalid configuration: %s", bad.msg)
		}
	}
	return nil
}

// Result is a trained model's output on the validation and test rows.
type Result struct {
	Config     Config
	K          int
	ValLogits  []float64 // len(Split.Val) × K, at the best epoch
	TestLogits []float64 // len(Split.Test) × K
	BestEpoch  int       // 1-based
	Epochs     int       // epochs run
	TrainLoss  []float64 // mean mini-batch loss per epoch
	ValNLL     []float64 // per epoch
	EpochTime  []float64 // seconds of training per epoch (without the evaluation; the first also compiles the graph)
	Model      *Model    // the weights of the best epoch and the standardisation
}

// Fit trains an MLP (Config.Layers hidden layers of Config.Hidden units,
// ReLU, optional dropout; GoMLX's fnn on the pure-Go simplego backend) with
// Adam (or SGD with momentum, Config.Optimizer) on the train rows of the table, standardised with the train rows'
// mean and deviation, and returns the validation and test logits of the
// epoch with the lowest validation NLL. Mini-batches are drawn from
// PCG(Seed, epoch) and the weights initialised from Seed, so a run is
// reproducible.
func Fit(tb *Table, sp *Split, cfg Config) (*Result, error) {
	if err := cfg.SetDefaults(); err != nil {
		return nil, err
	}
	if len(sp.Train) < cfg.Batch {
		return nil, fmt.Errorf("%w: %d training rows for batches of %d: lower --batch or give more rows", ErrInput, len(sp.Train), cfg.Batch)
	}
	backend, err := simplego.New("")
	if err != nil {
		return nil, fmt.Errorf("train: backend: %w", err)
	}
	d, k := tb.D, tb.K
	std := FitStandardizer(tb.X, d, sp.Train)
	xval, xtest := std.Apply(tb.X, d, sp.Val), std.Apply(tb.X, d, sp.Test)

	ctx := context.New()
	if err := ctx.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		return nil, err
	}
	ctx.SetParam(optimizers.ParamLearningRate, cfg.LR)
	model := func(ctx *context.Context, _ any, inputs []*G.Node) []*G.Node {
		c := fnn.New(ctx.In("mlp"), inputs[0], k).NumHiddenLayers(cfg.Layers, cfg.Hidden)
		if cfg.Dropout > 0 {
			c = c.Dropout(cfg.Dropout)
		}
		return []*G.Node{c.Done()}
	}
	loss := func(labels, predictions []*G.Node) *G.Node {
		logits := predictions[0]
		onehot := G.OneHot(labels[0], k, dtypes.Float64)
		switch cfg.Loss {
		case LossFocal:
			return Focal(logits, onehot)
		case LossLS:
			return SmoothedXE(logits, onehot, cfg.Smoothing)
		}
		xe := G.Neg(G.ReduceAllMean(G.ReduceSum(G.Mul(onehot, G.LogSoftmax(logits, -1)), -1)))
		switch cfg.Loss {
		case LossKDEXE:
			var h *G.Node
			if cfg.Bandwidth > 0 {
				h = G.Scalar(logits.Graph(), dtypes.Float64, cfg.Bandwidth)
			} else {
				h = LOOBandwidth(logits, kde.DefaultGrid())
			}
			xe = G.Add(xe, G.MulScalar(KDECanonical(logits, onehot, h, cfg.P), cfg.Lambda))
		case LossMMCE:
			xe = G.Add(xe, G.MulScalar(MMCE(logits, onehot, 0.4), cfg.Lambda))
		}
		return xe
	}
	var opt optimizers.Interface = optimizers.Adam().Done()
	if cfg.Optimizer == OptimizerSGD {
		opt = momentumSGD{lr: cfg.LR, mu: cfg.Momentum}
	}
	trainer := gtrain.NewTrainer(backend, ctx, model, loss, opt, nil, nil)
	infer := func(x []float64, n int) ([]float64, error) {
		exec, err := context.NewExec(backend, ctx.Reuse(), func(ctx *context.Context, in *G.Node) *G.Node {
			return model(ctx, nil, []*G.Node{in})[0]
		})
		if err != nil {
			return nil, err
		}
		out, err := exec.Exec(tensors.FromFlatDataAndDimensions(x, n, d))
		if err != nil {
			return nil, err
		}
		return tensors.MustCopyFlatData[float64](out[0]), nil
	}

	res := &Result{Config: cfg, K: k}
	best := math.Inf(1)
	since := 0
	xb, yb := make([]float64, cfg.Batch*d), make([]int32, cfg.Batch)
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		rows := append([]int(nil), sp.Train...)
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(epoch)))
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		start := time.Now()
		sum, nb := 0.0, 0
		for b := 0; b+cfg.Batch <= len(rows); b += cfg.Batch {
			for a, i := range rows[b : b+cfg.Batch] {
				for c := 0; c < d; c++ {
					xb[a*d+c] = (tb.X[i*d+c] - std.Mean[c]) / std.Scale[c]
				}
				yb[a] = int32(tb.Labels[i])
			}
			m, err := trainer.TrainStep(nil, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(xb, cfg.Batch, d)},
				[]*tensors.Tensor{tensors.FromFlatDataAndDimensions(yb, cfg.Batch)})
			if err != nil {
				return nil, fmt.Errorf("train: epoch %d: %w", epoch, err)
			}
			v := tensors.ToScalar[float64](m[0])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("train: epoch %d, batch %d: the loss is %v", epoch, nb, v)
			}
			sum += v
			nb++
		}
		res.EpochTime = append(res.EpochTime, time.Since(start).Seconds())
		res.TrainLoss = append(res.TrainLoss, sum/float64(nb))
		res.Epochs = epoch
		vl, err := infer(xval, len(sp.Val))
		if err != nil {
			return nil, err
		}
		nll := meanNLL(vl, sp.Val, tb.Labels, k)
		res.ValNLL = append(res.ValNLL, nll)
		if nll < best {
			best, since, res.BestEpoch, res.ValLogits = nll, 0, epoch, vl
			if res.TestLogits, err = infer(xtest, len(sp.Test)); err != nil {
				return nil, err
			}
			if res.Model, err = snapshot(ctx, cfg.Layers, d, k, std); err != nil {
				return nil, err
			}
		} else if since++; since >= cfg.Patience {
			break
		}
	}
	return res, nil
}

// snapshot copies the MLP's variables (scope /mlp, fnn's layout
// fnn_hidden_layer_<i>/{weights,biases} then fnn_output_layer) into a Model.
func snapshot(ctx *context.Context, layers, d, k int, std *Standardizer) (*Model, error) {
	vars := map[string][]float64{}
	var err error
	ctx.In("mlp").EnumerateVariablesInScope(func(v *context.Variable) {
		t, e := v.Value()
		if e != nil {
			err = e
			return
		}
		vars[v.ScopeAndName()] = tensors.MustCopyFlatData[float64](t)
	})
	if err != nil {
		return nil, fmt.Errorf("train: reading the weights: %w", err)
	}
	m := &Model{D: d, K: k, Mean: slices.Clone(std.Mean), Scale: slices.Clone(std.Scale)}
	in := d
	for l := 0; l <= layers; l++ {
		scope := fmt.Sprintf("/mlp/fnn_hidden_layer_%d/", l)
		if l == layers {
			scope = "/mlp/fnn_output_layer/"
		}
		w, b := vars[scope+"weights"], vars[scope+"biases"]
		if len(b) == 0 || len(w) != in*len(b) {
			return nil, fmt.Errorf("train: unexpected weights in %s (%d weights, %d biases)", scope, len(w), len(b))
		}
		m.Dense = append(m.Dense, Dense{In: in, Out: len(b), W: w, B: b})
		in = len(b)
	}
	return m, m.check()
}

// meanNLL is the mean negative log-likelihood of the labels of rows under
// the logits (one row of K per entry of rows).
func meanNLL(logits []float64, rows []int, labels []int, k int) float64 {
	s := 0.0
	for j, i := range rows {
		z := logits[j*k : (j+1)*k]
		m := math.Inf(-1)
		for _, v := range z {
			m = math.Max(m, v)
		}
		t := 0.0
		for _, v := range z {
			t += math.Exp(v - m)
		}
		s += m + math.Log(t) - z[labels[i]]
	}
	return s / float64(len(rows))
}
