package metric

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/state"
)

// ErrNotMergeable is returned for bins whose edges depend on the data
// (equal-mass bins, the Sqrt and Doane rules): their sums over shards do
// not add up.
var ErrNotMergeable = errors.New("the bins depend on the data, so their sums cannot be merged")

// sumsVersion is the version of the JSON form of BinSums and ScoreSums.
const sumsVersion = 1

// The kinds of the sums' JSON forms (package internal/state: one envelope
// {"kind", "version", ...}, one decoder, and the promise that a later calib
// reads every earlier version).
var (
	binSumsKind     = state.Kind{Name: "metric.BinSums", Version: sumsVersion}
	scoreSumsKind   = state.Kind{Name: "metric.ScoreSums", Version: sumsVersion}
	ksSumsKind      = state.Kind{Name: "metric.KSSums", Version: sumsVersion}
	cellSumsKind    = state.Kind{Name: "metric.CellSums", Version: sumsVersion}
	scoreSketchKind = state.Kind{Name: "metric.ScoreSketch", Version: sumsVersion}
	edgeValuesKind  = state.Kind{Name: "metric.EdgeValues", Version: sumsVersion}
	mmceSumsKind    = state.Kind{Name: "metric.MMCESums", Version: sumsVersion, Bare: 1} // written without a version inside evaluate.KernelSums before it moved here
)

// BinSums is the mergeable form of Bins, for bins that do not depend on
// the data (equal-width bins, the Fixed rule): per bin b the number of
// samples n_b, their total weight W_b and the weighted sums of their
// scores and outcomes, S_b = sum_{i in b} w_i s_i and F_b = sum_{i in b}
// w_i o_i, and over all samples (binned or not) N and W = sum_i w_i.
// Shards add up: Add batches of rows in any order, Merge the sums of other
// shards, and Bins returns what BinScores returns on all the rows, up to
// the rounding of the sums (added in another order: 1e-15 relative in the
// tests). The zero value is not usable: see NewBinSums.
type BinSums struct {
	st binSumsState
}

// binSumsState is the state of BinSums, and its JSON form.
type binSumsState struct {
	Version int       `json:"version"`
	Edges   []float64 `json:"edges"`
	Count   []int     `json:"count"`
	Mass    []float64 `json:"mass"`
	Score   []float64 `json:"score_sum"`
	Freq    []float64 `json:"outcome_sum"`
	N       int       `json:"n"`
	W       float64   `json:"weight_sum"`
	Pos     int       `json:"pos"`                // samples of positive weight (see Bins.Pos)
	OpenLow bool      `json:"open_low,omitempty"` // BinOptions.OpenLow
}

// NewBinSums returns empty sums for the bins of o, which must not depend
// on the data: equal-width with the Fixed rule (ErrNotMergeable
// otherwise).
func NewBinSums(o BinOptions) (*BinSums, error) {
	if o.Binning != EqualWidth || o.Rule != Fixed {
		return nil, fmt.Errorf("metric: %s bins with the %s rule: %w", o.Binning, o.Rule, ErrNotMergeable)
	}
	b, err := o.numBins(nil, nil)
	if err != nil {
		return nil, err
	}
	return &BinSums{st: binSumsState{Version: sumsVersion, Edges: o.edges(nil, nil, b), Count: make([]int, b), Mass: make([]float64, b),
		Score: make([]float64, b), Freq: make([]float64, b), OpenLow: o.OpenLow}}, nil
}

// checkBatch checks a batch's weights (nil: all 1): as many as samples,
// finite and >= 0 (a shard may have only zero weights).
func checkBatch(w []float64, n int) error {
	if err := mathx.CheckWeightValues(w, n); err != nil {
		return fmt.Errorf("metric: %w", err)
	}
	return nil
}

