package metric

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
)

// sketchMantissa is the number of mantissa bits of a score that its
// ScoreSketch bucket keeps: a bucket spans a relative 2^-8 of min(s, 1-s).
const sketchMantissa = 8

// sketchShift drops the other 52 - sketchMantissa mantissa bits.
const sketchShift = 52 - sketchMantissa

// sketchHalf is the key of the score 0.5.
var sketchHalf = uint32(math.Float64bits(0.5) >> sketchShift)

// SketchKey returns the bucket of a score s in [0, 1] of ScoreSketch: the
// leading bits (sign, exponent, sketchMantissa mantissa bits) of s below
// 0.5, and 2 key(0.5) - those of 1 - s from 0.5 up (1 - s is exact there).
// The key is non-decreasing in s, so a bucket is an interval of scores, of
// relative width 2^-8 in s near 0 and in 1 - s near 1 (where calibration
// data crowd: confidences of 0.999 and 0.9999 fall in different buckets).
func SketchKey(s float64) uint32 {
	if s < 0.5 {
		return uint32(math.Float64bits(max(s, 0)) >> sketchShift)
	}
	return 2*sketchHalf - uint32(math.Float64bits(max(1-s, 0))>>sketchShift)
}

// SketchBucket holds the rows of one ScoreSketch bucket: their number N
// (whatever their weight), weight W and weighted sums S = sum w s, O = sum
// w o, A = sum w |s - o|, and their smallest and largest score.
type SketchBucket struct {
	N          int64
	W, S, O, A float64
	Min, Max   float64
}

func (b *SketchBucket) merge(o *SketchBucket) {
	if b.N == 0 {
		*b = *o
		return
	}
	b.N += o.N
	b.W += o.W
	b.S += o.S
	b.O += o.O
	b.A += o.A
	b.Min = min(b.Min, o.Min)
	b.Max = max(b.Max, o.Max)
}

// ScoreSketch is the first of the two passes of the mergeable form of Bins
// for bins that depend on the data (equal-mass edges; the Doane and Sqrt
// rules): the scores' histogram on the fine buckets of SketchKey (only
// occupied buckets are kept, at most 2^(12 + sketchMantissa)), each with
// its SketchBucket, and the weighted mean and central moments M2, M3 of
// the scores (merged by Pébay's formulas) for Doane's rule.
//
// From the sketch, Needed names the buckets whose scores decide the edges
// or straddle one (those holding the order statistics of the equal-mass
// positions, or an edge of equal-width bins, with more than one distinct
// score); a second pass collects the distinct scores of those buckets
// (EdgeValues), and Bins then gives BinScores's bins exactly: the edges
// from the exact order statistics, every other bucket wholly inside one
// bin. Memory: O(occupied buckets) for the sketch, O(distinct scores in
// the needed buckets) for EdgeValues, which has a limit: past it the
// edges are taken at bucket ends and Bins states by how much the bins can
// differ from the exact ones (SketchBound).
//
// Without weights and with integer weights the positions and cumulative
// masses are exact integers, so the edges are BinScores's bit for bit. With
// fractional weights the cumulative weights are summed per bucket, in
// another order than BinScores's sorted sum: an order statistic can then
// differ where a cumulative weight lands exactly on a position (weights
// such as k/10), and merging shards in another order can move it the same
// way.
type ScoreSketch struct {
	n       int64
	pos     int64 // rows of positive weight: the count of the weights' normalised form
	moments Moments
	buckets map[uint32]*SketchBucket
}

// Moments is the mergeable weighted mean and central moments of a sample,
// for Doane's rule: W = sum w_i, Mean = sum w_i x_i / W, M2 = sum w_i (x_i
// - Mean)^2, M3 = sum w_i (x_i - Mean)^3, updated and merged by Pébay's
// formulas (exact up to rounding; the in-memory rule takes two passes).
type Moments struct {
	W    float64 `json:"w"`
	Mean float64 `json:"mean"`
	M2   float64 `json:"m2"`
	M3   float64 `json:"m3"`
}

