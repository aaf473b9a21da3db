package convention

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/numpy"
	"github.com/calib-dev/calib/metric"
)

// Bin is one bin of a reliability curve.
type Bin struct {
	// Lo and Hi are the bin's edges in the convention's layout (an extra
	// bin for a score of 1 is [1, 1]; Hendrycks' bins span their scores).
	Lo, Hi float64
	// Count is the bin's weight: its number of scores, or their weight.
	Count float64
	// Score and Freq are the bin's mean score and mean outcome (0 for an
	// empty bin).
	Score, Freq float64
	// Skipped marks a bin the convention leaves out of its numbers
	// (Hendrycks' last bin).
	Skipped bool
}

// Curve is the reliability curve of scores against outcomes under a
// convention, the bins from which its ECE, MCE and Average follow.
type Curve struct {
	Convention Name
	Binning    metric.Binning
	Bins       []Bin
	// Total divides the bins' counts into their shares: the number of
	// scores (or their weight), skipped bins included.
	Total float64
	// float32: the library computes in float32 (torchmetrics' multiclass
	// confidences): ECE and MCE round as it does.
	float32 bool
	// relplot: the ECE is |sum of residuals| per bin over n, summed by
	// np.sum.
	residual []float64
}

// EqualMass reports whether the convention's library has equal-mass bins
// (calib's and scikit-learn's quantile strategy).
func (n Name) EqualMass() bool { return n == Calib || n == Sklearn }

// ErrUnsupported is wrapped by the errors of what a convention's library
// does not do (sample weights, equal-mass bins, too few scores).
var ErrUnsupported = errors.New("not supported by the library")

// NewCurve returns the reliability curve of the scores (in [0, 1]) against
// the outcomes (0 or 1) in B bins under convention n: equal-width or,
// where the library has them (Calib, Sklearn), equal-mass bins; with the
// sample weights w (nil: all 1) where the library takes weights
// (Name.Weighted). Hendrycks' bins are 100 consecutive sorted scores
// whatever B. The errors of what the library does not do wrap
// ErrUnsupported.
func NewCurve(n Name, scores, outcomes, w []float64, bins int, binning metric.Binning) (*Curve, error) {
	if len(scores) != len(outcomes) || (w != nil && len(w) != len(scores)) {
		panic("convention: NewCurve: length mismatch")
	}
	if len(scores) == 0 {
		return nil, errors.New("convention: no scores")
	}
	if bins < 1 {
		return nil, fmt.Errorf("convention: %d bins", bins)
	}
	if w != nil && !n.Weighted() {
		return nil, fmt.Errorf("convention %s: sample weights: %w", n, ErrUnsupported)
	}
	if !n.EqualMass() && binning == metric.EqualMass {
		return nil, fmt.Errorf("convention %s: equal-mass bins: %w", n, ErrUnsupported)
	}
	c := &Curve{Convention: n, Binning: binning}
	switch n {
	case Calib:
		bs, err := metric.BinScores(scores, outcomes, w, metric.BinOptions{Bins: bins, Binning: binning})
		if err != nil {
			return nil, err
		}
		for b := range bs.Count {
			m := float64(bs.Count[b])
			if bs.Mass != nil {
				m = bs.Mass[b]
			}
			c.Bins = append(c.Bins, Bin{Lo: bs.Edges[b], Hi: bs.Edges[b+1], Count: m, Score: bs.Score[b], Freq: bs.Freq[b]})
		}
		c.Total = float64(bs.N)
		if bs.Mass != nil {
			c.Total = bs.W
		}
	case Sklearn:
		c.sklearn(scores, outcomes, w, bins, binning)
	case Torchmetrics, TorchUncertainty:
		c.torchmetrics(scores, outcomes, bins, false)
	case Netcal:
		c.netcal(scores, outcomes, bins)
	case Relplot:
		c.relplot(scores, outcomes, w, bins)
	case Hendrycks:
		if len(scores) < hendrycksBin {
			return nil, fmt.Errorf("convention hendrycks: %d scores, fewer than one bin of %d (calib_err fails): %w", len(scores), hendrycksBin, ErrUnsupported)
		}
		c.hendrycks(scores, outcomes)
	case RobustnessMetrics:
		c.keras(scores, outcomes, bins)
	default:
		return nil, fmt.Errorf("convention: unknown convention %q", n)
	}
	return c, nil
}

// NewCurve32 is NewCurve of torchmetrics' multiclass path: the scores
// (and outcomes) cast to float32 first and every sum in float32, as
// MulticlassCalibrationError computes (its confidences.float()).
func NewCurve32(scores, outcomes []float64, bins int) (*Curve, error) {
	if len(scores) != len(outcomes) {
		panic("convention: NewCurve32: length mismatch")
	}
	if len(scores) == 0 || bins < 1 {
		return nil, fmt.Errorf("convention: %d scores in %d bins", len(scores), bins)
	}
	c := &Curve{Convention: Torchmetrics}
	c.torchmetrics(scores, outcomes, bins, true)
	return c, nil
}

