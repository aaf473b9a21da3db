package evaluate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/state"
	"github.com/calib-dev/calib/metric"
)

// Sums is the first pass of a streamed evaluation: the exact mergeable sums
// of the scores, fixed bins and KS, the score sketches of data-dependent
// bins, and the sample of the kernel estimators' evaluation points. The
// zero value is not usable: see NewSums.
type Sums struct {
	st      sumsState
	started bool
}

// sumsState is the state of Sums, and its JSON form.
type sumsState struct {
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
	// Each part's state (sumsPart), declared in its metric's file; the
	// JSON form is flat, in this order.
	binnedState
	ksState
	sampleState
	smeceState
	variationalState
	// Rows are the runs of rows added, by source: the same rows cannot
	// be added twice, and they hold exactly N rows.
	Rows []rowRange `json:"rows"`
}

// streamVersion is the version of the JSON forms of Sums and KernelSums.
// Version 1 (calib before the streamed witness and weights) is not read:
// the promise of the states' envelope (package internal/state; docs/library.md,
// "State files") starts at version 2.
const streamVersion = 2

// The kinds of the streamed states' JSON forms.
var (
	sumsKind       = state.Kind{Name: "evaluate.Sums", Version: streamVersion}
	kernelSumsKind = state.Kind{Name: "evaluate.KernelSums", Version: streamVersion}
)

// NewSums returns empty first-pass sums for the options (checked here,
// before any data is read).
func NewSums(o StreamOptions) (*Sums, error) {
	c, err := o.resolve()
	if err != nil {
		return nil, err
	}
	return &Sums{st: sumsState{Version: streamVersion, Config: c}}, nil
}

// sumsPart is a metric's part of the first pass (metricDef.sums): its
// state is a struct declared beside it and embedded in sumsState (so the
// JSON form names its fields), and these functions, written in the metric's file, are the only code that sets it
// up, adds to it, merges it and checks it. Metrics that share sums share
// one part (the binned metrics' bins, the kernel metrics' sample). Every
// function may be nil.
type sumsPart struct {
	// what names the part's sums in messages ("smece's").
	what string
	// start sets up the state for the first batch (the sums' K, Binary,
	// Input and Weighted are set); it may refuse the batch.
	start func(st *sumsState, b *data.Batch) error
	// add adds a batch's rows.
	add func(st *sumsState, b *data.Batch) error
	// mergeable refuses another shard's state that cannot be merged,
	// before anything is merged (a state without the part's sums is
	// refused by Merge itself, from holds).
	mergeable func(st, o *sumsState) error
	// merge adds another shard's state (same configuration and K).
	merge func(st, o *sumsState) error
	// check says whether a decoded state holds what the configuration
	// needs (a state without rows is not checked).
	check func(st *sumsState) error
	// secondPass says whether the part needs the second pass
	// (KernelSums).
	secondPass func(c *streamConfig) bool
	// holds says whether a state holds any of the part's sums: a decoded
	// state may not hold the sums of a part its metrics do not use, and
	// two states merge only if both hold the sums of every part they use.
	holds func(st *sumsState) bool
	// drawn says that merging the part into an empty one may not give
	// the same state (a sample's draw), so that Clone copies sums that
	// use it through their JSON form.
	drawn bool
}