// Add adds samples: scores in [0, 1], outcomes and weights (nil: all 1)
// of the same length. Bad weights are an error wrapping data.ErrWeights
// (mathx.ErrWeights), and nothing is added.
func (bs *BinSums) Add(scores, outcomes, weights []float64) error {
	if len(outcomes) != len(scores) {
		return fmt.Errorf("metric: BinSums.Add: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	if err := checkBatch(weights, len(scores)); err != nil {
		return err
	}
	o := BinOptions{Binning: EqualWidth, Rule: Fixed, Bins: len(bs.st.Count), OpenLow: bs.st.OpenLow}
	for i, k := range o.assign(scores, bs.st.Edges) {
		w := mathx.Weight(weights, i)
		bs.st.W += w
		if w > 0 {
			bs.st.Pos++
		}
		if k >= 0 {
			bs.st.Count[k]++
			bs.st.Mass[k] += w
			bs.st.Score[k] += float64(w * scores[i])
			bs.st.Freq[k] += float64(w * outcomes[i])
		}
	}
	bs.st.N += len(scores)
	return nil
}

// Merge adds the sums of another shard with the same bins.
func (bs *BinSums) Merge(other *BinSums) error {
	if !slices.Equal(bs.st.Edges, other.st.Edges) || bs.st.OpenLow != other.st.OpenLow {
		return fmt.Errorf("metric: BinSums.Merge: the bins differ (%d and %d edges)", len(bs.st.Edges), len(other.st.Edges))
	}
	for b := range bs.st.Count {
		bs.st.Count[b] += other.st.Count[b]
		bs.st.Mass[b] += other.st.Mass[b]
		bs.st.Score[b] += other.st.Score[b]
		bs.st.Freq[b] += other.st.Freq[b]
	}
	bs.st.N += other.st.N
	bs.st.W += other.st.W
	bs.st.Pos += other.st.Pos
	return nil
}

// Totals returns the running sums per bin: the total weight W_b (the
// count when unweighted), S_b = sum_{i in b} w_i s_i and F_b = sum_{i in
// b} w_i o_i (fresh slices). A binned ECE of p = 1 over any set of rows
// whose totals are summed is sum_b |F_b - S_b| / sum_b W_b.
func (bs *BinSums) Totals() (mass, scoreSum, outcomeSum []float64) {
	return slices.Clone(bs.st.Mass), slices.Clone(bs.st.Score), slices.Clone(bs.st.Freq)
}

// Bins returns the bins of every sample added or merged: the means S_b /
// W_b and F_b / W_b of the non-empty bins, for ECE, MCE and DebiasedL2.
func (bs *BinSums) Bins() *Bins {
	out := &Bins{Edges: slices.Clone(bs.st.Edges), Count: slices.Clone(bs.st.Count), Mass: slices.Clone(bs.st.Mass),
		Score: slices.Clone(bs.st.Score), Freq: slices.Clone(bs.st.Freq), N: bs.st.N, W: bs.st.W, Pos: bs.st.Pos}
	out.toMeans()
	return out
}

// MarshalJSON writes the JSON form: {"kind": "metric.BinSums", "version":
// 1, ...} and the exported fields.
func (bs *BinSums) MarshalJSON() ([]byte, error) {
	return binSumsKind.Encode(&bs.st)
}

// UnmarshalJSON reads the JSON form (MarshalJSON is the default one of the
// exported fields), checking its version and that its arrays agree.
func (bs *BinSums) UnmarshalJSON(b []byte) error {
	var v binSumsState
	if _, err := binSumsKind.Decode(b, &v); err != nil {
		return err
	}
	nb := len(v.Count)
	if nb < 1 || len(v.Edges) != nb+1 || len(v.Mass) != nb || len(v.Score) != nb || len(v.Freq) != nb {
		return binSumsKind.Errorf("%d edges, %d counts, %d masses, %d score sums and %d outcome sums do not agree", len(v.Edges), nb, len(v.Mass), len(v.Score), len(v.Freq))
	}
	if v.Pos < 0 || v.Pos > v.N {
		return binSumsKind.Errorf("%d rows of positive weight of %d", v.Pos, v.N)
	}
	bs.st = v
	return nil
}

// ScoreSums is the mergeable form of the proper scores and the top-label
// summaries: over every sample added, N, W = sum_i w_i and the weighted
// sums of [argmax_k f_ik = y_i] (first arg max on ties), max_k f_ik, the
// Brier term sum_k (f_ik - [y_i = k])^2 and the NLL term (NLL's: the exact
// log-softmax with logits, else -log max(f_{i,y_i}, NLLEpsilon)).
// Accuracy, Confidence, Brier and NLL divide by W, as the functions of
// those names do on all the rows (up to the rounding of the sums).
type ScoreSums struct {
	st scoreSumsState
}

// scoreSumsState is the state of ScoreSums, and its JSON form.
type scoreSumsState struct {
	Version int     `json:"version"`
	N       int     `json:"n"`
	W       float64 `json:"weight_sum"`
	Correct float64 `json:"correct_sum"`
	Conf    float64 `json:"confidence_sum"`
	Brier   float64 `json:"brier_sum"`
	NLL     float64 `json:"nll_sum"`
	// Label[k] is the weight of the rows of label k (K entries once a row
	// is added; absent in the JSON of older versions' sums).
	Label []float64 `json:"label_weight,omitempty"`
}

// NewScoreSums returns empty sums.
func NewScoreSums() *ScoreSums { return &ScoreSums{st: scoreSumsState{Version: sumsVersion}} }

// Add adds a batch of rows: probs n×k, logits n×k or nil (for NLL),
// labels and weights (nil: all 1). Bad weights are an error wrapping
// mathx.ErrWeights, and nothing is added.
func (ss *ScoreSums) Add(probs, logits []float64, labels []int, k int, weights []float64) error {
	if k < 1 || len(probs) != len(labels)*k || (logits != nil && len(logits) != len(probs)) {
		return fmt.Errorf("metric: ScoreSums.Add: %d probabilities, %d logits, %d labels, K = %d", len(probs), len(logits), len(labels), k)
	}
	if err := checkBatch(weights, len(labels)); err != nil {
		return err
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return fmt.Errorf("metric: ScoreSums.Add: label %d of row %d outside 0..%d", y, i, k-1)
		}
	}
	top, correct := TopR(probs, labels, k, 1)
	if ss.st.Label == nil && len(labels) > 0 {
		ss.st.Label = make([]float64, k)
	}
	if len(labels) > 0 && len(ss.st.Label) != k {
		return fmt.Errorf("metric: ScoreSums.Add: K = %d, where the sums have %d labels", k, len(ss.st.Label))
	}
	for i, y := range labels {
		w := mathx.Weight(weights, i)
		row := probs[i*k : (i+1)*k]
		var z []float64
		if logits != nil {
			z = logits[i*k : (i+1)*k]
		}
		brier, nll := brierRow(row, y), nllRow(row, z, y)
		ss.st.W += w
		ss.st.Correct += float64(w * correct[i])
		ss.st.Conf += float64(w * top[i])
		ss.st.Brier += float64(w * brier)
		ss.st.NLL += float64(w * nll)
		ss.st.Label[y] += w
	}
	ss.st.N += len(labels)
	return nil
}

