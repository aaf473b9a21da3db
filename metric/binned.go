package metric

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/textenum"
)

// Binning is how bin edges are placed on [0, 1].
type Binning int

const (
	// EqualWidth bins have edges b/B, b = 0..B.
	EqualWidth Binning = iota
	// EqualMass (adaptive) bins have the edges of scikit-learn's
	// calibration_curve(strategy="quantile"): the q-th percentiles of the
	// scores for q = 100 b/B, with NumPy's default linear interpolation
	// (index q/100 (n-1) into the sorted scores).
	//
	// With weights the edges are those percentiles of the weighted
	// empirical distribution, the weights taken as frequencies in their
	// normalised form w_i n / W (mean 1, total n, n the rows, those of
	// weight 0 included), so that the edges do not depend on the scale of
	// the weights: with the scores sorted and W_m the normalised weight of
	// the m+1 smallest, the order statistic at position t in [0, n) is the
	// smallest score whose W_m > t, and edge b interpolates linearly
	// between the order statistics at positions floor(h) and floor(h) + 1
	// (the largest score past the end), h = (b/B)(n - 1). For integer
	// weights of mean 1 these are exactly the edges of the data with each
	// row repeated w_i times (rows of weight 0 dropped).
	EqualMass
)

var binningNames = [...]string{"equal_width", "equal_mass"}

// String returns "equal_width" or "equal_mass".
func (b Binning) String() string {
	if b < 0 || int(b) >= len(binningNames) {
		return fmt.Sprintf("Binning(%d)", int(b))
	}
	return binningNames[b]
}

// ParseBinning returns the binning named s (the enumerations' one rule:
// any case, '-' for '_').
func ParseBinning(s string) (Binning, error) {
	i, err := textenum.Parse("binning", s, binningNames[:])
	return Binning(i), err
}

// MarshalText implements encoding.TextMarshaler.
func (b Binning) MarshalText() ([]byte, error) {
	n, err := textenum.Name("metric: binning", int(b), binningNames[:])
	return []byte(n), err
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseBinning).
func (b *Binning) UnmarshalText(t []byte) error {
	v, err := ParseBinning(string(t))
	if err == nil {
		*b = v
	}
	return err
}

// BinRule is how the number of bins is chosen.
type BinRule int

const (
	// Fixed uses BinOptions.Bins bins.
	Fixed BinRule = iota
	// Doane uses NumPy's Doane rule, ceil(1 + log2 n + log2(1 + |g1| /
	// sigma_g1)) with g1 the sample skewness (population moments) and
	// sigma_g1 = sqrt(6 (n-2) / ((n+1)(n+3))); 1 bin when n <= 2 or the
	// scores are all equal. It is applied to the confidences (top-label),
	// to each column (class-wise), and to the pooled n×K entries
	// (canonical, bins per class dimension, each sample's weight repeated
	// for its K entries).
	//
	// With weights the moments are weighted and n is the total of the
	// weights' normalised form (mean 1: the number of values),
	//
	//	mean = sum_i w_i x_i / W,  m_2 = sum_i w_i (x_i - mean)^2 / W,
	//	g1 = sum_i w_i ((x_i - mean) / sqrt(m_2))^3 / W,
	//
	// so the rule does not depend on the scale of the weights, and integer
	// weights of mean 1 give the bins of the rows repeated w_i times (up to
	// rounding exactly at an integer of the ceil).
	Doane
	// Sqrt uses ceil(sqrt(n)) bins, n the rows (with weights: the total of
	// their normalised form, see EqualMass).
	Sqrt
)

var binRuleNames = [...]string{"fixed", "doane", "sqrt"}

// String returns "fixed", "doane" or "sqrt".
func (r BinRule) String() string {
	if r < 0 || int(r) >= len(binRuleNames) {
		return fmt.Sprintf("BinRule(%d)", int(r))
	}
	return binRuleNames[r]
}

// ParseBinRule returns the rule named s (the enumerations' one rule).
func ParseBinRule(s string) (BinRule, error) {
	i, err := textenum.Parse("bin rule", s, binRuleNames[:])
	return BinRule(i), err
}

// MarshalText implements encoding.TextMarshaler.
func (r BinRule) MarshalText() ([]byte, error) {
	n, err := textenum.Name("metric: bin rule", int(r), binRuleNames[:])
	return []byte(n), err
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseBinRule).
func (r *BinRule) UnmarshalText(t []byte) error {
	v, err := ParseBinRule(string(t))
	if err == nil {
		*r = v
	}
	return err
}

