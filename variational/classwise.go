package variational

import (
	"context"
	"fmt"
	"runtime"

	"github.com/calib-dev/calib/data"
)

// ClassWise returns the class-wise variational calibration error: each
// family of o fitted, for each class k, on the binary view (1 - f_k, f_k)
// with outcome 1{y = k}, on the canonical folds (RowFold), and the gain of its maps g_k(f_k) on the classes'
// coordinates summed over classes,
//
//	CE_cw = sum_k (1/n) sum_i [ l(f_ik, y_ik) - l(g_k(f_ik), y_ik) ],
//
// one family's, chosen as Recalibrated.Error chooses (on the summed
// per-row gains). Its
// expectation is at most sum_k E||E[y_k | f_k] - f_k|| for the Lp loss
// (the class-wise, marginal L_p error: a map of f_k alone cannot beat
// E[y_k | f_k]), the class-wise log and Brier calibration errors
// likewise. The per-row gains are the sums over classes, so SE and the
// interval are those of their mean. Where a family fails to fit a class
// (a fold with no row of the class) that class keeps f_k under it (gain
// 0, still a lower bound), listed in Result.Unfitted. o.Notion is not
// read; Over and Under are 0. It is CrossFitClassWise, then
// ClassMaps.Error.
func ClassWise(ctx context.Context, s *data.Set, o Options) (Result, error) {
	cm, err := CrossFitClassWise(ctx, s, o)
	if err != nil {
		return Result{}, err
	}
	return cm.Error(o)
}

// ClassMaps holds, for each family, each class's out-of-fold
// recalibrated probability g_k(f_ik) (ClassWise).
type ClassMaps struct {
	base     *Recalibrated // the set, the folds, and per family the n×K g_k(f_ik)
	unfitted [][]int       // per fitted family (base.fits)
}

// CrossFitClassWise fits the class maps of ClassWise (o.Loss, P and
// Notion are not read).
func CrossFitClassWise(ctx context.Context, s *data.Set, o Options) (*ClassMaps, error) {
	o.noFit = true
	base, err := CrossFit(ctx, s, o)
	if err != nil {
		return nil, err
	}
	families := o.families()
	cm := &ClassMaps{base: base}
	var fams []Family
	var gs [][]float64
	for _, fam := range families {
		if base.tooFew(fam) && len(families) > 1 {
			continue // as CrossFit: too few rows for the family
		}
		g := make([]float64, len(s.Probs))
		fams, gs = append(fams, fam), append(gs, g)
		base.fits = append(base.fits, familyFit{name: fam.Name, g: g})
	}
	// Every fitted family's maps of a batch of classes in one schedule:
	// a batch's binary views at a time (the results do not depend on the
	// batch's size).
	errs := make([]error, len(fams)*s.K)
	batch := 2 * runtime.GOMAXPROCS(0)
	for k0 := 0; k0 < s.K; k0 += batch {
		var jobs []fitJob
		var at []int // each job's place in errs
		for k := k0; k < min(k0+batch, s.K); k++ {
			view := classView(s, k)
			for fi, fam := range fams {
				g := gs[fi]
				jobs = append(jobs, fitJob{set: view, fam: fam, put: func(idx []int, out []float64) {
					for j, i := range idx {
						g[i*s.K+k] = out[2*j+1]
					}
				}})
				at = append(at, fi*s.K+k)
			}
		}
		_, jerrs, err := crossFitAll(ctx, jobs, base.fold, base.folds)
		if err != nil {
			return nil, err
		}
		for j, e := range jerrs {
			errs[at[j]] = e
		}
	}
	for fi, g := range gs {
		var unfitted []int
		for k := range s.K {
			if errs[fi*s.K+k] != nil {
				for i := range s.N {
					g[i*s.K+k] = s.Probs[i*s.K+k]
				}
				unfitted = append(unfitted, k)
			}
		}
		cm.unfitted = append(cm.unfitted, unfitted)
	}
	return cm, nil
}

// Error returns the class-wise error of o's loss and p (o.Notion is not
// read), of the family chosen as Recalibrated.Error chooses.
func (cm *ClassMaps) Error(o Options) (Result, error) {
	o, err := o.withLoss()
	if err != nil {
		return Result{}, err
	}
	s := cm.base.set
	r, _ := cm.base.best(func(fi int) Result {
		g := cm.base.fits[fi].g
		total := make([]float64, s.N)
		for i := range total {
			for k := range s.K {
				ys := 0.0
				if s.Labels[i] == k {
					ys = 1
				}
				total[i] += gain1(o, s.Probs[i*s.K+k], g[i*s.K+k], ys)
			}
		}
		return cm.base.summarize(total)
	})
	for j, f := range cm.base.fits {
		if f.name == r.Family {
			r.Unfitted = cm.unfitted[j]
		}
	}
	return r, nil
}

// classView returns the binary view of class k: two columns (1 - f_k,
// f_k), the outcome 1{y = k}, the weights; no logits (withLogits gives
// the log-probabilities, whose softmax is the pair).
func classView(s *data.Set, k int) *data.Set {
	v := &data.Set{N: s.N, K: 2, File: fmt.Sprintf("%s (class %d)", s.File, k), Weights: s.Weights,
		Probs: make([]float64, 2*s.N), Labels: make([]int, s.N)}
	for i := range s.N {
		f := s.Probs[i*s.K+k]
		v.Probs[2*i], v.Probs[2*i+1] = 1-f, f
		if s.Labels[i] == k {
			v.Labels[i] = 1
		}
	}
	return v
}
