package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/sbinet/npyio/npy"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/data"
)

// ErrInput is wrapped by Run's errors about its input: a table that cannot
// be read or parsed, split fractions or labels that StratifiedSplit
// refuses. The message is the underlying error's.
var ErrInput = errors.New("train: bad input")

// inputError is an error of Run's input: err's message, wrapping err and
// ErrInput.
type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{e.err, ErrInput} }

// RunOptions configures Run, `calib train` as a library call.
type RunOptions struct {
	Data      string  // the CSV of the table (ReadTable)
	Dir       string  // the output directory; it must exist
	Val, Test float64 // the validation and test fractions of StratifiedSplit
	SplitSeed uint64  // the seed of StratifiedSplit
	Config    Config  // the training (Fit)
	// Provenance is written as model.json's "provenance" (nil: none).
	Provenance *data.Provenance
}

// RunOutput is what Run writes to DIR/model.json.
type RunOutput struct {
	Data      string    `json:"data"`
	N         int       `json:"n"`
	K         int       `json:"k"`
	SplitSeed uint64    `json:"split_seed"`
	Train     int       `json:"n_train"`
	Val       int       `json:"n_val"`
	Test      int       `json:"n_test"`
	Config    Config    `json:"config"` // with the defaults filled in
	BestEpoch int       `json:"best_epoch"`
	Epochs    int       `json:"epochs"`
	TrainLoss []float64 `json:"train_loss"`
	ValNLL    []float64 `json:"val_nll"`
	EpochTime []float64 `json:"epoch_seconds"`
	// Model holds the best epoch's weights and the standardisation
	// (logits = MLP((x - mean) / scale)).
	Model *Model `json:"model"`
	// Provenance is RunOptions.Provenance.
	Provenance *data.Provenance `json:"provenance,omitempty"`
	// Dir is the directory written (not in the JSON).
	Dir string `json:"-"`
}

// Run reads the table o.Data, splits it (StratifiedSplit), trains a model
// (Fit) and writes to o.Dir the validation and test logits and labels,
// {val,test}_logits.npy (float64, rows × K) and {val,test}_labels.npy
// (int64), which calib's loaders read as a logit folder, and model.json
// (RunOutput, indented). Each file is written atomically (whole or not at
// all). Errors about the table or the split wrap ErrInput.
func Run(o RunOptions) (*RunOutput, error) {
	tb, err := ReadTable(o.Data)
	if err != nil {
		return nil, inputError{err}
	}
	sp, err := StratifiedSplit(tb.Labels, tb.K, o.Val, o.Test, o.SplitSeed)
	if err != nil {
		return nil, inputError{err}
	}
	res, err := Fit(tb, sp, o.Config)
	if err != nil {
		return nil, err
	}
	for _, part := range []struct {
		name   string
		logits []float64
		rows   []int
	}{{"val", res.ValLogits, sp.Val}, {"test", res.TestLogits, sp.Test}} {
		y := make([]int64, len(part.rows))
		for j, i := range part.rows {
			y[j] = int64(tb.Labels[i])
		}
		if err := atomicfile.Write(filepath.Join(o.Dir, part.name+"_logits.npy"), func(w io.Writer) error { return data.WriteNPY(w, part.logits, tb.K) }); err != nil {
			return nil, err
		}
		if err := atomicfile.Write(filepath.Join(o.Dir, part.name+"_labels.npy"), func(w io.Writer) error { return npy.Write(w, y) }); err != nil {
			return nil, err
		}
	}
	out := &RunOutput{Data: o.Data, N: tb.N, K: tb.K, SplitSeed: o.SplitSeed, Train: len(sp.Train), Val: len(sp.Val), Test: len(sp.Test),
		Config: res.Config, BestEpoch: res.BestEpoch, Epochs: res.Epochs, TrainLoss: res.TrainLoss, ValNLL: res.ValNLL,
		EpochTime: res.EpochTime, Model: res.Model, Provenance: o.Provenance, Dir: o.Dir}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return nil, fmt.Errorf("train: model.json: %w", err)
	}
	return out, atomicfile.WriteBytes(filepath.Join(o.Dir, "model.json"), append(b, '\n'))
}

// WriteText writes what `calib train` prints: the loss and data, the best
// epoch, its validation NLL and the mean time per epoch, and the files
// written.
func (r *RunOutput) WriteText(w io.Writer) error {
	mean := 0.0
	for _, s := range r.EpochTime {
		mean += s / float64(len(r.EpochTime))
	}
	_, err := fmt.Fprintf(w, "%s on %s (n = %d, K = %d; %d/%d/%d rows): best epoch %d of %d, validation NLL %.4f, %.3f s per epoch\nwrote %s/{val,test}_{logits,labels}.npy and model.json\n",
		r.Config.Loss, r.Data, r.N, r.K, r.Train, r.Val, r.Test, r.BestEpoch, r.Epochs, r.ValNLL[r.BestEpoch-1], mean, r.Dir)
	return err
}