// DefaultBins is the number of bins of the Fixed rule when BinOptions.Bins
// is 0.
const DefaultBins = 15

// BinOptions configures the binned estimators. The zero value is 15
// equal-width bins with both ends of [0, 1] inside a bin.
type BinOptions struct {
	Binning Binning
	Rule    BinRule
	Bins    int // bins of the Fixed rule; 0 means DefaultBins
	// OpenLow reproduces the splines reference's bins (lo, hi] without
	// the closed first bin: a score of exactly 0 falls in no bin and is
	// left out of every sum (it still counts in N). The default puts 0 in
	// the first bin.
	OpenLow bool
}

// ErrTooFewBins is returned when the data cannot fill the bins asked for.
var ErrTooFewBins = errors.New("too few samples for the bins")

// numBins returns the number of bins for the scores x with weights w (nil:
// all 1).
func (o BinOptions) numBins(x, w []float64) (int, error) {
	switch o.Rule {
	case Fixed:
		b := o.Bins
		if b == 0 {
			b = DefaultBins
		}
		if b < 1 {
			return 0, fmt.Errorf("metric: %d bins", b)
		}
		return b, nil
	case Doane:
		return doaneBins(x, w), nil
	case Sqrt:
		return sqrtBins(float64(mathx.PositiveRows(w, len(x)))), nil // weights normalised to mean 1 sum to the rows of positive weight
	}
	return 0, fmt.Errorf("metric: invalid bin rule %d", int(o.Rule))
}

// sqrtBins is the Sqrt rule for n samples (or a total weight n).
func sqrtBins(n float64) int {
	return max(1, int(math.Ceil(math.Sqrt(n))))
}

// doaneBins is NumPy's Doane rule (see Doane), weighted. Each weight is
// the leftmost factor of its product, so that with nil weights (w_i = 1)
// every operation, fused or not, rounds as the unweighted rule.
func doaneBins(x, w []float64) int {
	n := mathx.WeightSum(w, len(x))
	c := float64(mathx.PositiveRows(w, len(x))) // weights normalised to mean 1 sum to the rows of positive weight
	if c <= 2 || n <= 0 {
		return 1
	}
	mean := 0.0
	for i, v := range x {
		mean += mathx.Weight(w, i) * v
	}
	mean /= n
	var m2, m3 float64
	for i, v := range x {
		d := v - mean
		m2 += mathx.Weight(w, i) * d * d
	}
	sigma := math.Sqrt(m2 / n)
	if sigma == 0 {
		return 1
	}
	for i, v := range x {
		z := (v - mean) / sigma
		m3 += mathx.Weight(w, i) * z * z * z
	}
	return doaneRule(m3/n, c)
}

// doaneRule is Doane's number of bins for the skewness g1 of n rows.
func doaneRule(g1, n float64) int {
	sg1 := math.Sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))
	return max(1, int(math.Ceil(1+math.Log2(n)+math.Log2(1+math.Abs(g1)/sg1))))
}

// edges returns the B+1 bin edges for the scores x with weights w.
func (o BinOptions) edges(x, w []float64, b int) []float64 {
	e := make([]float64, b+1)
	if o.Binning == EqualMass && len(x) > 0 {
		if w != nil {
			weightedQuantiles(e, x, w)
			return e
		}
		s := slices.Clone(x)
		slices.Sort(s)
		for i := range e {
			e[i] = mathx.Quantile(s, float64(i)/float64(b))
		}
		return e
	}
	for i := range e {
		e[i] = float64(i) / float64(b)
	}
	return e
}