// Merge adds the sums of another shard.
func (ss *ScoreSums) Merge(other *ScoreSums) error {
	if len(ss.st.Label) > 0 && len(other.st.Label) > 0 && len(ss.st.Label) != len(other.st.Label) {
		return fmt.Errorf("metric: ScoreSums.Merge: sums of %d and %d labels", len(ss.st.Label), len(other.st.Label))
	}
	ss.st.N += other.st.N
	ss.st.W += other.st.W
	ss.st.Correct += other.st.Correct
	ss.st.Conf += other.st.Conf
	ss.st.Brier += other.st.Brier
	ss.st.NLL += other.st.NLL
	if len(ss.st.Label) == 0 && len(other.st.Label) > 0 {
		ss.st.Label = make([]float64, len(other.st.Label))
	}
	for k, v := range other.st.Label {
		ss.st.Label[k] += v
	}
	return nil
}

// LabelMean returns the weighted fraction of rows of label k (NaN when the
// total weight is 0 or the label outside the sums).
func (ss *ScoreSums) LabelMean(k int) float64 {
	if k < 0 || k >= len(ss.st.Label) {
		return math.NaN()
	}
	return ss.st.Label[k] / ss.st.W
}

// Accuracy, Confidence, BrierScore and MeanNLL return the weighted means
// (NaN when the total weight is 0).
func (ss *ScoreSums) Accuracy() float64   { return ss.st.Correct / ss.st.W }
func (ss *ScoreSums) Confidence() float64 { return ss.st.Conf / ss.st.W }
func (ss *ScoreSums) BrierScore() float64 { return ss.st.Brier / ss.st.W }
func (ss *ScoreSums) MeanNLL() float64    { return ss.st.NLL / ss.st.W }

// MarshalJSON writes the JSON form: {"kind": "metric.ScoreSums", "version":
// 1, ...} and the exported fields.
func (ss *ScoreSums) MarshalJSON() ([]byte, error) {
	return scoreSumsKind.Encode(&ss.st)
}

