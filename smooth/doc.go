// Package smooth implements the smooth calibration error smECE of Błasiok
// and Nakkiran ("Smooth ECE: Principled Reliability Diagrams via Kernel
// Smoothing", ICLR 2024) exactly as its reference implementation, relplot
// 1.0.3 (apple/ml-calibration @18ff21a), computes it, and the smooth
// reliability diagram drawn from the same kernel smoother.
//
// # Definition
//
// For scores f_i in [0, 1], outcomes y_i in [0, 1] (a correctness or a
// label indicator) and a bandwidth sigma, relplot's smooth ECE is
//
//	smECE_sigma = sum_t |R(t)| / sum_t (D(t) + 1e-4)
//	R(t) = sum_i (f_i - y_i) K_sigma(t, f_i),   D(t) = sum_i K_sigma(t, f_i)
//
// over the T = max(round(10/sigma), 200) equally spaced points t of [0, 1]
// (endpoints included). K_sigma is a Gaussian of standard deviation sigma
// reflected at 0 and 1, computed the way relplot computes it: the data are
// splatted linearly onto a grid of G = max(2000, round(20/sigma))//2 + 1
// points, the grid is convolved with the Gaussian density sampled on G
// points (all G taps, the grid reflected about its end points without
// repeating them; for even G the kernel's centre tap sits half a cell to
// the right, as in relplot) and the result is interpolated linearly to the
// T points. The 1e-4 is relplot's density floor, added to the unnormalised
// density D (about n times the density of f). round is half to even, as
// Python's.
//
// smECE itself is smECE at the fixed point sigma* = smECE_sigma* (eq. 5
// of the paper): relplot finds it by 10 steps of bisection on [0, 1]
// (sigma = 1 when 1 < smECE_1 already), keeping the upper end, so sigma*
// is a multiple of 1/1024 and never below 2/1024: a sigma below
// Options.Eps (0.001) counts as below the fixed point without being
// computed. ECE returns smECE_sigma* and sigma*; with Options.Sigma set it
// returns smECE at that sigma (relplot's smECE_sigma).
//
// # Conventions
//
// Relplot (the default) is relplot 1.0.2 and 1.0.3: their smooth ECE is
// the same function (commit a4282ab, "fix bug affecting endpoints",
// changed it; 1.0.3 only renamed smECE_slow to smECE and added
// smECE_sigma). Relplot101 is relplot 1.0 and 1.0.1 (smECE_fast):
//
//	smECE_sigma = (1/G) sum_g |(K_sigma * r)(g)|,   r = splat(f, f - y, G) / n
//
// on the grid itself, with no density division, on a grid of G = 200
// points that is multiplied by 4 whenever round(20/sigma) exceeds it; the
// grid only grows during the search (relplot's nonlocal state), so the
// final value is computed on the largest grid the search needed.
//
// # Weights
//
// relplot has no sample weights. Here a weighted point counts w_i times,
// with the weights normalised to sum to the number of points of positive
// weight: R and D sum w_i (f_i - y_i) and w_i, so that the density floor
// keeps its meaning; weights all 1 give relplot's numbers bit for bit,
// and a weight of 0 removes the point.
//
// # Numerics
//
// relplot convolves directly (np.convolve). Here the taps where the
// Gaussian is below e^-64 (about 1.6e-28) of its peak are skipped, and a
// kernel of more than 96 kept taps is applied by FFT (gonum's, on the
// least 2^a 3^b 5^c points >= 3G - 2, where the circular convolution
// equals the linear one on every output read): O(G log G) per sigma
// instead of O(G^2). The FFT's rounding is about 1e-16 of the largest
// smoothed value, a negligible share of the smooth ECE's sums; the
// diagram (NewCurve), whose ratio R/(D + 1e-4) is read also where D is
// near 0, is convolved directly. Sums over the T points use numpy's
// pairwise summation. Against relplot run on the same data
// (testdata/relplot.json: two real sets, every class and the top label,
// and synthetic sets from n = 1, at sigma* and at given sigmas) sigma*
// is identical and the values agree within 2e-14 relative (measured;
// TestRelplot asks 1e-12). The cost is O(n) to splat per grid size (one
// grid, G = 1001, serves every sigma above 0.01) plus O(G log G) per
// sigma: about 11 sigmas for the fixed point, 5 to 10 ms in all.
package smooth