// Add merges a part of weight w, mean m and central moments m2, m3 (a
// single value x of weight w: Add(w, x, 0, 0)) into the moments (Pébay
// 2008, eq. 2.1 and 2.2 for weights):
//
//	d = m - Mean, W' = W + w, Mean' = Mean + d w / W',
//	M3' = M3 + m3 + d^3 W w (W - w) / W'^2 + 3 d (W m2 - w M2) / W',
//	M2' = M2 + m2 + d^2 W w / W'.
func (mo *Moments) Add(w, m, m2, m3 float64) {
	if !(w > 0) {
		return
	}
	n := mo.W + w
	d := m - mo.Mean
	mo.M3 += m3 + d*d*d*mo.W*w*(mo.W-w)/(n*n) + 3*d*(mo.W*m2-w*mo.M2)/n
	mo.M2 += m2 + d*d*mo.W*w/n
	mo.Mean += d * w / n
	mo.W = n
}

// Merge adds another sample's moments.
func (mo *Moments) Merge(o Moments) { mo.Add(o.W, o.Mean, o.M2, o.M3) }

// DoaneBins returns NumPy's Doane number of bins (see Doane) from the
// moments: 1 for W <= 2 or no spread, else ceil(1 + log2 W + log2(1 +
// |g1| / sigma_g1)) with g1 = M3 / (W sigma^3), sigma^2 = M2 / W and
// sigma_g1 = sqrt(6 (W - 2) / ((W + 1)(W + 3))).
func (mo *Moments) DoaneBins() int { return mo.DoaneBinsN(mo.W) }

// DoaneBinsN is DoaneBins for moments of n values (rows; pooled
// coordinates), the weights read in their normalised form (mean 1): g1
// from the weighted moments, the count n. Unweighted (W = n) it is
// DoaneBins.
func (mo *Moments) DoaneBinsN(n float64) int {
	if n <= 2 || mo.W <= 0 {
		return 1
	}
	sigma := math.Sqrt(mo.M2 / mo.W)
	if sigma == 0 {
		return 1
	}
	return doaneRule(mo.M3/mo.W/(sigma*sigma*sigma), n)
}

// NewScoreSketch returns an empty sketch.
func NewScoreSketch() *ScoreSketch { return &ScoreSketch{buckets: map[uint32]*SketchBucket{}} }