// UnmarshalJSON reads the JSON form, checking its kind, its version and
// that its sums are finite and non-negative.
func (ss *ScoreSums) UnmarshalJSON(b []byte) error {
	var v scoreSumsState
	if _, err := scoreSumsKind.Decode(b, &v); err != nil {
		return err
	}
	if v.N < 0 || !(v.W >= 0) || !mathx.Finite(v.W, v.Correct, v.Conf, v.Brier, v.NLL) || v.Correct < 0 || v.Conf < 0 || v.Brier < 0 || v.NLL < 0 {
		return scoreSumsKind.Errorf("%d rows of weight %v, sums %v, %v, %v, %v", v.N, v.W, v.Correct, v.Conf, v.Brier, v.NLL)
	}
	for k, w := range v.Label {
		if !(w >= 0) || !mathx.Finite(w) {
			return scoreSumsKind.Errorf("label %d weight %v", k, w)
		}
	}
	ss.st = v
	return nil
}

// DefaultKSCells is the number of score cells of NewKSSums(0).
const DefaultKSCells = 4096

// KSSums is the mergeable form of the KS calibration error: the scores'
// range [0, 1] cut into G equal cells (a score s in cell min(G-1,
// floor(s G))), and per cell c the weighted sums S_c = sum w_i s_i, O_c =
// sum w_i o_i and A_c = sum w_i |s_i - o_i|, with the total weight W. The
// cumulative difference at the end of cell c,
//
//	D_c = (sum_{c' <= c} S_c' - O_c') / W,
//
// is the exact KS curve's value at the last sample of cell c (the samples
// of earlier cells come first in the score order). Inside cell c the curve
// is D_{c-1} plus a partial sum of the cell's terms t_i = w_i (s_i - o_i) /
// W, whose positive terms add up to P_c = (A_c + T_c) / 2W and negative
// ones to N_c = (A_c - T_c) / 2W, with T_c = S_c - O_c. So
//
//	lo = max_c |D_c| <= KS <= max_c max(|D_{c-1} + P_c|, |D_{c-1} - N_c|) = hi
//
// (up to the rounding of the sums): Interval returns both. A cell with one
// sample adds no width; the width is at most max_c A_c / W, small when a
// cell holds little weight or its samples are nearly calibrated (a
// confident correct prediction adds |s - o| near 0).
type KSSums struct {
	st ksSumsState
}

// ksSumsState is the state of KSSums, and its JSON form.
type ksSumsState struct {
	Version int       `json:"version"`
	Cells   int       `json:"cells"`
	S       []float64 `json:"score_sum"`
	O       []float64 `json:"outcome_sum"`
	A       []float64 `json:"abs_sum"`
	N       int       `json:"n"`
	W       float64   `json:"weight_sum"`
}

// NewKSSums returns empty sums on cells score cells (0: DefaultKSCells).
func NewKSSums(cells int) (*KSSums, error) {
	if cells == 0 {
		cells = DefaultKSCells
	}
	if cells < 1 || cells > 1<<24 {
		return nil, fmt.Errorf("metric: KS sums on %d cells (want 1 to 2^24)", cells)
	}
	return &KSSums{st: ksSumsState{Version: sumsVersion, Cells: cells, S: make([]float64, cells), O: make([]float64, cells), A: make([]float64, cells)}}, nil
}

// Add adds samples: scores (clamped to [0, 1]), outcomes and weights (nil:
// all 1). Bad weights are an error wrapping mathx.ErrWeights.
func (ks *KSSums) Add(scores, outcomes, weights []float64) error {
	if len(outcomes) != len(scores) {
		return fmt.Errorf("metric: KSSums.Add: %d scores and %d outcomes", len(scores), len(outcomes))
	}
	if err := checkBatch(weights, len(scores)); err != nil {
		return err
	}
	g := float64(ks.st.Cells)
	for i, s := range scores {
		c := min(ks.st.Cells-1, max(0, int(math.Floor(s*g))))
		w := mathx.Weight(weights, i)
		ks.st.S[c] += float64(w * s)
		ks.st.O[c] += float64(w * outcomes[i])
		ks.st.A[c] += float64(w * math.Abs(s-outcomes[i]))
		ks.st.W += w
	}
	ks.st.N += len(scores)
	return nil
}

// Merge adds the sums of another shard on the same cells.
func (ks *KSSums) Merge(other *KSSums) error {
	if other.st.Cells != ks.st.Cells {
		return fmt.Errorf("metric: KSSums.Merge: %d and %d cells", ks.st.Cells, other.st.Cells)
	}
	for c := range ks.st.S {
		ks.st.S[c] += other.st.S[c]
		ks.st.O[c] += other.st.O[c]
		ks.st.A[c] += other.st.A[c]
	}
	ks.st.N += other.st.N
	ks.st.W += other.st.W
	return nil
}

