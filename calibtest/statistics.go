package calibtest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// The statistics of consistency resampling, each prepared once on the
// predictions so that a resample pays only for what depends on the labels.
// Every one is a function of the labels that package metric or kde also
// computes (the tests check the values against them).

// BinnedECEStatistic is the top-label binned ECE_p (metric.BinScores with
// o on the confidences max_l f_il and the outcomes [y_i = arg max_l f_il])
// with the bins assigned once: the confidences do not depend on the
// labels, so a resample costs O(n) (the outcomes and the bins' sums).
func BinnedECEStatistic(probs []float64, k int, p float64, o metric.BinOptions, workers int) (Statistic, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	if !(p >= 1) || math.IsInf(p, 0) {
		return nil, fmt.Errorf("calibtest: binned ECE: exponent %v", p)
	}
	s, top := confidences(probs, k)
	a, err := metric.AssignBins(s, nil, o)
	if err != nil {
		return nil, fmt.Errorf("calibtest: binned ECE: %w", err)
	}
	return PerVector(func(y []int) (float64, error) {
		if err := checkLabels(y, len(s), k); err != nil {
			return 0, err
		}
		return a.Summarize(s, outcomes(y, top), nil, nil).ECE(p), nil
	}, workers), nil
}

// KSErrorStatistic is the top-label Kolmogorov-Smirnov calibration error
// of the splines paper (eq. 12, metric.KS, the same bits) with the
// confidences sorted once: a resample costs O(n).
func KSErrorStatistic(probs []float64, k int, workers int) (Statistic, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	s, top := confidences(probs, k)
	n := len(s)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s[a], s[b]) })
	N := float64(n)
	return PerVector(func(y []int) (float64, error) {
		if err := checkLabels(y, n, k); err != nil {
			return 0, err
		}
		ks, cs, co := 0.0, 0.0, 0.0
		for _, j := range order {
			cs += s[j]
			if y[j] == top[j] {
				co++
			}
			ks = math.Max(ks, math.Abs(cs/N-co/N))
		}
		return ks, nil
	}, workers), nil
}

// MMCEStatistic is the top-label MMCE of Kumar et al. with the Laplacian
// kernel of the given width (metric.TopLabelMMCE; 0: the default 0.4),
// recomputed per resample in O(n log n).
func MMCEStatistic(probs []float64, k int, width float64, workers int) (Statistic, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	if width == 0 {
		width = metric.DefaultMMCEWidth
	}
	if !(width > 0) || math.IsInf(width, 0) {
		return nil, fmt.Errorf("calibtest: MMCE: width %v", width)
	}
	return PerVector(func(y []int) (float64, error) {
		if err := checkLabels(y, len(probs)/k, k); err != nil {
			return 0, err
		}
		v, _ := metric.TopLabelMMCE(probs, y, k, width, nil, nil)
		return v, nil
	}, workers), nil
}

// ECEKDEStatistic is ECE^KDE of one notion at a fixed bandwidth (the first
// exponent of opts.P; kde.Relabel): the kernel is swept once per batch of
// label vectors and its weights applied to all of them, so B resamples
// cost one sweep plus O(B (nnz + nK)) additions (nnz the kernel weights
// above e^-50 of their row's largest). Choose the bandwidth without the
// labels (kde.SelectBandwidth's LOO objective is a function of the
// predictions only) so that the observed statistic and the resamples are
// the same function of the labels.
func ECEKDEStatistic(ctx context.Context, notion kde.Notion, probs []float64, k int, weights []float64, opts kde.Options) (Statistic, error) {
	rl, err := kde.NewRelabel(ctx, notion, probs, k, weights, opts)
	if err != nil {
		return nil, fmt.Errorf("calibtest: %w", err)
	}
	return func(ys [][]int) ([]float64, error) {
		v, err := rl.Estimates(ys)
		if err != nil {
			return nil, err
		}
		ts := make([]float64, len(v))
		for b := range v {
			ts[b] = v[b][0]
		}
		return ts, nil
	}, nil
}

// WitnessStatistic is the canonical witness estimate (p = 1) or the
// debiased U-statistic (p = 2) of kde.Witness with opts (the bandwidth
// chosen on each label vector, as the statistic is defined), recomputed
// per resample: a resample costs one kde.Witness.
func WitnessStatistic(ctx context.Context, probs []float64, k int, p float64, opts kde.WitnessOptions) (Statistic, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	if p != 1 && p != 2 {
		return nil, fmt.Errorf("calibtest: witness: exponent %v (1 or 2)", p)
	}
	opts.P = []float64{p}
	workers := opts.Workers
	opts.Workers = 1 // the vectors of a batch run in parallel instead
	return PerVector(func(y []int) (float64, error) {
		r, err := kde.Witness(ctx, probs, y, k, nil, opts)
		if err != nil {
			return 0, err
		}
		return r.Values[0].Value, nil
	}, workers), nil
}