// partsOf returns the parts (get: a metric's first- or second-pass
// parts) of the table's metrics that keep accepts (nil: every metric),
// each once, in the table's order.
func partsOf[P comparable](keep func(d *metricDef) bool, get func(d *metricDef) []P) []P {
	var ps []P
	for _, d := range metricTable {
		if keep != nil && !keep(d) {
			continue
		}
		for _, p := range get(d) {
			if !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// firstPass and secondPass are a metric's parts of each pass.
func firstPass(d *metricDef) []*sumsPart    { return d.sums }
func secondPass(d *metricDef) []*kernelPart { return d.kernel }

// allParts returns every first-pass part of the table, each once.
func allParts() []*sumsPart { return partsOf(nil, firstPass) }

// parts returns the first-pass parts of the configuration's metrics, each
// once, in the table's order.
func (c *streamConfig) parts() []*sumsPart { return partsOf(c.asks, firstPass) }

// asks reports whether the configuration asks for d's metric.
func (c *streamConfig) asks(d *metricDef) bool { return c.has(d.name) }

// start sets up the sums for the first batch's K and kind.
func (s *Sums) start(b *data.Batch) error {
	return s.startAs(b, b.Set.Kind(), b.Weights != nil)
}

// startAs sets up the sums for rows of b's K and binary kind, of the input
// kind input and weighted as said (b holds no rows when it only carries
// the K: Clone's empty copy).
func (s *Sums) startAs(b *data.Batch, input string, weighted bool) error {
	empty := s.st
	s.st.K, s.st.Binary, s.st.Input, s.st.Weighted = b.K, b.Binary, input, weighted
	s.st.Scores = metric.NewScoreSums()
	for _, p := range s.st.Config.parts() {
		if p.start == nil {
			continue
		}
		if err := p.start(&s.st, b); err != nil {
			s.st = empty // no part half set up
			return err
		}
	}
	s.started = true
	return nil
}

// Add adds a batch: its rows to every sum, and to the sample's draw.
func (s *Sums) Add(b *data.Batch) error {
	if b == nil || b.Set == nil || b.N == 0 {
		return nil
	}
	if b.Labels == nil {
		return b.RowsError(data.ErrNoLabels)
	}
	if !s.started {
		if err := s.start(b); err != nil {
			return err
		}
	}
	at, err := rowsOverlap(s.st.Rows, b.Source, b.Offset, b.Offset+int64(b.N))
	if err != nil {
		return b.RowsError(err)
	}
	if b.K != s.st.K || b.Binary != s.st.Binary || b.Set.Kind() != s.st.Input || (b.Weights != nil) != s.st.Weighted {
		return b.RowsError(fmt.Errorf("%d columns of %s%s, where the stream began with %d of %s%s (every shard of a stream must have the same columns, kind and weights)", b.K, b.Set.Kind(), weightedWord(b.Weights != nil), s.st.K, s.st.Input, weightedWord(s.st.Weighted)))
	}
	logits := b.Logits
	if logits != nil && b.Binary { // one logit z is (0, z)
		z := make([]float64, 2*b.N)
		for i, v := range logits {
			z[2*i+1] = v
		}
		logits = z
	}
	if err := s.st.Scores.Add(b.Probs, logits, b.Labels, b.K, b.Weights); err != nil {
		return err
	}
	for _, p := range s.st.Config.parts() {
		if p.add == nil {
			continue
		}
		if err := p.add(&s.st, b); err != nil {
			return err
		}
	}
	s.st.Rows = addRows(s.st.Rows, at, b.Source, b.Offset, b.Offset+int64(b.N))
	s.st.N += int64(b.N)
	s.st.Pos += int64(mathx.PositiveRows(b.Weights, b.N))
	s.st.W += mathx.WeightSum(b.Weights, b.N)
	s.st.Renormalized += b.Renormalized
	s.st.Rounded += b.Rounded
	s.st.ZeroRounded = s.st.ZeroRounded || roundedZerosWarning(b.Set) != ""
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
		if a, b := configKey(s.st.Config), configKey(o.st.Config); a != b {
			return fmt.Errorf("evaluate: merging sums of different options: %s", configDiff(a, b))
		}
		*s = *o.Clone()
		return nil
	}
	if s.st.K != o.st.K || s.st.Binary != o.st.Binary || s.st.Input != o.st.Input || s.st.Weighted != o.st.Weighted {
		return fmt.Errorf("evaluate: merging sums of K = %d %s with K = %d %s", s.st.K, s.st.Input, o.st.K, o.st.Input)
	}
	if a, b := configKey(s.st.Config), configKey(o.st.Config); a != b {
		return fmt.Errorf("evaluate: merging sums of different options: %s", configDiff(a, b))
	}
	parts := s.st.Config.parts()
	for _, p := range parts {
		if p.holds != nil && !p.holds(&o.st) {
			return fmt.Errorf("evaluate: merge: sums with and without %s", p.what)
		}
		if p.mergeable != nil {
			if err := p.mergeable(&s.st, &o.st); err != nil {
				return fmt.Errorf("evaluate: merge: %w", err)
			}
		}
	}
	rows, err := mergeRows(s.st.Rows, o.st.Rows)
	if err != nil {
		return fmt.Errorf("evaluate: merge: %w", err)
	}
	s.st.Rows = rows
	errs := []error{s.st.Scores.Merge(o.st.Scores)}
	for _, p := range parts {
		if p.merge != nil {
			errs = append(errs, p.merge(&s.st, &o.st))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evaluate: merge: %w", err)
	}
	s.st.N += o.st.N
	s.st.Pos += o.st.Pos
	s.st.W += o.st.W
	s.st.Renormalized += o.st.Renormalized
	s.st.Rounded += o.st.Rounded
	s.st.ZeroRounded = s.st.ZeroRounded || o.st.ZeroRounded
	return nil
}

// configKey is the JSON form of a configuration, for comparisons.
func configKey(c *streamConfig) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// configDiff names the options in which the configurations a and b
// (configKey's JSON) differ, with both values: "metrics [\"brier\"] and
// [\"ks\"]".
func configDiff(a, b string) string {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal([]byte(a), &ma) != nil || json.Unmarshal([]byte(b), &mb) != nil {
		return a + " and " + b
	}
	short := func(v json.RawMessage) string {
		if len(v) == 0 {
			return "none"
		}
		if s := string(v); len(s) <= 60 {
			return s
		}
		return string(v[:57]) + "..."
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if string(ma[k]) != string(mb[k]) {
			diffs = append(diffs, fmt.Sprintf("%s %s and %s", k, short(ma[k]), short(mb[k])))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mb)) {
		if _, ok := ma[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s none and %s", k, short(mb[k])))
		}
	}
	return strings.Join(diffs, "; ")
}

// Clone returns a deep copy of s: the same state (its JSON form equal,
// byte for byte), sharing no memory with s, so that adding to one leaves
// the other as it was. It costs about as much as one Merge (empty sums of
// the same set-up, then s merged in), where the JSON form of the state
// costs 10 to 50 times more; a state whose sample or samples do not merge
// bit for bit into empty ones (the kernel metrics', ece_variational's) is
// copied through its JSON form.
func (s *Sums) Clone() *Sums {
	if !s.started || slices.ContainsFunc(s.st.Config.parts(), func(p *sumsPart) bool { return p.drawn }) {
		return cloneSums(s)
	}
	cfg := *s.st.Config
	c := &Sums{st: sumsState{Version: s.st.Version, Config: &cfg}}
	b := &data.Batch{Set: &data.Set{K: s.st.K, Binary: s.st.Binary}}
	if err := c.startAs(b, s.st.Input, s.st.Weighted); err != nil {
		return cloneSums(s)
	}
	if err := c.Merge(s); err != nil {
		return cloneSums(s)
	}
	return c
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

// MarshalJSON writes the JSON form: {"kind": "evaluate.Sums", "version":
// 2, ...} and the exported fields, each sum in its own envelope.
func (s *Sums) MarshalJSON() ([]byte, error) {
	return sumsKind.Encode(&s.st)
}

// UnmarshalJSON reads the JSON form of Sums, checking its kind, version
// and that it holds every part its configuration needs.
func (s *Sums) UnmarshalJSON(b []byte) error {
	var v sumsState
	if _, err := sumsKind.Decode(b, &v); err != nil {
		return err
	}
	if v.Config == nil {
		return sumsKind.Errorf("no config (is it the state of a streamed evaluation?)")
	}
	// The mode in today's spelling ("marginal" is class_wise, package
	// notion), so that a state written before and one written now with the
	// same options merge.
	var mode NotionSet
	if err := mode.UnmarshalText([]byte(v.Config.Mode)); err != nil {
		return sumsKind.Errorf("config: %w", err)
	}
	v.Config.Mode = modeText(mode)
	s.st = v
	s.started = s.st.Scores != nil
	if err := s.check(); err != nil {
		return sumsKind.Errorf("%w", err)
	}
	return nil
}

// check says whether the sums read from JSON hold every part the
// configuration needs, with the sizes it needs.
func (s *Sums) check() error {
	c := s.st.Config
	if c.M < 1 || !c.ksConfig.valid() || c.Bins.Bins < 1 || c.Bins.Bins > 1<<20 || len(c.Metrics) == 0 || c.MaxCells < 0 {
		return errors.New("inconsistent configuration")
	}
	if !s.started {
		z := s.st
		z.Version, z.Config, z.Rows = 0, nil, nil
		if len(s.st.Rows) != 0 || !reflect.DeepEqual(z, sumsState{}) {
			return errors.New("sums without scores")
		}
		return nil
	}
	if s.st.K < 2 {
		return fmt.Errorf("K = %d", s.st.K)
	}
	used := c.parts()
	for _, p := range used {
		if p.check != nil {
			if err := p.check(&s.st); err != nil {
				return err
			}
		}
	}
	for _, p := range allParts() {
		if !slices.Contains(used, p) && p.holds != nil && p.holds(&s.st) {
			return errors.New("sums of a metric the configuration does not have")
		}
	}
	return s.checkState()
}

// KernelPass says whether the metrics need the second pass (KernelSums):
// the kernel metrics do (ece_kde, ece_witness, mmce, sharpness: at the
// evaluation points), ece_variational (its fitted maps' gains), and the
// binned metrics with data-dependent bins (the scores near the edges).
func (s *Sums) KernelPass() bool {
	for _, p := range s.st.Config.parts() {
		if p.secondPass != nil && p.secondPass(s.st.Config) {
			return true
		}
	}
	return false
}

// total is the total weight of the rows (their number without weights).
func (s *Sums) total() float64 {
	if s.st.Weighted {
		return s.st.W
	}
	return float64(s.st.N)
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

// N returns the number of rows added (merged shards' included).
func (s *Sums) N() int64 { return s.st.N }

// K returns the number of columns of the rows (0 before the first batch).
func (s *Sums) K() int { return s.st.K }

// Rows returns the runs of rows added, by source (merged shards'
// included), sorted by source and first row.
func (s *Sums) Rows() []rowRange { return slices.Clone(s.st.Rows) }

// Metrics returns the metrics the sums are for.
func (s *Sums) Metrics() MetricSet { return slices.Clone(MetricSet(s.st.Config.Metrics)) }