// add accumulates score x with outcome y and weight v into bin b.
func (c *Curve) add(b int, x, y, v float64) {
	c.Bins[b].Count += v
	c.Bins[b].Score += v * x
	c.Bins[b].Freq += v * y
}

// means turns the bins' sums into means.
func (c *Curve) means() {
	for i := range c.Bins {
		if b := &c.Bins[i]; b.Count > 0 {
			b.Score /= b.Count
			b.Freq /= b.Count
		}
	}
}

// equalWidth returns B+1 bins' edges numpy.linspace(0, 1, B+1).
func (c *Curve) equalWidth(bins int) []float64 {
	e := numpy.Linspace(0, 1, bins+1)
	c.Bins = make([]Bin, bins)
	for b := range c.Bins {
		c.Bins[b].Lo, c.Bins[b].Hi = e[b], e[b+1]
	}
	return e
}

// sklearn is calibration_curve's binning: edges linspace (uniform) or
// np.percentile of the scores (quantile), bin = np.searchsorted(edges[1:-1],
// x) (side left: a score on an interior edge in the lower bin).
func (c *Curve) sklearn(scores, outcomes, w []float64, bins int, binning metric.Binning) {
	var e []float64
	if binning == metric.EqualMass {
		sorted := slices.Clone(scores)
		slices.Sort(sorted)
		q := numpy.Linspace(0, 1, bins+1)
		e = make([]float64, bins+1)
		for k := range e {
			e[k] = numpy.Percentile(sorted, q[k]*100)
		}
		c.Bins = make([]Bin, bins)
		for b := range c.Bins {
			c.Bins[b].Lo, c.Bins[b].Hi = e[b], e[b+1]
		}
	} else {
		e = c.equalWidth(bins)
	}
	inner := e[1 : len(e)-1]
	for i, x := range scores {
		b, _ := slices.BinarySearch(inner, x) // the number of inner edges < x
		v := mathx.Weight(w, i)
		c.add(b, x, outcomes[i], v)
		c.Total += v
	}
	c.means()
}

// torchmetrics is _binning_bucketize: boundaries torch.linspace(0, 1, B+1)
// in the scores' precision, bin = bucketize(x, boundaries, right=True) - 1
// (bins [e_k, e_k+1), a score of 1 in slot B), sums by scatter_add_.
func (c *Curve) torchmetrics(scores, outcomes []float64, bins int, f32 bool) {
	c.float32 = f32
	e := torchLinspace(bins+1, f32)
	c.Bins = make([]Bin, bins+1)
	for b := 0; b < bins; b++ {
		c.Bins[b].Lo, c.Bins[b].Hi = e[b], e[b+1]
	}
	c.Bins[bins].Lo, c.Bins[bins].Hi = 1, 1
	if f32 {
		cnt, sx, sy := make([]float32, bins+1), make([]float32, bins+1), make([]float32, bins+1)
		for i, x := range scores {
			x32 := float32(x)
			b := countAtMost(e, float64(x32)) - 1
			cnt[b]++
			sx[b] += x32
			sy[b] += float32(outcomes[i])
		}
		var total float32
		for b := range cnt {
			total += cnt[b]
			if cnt[b] > 0 {
				c.Bins[b].Count, c.Bins[b].Score, c.Bins[b].Freq = float64(cnt[b]), float64(sx[b]/cnt[b]), float64(sy[b]/cnt[b])
			}
		}
		c.Total = float64(total)
		return
	}
	for i, x := range scores {
		c.add(countAtMost(e, x)-1, x, outcomes[i], 1)
		c.Total++
	}
	c.means()
}

// torchLinspace is torch.linspace(0, 1, steps) on the CPU in float64 or
// float32: step = 1/(steps-1) in that precision, start + step i for the
// first half, end - step (steps - i - 1) for the rest.
func torchLinspace(steps int, f32 bool) []float64 {
	e := make([]float64, steps)
	half := steps / 2
	if f32 {
		step := float32(1) / float32(steps-1)
		for i := range e {
			if i < half {
				e[i] = float64(step * float32(i))
			} else {
				e[i] = float64(1 - step*float32(steps-i-1))
			}
		}
		return e
	}
	step := 1 / float64(steps-1)
	for i := range e {
		if i < half {
			e[i] = step * float64(i)
		} else {
			e[i] = 1 - step*float64(steps-i-1)
		}
	}
	return e
}

// countAtMost returns the number of the sorted edges <= x.
func countAtMost(e []float64, x float64) int {
	i, found := slices.BinarySearch(e, x)
	for found && i < len(e) && e[i] == x {
		i++
	}
	return i
}

// netcal is netcal's _Miscalibration binning: the scores clipped to [eps,
// 1 - eps] (eps = 2^-52), bins [a, b) from linspace (histogramdd:
// np.searchsorted(edges, x, "right") - 1), the last [a, 1].
func (c *Curve) netcal(scores, outcomes []float64, bins int) {
	e := c.equalWidth(bins)
	const eps = 0x1p-52
	for i, x := range scores {
		x = min(max(x, eps), 1-eps)
		b := min(countAtMost(e, x)-1, bins-1)
		c.add(b, x, outcomes[i], 1)
		c.Total++
	}
	c.means()
}

