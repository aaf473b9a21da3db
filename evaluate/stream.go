package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
)

// Streamed evaluation: the metrics of a prediction set read in batches, in
// memory that does not grow with the number of rows n. Two kinds of state
// add up across batches and shards:
//
//   - Sums (first pass): the exact sufficient statistics of accuracy,
//     confidence, Brier, NLL, the binned metrics on fixed equal-width bins
//     (top-label, class-wise, canonical cells) and KS on a fixed grid of
//     score cells (a rigorous lower and upper bound), plus the Sample of
//     evaluation points for the kernel estimators;
//   - KernelSums (second pass): for the m sampled evaluation points, the
//     leave-one-out kernel sums of ECE^KDE over every row (kde.PointSums),
//     on a grid of bandwidths, from which the bandwidth is chosen by the
//     leave-one-out likelihood of the points against all rows.
//
// Both have Add (a batch), Merge (another shard's state) and a versioned
// JSON form; Finish turns them into the Evaluation that Evaluate would
// give, with the kernel estimates' sampling intervals. Stream runs both
// passes over a Source that can be read twice.

// Batch is a chunk of rows of a streamed set: a validated data.Set of its
// rows, the name of the shard it comes from, the position of that shard in
// the stream's list of shards (0 for one file) and the index of its first
// row in that shard. Source and Offset identify its rows (no row may be
// added twice); Shard and Offset place them in the stream for the sample of
// evaluation points, which never reads the name.
type Batch struct {
	*data.Set
	Source string
	Shard  int
	Offset int64
}

// DefaultEvalPoints is the number m of evaluation points of the streamed
// kernel estimators when StreamOptions.EvalPoints is 0.
const DefaultEvalPoints = 2000

// AllPoints, as StreamOptions.EvalPoints, evaluates the kernel estimators
// at every row: the exact plug-in estimates (memory O(n K x grid), refused
// past MaxAllPoints rows).
const AllPoints = -1

// MaxAllPoints is the largest number of rows StreamOptions.EvalPoints =
// AllPoints accepts.
const MaxAllPoints = 200_000