// weightedQuantiles writes into e the quantiles b/B, b = 0..B = len(e)-1,
// of the scores x with weights w (not all 0), as mathx.Quantile of the
// sorted scores with score i repeated w_i times (see EqualMass): position
// h = q (W - 1), the order statistic at position t the smallest score with
// cumulative weight > t. For integer weights the cumulative weights and
// positions are exact integers, so the edges are those of the repeated
// rows bit for bit.
func weightedQuantiles(e, x, w []float64) {
	type pt struct{ s, w float64 }
	pts := make([]pt, 0, len(x))
	for i, v := range x {
		if w[i] > 0 {
			pts = append(pts, pt{v, w[i]})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int { return cmp.Compare(a.s, b.s) })
	cum := make([]float64, len(pts))
	W := 0.0
	for i, p := range pts {
		W += p.w
		cum[i] = W
	}
	// at returns the order statistic at position t (the largest score
	// for t at or past the total weight).
	at := func(t float64) float64 {
		m, _ := slices.BinarySearchFunc(cum, t, func(c, t float64) int {
			if notPast(c, t) {
				return -1
			}
			return 1
		})
		return pts[min(m, len(pts)-1)].s
	}
	b := len(e) - 1
	lo, frac := normalisedPositions(b, float64(len(pts)), W)
	for i := range e {
		// at caps the next position at the largest score, as
		// mathx.Quantile caps its index at the last element.
		xlo, xhi := at(lo[i][0]), at(lo[i][1])
		e[i] = xlo + (xhi-xlo)*frac[i]
	}
}

// notPast reports whether a cumulative weight c has not passed the
// position t: c <= t, where c within massSlack (relative) of t counts as
// equal. The positions and the cumulative weights are sums of the weights
// (times n / W): weights times a factor that is not a power of two round
// them apart where they are equal, and the order statistic would jump to
// the next score.
func notPast(c, t float64) bool { return c <= t+massSlack*math.Abs(t) }

// normalisedPositions returns the order-statistic positions of the B+1
// equal-mass edges of n rows of total weight W, on the scale of W, and
// each edge's interpolation fraction: the weights are read in their
// normalised form (mean 1, total n), where edge b sits at h = (b/B)(n -
// 1) between the order statistics at floor(h) and floor(h) + 1; on the
// scale of W those are at floor(h) W/n and (floor(h) + 1) W/n. Without
// weights (W = n) these are NumPy's positions.
func normalisedPositions(b int, n, W float64) (pos [][2]float64, frac []float64) {
	scale := 1.0
	if W != n && n > 0 {
		scale = W / n
	}
	for i := 0; i <= b; i++ {
		h := float64(i) / float64(b) * max(n-1, 0)
		lo := math.Floor(h)
		pos = append(pos, [2]float64{lo * scale, (lo + 1) * scale})
		frac = append(frac, h-lo)
	}
	return pos, frac
}

// assign returns the bin of each score: the number of inner edges
// e_1..e_{B-1} below the score (NumPy searchsorted, side left), so bin b
// holds (e_b, e_{b+1}], the first bin also holds everything <= e_1 (0
// included) and the last everything > e_{B-1} (1 included). With OpenLow a
// score <= e_0 gets bin -1 (no bin).
func (o BinOptions) assign(x, e []float64) []int {
	inner := e[1 : len(e)-1]
	bins := make([]int, len(x))
	for i, v := range x {
		b, _ := slices.BinarySearch(inner, v) // first inner edge >= v = count of edges < v
		if o.OpenLow && !(v > e[0]) {
			b = -1
		}
		bins[i] = b
	}
	return bins
}

// Bins is the binned summary of scores and outcomes: per bin the count,
// the mass (total weight), the weighted mean score (confidence) and the
// weighted mean outcome (accuracy),
//
//	W_b = sum_{i in b} w_i,  score_b = sum_{i in b} w_i s_i / W_b,
//	freq_b = sum_{i in b} w_i o_i / W_b,
//
// the plain counts and means when the weights are nil (all 1). A bin of
// mass 0 (no sample, or only samples of weight 0) is empty.
type Bins struct {
	Edges []float64
	Count []int     // samples (rows, whatever their weight) per bin
	Mass  []float64 // total weight W_b per bin (the count when unweighted); nil means Count
	Score []float64 // weighted mean score per bin (0 for empty bins)
	Freq  []float64 // weighted mean outcome per bin (0 for empty bins)
	N     int       // all samples, binned or not
	W     float64   // total weight of all samples, binned or not (N when unweighted); not read when Mass is nil
	// Pos counts the samples of positive weight, binned or not (N when
	// unweighted): the weights' normalised form w_i Pos / W reads a bin's
	// weight as a count (DebiasedL2), and a weight of 0 changes nothing.
	Pos int
}

// mass returns W_b (Count when Mass is nil).
func (bs *Bins) mass(b int) float64 {
	if bs.Mass == nil {
		return float64(bs.Count[b])
	}
	return bs.Mass[b]
}

// count returns the weight of bin b read as a count: W_b Pos / W, the mass
// of the weights normalised to mean 1 over the rows of positive weight
// (Count when Mass is nil).
func (bs *Bins) count(b int) float64 {
	if bs.Mass == nil {
		return float64(bs.Count[b])
	}
	if !(bs.W > 0) { // no weight at all (a resample of zero-weight rows): no counts
		return 0
	}
	return bs.Mass[b] * (float64(bs.Pos) / bs.W)
}

// total returns W (N when Mass is nil).
func (bs *Bins) total() float64 {
	if bs.Mass == nil {
		return float64(bs.N)
	}
	return bs.W
}

// BinScores bins scores with their outcomes and weights (nil: all 1). A
// number of weights other than len(scores), or a weight that is negative,
// NaN or infinite, or weights that are all 0, are an error wrapping
// data.ErrWeights.
func BinScores(scores, outcomes, weights []float64, o BinOptions) (*Bins, error) {
	a, err := AssignBins(scores, weights, o)
	if err != nil {
		return nil, err
	}
	return a.Summarize(scores, outcomes, nil, weights), nil
}

// Assignment is the bin of every score of a sample, kept so that bootstrap
// resamples can be summarised in O(n) without binning again. That is exact
// for bins that do not depend on the sample (equal-width with the Fixed or
// Sqrt rule, as resamples have the same n); see Fixed.
type Assignment struct {
	Edges []float64
	Bin   []int // bin of each score; -1 for none (OpenLow and a score of 0)
}

// DataIndependent reports whether the bins of o depend on the scores
// only through their number (so an Assignment holds for any resample).
// With weights the Sqrt rule depends on the total weight, which a
// resample changes: only the Fixed rule with equal-width bins is then
// independent of the resample.
func (o BinOptions) DataIndependent() bool {
	return o.Binning == EqualWidth && o.Rule != Doane
}

// AssignBins computes the bins of the scores with weights (nil: all 1;
// see EqualMass, Doane and Sqrt for how the weights place the bins). Bad
// weights (see BinScores) are an error wrapping data.ErrWeights.
func AssignBins(scores, weights []float64, o BinOptions) (*Assignment, error) {
	if len(scores) == 0 {
		return nil, fmt.Errorf("metric: %w: no samples", ErrTooFewBins)
	}
	if err := mathx.CheckWeights(weights, len(scores)); err != nil {
		return nil, fmt.Errorf("metric: %w", err)
	}
	b, err := o.numBins(scores, weights)
	if err != nil {
		return nil, err
	}
	e := o.edges(scores, weights, b)
	return &Assignment{Edges: e, Bin: o.assign(scores, e)}, nil
}

// Summarize returns the bins of the samples idx (indices into scores,
// repeats allowed; nil means all) with the weights of the full sample
// (nil: all 1; a resample carries the weight of each row it draws, so a
// row drawn twice counts twice its weight). It panics if the lengths of
// scores, outcomes and weights (when not nil) differ.
func (a *Assignment) Summarize(scores, outcomes []float64, idx []int, weights []float64) *Bins {
	if len(scores) != len(outcomes) || (weights != nil && len(weights) != len(scores)) {
		panic(fmt.Sprintf("metric: Summarize: length mismatch (%d scores, %d outcomes, %d weights)", len(scores), len(outcomes), len(weights)))
	}
	nb := len(a.Edges) - 1
	bs := &Bins{Edges: a.Edges, Count: make([]int, nb), Mass: make([]float64, nb), Score: make([]float64, nb), Freq: make([]float64, nb), N: len(scores)}
	// The four loops (all samples or idx, without or with weights) are
	// written out: this is the inner loop of the bootstrap.
	switch {
	case weights == nil && idx == nil:
		for i, k := range a.Bin {
			if k >= 0 {
				bs.Count[k]++
				bs.Score[k] += scores[i]
				bs.Freq[k] += outcomes[i]
			}
		}
	case weights == nil:
		for _, i := range idx {
			if k := a.Bin[i]; k >= 0 {
				bs.Count[k]++
				bs.Score[k] += scores[i]
				bs.Freq[k] += outcomes[i]
			}
		}
	case idx == nil:
		for i, k := range a.Bin {
			bs.W += weights[i]
			if weights[i] > 0 {
				bs.Pos++
			}
			if k >= 0 {
				w := weights[i]
				bs.Count[k]++
				bs.Mass[k] += w
				bs.Score[k] += w * scores[i]
				bs.Freq[k] += w * outcomes[i]
			}
		}
	default:
		for _, i := range idx {
			bs.W += weights[i]
			if weights[i] > 0 {
				bs.Pos++
			}
			if k := a.Bin[i]; k >= 0 {
				w := weights[i]
				bs.Count[k]++
				bs.Mass[k] += w
				bs.Score[k] += w * scores[i]
				bs.Freq[k] += w * outcomes[i]
			}
		}
	}
	if idx != nil {
		bs.N = len(idx)
	}
	if weights == nil {
		bs.W, bs.Pos = float64(bs.N), bs.N
		for k, c := range bs.Count {
			bs.Mass[k] = float64(c)
		}
	}
	bs.toMeans()
	return bs
}

// toMeans turns the per-bin weighted sums of scores and outcomes in Score
// and Freq into means: divided by the bin's mass (empty bins stay 0).
func (bs *Bins) toMeans() {
	for k, m := range bs.Mass {
		if m > 0 {
			bs.Score[k] /= m
			bs.Freq[k] /= m
		}
	}
}

// ECE returns the binned Lp calibration error in the p-th power form,
//
//	ECE_p^p = sum_b (W_b / W) |freq_b - score_b|^p,
//
// with W the total weight of all samples (binned or not; W_b = n_b and
// W = N when unweighted).
func (bs *Bins) ECE(p float64) float64 {
	sum := 0.0
	for k := range bs.Count {
		if m := bs.mass(k); m > 0 {
			sum += m / bs.total() * math.Pow(math.Abs(bs.Freq[k]-bs.Score[k]), p)
		}
	}
	return sum
}

// MCE returns the maximum calibration error max_b |freq_b - score_b| over
// the non-empty bins (mass > 0).
func (bs *Bins) MCE() float64 {
	m := 0.0
	for k := range bs.Count {
		if bs.mass(k) > 0 {
			m = math.Max(m, math.Abs(bs.Freq[k]-bs.Score[k]))
		}
	}
	return m
}

// DebiasedL2 returns the debiased estimate of CE_2^2 of Kumar, Liang and Ma
// (2019, "Verified uncertainty calibration"; verified_calibration's
// unbiased_square_ce):
//
//	sum_b (W_b / W) [ (freq_b - score_b)^2 - freq_b (1 - freq_b) / (W_b - 1) ],
//
// with bins of count n_b < 2 (less 1e-9 relative, for rounding)
// contributing 0; W_b = n_b and W = N when
// unweighted. The weights are frequencies in their normalised form (mean
// 1, see EqualMass): the count n_b of the bias term is W_b N / W, so the
// estimate does not depend on the scale of the weights, and integer
// weights of mean 1 give the estimate of the rows repeated w_i times. It
// may be negative.
func (bs *Bins) DebiasedL2() float64 {
	sum := 0.0
	for k := range bs.Count {
		m := bs.count(k)
		if m < 2*(1-massSlack) { // a count of 2 up to the rounding of the weights counts as 2
			continue
		}
		d := bs.Freq[k] - bs.Score[k]
		sum += bs.mass(k) / bs.total() * (d*d - bs.Freq[k]*(1-bs.Freq[k])/(m-1))
	}
	return sum
}

// massSlack is the relative rounding within which a bin's weight counts
// as the integer it is meant to be: weights normalised to mean 1
// (mathx.ScaleWeights) add up to 2 within a few ulps where the weights as
// given add up to 2/n of their total.
const massSlack = 1e-9

// TopLabelBins bins the top-label confidences max_k f_k with the outcomes
// [argmax = label] and the sample weights (nil: all 1; see BinScores).
func TopLabelBins(probs []float64, labels []int, k int, weights []float64, o BinOptions) (*Bins, error) {
	s, c := TopR(probs, labels, k, 1)
	return BinScores(s, c, weights, o)
}

// ClassWiseBins bins each class column f_k with the outcomes [y = k] and
// the sample weights (nil: all 1; every column carries the same weights);
// with the Doane rule each column gets its own number of bins.
func ClassWiseBins(probs []float64, labels []int, k int, weights []float64, o BinOptions) ([]*Bins, error) {
	bins := make([]*Bins, k)
	for c := range bins {
		s, y := ClassColumn(probs, labels, k, c)
		var err error
		if bins[c], err = BinScores(s, y, weights, o); err != nil {
			return nil, fmt.Errorf("class %d: %w", c, err)
		}
	}
	return bins, nil
}

// ClassWise aggregates a per-class quantity: the mean over classes (Kull et
// al.'s class-wise ECE and verified_calibration's marginal error take the
// mean), the sum and the class terms. The classes count equally; sample
// weights enter through the bins (ClassWiseBins).
func ClassWise(bins []*Bins, f func(*Bins) float64) PerClass {
	pc := PerClass{PerClass: make([]float64, len(bins))}
	for c, b := range bins {
		pc.PerClass[c] = f(b)
		pc.Sum += pc.PerClass[c]
	}
	pc.Value = pc.Sum / float64(len(bins))
	return pc
}