// relplot is binnedECE's binning: bin int(f / (1/B)) of int(1/(1/B)) + 1
// bins (a score of 1 in the last, of its own), the residuals f - y summed
// per bin in input order (np.add.at).
func (c *Curve) relplot(scores, outcomes, w []float64, bins int) {
	size := 1.0 / float64(bins)
	nb := int(1/size) + 1
	c.Bins = make([]Bin, nb)
	c.residual = make([]float64, nb)
	for b := range c.Bins {
		c.Bins[b].Lo, c.Bins[b].Hi = float64(b)*size, min(float64(b+1)*size, 1)
	}
	c.Bins[nb-1].Lo, c.Bins[nb-1].Hi = min(float64(nb-1)*size, 1), 1
	for i, x := range scores {
		b := int(x / size)
		v := mathx.Weight(w, i)
		c.add(b, x, outcomes[i], v)
		if w == nil {
			c.residual[b] += x - outcomes[i]
		} else {
			c.residual[b] += v * (x - outcomes[i])
		}
		c.Total += v
	}
	c.means()
}

// hendrycksBin is calib_err's beta: the scores per bin.
const hendrycksBin = 100

// hendrycks is calib_err's binning: the scores sorted (ties by input
// order; numpy's argsort leaves them unspecified), bins of 100
// consecutive ones, the last taking the remainder and skipped.
func (c *Curve) hendrycks(scores, outcomes []float64) {
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[a], scores[b]) })
	nb := n / hendrycksBin
	for b := range nb {
		lo, hi := b*hendrycksBin, (b+1)*hendrycksBin
		if b == nb-1 {
			hi = n
		}
		xs, ys := make([]float64, 0, hi-lo), make([]float64, 0, hi-lo)
		for _, i := range idx[lo:hi] {
			xs, ys = append(xs, scores[i]), append(ys, outcomes[i])
		}
		k := float64(hi - lo)
		c.Bins = append(c.Bins, Bin{Lo: xs[0], Hi: xs[len(xs)-1], Count: k,
			Score: numpy.Sum(xs) / k, Freq: numpy.Sum(ys) / k, Skipped: b == nb-1})
	}
	c.Total = float64(n)
}

// keras is robustness_metrics' ExpectedCalibrationError binning
// (tf.histogram_fixed_width_bins): bin floor(B x) clipped to [0, B-1].
func (c *Curve) keras(scores, outcomes []float64, bins int) {
	c.equalWidth(bins)
	for i, x := range scores {
		b := min(max(int(math.Floor(float64(bins)*x)), 0), bins-1)
		c.add(b, x, outcomes[i], 1)
		c.Total++
	}
	c.means()
}

// ECE returns the curve's ECE^p: sum over the bins that count (not
// skipped) of (Count/Total) |Freq - Score|^p, the value of calib's binned
// entries (CE_p^p; the libraries print its root for p = 2). Relplot's is
// sum_b |sum of residuals in b| / n for p = 1 (and the share-weighted
// mean residual to the p otherwise); torchmetrics' multiclass one is
// summed in float32.
func (c *Curve) ECE(p float64) float64 {
	if c.residual != nil && p == 1 {
		a := make([]float64, len(c.residual))
		for b, r := range c.residual {
			a[b] = math.Abs(r)
		}
		return numpy.Sum(a) / c.Total
	}
	if c.float32 {
		var s float32
		for _, b := range c.Bins {
			if b.Count > 0 {
				d := float32(b.Freq) - float32(b.Score)
				s += float32(math.Pow(math.Abs(float64(d)), p)) * (float32(b.Count) / float32(c.Total))
			}
		}
		return float64(s)
	}
	v := 0.0
	for _, b := range c.Bins {
		if b.Count > 0 && !b.Skipped {
			v += b.Count / c.Total * math.Pow(math.Abs(b.Freq-b.Score), p)
		}
	}
	return v
}

// MCE returns the largest |Freq - Score| over the non-empty bins that
// count (0 when none: the libraries that take the max over every slot
// count an empty one as 0).
func (c *Curve) MCE() float64 {
	m := 0.0
	for _, b := range c.Bins {
		if b.Count > 0 && !b.Skipped {
			d := math.Abs(b.Freq - b.Score)
			if c.float32 {
				d = math.Abs(float64(float32(b.Freq) - float32(b.Score)))
			}
			m = max(m, d)
		}
	}
	return m
}

// Average returns the unweighted mean of |Freq - Score| over the
// non-empty bins that count: netcal's ACE (Average Calibration Error).
func (c *Curve) Average() float64 {
	s, k := 0.0, 0
	for _, b := range c.Bins {
		if b.Count > 0 && !b.Skipped {
			s += math.Abs(b.Freq - b.Score)
			k++
		}
	}
	if k == 0 {
		return 0
	}
	return s / float64(k)
}