// Interval returns lo <= KS <= hi (see KSSums); 0, 0 without weight.
func (ks *KSSums) Interval() (lo, hi float64) {
	if !(ks.st.W > 0) {
		return 0, 0
	}
	cs, co, prev := 0.0, 0.0, 0.0
	for c := range ks.st.S {
		t := ks.st.S[c] - ks.st.O[c]
		pos, neg := max(0, (ks.st.A[c]+t)/2)/ks.st.W, max(0, (ks.st.A[c]-t)/2)/ks.st.W
		hi = max(hi, math.Abs(prev+pos), math.Abs(prev-neg))
		cs += ks.st.S[c]
		co += ks.st.O[c]
		d := cs/ks.st.W - co/ks.st.W
		lo = max(lo, math.Abs(d))
		hi = max(hi, math.Abs(d))
		prev = d
	}
	return lo, hi
}

// MarshalJSON writes the JSON form: {"kind": "metric.KSSums", "version":
// 1, ...} and the exported fields.
func (ks *KSSums) MarshalJSON() ([]byte, error) {
	return ksSumsKind.Encode(&ks.st)
}

// UnmarshalJSON reads the JSON form, checking its version and sizes.
func (ks *KSSums) UnmarshalJSON(b []byte) error {
	var v ksSumsState
	if _, err := ksSumsKind.Decode(b, &v); err != nil {
		return err
	}
	if v.Cells < 1 || len(v.S) != v.Cells || len(v.O) != v.Cells || len(v.A) != v.Cells {
		return ksSumsKind.Errorf("%d cells but %d, %d and %d sums", v.Cells, len(v.S), len(v.O), len(v.A))
	}
	ks.st = v
	return nil
}

// CellSums is the mergeable form of Canonical with B cells per class
// dimension fixed in advance (the Fixed rule): per occupied cell of the
// simplex grid the number of samples, their weight W_c and the weighted
// sums of the predictions and of the one-hot labels, and the total weight
// W. Estimate gives Canonical's Value and MCE on every sample added or
// merged (Value up to the rounding of the sums; cells are visited in the
// order of their coordinates, so MCECount may name another cell than the
// in-memory one when two cells attain the maximum exactly). Memory is
// O(occupied cells x K); with a Limit, past Limit occupied cells the sums
// drop every cell and are Overflow (Estimate is then meaningless: check
// Overflow), so that memory stays bounded whatever the data.
type CellSums struct {
	st  cellSumsState
	key []byte
}

// cellSumsState is the state of CellSums, and its JSON form.
type cellSumsState struct {
	Version int                 `json:"version"`
	K       int                 `json:"k"`
	B       int                 `json:"bins"`
	Cells   map[string]*CellSum `json:"cells"` // keyed by the cell's coordinates, "i_1,...,i_K"
	N       int                 `json:"n"`
	W       float64             `json:"weight_sum"`
	// Limit is the largest number of occupied cells kept (0: no limit);
	// Overflow says that more were occupied.
	Limit    int  `json:"limit,omitempty"`
	Overflow bool `json:"overflow,omitempty"`
}

// overflow drops the cells: more than Limit are occupied.
func (cs *CellSums) overflow() {
	cs.st.Overflow, cs.st.Cells = true, map[string]*CellSum{}
}

// CellSum holds one cell's sums.
type CellSum struct {
	Count int       `json:"count"`
	Mass  float64   `json:"mass"`
	F     []float64 `json:"prediction_sum"`
	Y     []float64 `json:"label_sum"`
}

// NewCellSums returns empty sums for K classes and b cells per dimension
// (0: DefaultBins).
func NewCellSums(k, b int) (*CellSums, error) {
	if b == 0 {
		b = DefaultBins
	}
	if k < 1 || b < 1 || b > 1<<16 {
		return nil, fmt.Errorf("metric: cell sums for K = %d and %d bins per dimension (want K >= 1, 1 to 65536 bins)", k, b)
	}
	return &CellSums{st: cellSumsState{Version: sumsVersion, K: k, B: b, Cells: map[string]*CellSum{}}}, nil
}

