// Package calibtest holds hypothesis tests of calibration: statistics with
// null distributions, so that a user gets a p-value and a yes/no answer
// with a known error rate, not only an estimate.
//
// The one-dimensional tests take scores s_i (a confidence, or one class's
// probability) and 0/1 outcomes o_i (correct, or the class occurred), and
// test H0: E[o | s] = s. The null is the perfectly calibrated model: the
// outcomes are independent Bernoulli(s_i) draws given the scores.
//
//   - Cumulative (Arrieta-Ibarra, Gujral, Tannen, Tygert and Xu 2022,
//     "Metrics of calibration for probabilistic predictions"; Tygert 2023,
//     "Calibration of p-values for calibration and for deviation of a
//     subpopulation from the full population"): with the rows sorted by
//     score, the cumulative differences C_k = sum_{i <= k} w_i (o_i - s_i) /
//     W (C_0 = 0) and their null standard deviation at the end, sigma =
//     sqrt(sum_i w_i^2 s_i (1 - s_i)) / W. The Kolmogorov-Smirnov statistic
//     max_k |C_k| / sigma and the Kuiper statistic (max_k C_k - min_k C_k) /
//     sigma tend under H0 to the maximum of |B| and to the range of B, B a
//     standard Brownian motion on [0, 1] (the cumulative residual is a
//     martingale with variance sigma^2 at the end); their p-values are the
//     tails of those laws (KSPValue, KuiperPValue).
//   - Spiegelhalter (1986): z = sum w_i (o_i - s_i)(1 - 2 s_i) / sqrt(sum
//     w_i^2 (1 - 2 s_i)^2 s_i (1 - s_i)), asymptotically N(0, 1) under H0;
//     the p-value is two-sided.
//
// Holm adjusts a family of p-values (the class-wise tests, one per class)
// for multiple testing.
package calibtest
