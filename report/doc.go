// Package report draws the figures of calibration analysis and assembles
// them into one self-contained HTML report.
//
// Each figure type holds its data (computed by a New... function from
// scores, probabilities and labels) and draws itself with gonum.org/v1/plot
// (the Figure interface); Write and Save render a figure as SVG, PNG or
// PDF, and InlineSVG as an <svg> element for HTML. The figures:
//
//   - Reliability: a reliability diagram (top-label or one class) with
//     equal-width or equal-mass bins, the gap to the mean confidence, a
//     bootstrap band, the Beta-kernel curve E[correct | confidence = c] and
//     a strip of bin counts.
//   - KSGraphs: the calibration graphs of Gupta et al. (ICLR 2021) Fig. 1:
//     cumulative score and accuracy against the fractile, the same on the
//     warped axis, and the spline estimate of P(correct | score) against
//     fractile and score.
//   - Simplex: for three classes (or two named classes and "other"), the
//     triangle-binned and the Dirichlet-kernel estimates of the
//     calibration-error field ||E[y | f] - f||_1 on the simplex, with the
//     samples (Popordanoska et al., NeurIPS 2022, Fig. 1).
//   - BandwidthView: the leave-one-out log-likelihood against the bandwidth
//     and ECE^KDE as a function of the bandwidth (their Fig. 3).
//   - Comparison: each metric before and after each recalibration method.
//
// Document is the HTML report: a data summary, a table of metrics with
// intervals, the figures with captions and the recalibration comparison,
// in one file with inline SVG and no reference to any network host.
package report