// Add adds a batch of rows: probs n×K, labels in 0..K-1 and weights (nil:
// all 1). Bad weights are an error wrapping mathx.ErrWeights, and nothing is
// added.
func (cs *CellSums) Add(probs []float64, labels []int, weights []float64) error {
	k := cs.st.K
	if len(probs) != len(labels)*k {
		return fmt.Errorf("metric: CellSums.Add: %d probabilities for %d labels and K = %d", len(probs), len(labels), k)
	}
	if err := checkBatch(weights, len(labels)); err != nil {
		return err
	}
	for i, y := range labels {
		if y < 0 || y >= k {
			return fmt.Errorf("metric: CellSums.Add: label %d of row %d outside 0..%d", y, i, k-1)
		}
	}
	for i, y := range labels {
		row := probs[i*k : (i+1)*k]
		cs.key = cs.key[:0]
		for m, v := range row {
			if m > 0 {
				cs.key = append(cs.key, ',')
			}
			cs.key = strconv.AppendInt(cs.key, int64(min(int(math.Floor(float64(cs.st.B)*v)), cs.st.B-1)), 10)
		}
		w := mathx.Weight(weights, i)
		cs.st.W += w
		if cs.st.Overflow {
			continue
		}
		c := cs.st.Cells[string(cs.key)]
		if c == nil {
			if cs.st.Limit > 0 && len(cs.st.Cells) >= cs.st.Limit {
				cs.overflow()
				continue
			}
			c = &CellSum{F: make([]float64, k), Y: make([]float64, k)}
			cs.st.Cells[string(cs.key)] = c
		}
		c.Count++
		c.Mass += w
		for m, v := range row {
			c.F[m] += float64(w * v)
		}
		c.Y[y] += w
	}
	cs.st.N += len(labels)
	return nil
}

// Merge adds the sums of another shard with the same K and B.
func (cs *CellSums) Merge(other *CellSums) error {
	if other.st.K != cs.st.K || other.st.B != cs.st.B {
		return fmt.Errorf("metric: CellSums.Merge: K = %d, B = %d and K = %d, B = %d", cs.st.K, cs.st.B, other.st.K, other.st.B)
	}
	cs.st.N += other.st.N
	cs.st.W += other.st.W
	if other.st.Overflow {
		cs.overflow()
	}
	for key, o := range other.st.Cells {
		if cs.st.Overflow {
			break
		}
		c := cs.st.Cells[key]
		if c == nil {
			if cs.st.Limit > 0 && len(cs.st.Cells) >= cs.st.Limit {
				cs.overflow()
				break
			}
			c = &CellSum{F: make([]float64, cs.st.K), Y: make([]float64, cs.st.K)}
			cs.st.Cells[key] = c
		}
		c.Count += o.Count
		c.Mass += o.Mass
		for m := range c.F {
			c.F[m] += o.F[m]
			c.Y[m] += o.Y[m]
		}
	}
	return nil
}

// Estimate returns the canonical binned estimate for the exponent p (see
// CanonicalBinned) of every sample added or merged.
func (cs *CellSums) Estimate(p float64) *CanonicalBinned {
	res := &CanonicalBinned{B: cs.st.B}
	keys := make([]string, 0, len(cs.st.Cells))
	for key := range cs.st.Cells {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		c := cs.st.Cells[key]
		if !(c.Mass > 0) {
			continue
		}
		res.Cells++
		for m := 0; m < cs.st.K; m++ {
			d := math.Abs(c.Y[m]-c.F[m]) / c.Mass
			if d > res.MCE {
				res.MCE, res.MCECount = d, c.Count
			}
			res.Value += c.Mass * math.Pow(d, p)
		}
	}
	res.Value /= cs.st.W
	return res
}

// MarshalJSON writes the JSON form: {"kind": "metric.CellSums", "version":
// 1, ...} and the exported fields.
func (cs *CellSums) MarshalJSON() ([]byte, error) {
	return cellSumsKind.Encode(&cs.st)
}

// UnmarshalJSON reads the JSON form, checking its version and the sizes of
// its cells.
func (cs *CellSums) UnmarshalJSON(b []byte) error {
	var v cellSumsState
	if _, err := cellSumsKind.Decode(b, &v); err != nil {
		return err
	}
	if v.K < 1 || v.B < 1 || v.B > 1<<16 {
		return cellSumsKind.Errorf("K = %d, %d bins", v.K, v.B)
	}
	if v.Cells == nil {
		v.Cells = map[string]*CellSum{}
	}
	for key, c := range v.Cells {
		if c == nil || len(c.F) != v.K || len(c.Y) != v.K {
			return cellSumsKind.Errorf("cell %q does not hold %d sums", key, v.K)
		}
	}
	cs.st = v
	return nil
}