// Add adds samples: scores in [0, 1], outcomes and weights (nil: all 1).
// Bad weights are an error wrapping mathx.ErrWeights, and nothing is
// added.
func (sk *ScoreSketch) Add(scores, outcomes, weights []float64) error {
	if len(outcomes) != len(scores) {
		return fmt.Errorf("metric: ScoreSketch.Add: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	if err := checkBatch(weights, len(scores)); err != nil {
		return err
	}
	for i, s := range scores {
		w := mathx.Weight(weights, i)
		k := SketchKey(s)
		b := sk.buckets[k]
		if b == nil {
			b = &SketchBucket{Min: s, Max: s}
			sk.buckets[k] = b
		}
		b.N++
		b.W += w
		b.S += float64(w * s)
		b.O += float64(w * outcomes[i])
		b.A += float64(w * math.Abs(s-outcomes[i]))
		b.Min, b.Max = min(b.Min, s), max(b.Max, s)
		sk.moments.Add(w, s, 0, 0)
		if w > 0 {
			sk.pos++
		}
	}
	sk.n += int64(len(scores))
	return nil
}

// Merge adds another shard's sketch.
func (sk *ScoreSketch) Merge(o *ScoreSketch) error {
	if sk.buckets == nil {
		return errors.New("metric: ScoreSketch.Merge: the zero ScoreSketch (see NewScoreSketch)")
	}
	for k, ob := range o.buckets {
		b := sk.buckets[k]
		if b == nil {
			b = new(SketchBucket)
			sk.buckets[k] = b
		}
		b.merge(ob)
	}
	sk.moments.Merge(o.moments)
	sk.n += o.n
	sk.pos += o.pos
	return nil
}

// Buckets returns the number of occupied buckets.
func (sk *ScoreSketch) Buckets() int { return len(sk.buckets) }

// keys returns the occupied buckets in score order.
func (sk *ScoreSketch) keys() []uint32 {
	keys := make([]uint32, 0, len(sk.buckets))
	for k := range sk.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// total returns the mass that places equal-mass edges: the number of rows
// without weights, their weight with them.
func (sk *ScoreSketch) total(weighted bool) float64 {
	if weighted {
		return sk.moments.W
	}
	return float64(sk.n)
}

func (b *SketchBucket) mass(weighted bool) float64 {
	if weighted {
		return b.W
	}
	return float64(b.N)
}

// numBins returns B for the rule of o: Doane from the moments, both rules
// counting the rows of positive weight (the total of the weights'
// normalised form).
func (sk *ScoreSketch) numBins(o BinOptions) (int, error) {
	return o.MergedBins(sk.moments, float64(sk.pos), float64(sk.pos))
}

// maxMergedBins bounds the bins of MergedBins (the Sqrt rule at 2^40
// rows).
const maxMergedBins = 1 << 20

// MergedBins returns B for the rule of o from a sample's moments and
// counts, as the in-memory rules compute it from the sample (up to the
// rounding of the moments), the weights read in their normalised form:
// Doane from the moments of values values (Moments.DoaneBinsN), Sqrt from
// n rows (the canonical cells pool the K values of each row: values = n
// K). Both count the rows of positive weight.
func (o BinOptions) MergedBins(mo Moments, n, values float64) (int, error) {
	switch o.Rule {
	case Doane:
		return mo.DoaneBinsN(values), nil
	case Sqrt:
		if !(n <= maxMergedBins*float64(maxMergedBins)) {
			return 0, fmt.Errorf("metric: the sqrt rule at a total of %g: more than %d bins", n, maxMergedBins)
		}
		return sqrtBins(n), nil
	}
	return o.numBins(nil, nil)
}

// positions returns the order-statistic positions of the equal-mass edges
// (two per edge, see weightedQuantiles) and each edge's interpolation
// fraction.
func (sk *ScoreSketch) positions(b int, weighted bool) (pos [][2]float64, frac []float64) {
	return normalisedPositions(b, float64(sk.pos), sk.total(weighted))
}

// locate returns the bucket (index into keys) holding the order statistic
// at position t: the first whose cumulative mass exceeds t (for t past
// the total, the first that reaches the total: the last of positive
// mass), and the mass before it.
func (sk *ScoreSketch) locate(keys []uint32, cum []float64, t float64) (int, float64) {
	search := func(t float64) int {
		i, _ := slices.BinarySearchFunc(cum, t, func(c, t float64) int {
			if notPast(c, t) {
				return -1
			}
			return 1
		})
		return i
	}
	i := search(t)
	if i == len(keys) {
		i, _ = slices.BinarySearch(cum, cum[len(cum)-1])
	}
	before := 0.0
	if i > 0 {
		before = cum[i-1]
	}
	return i, before
}

// cumulative returns the cumulative mass of the buckets in key order.
func (sk *ScoreSketch) cumulative(keys []uint32, weighted bool) []float64 {
	cum := make([]float64, len(keys))
	c := 0.0
	for i, k := range keys {
		c += sk.buckets[k].mass(weighted)
		cum[i] = c
	}
	return cum
}

// Needed returns the buckets (keys, increasing) whose distinct scores the
// second pass must collect for the bins of o: with equal-mass bins those
// holding an edge's order statistics (and any between them), with
// equal-width bins those that straddle an edge; a bucket of one distinct
// score is never needed.
// weighted says whether the rows carry weights (the edges then follow the
// weighted quantiles, see EqualMass).
func (sk *ScoreSketch) Needed(o BinOptions, weighted bool) ([]uint32, error) {
	if len(sk.buckets) == 0 {
		return nil, fmt.Errorf("metric: %w: no samples", ErrTooFewBins)
	}
	b, err := sk.numBins(o)
	if err != nil {
		return nil, err
	}
	keys := sk.keys()
	need := map[uint32]bool{}
	if o.Binning == EqualMass {
		cum := sk.cumulative(keys, weighted)
		pos, _ := sk.positions(b, weighted)
		for _, pp := range pos {
			// The buckets from the one holding the order statistic at
			// floor(h) to the one at floor(h) + 1: with weights below 1
			// the rows between the two can fill several buckets, and the
			// edge can cut any of them.
			i0, _ := sk.locate(keys, cum, pp[0])
			i1, _ := sk.locate(keys, cum, pp[1])
			for i := i0; i <= i1; i++ {
				if bk := sk.buckets[keys[i]]; bk.Min < bk.Max {
					need[keys[i]] = true
				}
			}
		}
	} else {
		e := o.edges(nil, nil, b)
		for _, k := range keys {
			if bk := sk.buckets[k]; sk.straddles(bk, e, o) {
				need[k] = true
			}
		}
	}
	out := make([]uint32, 0, len(need))
	for k := range need {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// straddles says whether the scores of bucket b can fall in different
// bins of the edges e.
func (sk *ScoreSketch) straddles(b *SketchBucket, e []float64, o BinOptions) bool {
	a := o.assign([]float64{b.Min, b.Max}, e)
	return a[0] != a[1]
}

// ValueSum holds the rows of one distinct score in EdgeValues.
type ValueSum struct {
	Score float64 `json:"score"`
	N     int64   `json:"n"`
	W     float64 `json:"w"`
	O     float64 `json:"outcome_sum"` // sum w o
}

// DefaultEdgeValues is the default limit of EdgeValues on the distinct
// scores it holds.
const DefaultEdgeValues = 1 << 22

// EdgeValues is the second pass of ScoreSketch: the distinct scores of the
// needed buckets, each with its rows' number, weight and outcome sum. It
// holds at most Limit distinct scores; past that it drops them all and is
// Overflow (Bins then uses bucket ends). The zero value is not usable: see
// NewEdgeValues.
type EdgeValues struct {
	keys       []uint32
	limit      int
	overflowed bool
	values     map[uint32]map[float64]*ValueSum
	count      int
}

// NewEdgeValues returns empty second-pass sums for the needed buckets,
// holding at most limit distinct scores (0: DefaultEdgeValues).
func NewEdgeValues(keys []uint32, limit int) *EdgeValues {
	if limit <= 0 {
		limit = DefaultEdgeValues
	}
	ev := &EdgeValues{keys: slices.Clone(keys), limit: limit}
	ev.reset()
	return ev
}

func (ev *EdgeValues) reset() {
	ev.values = map[uint32]map[float64]*ValueSum{}
	for _, k := range ev.keys {
		ev.values[k] = map[float64]*ValueSum{}
	}
	ev.count = 0
}

func (ev *EdgeValues) overflow() {
	ev.overflowed = true
	ev.values, ev.count = nil, 0
}

func (ev *EdgeValues) add(v ValueSum) {
	m := ev.values[SketchKey(v.Score)]
	if m == nil {
		return
	}
	x := m[v.Score]
	if x == nil {
		if ev.count >= ev.limit {
			ev.overflow()
			return
		}
		x = &ValueSum{Score: v.Score}
		m[v.Score] = x
		ev.count++
	}
	x.N += v.N
	x.W += v.W
	x.O += v.O
}

// Add adds the rows of the needed buckets (scores, outcomes, weights nil:
// all 1).
func (ev *EdgeValues) Add(scores, outcomes, weights []float64) error {
	if len(outcomes) != len(scores) {
		return fmt.Errorf("metric: EdgeValues.Add: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	if err := checkBatch(weights, len(scores)); err != nil {
		return err
	}
	if ev.overflowed || len(ev.keys) == 0 {
		return nil
	}
	for i, s := range scores {
		w := mathx.Weight(weights, i)
		ev.add(ValueSum{Score: s, N: 1, W: w, O: float64(w * outcomes[i])})
		if ev.overflowed {
			return nil
		}
	}
	return nil
}

// Merge adds another shard's values over the same buckets.
func (ev *EdgeValues) Merge(o *EdgeValues) error {
	if !slices.Equal(ev.keys, o.keys) {
		return errors.New("metric: EdgeValues.Merge: different buckets")
	}
	if o.overflowed {
		ev.overflow()
	}
	if ev.overflowed {
		return nil
	}
	for _, m := range o.values {
		for _, v := range m {
			ev.add(*v)
			if ev.overflowed {
				return nil
			}
		}
	}
	return nil
}

// check says whether the values agree with the sketch: every needed bucket
// held has as many rows as the sketch counted there (both passes read the
// same rows).
func (ev *EdgeValues) check(sk *ScoreSketch) error {
	if ev == nil || ev.overflowed {
		return nil
	}
	for _, k := range ev.keys {
		n := int64(0)
		for _, v := range ev.values[k] {
			n += v.N
		}
		bk := sk.buckets[k]
		if bk == nil || n != bk.N {
			return fmt.Errorf("metric: the second pass holds %d rows of score bucket %d, the first %d: the passes read different rows", n, k, bucketN(bk))
		}
	}
	return nil
}

func bucketN(b *SketchBucket) int64 {
	if b == nil {
		return 0
	}
	return b.N
}

// sorted returns bucket k's distinct scores in increasing order (nil when
// not held).
func (ev *EdgeValues) sorted(k uint32) []*ValueSum {
	if ev == nil || ev.overflowed {
		return nil
	}
	m, ok := ev.values[k]
	if !ok {
		return nil
	}
	out := make([]*ValueSum, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *ValueSum) int { return cmp.Compare(a.Score, b.Score) })
	return out
}

// SketchBound says how far the bins of ScoreSketch.Bins can be from the
// exact ones when EdgeValues overflowed (both 0 otherwise): Mass is the
// share of the total weight in buckets whose rows may lie in another bin
// than the exact edges put them, Abs that weight's share of sum w |s - o|.
// Moving a row of weight w from one bin to another changes sum_b |S_b -
// O_b| by at most 2 w |s - o|, so the binned ECE_1 is within 2 Abs of the
// exact one.
type SketchBound struct {
	Mass, Abs float64
}

// Bins returns the bins of o over every row of the sketch: BinScores's
// bins (edges, counts, masses, means) up to the rounding of the sums when
// ev holds the needed buckets' scores (ev may be nil when none is needed).
// With ev overflowed, an order statistic in a needed bucket is taken as
// the bucket's largest score and a bucket straddling an edge goes whole to
// the bin of its largest score; the bound says by how much that can move
// the bins.
func (sk *ScoreSketch) Bins(o BinOptions, weighted bool, ev *EdgeValues) (*Bins, SketchBound, error) {
	var bound SketchBound
	if len(sk.buckets) == 0 {
		return nil, bound, fmt.Errorf("metric: %w: no samples", ErrTooFewBins)
	}
	b, err := sk.numBins(o)
	if err != nil {
		return nil, bound, err
	}
	keys := sk.keys()
	if err := ev.check(sk); err != nil {
		return nil, bound, err
	}
	approx := map[uint32]bool{} // buckets placed without their scores
	e := o.edges(nil, nil, b)
	if o.Binning == EqualMass {
		cum := sk.cumulative(keys, weighted)
		pos, frac := sk.positions(b, weighted)
		approximated := false // an order statistic taken at its bucket's end
		at := func(t float64) float64 {
			i, before := sk.locate(keys, cum, t)
			bk := sk.buckets[keys[i]]
			if bk.Min == bk.Max {
				return bk.Min
			}
			vals := ev.sorted(keys[i])
			if len(vals) == 0 {
				approximated = true
				return bk.Max
			}
			c, last := before, vals[0].Score
			for _, v := range vals {
				m := float64(v.N)
				if weighted {
					m = v.W
				}
				if m > 0 {
					last = v.Score
				}
				if c += m; c > t {
					return v.Score
				}
			}
			return last // t past the total: the largest score of positive mass
		}
		for i := range e {
			approximated = false
			xlo, xhi := at(pos[i][0]), at(pos[i][1])
			e[i] = xlo + (xhi-xlo)*frac[i]
			if approximated { // the buckets from one order statistic's to the other's may hold misplaced rows
				j0, _ := sk.locate(keys, cum, pos[i][0])
				j1, _ := sk.locate(keys, cum, pos[i][1])
				for j := j0; j <= j1; j++ {
					approx[keys[j]] = true
				}
			}
		}
	}
	out := &Bins{Edges: e, Count: make([]int, b), Mass: make([]float64, b), Score: make([]float64, b), Freq: make([]float64, b), N: int(sk.n), W: sk.moments.W, Pos: int(sk.pos)}
	if !weighted {
		out.W = float64(sk.n)
	}
	var moved, movedAbs float64
	for _, k := range keys {
		bk := sk.buckets[k]
		a := o.assign([]float64{bk.Min, bk.Max}, e)
		vals := ev.sorted(k) // nil unless held (and then not empty: ev.check)
		if a[0] != a[1] && vals != nil {
			scores := make([]float64, len(vals))
			for i, v := range vals {
				scores[i] = v.Score
			}
			for i, bin := range o.assign(scores, e) {
				if bin >= 0 {
					v := vals[i]
					out.Count[bin] += int(v.N)
					out.Mass[bin] += v.W
					out.Score[bin] += float64(v.W * v.Score)
					out.Freq[bin] += v.O
				}
			}
			continue
		}
		if a[0] != a[1] || approx[k] {
			moved += bk.W
			movedAbs += bk.A
		}
		if bin := a[1]; bin >= 0 {
			out.Count[bin] += int(bk.N)
			out.Mass[bin] += bk.W
			out.Score[bin] += bk.S
			out.Freq[bin] += bk.O
		}
	}
	if !weighted {
		for i, c := range out.Count {
			out.Mass[i] = float64(c)
		}
	}
	out.toMeans()
	if tw := sk.moments.W; tw > 0 && moved > 0 {
		bound = SketchBound{Mass: moved / tw, Abs: movedAbs / tw}
	}
	return out, bound, nil
}

// sketchJSON is the JSON form of ScoreSketch: the buckets as columns in
// key order.
type sketchJSON struct {
	Version int   `json:"version"`
	N       int64 `json:"n"`
	Pos     int64 `json:"pos"`
	Moments
	Keys []uint32  `json:"keys"`
	BN   []int64   `json:"bucket_n"`
	BW   []float64 `json:"bucket_w"`
	BS   []float64 `json:"bucket_score_sum"`
	BO   []float64 `json:"bucket_outcome_sum"`
	BA   []float64 `json:"bucket_abs_sum"`
	Min  []float64 `json:"bucket_min"`
	Max  []float64 `json:"bucket_max"`
}

// MarshalJSON writes the versioned JSON form.
func (sk *ScoreSketch) MarshalJSON() ([]byte, error) {
	v := sketchJSON{Version: sumsVersion, N: sk.n, Pos: sk.pos, Moments: sk.moments, Keys: sk.keys()}
	for _, k := range v.Keys {
		b := sk.buckets[k]
		v.BN, v.BW, v.BS, v.BO = append(v.BN, b.N), append(v.BW, b.W), append(v.BS, b.S), append(v.BO, b.O)
		v.BA, v.Min, v.Max = append(v.BA, b.A), append(v.Min, b.Min), append(v.Max, b.Max)
	}
	return scoreSketchKind.Encode(v)
}

// UnmarshalJSON reads the JSON form, checking its version, sizes and that
// every bucket's scores belong to it.
func (sk *ScoreSketch) UnmarshalJSON(b []byte) error {
	var v sketchJSON
	if _, err := scoreSketchKind.Decode(b, &v); err != nil {
		return err
	}
	n := len(v.Keys)
	if len(v.BN) != n || len(v.BW) != n || len(v.BS) != n || len(v.BO) != n || len(v.BA) != n || len(v.Min) != n || len(v.Max) != n {
		return scoreSketchKind.Errorf("%d keys and buckets of other sizes", n)
	}
	if !mathx.Finite(v.W, v.Mean, v.M2, v.M3) || v.W < 0 || v.M2 < 0 {
		return scoreSketchKind.Errorf("moments W = %v, M2 = %v", v.W, v.M2)
	}
	if v.Pos < 0 || v.Pos > v.N {
		return scoreSketchKind.Errorf("%d rows of positive weight of %d", v.Pos, v.N)
	}
	*sk = ScoreSketch{n: v.N, pos: v.Pos, moments: v.Moments, buckets: make(map[uint32]*SketchBucket, n)}
	rows := int64(0)
	for i, k := range v.Keys {
		bk := &SketchBucket{N: v.BN[i], W: v.BW[i], S: v.BS[i], O: v.BO[i], A: v.BA[i], Min: v.Min[i], Max: v.Max[i]}
		if SketchKey(bk.Min) != k || SketchKey(bk.Max) != k || !(bk.Min <= bk.Max) || bk.N < 1 || sk.buckets[k] != nil {
			return scoreSketchKind.Errorf("bucket %d holds scores %v..%v of other buckets", k, bk.Min, bk.Max)
		}
		if !mathx.Finite(bk.W, bk.S, bk.O, bk.A) || bk.W < 0 || bk.A < 0 {
			return scoreSketchKind.Errorf("bucket %d has weight %v", k, bk.W)
		}
		// The sums of w s, w o and w |s - o| over the bucket's rows, with
		// s in [Min, Max] and o in [0, 1], lie within these (to rounding).
		tol := 1e-9 * math.Max(1, bk.W)
		if bk.S < bk.W*bk.Min-tol || bk.S > bk.W*bk.Max+tol || bk.O < -tol || bk.O > bk.W+tol || bk.A > bk.W+tol {
			return scoreSketchKind.Errorf("bucket %d of weight %v has sums %v (scores), %v (outcomes), %v (gaps) outside what its rows can hold", k, bk.W, bk.S, bk.O, bk.A)
		}
		rows += bk.N
		sk.buckets[k] = bk
	}
	if rows != v.N {
		return scoreSketchKind.Errorf("%d rows, its buckets hold %d", v.N, rows)
	}
	bw := 0.0
	for _, b := range sk.buckets {
		bw += b.W
	}
	if math.Abs(bw-v.W) > 1e-6*math.Max(bw, v.W) {
		return scoreSketchKind.Errorf("weight %v, its buckets hold %v", v.W, bw)
	}
	return nil
}

// edgeValuesJSON is the JSON form of EdgeValues.
type edgeValuesJSON struct {
	Version  int        `json:"version"`
	Keys     []uint32   `json:"keys"`
	Limit    int        `json:"limit"`
	Overflow bool       `json:"overflow,omitempty"`
	Values   []ValueSum `json:"values"`
}

// MarshalJSON writes the versioned JSON form (the scores in increasing
// order).
func (ev *EdgeValues) MarshalJSON() ([]byte, error) {
	v := edgeValuesJSON{Version: sumsVersion, Keys: ev.keys, Limit: ev.limit, Overflow: ev.overflowed, Values: []ValueSum{}}
	for _, k := range ev.keys {
		for _, x := range ev.sorted(k) {
			v.Values = append(v.Values, *x)
		}
	}
	return edgeValuesKind.Encode(v)
}

// UnmarshalJSON reads the JSON form, checking its version and that every
// score lies in one of its buckets.
func (ev *EdgeValues) UnmarshalJSON(b []byte) error {
	var v edgeValuesJSON
	if _, err := edgeValuesKind.Decode(b, &v); err != nil {
		return err
	}
	if v.Limit < 1 || !slices.IsSorted(v.Keys) {
		return edgeValuesKind.Errorf("bad limit or buckets")
	}
	*ev = EdgeValues{keys: v.Keys, limit: v.Limit, overflowed: v.Overflow}
	if ev.overflowed {
		return nil
	}
	ev.reset()
	for _, x := range v.Values {
		if _, ok := ev.values[SketchKey(x.Score)]; !ok {
			return edgeValuesKind.Errorf("score %v outside its buckets", x.Score)
		}
		ev.add(x)
	}
	return nil
}
