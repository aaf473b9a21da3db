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
// Integer weights give the value of the data with each row repeated w_i
// times (rows of weight 0 dropped) for every metric: the means, binned
// ECE, MCE and debiased L2 with equal-width or equal-mass bins and the
// Fixed, Sqrt and Doane rules, the canonical binned estimate, KS and MMCE.
// Most metrics do not depend on the scale of the weights; the equal-mass
// edges, the Sqrt and Doane rules and the debiased L2 do, as the repeated
// rows do (they read the total weight as a count): give them weights on
// the scale of counts, such as frequencies or weights normalised to mean 1.
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
