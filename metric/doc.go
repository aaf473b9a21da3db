// Package metric implements the calibration metrics other than ECE^KDE:
// binned ECE and MCE (top-label, class-wise and canonical on the simplex),
// the debiased binned L2 error, the Kolmogorov-Smirnov calibration error of
// the splines paper, proper scores (Brier, NLL), accuracy and confidence,
// MMCE, and bootstrap confidence intervals.
//
// BinSums, CellSums, ScoreSums and KSSums are the mergeable forms of the
// binned metrics (data-independent bins), the canonical cells, the scores
// and the KS error: sums that
// shards of the data add to and that merge, for data that never sit in
// memory at once.
//
// Scalar-score metrics work on two slices of equal length: scores in [0, 1]
// and outcomes in {0, 1}. TopR, WithinTopR and ClassColumn make them from
// n×K probabilities and labels; the top-label view is TopR with r = 1.
//
// Caller bugs panic, input problems are errors: slices whose lengths do
// not match (probabilities not n×K for n labels, scores and outcomes of
// different lengths, logits of another shape) are a programming error and
// every function panics with "metric: NAME: length mismatch"; values are
// not checked here (data.Load and recal check them), and a problem of the
// data itself (too few samples for the bins asked for) is a returned error.
//
// # Sample weights
//
// Every metric, binning and estimator takes sample weights as its last
// argument before a trailing options struct: a []float64 of one weight per
// sample (row), nil meaning all 1, with results bit-identical to the
// unweighted formulas then. Means become weighted means sum_i w_i t_i /
// sum_i w_i, bin and cell counts become masses W_b = sum_{i in b} w_i, and
// each function's doc gives its formula. A sample that yields several
// scores (the n×K entries pooled by the canonical Doane rule) carries its
// weight to each; the views TopR, WithinTopR and ClassColumn yield one
// score per row, so the row weights apply to them unchanged.
//
// No metric depends on the scale of the weights, and a row of weight 0
// changes nothing. The estimators that read a weight as a count (the
// equal-mass edges, the Sqrt and Doane rules, the debiased L2) read the
// weights' normalised form w_i n+ / W, n+ the rows of positive weight
// (mean 1 over them), so integer weights give the value of the data with
// each row repeated w_i times (rows of weight 0 dropped) for the means,
// binned ECE and MCE on fixed equal-width bins, KS and MMCE, and 0/1
// weights for every metric.
//
// Validate weights first: data.Set.SetWeights checks them (finite, >= 0,
// not all 0, one per row). The functions that return an error (BinScores,
// AssignBins, TopLabelBins, ClassWiseBins, Canonical, AssignCells) check
// them too and return an error wrapping data.ErrWeights; the others (Brier,
// NLL, Accuracy, Confidence, KS, ClassWiseKS, MMCE, TopLabelMMCE,
// NewSortedKS, Assignment.Summarize) panic with "metric: NAME: length
// mismatch" on a wrong number of weights, as on any other length mismatch,
// and do not check the values: a negative or NaN weight gives a
// meaningless result and weights that are all 0 give NaN.
package metric
