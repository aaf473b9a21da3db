// Package report is `calib report` as a library: Build evaluates a
// prediction set (evaluate), compares the recalibration methods fitted on a
// validation set (compare) and assembles the report as data, a Document;
// the renderers draw it (Document.WriteHTML: one self-contained HTML page)
// or one figure (Write, Save: SVG, PNG or PDF).
//
//	test, err := data.Load("test.npz", data.Options{})
//	doc, err := report.Build(ctx, test, nil, report.Options{})
//	err = doc.WriteHTML(w)
//
// The zero Options is `calib report` without flags. The statistics behind
// the figures live in the estimator packages (the bands in metric and kde,
// the curves' bandwidths and ECE^KDE against h in kde); this package only
// draws their results.
//
// Each figure type holds its data (computed by a New... function from
// scores, probabilities and labels, or by a ...Of function from a data.Set
// as Build does) and draws itself with gonum.org/v1/plot (the Figure
// interface); Write and Save render a figure as SVG, PNG or PDF, and
// InlineSVG as an <svg> element for HTML. The figures:
//
//   - Reliability: a reliability diagram (top-label or one class) with
//     equal-width or equal-mass bins, the gap to the mean confidence, a
//     bootstrap interval per bin, the Beta-kernel curve E[correct |
//     confidence = c] with its bootstrap band (a warning when its
//     cross-validated bandwidth is at an end of its range) and a strip of
//     bin counts.
//   - KSGraphs: the calibration graphs of Gupta et al. (ICLR 2021) Fig. 1:
//     cumulative score and accuracy against the fractile, the same on the
//     warped axis, and the spline estimate of P(correct | score) against
//     fractile and score.
//   - Simplex: for three classes (or two named classes and "other"), the
//     triangle-binned and the Dirichlet-kernel estimates of the
//     calibration-error field ||E[y | f] - f||_1 on the simplex, with the
//     samples (Popordanoska et al., NeurIPS 2022, Fig. 1); every bin shows
//     its count, and bins with too few samples are hatched, not coloured.
//   - BandwidthView: the leave-one-out log-likelihood against the bandwidth
//     and ECE^KDE as a function of the bandwidth (their Fig. 3).
//   - Comparison: each metric before and after each recalibration method,
//     the axis starting near the values when they are close, and only a
//     strictly best method highlighted.
//
// Every text is in Liberation Sans; titles wrap to their panel, and
// legends sit between the title and the plot, never over the data.
//
// Document is the report: a data summary, a table of metrics with
// intervals, the figures with captions and the recalibration comparison,
// with Warnings for what could not be made. WriteHTML writes it as one file
// with inline SVG, the figures' font embedded, and no reference to any
// network host. Tables fit the page's width and become one card per row on
// a phone; figures of several panels are shown as one part per panel, side
// by side on a wide screen and stacked on a phone.
//
// NewPlot, LogAxis, DrawGrid and Palette draw other figures (the
// experiments') in the same style.
package report