// SKCEStatistic is the unbiased SKCE U-statistic SKCE_uq (see SKCEOptions;
// width 0: the median heuristic with seed 0) for batches of label vectors:
// each pair's scalar kernel k(p_i, p_j) and <p_i, p_j> are computed once
// per batch and shared by its vectors, so a resample costs O(n^2)
// additions instead of O(n^2 K).
func SKCEStatistic(probs []float64, k int, width float64, workers int) (Statistic, error) {
	if err := checkRows(probs, k); err != nil {
		return nil, err
	}
	n := len(probs) / k
	if n < 2 {
		return nil, fmt.Errorf("%w: SKCE: fewer than 2 samples", ErrTooFew)
	}
	width, err := skceWidth("SKCE", probs, make([]int, n), k, width, 0)
	if err != nil {
		return nil, err
	}
	return func(ys [][]int) ([]float64, error) {
		nb := len(ys)
		yt, err := transpose(ys, n, k)
		if err != nil {
			return nil, err
		}
		rows := make([]float64, n*nb) // rows[i*nb + b]: sum over j > i of h_ij in vector b
		parallel.For(n, workers, func() struct{} { return struct{}{} }, func(_ struct{}, i int) {
			acc := rows[i*nb : (i+1)*nb]
			pi, yi := probs[i*k:(i+1)*k], yt[i*nb:(i+1)*nb]
			for j := i + 1; j < n; j++ {
				pj, yj := probs[j*k:(j+1)*k], yt[j*nb:(j+1)*nb]
				d2, dot := pairTerms(pi, pj)
				kij := math.Exp(-math.Sqrt(d2) / width)
				for b, a := range yi {
					c := yj[b]
					same := 0.0
					if a == c {
						same = 1
					}
					acc[b] += kij * (same - pi[c] - pj[a] + dot)
				}
			}
		})
		ts := make([]float64, nb)
		for i := 0; i < n; i++ {
			for b := range ts {
				ts[b] += rows[i*nb+b]
			}
		}
		for b := range ts {
			ts[b] *= 2 / (float64(n) * float64(n-1))
		}
		return ts, nil
	}, nil
}

// transpose returns yt[i*len(ys) + b] = ys[b][i], checking the labels.
func transpose(ys [][]int, n, k int) ([]int32, error) {
	nb := len(ys)
	yt := make([]int32, n*nb)
	for b, y := range ys {
		if err := checkLabels(y, n, k); err != nil {
			return nil, fmt.Errorf("label vector %d: %w", b, err)
		}
		for i, v := range y {
			yt[i*nb+b] = int32(v)
		}
	}
	return yt, nil
}

// checkLabels checks that y holds n labels in 0..k-1.
func checkLabels(y []int, n, k int) error {
	if len(y) != n {
		return fmt.Errorf("calibtest: %d labels for %d samples", len(y), n)
	}
	for i, v := range y {
		if v < 0 || v >= k {
			return fmt.Errorf("calibtest: sample %d: label %d outside 0..%d", i, v, k-1)
		}
	}
	return nil
}

// checkRows checks that probs holds at least one row of k >= 2 columns.
func checkRows(probs []float64, k int) error {
	if k < 2 || len(probs) == 0 || len(probs)%k != 0 {
		return fmt.Errorf("calibtest: %d probabilities for K = %d", len(probs), k)
	}
	return nil
}

// confidences returns the top-label confidences max_l f_il and the arg max
// (the first on ties, as metric.TopR).
func confidences(probs []float64, k int) (s []float64, top []int) {
	n := len(probs) / k
	s, top = make([]float64, n), make([]int, n)
	for i := range s {
		row := probs[i*k : (i+1)*k]
		for l, v := range row {
			if v > row[top[i]] {
				top[i] = l
			}
		}
		s[i] = row[top[i]]
	}
	return s, top
}

// outcomes returns [y_i = top_i] as 0/1.
func outcomes(y, top []int) []float64 {
	o := make([]float64, len(y))
	for i, v := range y {
		if v == top[i] {
			o[i] = 1
		}
	}
	return o
}
