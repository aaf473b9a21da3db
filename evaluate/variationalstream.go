package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/variational"
)

// The streamed ece_variational (package variational's two passes): the
// first pass's Sums keep each fold's sample (a variational.Sketch); the
// second pass's KernelSums of block 0 fit the families on the samples
// (variational.Fitted: the maps travel in its JSON form to the workers)
// and sum every row's out-of-fold gains (variational.GainSums); Finish
// gives the canonical entries of the three losses, the in-memory ones when
// the samples hold every row.

// variationalFolds is ece_variational's number of folds, in memory and
// streamed.
const variationalFolds = 5

// variationalPass is the second-pass state of ece_variational: the maps
// fitted on the first pass's samples and the sums of every row's gains.
type variationalPass struct {
	Fitted *variational.Fitted   `json:"fitted"`
	Sums   *variational.GainSums `json:"sums"`
}

// variationalState is variationalSums's part of the first pass's state
// (sumsState): ece_variational's samples, one per fold.
type variationalState struct {
	Variational *variational.Sketch `json:"variational,omitempty"`
}

// variationalSums is ece_variational's first pass: each fold's sample of
// the rows (Variational, a variational.Sketch), on which the second pass
// fits the families.
var variationalSums = &sumsPart{
	what: "ece_variational's samples",
	start: func(st *sumsState, _ *data.Batch) (err error) {
		st.Variational, err = variational.NewSketch(variational.Options{Folds: variationalFolds, Seed: st.Config.Seed}, st.K, 0)
		return err
	},
	add: func(st *sumsState, b *data.Batch) error {
		if err := st.Variational.Add(b.Set, b.Shard, b.Offset); err != nil {
			return b.RowsError(err)
		}
		return nil
	},
	merge: func(st, o *sumsState) error { return st.Variational.Merge(o.Variational) },
	check: func(st *sumsState) error {
		if st.Variational == nil || st.Variational.K != st.K || st.Variational.Seed != st.Config.Seed {
			return errors.New("missing or inconsistent ece_variational samples")
		}
		return nil
	},
	secondPass: func(*streamConfig) bool { return true },
	holds:      func(st *sumsState) bool { return st.Variational != nil },
	drawn:      true,
}

// variationalPass fits the families of the configuration on the first
// pass's samples and returns the empty second-pass sums; free lets the
// samples go as they are copied (Sketch.FitFreeing), for a caller done
// with s's samples.
func (s *Sums) variationalPass(ctx context.Context, free bool) (*variationalPass, error) {
	if s.st.Variational == nil {
		return nil, nil
	}
	families, err := variational.ParseFamilies(s.st.Config.VariationalFamily)
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	fit := s.st.Variational.Fit
	if free {
		fit = s.st.Variational.FitFreeing
	}
	ft, err := fit(ctx, variational.Options{Families: families})
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	return &variationalPass{Fitted: ft, Sums: ft.NewSums()}, nil
}

// variationalKernelState is variationalKernel's part of the second
// pass's state (kernelSumsState): ece_variational's maps and gain sums
// (block 0).
type variationalKernelState struct {
	Variational *variationalPass `json:"variational,omitempty"`
}

// variationalKernel is ece_variational's part of the second pass: its
// maps, fitted on the first pass's samples (block 0), and their gain sums
// over every row.
var variationalKernel = &kernelPart{
	what:      "ece_variational",
	blockZero: true,
	holds:     func(st *kernelSumsState) bool { return st.Variational != nil },
	start: func(ks *KernelSums, kb *kernelBlock) (err error) {
		ks.st.Variational, err = kb.s.variationalPass(kb.ctx, kb.free)
		return err
	},
	add: func(ks *KernelSums, _ context.Context, b *data.Batch, _ []int, _ int) error {
		return ks.st.Variational.add(b)
	},
	merge: func(ks, o *KernelSums) error { return ks.st.Variational.merge(o.st.Variational) },
	concat: func(out *KernelSums, bs []*KernelSums) error {
		out.st.Variational = bs[0].st.Variational
		return nil
	},
	check: func(st *kernelSumsState) error {
		if st.Variational == nil {
			return nil
		}
		return st.Variational.check()
	},
	complete: func(st *kernelSumsState, _ int64) error {
		if err := st.Variational.Fitted.SameRows(st.Variational.Sums); err != nil {
			return &data.StreamError{Err: err}
		}
		return nil
	},
}

// add sums a batch's gains.
func (vp *variationalPass) add(b *data.Batch) error {
	if err := vp.Fitted.Add(vp.Sums, b.Set, b.Shard, b.Offset); err != nil {
		return b.RowsError(err)
	}
	return nil
}

// merge adds another shard's sums of the same maps.
func (vp *variationalPass) merge(o *variationalPass) error {
	a, err := json.Marshal(vp.Fitted)
	if err != nil {
		return err
	}
	b, err := json.Marshal(o.Fitted)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("evaluate: merging ece_variational sums of different maps")
	}
	return vp.Sums.Merge(o.Sums)
}

// check reports a second-pass state whose sums do not fit its maps.
func (vp *variationalPass) check() error {
	if vp.Fitted == nil || vp.Sums == nil || len(vp.Sums.Gain) != len(vp.Fitted.Losses) || vp.Sums.Folds != vp.Fitted.Folds {
		return fmt.Errorf("ece_variational sums that do not fit their maps")
	}
	return nil
}

// finishVariational returns the streamed ece_variational entries: the
// canonical CE_1 (lp), CE_2^2 (Brier) and KL part (log) with their
// intervals, as Evaluate's canonical entries; the default metrics, CE_1
// alone (the headline).
func finishVariational(s *Sums, ks *KernelSums, _ *Evaluation) ([]*Result, error) {
	if ks == nil || ks.st.Variational == nil {
		return nil, fmt.Errorf("the second pass did not sum the gains")
	}
	vp := ks.st.Variational
	if vp.Sums.N != s.st.N {
		return nil, fmt.Errorf("the second pass summed %d rows' gains, the first saw %d", vp.Sums.N, s.st.N)
	}
	var names []string
	for _, f := range vp.Fitted.Families {
		names = append(names, f.Name)
	}
	losses := []variational.Loss{variational.Lp, variational.Brier, variational.Log}
	if s.st.Config.Defaulted {
		losses = losses[:1] // the headline alone, as Evaluate's default
	}
	var out []*Result
	for _, l := range losses {
		r, err := vp.Fitted.Error(vp.Sums, variational.Options{Loss: l})
		if err != nil {
			return nil, err
		}
		out = append(out, variationalEntry(notion.Canonical, l, r, names, vp.Fitted.Folds))
	}
	return out, nil
}