// streamMetrics lists the metrics a stream computes by default: all but
// ece_witness, whose kernel sums are K-vectors at two grids of 13
// bandwidths (about 13 times ece_kde's canonical cost); it is streamed
// when asked for.
var streamMetrics = []string{"ece_kde", "ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "sharpness", "brier", "nll", "accuracy", "confidence"}

// streamable lists every metric a stream can compute.
var streamable = append(slices.Clone(streamMetrics), "ece_witness")

// StreamableMetrics returns every metric a streamed evaluation computes
// (what --metrics all means in a stream); StreamOptions.Metrics nil means
// these but ece_witness.
func StreamableMetrics() []string { return slices.Clone(streamable) }

// StreamOptions configures a streamed evaluation: Options (Metrics,
// Strict, Mode, P, Bandwidth, ClassMean, Bins, KSR, MMCEWidth, Level, Seed,
// Workers, Progress; the bootstrap, debiasing and witness options are
// refused) and the stream's own.
type StreamOptions struct {
	Options
	// EvalPoints is the number m of evaluation points of ece_kde (a
	// uniform sample of the rows); 0 means DefaultEvalPoints, AllPoints
	// every row.
	EvalPoints int
	// Grid lists the candidate bandwidths of the leave-one-out choice
	// (nil: kde.StreamGrid()); with Options.Bandwidth set it is not used.
	Grid []float64
	// KSCells is the number of score cells of KS (0:
	// metric.DefaultKSCells).
	KSCells int
	// MaxCells bounds the occupied cells of the canonical binned metrics
	// (each holds 2K + 2 numbers); 0 means MaxCellFloats / (2K + 2). Past
	// it the canonical entries of ece_bin and mce are errors and the
	// other entries are unaffected.
	MaxCells int
}

// MaxCellFloats is the default budget of the canonical cells of a stream:
// 2^20 numbers (47,662 cells at K = 10, about 296 bytes of heap each: 14
// MB), so that a stream stays under 64 MB with the default options at any
// n. Predictions spread over more cells than that hold too few samples per
// cell for the canonical binned values to mean anything (the sparse-cell
// warning); a larger MaxCells computes them, at about (2K + 2) x 8 x 1.7
// bytes a cell.
const MaxCellFloats = 1 << 20

// cellBytes is about the heap a canonical cell of K classes takes (296
// bytes measured at K = 10: its 2K + 2 sums, the key, the map entry).
func cellBytes(k int) int { return (2*k + 2) * 8 * 17 / 10 }

// streamConfig is StreamOptions resolved: what Sums carries to its merge
// partners and to Finish.
type streamConfig struct {
	Metrics   []string          `json:"metrics"`
	Mode      string            `json:"mode"`
	P         []float64         `json:"p"`
	Bandwidth float64           `json:"bandwidth,omitempty"`
	Grid      []float64         `json:"grid"`
	ClassMean bool              `json:"class_mean,omitempty"`
	Bins      metric.BinOptions `json:"bins"`
	KSR       []int             `json:"ks_r"`
	KSCells   int               `json:"ks_cells"`
	MMCEWidth float64           `json:"mmce_width"`
	M         int               `json:"m"`             // evaluation points
	All       bool              `json:"all,omitempty"` // every row an evaluation point (M is then MaxAllPoints)
	Strict    bool              `json:"strict,omitempty"`
	Level     float64           `json:"level"`
	Seed      uint64            `json:"seed"`
	MaxCells  int               `json:"max_cells,omitempty"`
	// WitnessGrid is ece_witness's grid (kde.WitnessGrid, or the one
	// witness bandwidth); WitnessP its exponents (1 and 2 of P).
	WitnessGrid []float64 `json:"witness_grid,omitempty"`
	WitnessP    []float64 `json:"witness_p,omitempty"`
}

// resolve checks the options of a stream, before any data is read.
func (o StreamOptions) resolve() (*streamConfig, error) {
	switch {
	case o.CI || o.CIExact:
		return nil, optionsError("bootstrap intervals need the whole set in memory; a streamed evaluation gives the kernel estimates' sampling intervals and the KS bounds instead")
	case o.Debias:
		return nil, optionsError("the debiased estimators are not available in a streamed evaluation")
	case o.PValues:
		return nil, optionsError("p-values redraw every label from the predictions, which needs the whole set in memory; run calib eval or calib test without --stream")
	case o.Objective != kde.LOO:
		return nil, optionsError("a streamed evaluation chooses the bandwidth by the LOO objective only")
	case o.MaxCells < 0:
		return nil, optionsError("%d canonical cells: want a positive number, or 0 for the default", o.MaxCells)
	case o.EvalPoints < AllPoints || o.EvalPoints > MaxAllPoints:
		return nil, optionsError("%d evaluation points: want a number from 1 to %d, 0 (the default, %d) or all", o.EvalPoints, MaxAllPoints, DefaultEvalPoints)
	case !(o.WitnessBandwidth >= 0) || math.IsInf(o.WitnessBandwidth, 0):
		return nil, optionsError("witness bandwidth %v: must be positive", o.WitnessBandwidth)
	}
	c := &streamConfig{Mode: o.Mode, P: o.P, Bandwidth: o.Bandwidth, ClassMean: o.ClassMean, Bins: o.Bins, KSR: o.KSR, KSCells: o.KSCells, MaxCells: o.MaxCells, M: o.EvalPoints, Level: o.Level, Seed: o.seed(), MMCEWidth: o.MMCEWidth, Strict: o.Strict}
	if o.Metrics == nil {
		c.Metrics = slices.Clone(streamMetrics)
	}
	for _, m := range o.Metrics {
		if !slices.Contains(Metrics, m) {
			return nil, optionsError("unknown metric %q (valid: %s)", m, strings.Join(Metrics, ", "))
		}
		if !slices.Contains(streamable, m) {
			return nil, optionsError("%s is not available in a streamed evaluation (streamed: %s)", m, strings.Join(streamable, ", "))
		}
		if !slices.Contains(c.Metrics, m) {
			c.Metrics = append(c.Metrics, m)
		}
	}
	if len(c.Metrics) == 0 {
		return nil, optionsError("no metric given")
	}
	// The checks of Options.resolve that need no data.
	base, err := Options{P: o.P, Bandwidth: o.Bandwidth, KSR: o.KSR, Level: o.Level, Mode: "canonical", Metrics: []string{"accuracy"}}.resolve(&data.Set{})
	if err != nil {
		return nil, err
	}
	c.P, c.KSR, c.Level = base.ps, base.ksR, base.boot.Level
	if _, _, err := Notions(cmpOr(o.Mode, "all"), nil); err != nil {
		return nil, err
	}
	if c.Bins.Bins == 0 {
		c.Bins.Bins = metric.DefaultBins
	}
	if _, err := metric.NewBinSums(metric.BinOptions{Bins: c.Bins.Bins}); err != nil {
		return nil, optionsError("%v", err)
	}
	if c.MMCEWidth == 0 {
		c.MMCEWidth = metric.DefaultMMCEWidth
	}
	if !(c.MMCEWidth > 0) || math.IsInf(c.MMCEWidth, 0) {
		return nil, optionsError("MMCE width %v: must be positive", c.MMCEWidth)
	}
	if c.KSCells == 0 {
		c.KSCells = metric.DefaultKSCells
	}
	if _, err := metric.NewKSSums(c.KSCells); err != nil {
		return nil, optionsError("%v", err)
	}
	switch {
	case c.M == 0:
		c.M = DefaultEvalPoints
	case c.M == AllPoints:
		c.M, c.All = MaxAllPoints, true
	}
	if c.Grid = o.Grid; c.Grid == nil {
		c.Grid = kde.StreamGrid()
	}
	if c.Bandwidth > 0 {
		c.Grid = []float64{c.Bandwidth}
	}
	if c.has("ece_witness") {
		c.WitnessGrid = kde.WitnessGrid()
		if o.WitnessBandwidth > 0 {
			c.WitnessGrid = []float64{o.WitnessBandwidth}
		}
		for _, p := range c.P {
			if (p == 1 || p == 2) && !slices.Contains(c.WitnessP, p) {
				c.WitnessP = append(c.WitnessP, p)
			}
		}
		if o.P == nil {
			c.WitnessP = []float64{1, 2}
		}
		if c.WitnessP == nil {
			return nil, optionsError("ece_witness is defined for p = 1 and 2, not for p = %v", c.P)
		}
	}
	for i, h := range c.Grid {
		if !(h > 0) || math.IsInf(h, 0) || (i > 0 && !(h > c.Grid[i-1])) {
			return nil, optionsError("bandwidth grid %v: want increasing positive numbers", c.Grid)
		}
	}
	return c, nil
}

// streamNotions is Notions for a stream: "all" (or "") means canonical and
// top_label (binary and top_label for one-column input) whatever K, since
// marginal costs K times canonical at every one of the n rows; marginal is
// there when asked for.
func streamNotions(mode string, k int, binary bool) ([]kde.Notion, string, error) {
	all := false
	for _, m := range strings.Split(cmpOr(mode, "all"), ",") {
		all = all || strings.TrimSpace(m) == "all"
	}
	if !all {
		return Notions(mode, &data.Set{K: k, Binary: binary})
	}
	if binary {
		return []kde.Notion{kde.Binary, kde.TopLabel}, "all = binary, top_label (one-column input)", nil
	}
	return []kde.Notion{kde.Canonical, kde.TopLabel}, "all = canonical, top_label (streamed: marginal costs K times canonical at every row; ask for it with --mode marginal)", nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (c *streamConfig) has(m string) bool { return slices.Contains(c.Metrics, m) }

// binned says whether a binned metric is asked for, cells whether the
// canonical cells are (not for ece_bin_debiased).
func (c *streamConfig) binned() bool {
	return c.has("ece_bin") || c.has("mce") || c.has("ece_bin_debiased")
}
func (c *streamConfig) cells() bool { return c.has("ece_bin") || c.has("mce") }

// cellLimit is the bound on the canonical cells for K classes.
func (c *streamConfig) cellLimit(k int) int {
	if c.MaxCells > 0 {
		return c.MaxCells
	}
	return max(1, MaxCellFloats/(2*k+2))
}

// sketched says whether the bins depend on the data (equal-mass edges, the
// Doane and Sqrt rules): the first pass then sketches the scores and the
// second collects the scores near the edges (metric.ScoreSketch).
func (c *streamConfig) sketched() bool {
	return c.binned() && (c.Bins.Binning == metric.EqualMass || c.Bins.Rule != metric.Fixed)
}

// dataCells says whether the canonical cells' number depends on the data
// (the Doane and Sqrt rules): the cells are then summed in the second pass.
func (c *streamConfig) dataCells() bool { return c.cells() && c.Bins.Rule != metric.Fixed }

// Sums is the first pass of a streamed evaluation: the exact mergeable sums
// of the scores, fixed bins and KS, the score sketches of data-dependent
// bins, and the sample of the kernel estimators' evaluation points. The
// zero value is not usable: see NewSums.
type Sums struct {
	Version int           `json:"version"`
	Config  *streamConfig `json:"config"`
	// Set-level facts, fixed by the first batch (K, Binary, Input) or
	// added up.
	K            int     `json:"k"`
	Binary       bool    `json:"binary"`
	Input        string  `json:"input"`
	N            int64   `json:"n"`
	Pos          int64   `json:"pos"` // rows of positive weight (N without weights)
	W            float64 `json:"w"`
	Weighted     bool    `json:"weighted"`
	Renormalized int     `json:"renormalized,omitempty"`
	Rounded      int     `json:"rounded,omitempty"`
	ZeroRounded  bool    `json:"zero_rounded,omitempty"` // some rounded row holds an exact 0

	Scores *metric.ScoreSums `json:"scores,omitempty"`
	Top    *metric.BinSums   `json:"top,omitempty"`
	Class  []*metric.BinSums `json:"class,omitempty"`
	Cells  *metric.CellSums  `json:"cells,omitempty"`
	// TopSketch and ClassSketch replace Top and Class for data-dependent
	// bins; Pooled holds the moments of all n x K probabilities for the
	// canonical cells' Doane rule.
	TopSketch   *metric.ScoreSketch   `json:"top_sketch,omitempty"`
	ClassSketch []*metric.ScoreSketch `json:"class_sketch,omitempty"`
	Pooled      *metric.Moments       `json:"pooled,omitempty"`
	KSTop       []*metric.KSSums      `json:"ks_top,omitempty"`    // per r of KSR (r <= K)
	KSWith      []*metric.KSSums      `json:"ks_within,omitempty"` // per r >= 2 of KSR (r <= K)
	KSClass     []*metric.KSSums      `json:"ks_class,omitempty"`
	Sample      *Sample               `json:"sample,omitempty"`
	// Rows are the runs of rows added, by source: the same rows cannot
	// be added twice, and they hold exactly N rows.
	Rows    []RowRange `json:"rows"`
	started bool
}

const streamVersion = 2

// NewSums returns empty first-pass sums for the options (checked here,
// before any data is read).
func NewSums(o StreamOptions) (*Sums, error) {
	c, err := o.resolve()
	if err != nil {
		return nil, err
	}
	return &Sums{Version: streamVersion, Config: c}, nil
}

// start sets up the sums for the first batch's K and kind.
func (s *Sums) start(b *Batch) error {
	c := s.Config
	if c.has("ks") {
		if err := CheckKSR(Options{KSR: c.KSR}, b.K); err != nil {
			return err
		}
	}
	if c.has("ece_kde") {
		if _, _, err := streamNotions(c.Mode, b.K, b.Binary); err != nil {
			return err
		}
	}
	s.K, s.Binary, s.Input, s.Weighted, s.started = b.K, b.Binary, InputKind(b.Set), b.Weights != nil, true
	s.Scores = metric.NewScoreSums()
	var err error
	switch {
	case c.sketched():
		s.TopSketch = metric.NewScoreSketch()
		s.ClassSketch = make([]*metric.ScoreSketch, s.K)
		for k := range s.ClassSketch {
			s.ClassSketch[k] = metric.NewScoreSketch()
		}
	case c.binned():
		if s.Top, err = metric.NewBinSums(c.Bins); err != nil {
			return err
		}
		s.Class = make([]*metric.BinSums, s.K)
		for k := range s.Class {
			s.Class[k], _ = metric.NewBinSums(c.Bins)
		}
	}
	switch {
	case c.dataCells():
		s.Pooled = new(metric.Moments)
	case c.cells():
		if s.Cells, err = metric.NewCellSums(s.K, c.Bins.Bins); err != nil {
			return err
		}
		s.Cells.Limit = c.cellLimit(s.K)
	}
	if c.has("ks") {
		for _, r := range c.KSR {
			if r <= s.K {
				ks, _ := metric.NewKSSums(c.KSCells)
				s.KSTop = append(s.KSTop, ks)
			}
			if r >= 2 && r <= s.K {
				ks, _ := metric.NewKSSums(c.KSCells)
				s.KSWith = append(s.KSWith, ks)
			}
		}
		s.KSClass = make([]*metric.KSSums, s.K)
		for k := range s.KSClass {
			s.KSClass[k], _ = metric.NewKSSums(c.KSCells)
		}
	}
	if s.kernelMetrics() {
		s.Sample = &Sample{M: c.M, Seed: c.Seed, K: s.K}
	}
	return nil
}

// DataError is an error in the data of a stream rather than in the
// options or the code: a shard whose columns, kind (probabilities or
// logits) or weights differ from the stream's, a batch without labels, a
// stream without rows or positive weights. Source names the shard ("" for
// the whole stream) and Row the first row of its chunk (1-based; 0 when
// none). calib exits 2 on it.
type DataError struct {
	Source string
	Row    int64
	Err    error
}

func (e *DataError) Error() string {
	switch {
	case e.Source == "":
		return e.Err.Error()
	case e.Row > 0:
		return fmt.Sprintf("%s (rows from %d): %v", e.Source, e.Row, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

func (e *DataError) Unwrap() error { return e.Err }

// Add adds a batch: its rows to every sum, and to the sample's draw.
func (s *Sums) Add(b *Batch) error {
	if b == nil || b.Set == nil || b.N == 0 {
		return nil
	}
	if b.Labels == nil {
		return &DataError{Source: b.Source, Row: b.Offset + 1, Err: data.ErrNoLabels}
	}
	if !s.started {
		if err := s.start(b); err != nil {
			return err
		}
	}
	at, err := rowsOverlap(s.Rows, b.Source, b.Offset, b.Offset+int64(b.N))
	if err != nil {
		return &DataError{Source: b.Source, Row: b.Offset + 1, Err: err}
	}
	if b.K != s.K || b.Binary != s.Binary || InputKind(b.Set) != s.Input || (b.Weights != nil) != s.Weighted {
		return &DataError{Source: b.Source, Row: b.Offset + 1, Err: fmt.Errorf("%d columns of %s%s, where the stream began with %d of %s%s (every shard of a stream must have the same columns, kind and weights)", b.K, InputKind(b.Set), weightedWord(b.Weights != nil), s.K, s.Input, weightedWord(s.Weighted))}
	}
	c, k, p, y, w := s.Config, b.K, b.Probs, b.Labels, b.Weights
	logits := b.Logits
	if logits != nil && b.Binary { // one logit z is (0, z)
		z := make([]float64, 2*b.N)
		for i, v := range logits {
			z[2*i+1] = v
		}
		logits = z
	}
	if err := s.Scores.Add(p, logits, y, k, w); err != nil {
		return err
	}
	if s.Top != nil {
		if err := addScores(s.Top, s.Class, p, y, k, w); err != nil {
			return err
		}
	}
	if s.Cells != nil {
		if err := s.Cells.Add(p, y, w); err != nil {
			return err
		}
	}
	if s.TopSketch != nil {
		if err := addScores(s.TopSketch, s.ClassSketch, p, y, k, w); err != nil {
			return err
		}
	}
	if s.Pooled != nil {
		for i, v := range p {
			s.Pooled.Add(mathx.Weight(w, i/k), v, 0, 0)
		}
	}
	if s.KSTop != nil || s.KSClass != nil {
		i, j := 0, 0
		for _, r := range c.KSR {
			if r <= k {
				sc, oc := metric.TopR(p, y, k, r)
				if err := s.KSTop[i].Add(sc, oc, w); err != nil {
					return err
				}
				i++
			}
			if r >= 2 && r <= k {
				sc, oc := metric.WithinTopR(p, y, k, r)
				if err := s.KSWith[j].Add(sc, oc, w); err != nil {
					return err
				}
				j++
			}
		}
		for cl, ks := range s.KSClass {
			sc, oc := metric.ClassColumn(p, y, k, cl)
			if err := ks.Add(sc, oc, w); err != nil {
				return err
			}
		}
	}
	if s.Sample != nil {
		s.Sample.add(b.Source, b.Shard, b.Offset, p, y, w)
	}
	s.Rows = addRows(s.Rows, at, b.Source, b.Offset, b.Offset+int64(b.N))
	s.N += int64(b.N)
	s.Pos += int64(mathx.PositiveRows(w, b.N))
	s.W += mathx.WeightSum(w, b.N)
	s.Renormalized += b.Renormalized
	s.Rounded += b.Rounded
	s.ZeroRounded = s.ZeroRounded || roundedZerosWarning(b.Set) != ""
	return nil
}

func weightedWord(w bool) string {
	if w {
		return " with weights"
	}
	return ""
}

// Merge adds the sums of another shard with the same options (its batches
// must come from other sources, or other rows of the same sources).
func (s *Sums) Merge(o *Sums) error {
	if !o.started {
		return nil
	}
	if !s.started {
		if a, b := configKey(s.Config), configKey(o.Config); a != b {
			return fmt.Errorf("evaluate: merging sums of different options: %s and %s", a, b)
		}
		*s = *cloneSums(o)
		return nil
	}
	if s.K != o.K || s.Binary != o.Binary || s.Input != o.Input || s.Weighted != o.Weighted {
		return fmt.Errorf("evaluate: merging sums of K = %d %s with K = %d %s", s.K, s.Input, o.K, o.Input)
	}
	if a, b := configKey(s.Config), configKey(o.Config); a != b {
		return fmt.Errorf("evaluate: merging sums of different options: %s and %s", a, b)
	}
	if (s.Sample == nil) != (o.Sample == nil) || (s.Sample != nil && (s.Sample.M != o.Sample.M || s.Sample.Seed != o.Sample.Seed || s.Sample.K != o.Sample.K)) {
		return fmt.Errorf("evaluate: merging sums with different samples")
	}
	rows, err := mergeRows(s.Rows, o.Rows)
	if err != nil {
		return fmt.Errorf("evaluate: merge: %w", err)
	}
	s.Rows = rows
	s.Scores.Merge(o.Scores)
	var errs []error
	if s.Top != nil {
		errs = append(errs, s.Top.Merge(o.Top))
		for k := range s.Class {
			errs = append(errs, s.Class[k].Merge(o.Class[k]))
		}
	}
	if s.Cells != nil {
		errs = append(errs, s.Cells.Merge(o.Cells))
	}
	if s.TopSketch != nil {
		s.TopSketch.Merge(o.TopSketch)
		for k := range s.ClassSketch {
			s.ClassSketch[k].Merge(o.ClassSketch[k])
		}
	}
	if s.Pooled != nil {
		s.Pooled.Merge(*o.Pooled)
	}
	for i := range s.KSTop {
		errs = append(errs, s.KSTop[i].Merge(o.KSTop[i]))
	}
	for i := range s.KSWith {
		errs = append(errs, s.KSWith[i].Merge(o.KSWith[i]))
	}
	for i := range s.KSClass {
		errs = append(errs, s.KSClass[i].Merge(o.KSClass[i]))
	}
	if s.Sample != nil {
		errs = append(errs, s.Sample.merge(o.Sample))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evaluate: merge: %w", err)
	}
	s.N += o.N
	s.Pos += o.Pos
	s.W += o.W
	s.Renormalized += o.Renormalized
	s.Rounded += o.Rounded
	s.ZeroRounded = s.ZeroRounded || o.ZeroRounded
	return nil
}

// configKey is the JSON form of a configuration, for comparisons.
func configKey(c *streamConfig) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// cloneSums returns a deep copy of s through its JSON form.
func cloneSums(s *Sums) *Sums {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	c := new(Sums)
	if err := c.UnmarshalJSON(b); err != nil {
		panic(err)
	}
	return c
}

// UnmarshalJSON reads the JSON form of Sums, checking its version.
func (s *Sums) UnmarshalJSON(b []byte) error {
	type plain Sums
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("evaluate.Sums: %w", err)
	}
	switch {
	case v.Version != streamVersion:
		return fmt.Errorf("evaluate.Sums: version %d, want %d", v.Version, streamVersion)
	case v.Config == nil:
		return fmt.Errorf("evaluate.Sums: no config (is it the state of a streamed evaluation?)")
	}
	*s = Sums(v)
	s.started = s.Scores != nil
	if err := s.check(); err != nil {
		return fmt.Errorf("evaluate.Sums: %w", err)
	}
	return nil
}

// KernelSums is the second pass of a streamed evaluation: the kernel sums
// of ece_kde at the sampled evaluation points, one kde.PointSums per
// notion, over every row added. Build it with Sums.KernelSums once the
// first pass is complete.
type KernelSums struct {
	Version int              `json:"version"`
	Notions []*kde.PointSums `json:"notions"`
	// Points names the row of each evaluation point, in the order of the
	// points of every notion.
	Points []PointID `json:"points"`
	K      int       `json:"k"` // columns of the rows
	// MMCE holds mmce's kernel sums at the same points (nil when mmce is
	// not asked for).
	MMCE *MMCESums `json:"mmce,omitempty"`
	// Witness holds ece_witness's residual kernel sums.
	Witness *kde.WitnessSums `json:"witness,omitempty"`
	// Sharpness holds sharpness's kernel sums (top_label, or binary for
	// one-column input, with the squared sums) when ece_kde does not
	// already compute that notion (then its PointSums keeps the squares).
	Sharpness *kde.PointSums `json:"sharpness,omitempty"`
	// TopEdges and ClassEdges hold the scores near the edges of
	// data-dependent bins (see metric.ScoreSketch), Cells the canonical
	// cells when their number depends on the data.
	TopEdges   *metric.EdgeValues   `json:"top_edges,omitempty"`
	ClassEdges []*metric.EdgeValues `json:"class_edges,omitempty"`
	Cells      *metric.CellSums     `json:"cells,omitempty"`
	// Rows counts the rows added, for the check that the pass is complete.
	Rows int64 `json:"rows"`
	// Block and Blocks say which block of the evaluation points these
	// sums hold (0 of 1: all; see Sums.KernelSumsBlock).
	Block  int `json:"block,omitempty"`
	Blocks int `json:"blocks,omitempty"`
	// index finds the evaluation point of a (source, row).
	index map[string]map[int64]int
}

// UnmarshalJSON reads the JSON form of KernelSums, checking its version
// and that every part is there.
func (ks *KernelSums) UnmarshalJSON(b []byte) error {
	type plain KernelSums
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("evaluate.KernelSums: %w", err)
	}
	if v.Version != streamVersion {
		return fmt.Errorf("evaluate.KernelSums: version %d, want %d", v.Version, streamVersion)
	}
	for _, ps := range v.Notions {
		if ps == nil || ps.M() != len(v.Points) {
			return fmt.Errorf("evaluate.KernelSums: notions inconsistent with the %d points", len(v.Points))
		}
	}
	if v.Sharpness != nil && v.Sharpness.M() != len(v.Points) {
		return fmt.Errorf("evaluate.KernelSums: sharpness sums inconsistent with the %d points", len(v.Points))
	}
	if v.MMCE != nil {
		if err := v.MMCE.check(len(v.Points)); err != nil {
			return fmt.Errorf("evaluate.KernelSums: mmce: %w", err)
		}
	}
	if v.Witness != nil && v.Witness.M() != len(v.Points) {
		return fmt.Errorf("evaluate.KernelSums: witness sums inconsistent with the %d points", len(v.Points))
	}
	if (v.TopEdges == nil && v.ClassEdges != nil) || (v.TopEdges != nil && (len(v.ClassEdges) != v.K || slices.Contains(v.ClassEdges, nil))) {
		return fmt.Errorf("evaluate.KernelSums: %d class edge sums for K = %d", len(v.ClassEdges), v.K)
	}
	if v.Blocks < 0 || v.Block < 0 || (v.Blocks > 0 && v.Block >= v.Blocks) || v.Rows < 0 {
		return fmt.Errorf("evaluate.KernelSums: block %d of %d, %d rows", v.Block, v.Blocks, v.Rows)
	}
	if m := v.MMCE; m != nil && (len(m.R) != len(v.Points) || len(m.E) != len(m.R) || len(m.T) != len(m.R) || (m.W != nil && len(m.W) != len(m.R))) {
		return fmt.Errorf("evaluate.KernelSums: mmce sums inconsistent with the %d points", len(v.Points))
	}
	*ks = KernelSums(v)
	return nil
}

// PointID names a row of a streamed set: its shard and its index there.
type PointID struct {
	Source string `json:"source"`
	Row    int64  `json:"row"`
}

// check says whether the sums read from JSON hold every part the
// configuration needs, with the sizes it needs.
func (s *Sums) check() error {
	c := s.Config
	if c.M < 1 || c.KSCells < 1 || c.KSCells > 1<<24 || c.Bins.Bins < 1 || c.Bins.Bins > 1<<20 || len(c.Metrics) == 0 || c.MaxCells < 0 {
		return errors.New("inconsistent configuration")
	}
	if !s.started {
		if s.N != 0 || s.Top != nil || s.Sample != nil || s.Cells != nil || s.KSClass != nil {
			return errors.New("sums without scores")
		}
		return nil
	}
	binned := c.has("ece_bin") || c.has("mce") || c.has("ece_bin_debiased")
	nTop, nWith := 0, 0
	for _, r := range c.KSR {
		if r <= s.K {
			nTop++
		}
		if r >= 2 && r <= s.K {
			nWith++
		}
	}
	switch {
	case s.K < 2:
		return fmt.Errorf("K = %d", s.K)
	case c.sketched() && (s.TopSketch == nil || len(s.ClassSketch) != s.K || slices.Contains(s.ClassSketch, nil)):
		return errors.New("missing score sketches")
	case binned && !c.sketched() && (s.Top == nil || len(s.Class) != s.K || slices.Contains(s.Class, nil)):
		return errors.New("missing bin sums")
	case c.dataCells() && s.Pooled == nil:
		return errors.New("missing moments")
	case c.cells() && !c.dataCells() && s.Cells == nil:
		return errors.New("missing cell sums")
	case c.has("ks") && (len(s.KSTop) != nTop || len(s.KSWith) != nWith || len(s.KSClass) != s.K ||
		slices.Contains(s.KSTop, nil) || slices.Contains(s.KSWith, nil) || slices.Contains(s.KSClass, nil)):
		return errors.New("missing KS sums")
	case s.kernelMetrics() && (s.Sample == nil || s.Sample.M < 1 || s.Sample.K != s.K):
		return errors.New("missing or inconsistent sample")
	}
	return s.checkState()
}

// KernelPass says whether the metrics need the second pass (KernelSums):
// ece_kde, mmce and sharpness do, and binned metrics with data-dependent
// bins (the scores near the edges).
func (s *Sums) KernelPass() bool {
	return s.kernelMetrics() || s.Config.sketched() || s.Config.dataCells()
}

// kernelMetrics says whether a metric needs the evaluation points.
func (s *Sums) kernelMetrics() bool {
	return s.Config.has("ece_kde") || s.Config.has("mmce") || s.Config.has("sharpness") || s.Config.has("ece_witness")
}

// total is the total weight of the rows (their number without weights).
func (s *Sums) total() float64 {
	if s.Weighted {
		return s.W
	}
	return float64(s.N)
}

// addScores adds the top-label scores of a batch to top and each class
// column to class[k] (fixed bins, sketches, or the values near their edges).
func addScores[T interface {
	Add(scores, outcomes, weights []float64) error
}](top T, class []T, p []float64, y []int, k int, w []float64) error {
	sc, oc := metric.TopR(p, y, k, 1)
	if err := top.Add(sc, oc, w); err != nil {
		return err
	}
	for cl, c := range class {
		sc, oc := metric.ClassColumn(p, y, k, cl)
		if err := c.Add(sc, oc, w); err != nil {
			return err
		}
	}
	return nil
}

// edgeLimit is the number of distinct scores each of the K + 1 EdgeValues
// of a stream may hold.
func edgeLimit(k int) int { return max(1<<16, metric.DefaultEdgeValues/(k+1)) }

// sharpnessNotion is the notion of sharpness: binary for one-column
// input, else top_label.
func (s *Sums) sharpnessNotion() kde.Notion {
	if s.Binary {
		return kde.Binary
	}
	return kde.TopLabel
}

// KernelSums returns empty second-pass sums for the sample drawn by the
// first pass (nil when no metric needs a second pass, see KernelPass).
func (s *Sums) KernelSums() (*KernelSums, error) { return s.KernelSumsBlock(0, 1) }

// KernelSumsBlock returns empty second-pass sums for block b of nb of the
// evaluation points: the points [b m / nb, (b+1) m / nb) of the sample, in
// its order. This is the block-pair plan of a cluster: each (block, shard)
// pair adds the shard's rows to its block's sums, the pairs of a block are
// merged (Merge), and ConcatKernelSums joins the blocks into what
// KernelSums would give, bit for bit; a worker holds one block's m / nb
// points. The sums that are not per point (the scores near data-dependent
// bin edges, canonical cells of the Doane and Sqrt rules) are in block 0
// only.
func (s *Sums) KernelSumsBlock(b, nb int) (*KernelSums, error) {
	if nb < 1 || b < 0 || b >= nb {
		return nil, fmt.Errorf("evaluate: block %d of %d", b, nb)
	}
	if !s.KernelPass() {
		return nil, nil
	}
	if !s.started || s.N == 0 {
		return nil, &DataError{Err: data.ErrEmpty}
	}
	ks := &KernelSums{Version: streamVersion, K: s.K, Block: b, Blocks: nb}
	if s.TopSketch != nil && b == 0 {
		top, err := s.TopSketch.Needed(s.Config.Bins, s.Weighted)
		if err != nil {
			return nil, fmt.Errorf("evaluate: top-label bins: %w", err)
		}
		ks.TopEdges = metric.NewEdgeValues(top, edgeLimit(s.K))
		for k, sk := range s.ClassSketch {
			keys, err := sk.Needed(s.Config.Bins, s.Weighted)
			if err != nil {
				return nil, fmt.Errorf("evaluate: class %d bins: %w", k, err)
			}
			ks.ClassEdges = append(ks.ClassEdges, metric.NewEdgeValues(keys, edgeLimit(s.K)))
		}
	}
	if s.Pooled != nil && b == 0 {
		// The pooled coordinates' rule: the rows of positive weight
		// (Sqrt), their K values each (Doane).
		bins, err := s.Config.Bins.MergedBins(*s.Pooled, float64(s.Pos), float64(s.Pos)*float64(s.K))
		if err != nil {
			return nil, err
		}
		if ks.Cells, err = metric.NewCellSums(s.K, bins); err != nil {
			return nil, err
		}
		ks.Cells.Limit = s.Config.cellLimit(s.K)
	}
	if s.Sample == nil {
		return ks, nil
	}
	if s.Config.All && s.N > MaxAllPoints {
		return nil, optionsError("every row as an evaluation point: %d rows, more than the %d the kernel sums can hold; give a number of evaluation points", s.N, MaxAllPoints)
	}
	probs, labels, weights, ids := s.Sample.points(s.Weighted)
	m := len(ids)
	j0, j1 := b*m/nb, (b+1)*m/nb
	if j0 == j1 {
		return nil, fmt.Errorf("evaluate: %d blocks of %d evaluation points: block %d is empty", nb, m, b)
	}
	probs, labels, ids = probs[j0*s.K:j1*s.K], labels[j0:j1], ids[j0:j1]
	if weights != nil {
		weights = weights[j0:j1]
	}
	notions, _, err := streamNotions(s.Config.Mode, s.K, s.Binary)
	if err != nil {
		return nil, err
	}
	ks.Points = ids
	if s.Config.has("mmce") {
		ks.MMCE = newMMCESums(probs, labels, s.K, weights, s.Config.MMCEWidth)
	}
	if !s.Config.has("ece_kde") {
		notions = nil
	}
	for _, n := range notions {
		ps, err := kde.NewPointSums(n, probs, labels, s.K, weights, s.Config.Grid)
		if err != nil {
			return nil, err
		}
		ks.Notions = append(ks.Notions, ps)
	}
	if c := s.Config; c.has("ece_witness") {
		scale := 0.0
		if slices.Contains(c.WitnessP, 2) {
			scale = 0.5 // kde.WitnessOptions.P2Scale's default
		}
		if ks.Witness, err = kde.NewWitnessSums(probs, labels, s.K, weights, c.WitnessGrid, scale); err != nil {
			return nil, err
		}
	}
	if s.Config.has("sharpness") {
		ps := ks.notion(s.sharpnessNotion())
		if ps == nil {
			if ps, err = kde.NewPointSums(s.sharpnessNotion(), probs, labels, s.K, weights, s.Config.Grid); err != nil {
				return nil, err
			}
			ks.Sharpness = ps
		}
		if err := ps.KeepSquares(); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

// notion returns ece_kde's sums of notion n (nil when not computed).
func (ks *KernelSums) notion(n kde.Notion) *kde.PointSums {
	for _, ps := range ks.Notions {
		if ps.Notion == n {
			return ps
		}
	}
	return nil
}

// all returns every PointSums of ks: ece_kde's and sharpness's own.
func (ks *KernelSums) all() []*kde.PointSums {
	if ks.Sharpness == nil {
		return ks.Notions
	}
	return append(slices.Clip(ks.Notions), ks.Sharpness)
}

// Add adds a batch's rows as kernel centres (workers: goroutines, 0 all;
// ctx may be nil).
func (ks *KernelSums) Add(ctx context.Context, b *Batch, workers int) error {
	if ks == nil || b == nil || b.Set == nil || b.N == 0 {
		return nil
	}
	if ks.index == nil {
		ks.index = map[string]map[int64]int{}
		for j, id := range ks.Points {
			if ks.index[id.Source] == nil {
				ks.index[id.Source] = map[int64]int{}
			}
			ks.index[id.Source][id.Row] = j
		}
	}
	if b.K != ks.K || b.Labels == nil {
		return &DataError{Source: b.Source, Row: b.Offset + 1, Err: fmt.Errorf("%d columns, where the first pass had %d (or no labels)", b.K, ks.K)}
	}
	self := make([]int, b.N)
	rows := ks.index[b.Source]
	for i := range self {
		self[i] = -1
		if j, ok := rows[b.Offset+int64(i)]; ok {
			self[i] = j
		}
	}
	if ks.MMCE != nil {
		ks.MMCE.Add(b.Probs, b.Labels, b.K, b.Weights)
	}
	if ks.TopEdges != nil {
		if err := addScores(ks.TopEdges, ks.ClassEdges, b.Probs, b.Labels, b.K, b.Weights); err != nil {
			return &DataError{Source: b.Source, Row: b.Offset + 1, Err: err}
		}
	}
	if ks.Cells != nil {
		if err := ks.Cells.Add(b.Probs, b.Labels, b.Weights); err != nil {
			return &DataError{Source: b.Source, Row: b.Offset + 1, Err: err}
		}
	}
	ks.Rows += int64(b.N)
	for _, ps := range ks.all() {
		if err := ps.Add(b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers, Context: ctx}); err != nil {
			return &DataError{Source: b.Source, Row: b.Offset + 1, Err: err}
		}
	}
	if ks.Witness != nil {
		if err := ks.Witness.Add(b.Probs, b.Labels, b.Weights, kde.AddOptions{Self: self, Workers: workers, Context: ctx}); err != nil {
			return &DataError{Source: b.Source, Row: b.Offset + 1, Err: err}
		}
	}
	return nil
}

// Merge adds another shard's kernel sums over the same sample (and the
// same block of it).
func (ks *KernelSums) Merge(o *KernelSums) error {
	if ks == nil || o == nil {
		return nil
	}
	if ks.Block != o.Block || ks.Blocks != o.Blocks {
		return fmt.Errorf("evaluate: merging kernel sums of block %d of %d with block %d of %d", ks.Block, ks.Blocks, o.Block, o.Blocks)
	}
	if (ks.MMCE == nil) != (o.MMCE == nil) {
		return fmt.Errorf("evaluate: merging kernel sums with and without mmce")
	}
	if ks.MMCE != nil {
		if err := ks.MMCE.Merge(o.MMCE); err != nil {
			return err
		}
	}
	if (ks.Witness == nil) != (o.Witness == nil) {
		return fmt.Errorf("evaluate: merging kernel sums with and without ece_witness")
	}
	if ks.Witness != nil {
		if err := ks.Witness.Merge(o.Witness); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	if (ks.TopEdges == nil) != (o.TopEdges == nil) || len(ks.ClassEdges) != len(o.ClassEdges) || (ks.Cells == nil) != (o.Cells == nil) {
		return fmt.Errorf("evaluate: merging second-pass sums of different set-ups")
	}
	if ks.TopEdges != nil {
		if err := ks.TopEdges.Merge(o.TopEdges); err != nil {
			return err
		}
		for k := range ks.ClassEdges {
			if err := ks.ClassEdges[k].Merge(o.ClassEdges[k]); err != nil {
				return err
			}
		}
	}
	if ks.Cells != nil {
		if err := ks.Cells.Merge(o.Cells); err != nil {
			return err
		}
	}
	ks.Rows += o.Rows
	a, b := ks.all(), o.all()
	if len(ks.Notions) != len(o.Notions) || len(a) != len(b) {
		return fmt.Errorf("evaluate: merging kernel sums of %d and %d notions", len(a), len(b))
	}
	for i := range a {
		if err := a[i].Merge(b[i]); err != nil {
			return fmt.Errorf("evaluate: %w", err)
		}
	}
	return nil
}

// ConcatKernelSums joins the second-pass sums of every block of the
// evaluation points (Sums.KernelSumsBlock, each merged over all shards),
// given in any order, into the sums of all points.
func ConcatKernelSums(blocks []*KernelSums) (*KernelSums, error) {
	if len(blocks) == 0 {
		return nil, errors.New("evaluate: no blocks of kernel sums")
	}
	bs := slices.Clone(blocks)
	slices.SortFunc(bs, func(a, b *KernelSums) int { return a.Block - b.Block })
	nb := max(1, bs[0].Blocks)
	if len(bs) != nb {
		return nil, fmt.Errorf("evaluate: %d of the %d blocks of kernel sums", len(bs), nb)
	}
	a := bs[0]
	for i, b := range bs {
		switch {
		case b.Block != i || max(1, b.Blocks) != nb:
			return nil, fmt.Errorf("evaluate: block %d of %d where block %d of %d was due", b.Block, b.Blocks, i, nb)
		case b.K != a.K || b.Rows != a.Rows || len(b.Notions) != len(a.Notions) || (b.Sharpness == nil) != (a.Sharpness == nil) || (b.MMCE == nil) != (a.MMCE == nil) || (b.Witness == nil) != (a.Witness == nil):
			return nil, fmt.Errorf("evaluate: blocks of kernel sums of different set-ups or rows (%d and %d)", a.Rows, b.Rows)
		case i > 0 && (b.TopEdges != nil || b.Cells != nil):
			return nil, fmt.Errorf("evaluate: block %d holds the sums of block 0", i)
		}
	}
	out := &KernelSums{Version: streamVersion, K: a.K, Rows: a.Rows, TopEdges: a.TopEdges, ClassEdges: a.ClassEdges, Cells: a.Cells}
	join := func(get func(*KernelSums) *kde.PointSums) (*kde.PointSums, error) {
		parts := make([]*kde.PointSums, nb)
		for i, b := range bs {
			parts[i] = get(b)
		}
		ps, err := kde.ConcatPointSums(parts)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		return ps, nil
	}
	for i := range a.Notions {
		ps, err := join(func(b *KernelSums) *kde.PointSums { return b.Notions[i] })
		if err != nil {
			return nil, err
		}
		out.Notions = append(out.Notions, ps)
	}
	if a.Sharpness != nil {
		ps, err := join(func(b *KernelSums) *kde.PointSums { return b.Sharpness })
		if err != nil {
			return nil, err
		}
		out.Sharpness = ps
	}
	if a.Witness != nil {
		parts := make([]*kde.WitnessSums, nb)
		for i, b := range bs {
			parts[i] = b.Witness
		}
		ws, err := kde.ConcatWitnessSums(parts)
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		out.Witness = ws
	}
	if a.MMCE != nil {
		out.MMCE = &MMCESums{Width: a.MMCE.Width, N: a.MMCE.N, Total: a.MMCE.Total}
		for _, b := range bs {
			ms := b.MMCE
			if ms.Width != a.MMCE.Width || ms.N != a.MMCE.N || ms.Total != a.MMCE.Total || (ms.W == nil) != (a.MMCE.W == nil) {
				return nil, errors.New("evaluate: blocks of mmce sums of different set-ups or rows")
			}
			out.MMCE.R, out.MMCE.E = append(out.MMCE.R, ms.R...), append(out.MMCE.E, ms.E...)
			out.MMCE.W, out.MMCE.T = append(out.MMCE.W, ms.W...), append(out.MMCE.T, ms.T...)
		}
	}
	for _, b := range bs {
		out.Points = append(out.Points, b.Points...)
	}
	return out, nil
}

// Finish returns the Evaluation of the sums of both passes (ks nil when no
// metric needs the second pass, see Sums.KernelPass; joined first when cut
// into blocks): what Evaluate gives for the exact metrics (binned, with
// data-dependent bins too, scores), KS bounds, and for ece_kde, sharpness,
// mmce and ece_witness the estimates from the sampled evaluation points
// with their intervals and standard errors (the Result's "interval" and
// "se"), at the bandwidth chosen on the grid (or the fixed one).
func Finish(s *Sums, ks *KernelSums) (*Evaluation, error) {
	if !s.started || s.N == 0 {
		return nil, &DataError{Err: data.ErrEmpty}
	}
	if s.Weighted && !(s.W > 0) {
		return nil, &DataError{Err: fmt.Errorf("%w: all %d weights are zero", data.ErrWeights, s.N)}
	}
	if s.Weighted && math.IsInf(s.W, 0) {
		return nil, &DataError{Err: fmt.Errorf("%w: the weights sum past the float64 range (1.8e308); a stream accumulates them as given: divide them by a common factor (every number is the same)", data.ErrWeights)}
	}
	c := s.Config
	if ks != nil {
		if ks.Blocks > 1 {
			return nil, fmt.Errorf("evaluate: kernel sums of block %d of %d: join the blocks first (ConcatKernelSums)", ks.Block, ks.Blocks)
		}
		if ks.Rows != s.N {
			return nil, fmt.Errorf("evaluate: the second pass saw %d rows, the first %d: the second pass is incomplete", ks.Rows, s.N)
		}
		for _, ps := range ks.all() {
			if ps.N != s.N {
				return nil, fmt.Errorf("evaluate: the kernel sums saw %d rows, the first pass %d: the second pass is incomplete", ps.N, s.N)
			}
		}
		if ks.Witness != nil && ks.Witness.N != s.N {
			return nil, fmt.Errorf("evaluate: the witness sums saw %d rows, the first pass %d: the second pass is incomplete", ks.Witness.N, s.N)
		}
		if ks.MMCE != nil && ks.MMCE.N != s.N {
			return nil, fmt.Errorf("evaluate: the mmce sums saw %d rows, the first pass %d: the second pass is incomplete", ks.MMCE.N, s.N)
		}
	}
	out := &Evaluation{N: int(s.N), K: s.K, Binary: s.Binary, Renormalized: s.Renormalized, Rounded: s.Rounded, Input: s.Input}
	if s.Weighted {
		out.WeightSum = Float(s.W)
	}
	if s.ZeroRounded {
		out.Warnings = append(out.Warnings, warn(RoundedZeros, "some rows were rounded to few decimals and hold exact zeros: a small probability written as 0.000000 is a zero coordinate to the Dirichlet kernel (see calib eval without --stream for the counts)"))
	}
	cfg := &config{bin: c.Bins, ps: c.P, boot: metric.BootstrapOptions{Seed: c.Seed}}
	cfg.Options.Bins = c.Bins
	var results []*Result
	for _, d := range metricTable {
		if !c.has(d.name) {
			continue
		}
		var rs []*Result
		var err error
		switch d.name {
		case "ece_kde":
			rs, err = finishKDE(s, ks, out)
		case "ece_bin", "mce", "ece_bin_debiased":
			rs, err = s.finishBinned(d.name, ks)
		case "ks":
			rs = s.finishKS()
		case "mmce":
			rs, err = finishMMCE(s, ks)
		case "sharpness":
			rs, err = finishSharpness(s, ks)
		case "ece_witness":
			rs, err = finishWitness(s, ks)
		default:
			rs = s.finishScore(d.name)
		}
		if err != nil {
			if c.Strict {
				var de *DataError
				if errors.As(err, &de) {
					return nil, &DataError{Source: de.Source, Row: de.Row, Err: fmt.Errorf("%s: %w", d.name, de.Err)}
				}
				return nil, fmt.Errorf("evaluate: %s: %w", d.name, err)
			}
			rs = []*Result{{Metric: d.name, Error: oneLineError(err)}}
		}
		for _, e := range rs {
			cfg.define(e, &data.Set{Weights: weightsIf(s.Weighted)})
		}
		results = append(results, rs...)
	}
	sortByGroup(results)
	out.Results = results
	return out, nil
}

func weightsIf(w bool) []float64 {
	if w {
		return []float64{}
	}
	return nil
}

// finishKDE reports ece_kde for each notion of ks.
func finishKDE(s *Sums, ks *KernelSums, out *Evaluation) ([]*Result, error) {
	if ks == nil {
		return nil, errors.New("ece_kde: the second pass (KernelSums) is missing")
	}
	c := s.Config
	_, note, _ := streamNotions(c.Mode, s.K, s.Binary)
	out.Modes = note
	var rs []*Result
	for _, ps := range ks.Notions {
		g, method, warnings, err := c.gridBandwidth(ps)
		if err != nil {
			return nil, err
		}
		res, err := ps.Estimate(g, c.P, c.ClassMean, c.Level)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ps.Notion, err)
		}
		for i, v := range res.Values {
			e := s.sampled(&Result{Metric: "ece_kde", Notion: ps.Notion.String(), P: ptr(v.P), Bandwidth: ptr(res.Bandwidth),
				Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: method, Excluded: ptr(res.Excluded), Warnings: warnings,
				group: kdeGroup(ps.Notion)}, res.M, v.SE, Float(v.Lo), Float(v.Hi))
			if ps.Notion == kde.Marginal {
				e.Aggregate = "sum"
				if c.ClassMean {
					e.Aggregate = "mean"
				}
				for _, x := range res.PerClass[i] {
					e.PerClass = append(e.PerClass, Float(x))
				}
			}
			rs = append(rs, e)
		}
	}
	return rs, nil
}

// gridBandwidth returns the grid index of ps's bandwidth: the fixed one,
// or the LOO choice on the grid (with its warnings).
func (c *streamConfig) gridBandwidth(ps *kde.PointSums) (int, string, Warnings, error) {
	if c.Bandwidth != 0 {
		return 0, "fixed", nil, nil
	}
	sel, err := ps.Select()
	if err != nil {
		return 0, "", nil, fmt.Errorf("%s bandwidth: %w", ps.Notion, err)
	}
	var warnings Warnings
	for _, w := range sel.Warnings {
		warnings = append(warnings, warn(EstimatorWarning, w))
	}
	return sel.Index, "loo-grid", warnings, nil
}

// finishWitness reports ece_witness from the residual kernel sums at the
// evaluation points (kde.WitnessSums.Estimate), as eceWitness does from
// all rows.
func finishWitness(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil || ks.Witness == nil {
		return nil, errors.New("ece_witness: the second pass (KernelSums) is missing")
	}
	c := s.Config
	vals, err := ks.Witness.Estimate(c.WitnessP, 0, c.Seed, c.Level)
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, v := range vals {
		e := s.sampled(&Result{Metric: "ece_witness", Notion: "canonical", P: ptr(v.P), Bandwidth: ptr(v.Bandwidth),
			Value: jf(v.Value), Root: jf(v.Root), BandwidthMethod: "witness-crossfit", Excluded: ptr(v.Excluded),
			group: groupCanonical}, v.M, v.SE, Float(v.Lo), Float(v.Hi))
		for _, w := range v.Warnings {
			e.Warnings = append(e.Warnings, warn(EstimatorWarning, w))
		}
		if v.P == 2 {
			e.BandwidthMethod, e.CVBandwidth = "cv-half", ptr(v.CVBandwidth)
		}
		out = append(out, e)
	}
	return out, nil
}

// finishSharpness reports sharpness from the squared kernel sums at the
// evaluation points, at the bandwidth ece_kde's notion gets.
func finishSharpness(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil {
		return nil, errors.New("sharpness: the second pass (KernelSums) is missing")
	}
	n := s.sharpnessNotion()
	ps := ks.notion(n)
	if ps == nil || ps.Squares == nil {
		ps = ks.Sharpness
	}
	if ps == nil {
		return nil, errors.New("sharpness: the kernel sums lack the squared sums")
	}
	c := s.Config
	g, method, _, err := c.gridBandwidth(ps)
	if err != nil {
		return nil, err
	}
	ybar := s.Scores.Accuracy()
	if n == kde.Binary {
		ybar = s.Scores.LabelMean(1)
	}
	res, err := ps.Sharpness(g, ybar, c.Level)
	if err != nil {
		return nil, err
	}
	e := s.sampled(&Result{Metric: "sharpness", Notion: n.String(), Bandwidth: ptr(res.Bandwidth), BandwidthMethod: method,
		Value: jf(res.Value), Variance: jf(res.Variance), Excluded: ptr(res.Excluded), group: kdeGroup(n)},
		res.M, res.SE, Float(res.Lo), Float(res.Hi))
	return []*Result{e}, nil
}

// sampled sets the keys of an estimate from m evaluation points: the
// points, its SE and interval [lo, hi] at the stream's level, of kind
// "sampling", or "exact" with every row a point.
func (s *Sums) sampled(e *Result, m int, se float64, lo, hi Float) *Result {
	e.EvalPoints, e.SE, e.Interval, e.IntervalLevel = ptr(m), jf(se), []Float{lo, hi}, ptr(s.Config.Level)
	e.IntervalKind = "sampling"
	if int64(m) >= s.N {
		e.IntervalKind = "exact"
	}
	return e
}

// finishMMCE reports mmce from its sums at the evaluation points: the
// value is sqrt(max(0, squared)) and the interval the roots of the
// squared's interval (clamped at 0).
func finishMMCE(s *Sums, ks *KernelSums) ([]*Result, error) {
	if ks == nil || ks.MMCE == nil {
		return nil, errors.New("mmce: the second pass (KernelSums) is missing")
	}
	c := s.Config
	sq, se, lo, hi := ks.MMCE.Estimate(c.Level)
	root := func(v float64) Float { return Float(math.Sqrt(math.Max(0, v))) }
	e := s.sampled(&Result{Metric: "mmce", Notion: "top_label", Value: ptr(root(sq)), Squared: jf(sq), Width: ptr(c.MMCEWidth),
		group: groupTopLabel}, len(ks.MMCE.R), se, root(lo), root(hi))
	return []*Result{e}, nil
}

// bins returns the top-label and class-wise bins: from the sums of fixed
// equal-width bins, or from the sketches and the scores near their edges
// with the bounds of edges taken at bucket ends (zero when exact).
func (s *Sums) bins(ks *KernelSums) (top *metric.Bins, tb metric.SketchBound, cb []*metric.Bins, cbb []metric.SketchBound, err error) {
	cb = make([]*metric.Bins, s.K)
	cbb = make([]metric.SketchBound, s.K)
	if s.TopSketch == nil {
		for k := range cb {
			cb[k] = s.Class[k].Bins()
		}
		return s.Top.Bins(), tb, cb, cbb, nil
	}
	if ks == nil || ks.TopEdges == nil || len(ks.ClassEdges) != s.K {
		return nil, tb, nil, nil, errors.New("the second pass (the scores near the bin edges) is missing")
	}
	if top, tb, err = s.TopSketch.Bins(s.Config.Bins, s.Weighted, ks.TopEdges); err != nil {
		return nil, tb, nil, nil, err
	}
	for k, sk := range s.ClassSketch {
		if cb[k], cbb[k], err = sk.Bins(s.Config.Bins, s.Weighted, ks.ClassEdges[k]); err != nil {
			return nil, tb, nil, nil, fmt.Errorf("class %d: %w", k, err)
		}
	}
	return top, tb, cb, cbb, nil
}

// edgeBound sets the warning and, for ece_bin with p = 1, the bound
// interval of a binned entry whose edges were taken at sketch bucket ends:
// moving rows of total mass M and sum w |s - o| = A (shares of W) between
// bins moves ECE_1 by at most 2 A (metric.SketchBound).
func edgeBound(m string, e *Result, p float64, mass, abs float64) {
	if mass == 0 {
		return
	}
	e.Warnings = append(e.Warnings, warn(ApproximateEdges, fmt.Sprintf("too many distinct scores near the data-dependent bin edges for the second pass: edges taken at the ends of sketch buckets, which holds up to %.3g%% of the weight in other bins than exact edges would", 100*mass)))
	if m == "ece_bin" && p == 1 {
		v := float64(*e.Value)
		e.Interval, e.IntervalKind = []Float{Float(math.Max(0, v-2*abs)), Float(v + 2*abs)}, "bound"
	}
}

// finishBinned reports a binned metric as evaluate.binned does, from the
// sums of the bins (fixed equal-width, or data-dependent from the sketches).
func (s *Sums) finishBinned(m string, ks *KernelSums) ([]*Result, error) {
	c := s.Config
	ps := c.P
	if m == "ece_bin_debiased" {
		ps = []float64{2}
	}
	if m == "mce" {
		ps = []float64{math.NaN()}
	}
	val := binnedValue(m)
	binning := c.Bins.Binning.String()
	top, tb, cb, cbb, err := s.bins(ks)
	if err != nil {
		return nil, err
	}
	cells := s.Cells
	if cells == nil && ks != nil {
		cells = ks.Cells
	}
	if cells == nil && m != "ece_bin_debiased" {
		return nil, errors.New("the canonical cell sums are missing")
	}
	var out []*Result
	for _, p := range ps {
		e := &Result{Metric: m, Notion: "top_label", Binning: binning, Bins: ptr(len(top.Count)), Value: jf(val(top, p)), group: groupTopLabel}
		finishBinnedEntry(m, e, p)
		edgeBound(m, e, p, tb.Mass, tb.Abs)
		out = append(out, e)
		pc := metric.ClassWise(cb, func(b *metric.Bins) float64 { return val(b, p) })
		e = classWiseEntry(m, binning, p, pc, cb, c.Bins.Rule)
		mass, abs := 0.0, 0.0
		for _, b := range cbb {
			mass, abs = max(mass, b.Mass), abs+b.Abs/float64(s.K)
		}
		edgeBound(m, e, p, mass, abs)
		out = append(out, e)
		if m == "ece_bin_debiased" {
			continue
		}
		if cells.Overflow {
			err := fmt.Errorf("more than %d occupied canonical cells (%d bins per coordinate, K = %d): their sums would pass the stream's memory bound (MaxCells; calib: --max-cells, each cell about %d bytes); use fewer bins or a larger bound", cells.Limit, cells.B, s.K, cellBytes(s.K))
			if c.Strict {
				return nil, &DataError{Err: err}
			}
			out = append(out, &Result{Metric: m, Notion: "canonical", Binning: "equal_width", Bins: ptr(cells.B), group: groupCanonical, Error: err.Error()})
			continue
		}
		pp := cellP(m, p)
		cn := cells.Estimate(pp)
		v := cn.Value
		if m == "mce" {
			v = cn.MCE
		}
		e = &Result{Metric: m, Notion: "canonical", Binning: "equal_width", Bins: ptr(cn.B), Value: jf(v), group: groupCanonical}
		e.Warnings = canonicalWarnings(m, int(s.N), s.K, cn)
		finishBinnedEntry(m, e, p)
		out = append(out, e)
	}
	return out, nil
}

// finishKS reports KS from the cell sums: the value is the midpoint of the
// bounds lo <= KS <= hi, which the Result's interval holds ("bound").
func (s *Sums) finishKS() []*Result {
	c := s.Config
	var out []*Result
	entry := func(notion string, r int, ks *metric.KSSums) *Result {
		lo, hi := ks.Interval()
		e := &Result{Metric: "ks", Notion: notion, Value: jf((lo + hi) / 2), Interval: []Float{Float(lo), Float(hi)}, IntervalKind: "bound", group: groupTopLabel}
		if r > 0 {
			e.R = ptr(r)
		}
		return e
	}
	i := 0
	for _, r := range c.KSR {
		if r <= s.K {
			out = append(out, entry("top_r", r, s.KSTop[i]))
			i++
		}
	}
	i = 0
	for _, r := range c.KSR {
		if r >= 2 && r <= s.K {
			out = append(out, entry("within_top_r", r, s.KSWith[i]))
			i++
		}
	}
	e := &Result{Metric: "ks", Notion: "class_wise", IntervalKind: "bound", group: groupClassWise}
	sum, slo, shi := 0.0, 0.0, 0.0
	for _, ks := range s.KSClass {
		lo, hi := ks.Interval()
		e.PerClass = append(e.PerClass, Float((lo+hi)/2))
		sum += (lo + hi) / 2
		slo += lo
		shi += hi
	}
	k := float64(s.K)
	e.Value, e.Sum, e.Interval = jf(sum/k), jf(sum), []Float{Float(slo / k), Float(shi / k)}
	return append(out, e)
}

// finishScore reports brier, nll, accuracy or confidence.
func (s *Sums) finishScore(m string) []*Result {
	v := map[string]func() float64{"brier": s.Scores.BrierScore, "nll": s.Scores.MeanNLL, "accuracy": s.Scores.Accuracy, "confidence": s.Scores.Confidence}[m]()
	return []*Result{{Metric: m, Value: jf(v), group: groupScores}}
}

// Source is a streamed set that can be read more than once (the kernel
// estimators read it twice): Open starts a new pass.
type Source interface {
	Open() (Batches, error)
}

// Batches yields the batches of one pass; Next returns io.EOF after the
// last one.
type Batches interface {
	Next() (*Batch, error)
	Close() error
}

// Stream evaluates the streamed set src in two passes (one without
// ece_kde): the first adds every batch to the Sums (and draws the
// evaluation points), the second adds every batch to the KernelSums. The
// batches are added in the order the source gives them, so a source that
// gives them in a fixed order gives bit-identical results for any
// o.Workers. o.Progress, if set, is told of each pass ("pass 1 of 2:
// sums") with a step per batch.
func Stream(ctx context.Context, src Source, o StreamOptions) (*Evaluation, error) {
	start := time.Now()
	s, err := NewSums(o)
	if err != nil {
		return nil, err
	}
	passes := 1
	if s.KernelPass() {
		passes = 2
	}
	var size int64 // bytes in all, when the source knows
	if sz, ok := src.(interface{ Size() int64 }); ok {
		size = sz.Size()
	}
	pass := func(i int, name string, add func(b *Batch) error) error {
		progress.Phasef(o.Progress, "pass %d of %d: %s", i, passes, name)
		bs, err := src.Open()
		if err != nil {
			return err
		}
		defer bs.Close()
		read, _ := bs.(interface{ Read() int64 })
		step, done := progress.Start(o.Progress, "reading")
		defer done()
		t0, rows := time.Now(), int64(0)
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := bs.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := add(b); err != nil {
				return err
			}
			rows += int64(b.N)
			if o.Progress != nil {
				progress.Phasef(o.Progress, "pass %d of %d: %s, %d rows, %.0f rows/s", i, passes, name, rows, float64(rows)/time.Since(t0).Seconds())
				if step != nil && read != nil && size > 0 {
					step(read.Read(), size)
				}
			}
		}
	}
	if err := pass(1, "sums", s.Add); err != nil {
		return nil, err
	}
	if s.N == 0 {
		if sk, ok := src.(interface{ Skipped() []string }); ok && len(sk.Skipped()) > 0 {
			return nil, &DataError{Err: fmt.Errorf("%w: every shard is without rows (%s)", data.ErrEmpty, strings.Join(sk.Skipped(), ", "))}
		}
		return nil, &DataError{Err: data.ErrEmpty}
	}
	var ks *KernelSums
	if passes == 2 {
		if ks, err = s.KernelSums(); err != nil {
			return nil, err
		}
		if err := pass(2, "kernel sums", func(b *Batch) error { return ks.Add(ctx, b, o.Workers) }); err != nil {
			return nil, err
		}
	}
	ev, err := Finish(s, ks)
	if err != nil {
		return nil, err
	}
	if sk, ok := src.(interface{ Skipped() []string }); ok && len(sk.Skipped()) > 0 {
		ev.Warnings = append(ev.Warnings, skippedWarning(sk.Skipped()))
	}
	ev.Seconds = time.Since(start).Seconds()
	return ev, nil
}

// SetSource returns a Source that reads the in-memory set s in batches of
// rows rows (<= 0: 65,536) named s.File: a streamed evaluation of a set
// that fits in memory, or one shard of several.
func SetSource(s *data.Set, rows int) Source {
	if rows <= 0 {
		rows = 1 << 16
	}
	return &setSource{s: s, rows: rows}
}

type setSource struct {
	s    *data.Set
	rows int
}

func (src *setSource) Open() (Batches, error) { return &setBatches{src: src}, nil }

type setBatches struct {
	src  *setSource
	next int
}

func (b *setBatches) Close() error { return nil }

func (b *setBatches) Next() (*Batch, error) {
	s := b.src.s
	if b.next >= s.N {
		return nil, io.EOF
	}
	i0, i1 := b.next, min(s.N, b.next+b.src.rows)
	b.next = i1
	return &Batch{Set: RowsOf(s, i0, i1), Source: s.File, Offset: int64(i0)}, nil
}

// RowsOf returns rows i0..i1-1 of s as a set sharing s's memory (the
// counts Renormalized and Rounded are not split: they are 0).
func RowsOf(s *data.Set, i0, i1 int) *data.Set {
	r := &data.Set{N: i1 - i0, K: s.K, Probs: s.Probs[i0*s.K : i1*s.K], Binary: s.Binary, File: s.File}
	if s.Labels != nil {
		r.Labels = s.Labels[i0:i1]
	}
	if s.Weights != nil {
		r.Weights = s.Weights[i0:i1]
	}
	if s.Logits != nil {
		c := len(s.Logits) / s.N
		r.Logits = s.Logits[i0*c : i1*c]
	}
	return r
}
