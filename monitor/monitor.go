package monitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// Defaults of Options.
const (
	DefaultWindow     = time.Hour
	DefaultRetain     = 24 * time.Hour
	DefaultMaxModels  = 10
	DefaultMaxSlices  = 10
	DefaultMaxPending = 1_000_000
	DefaultDedup      = 100_000
	// DefaultMaxClasses bounds the classes K of a model: the state of a
	// window and slice grows as K (about 25 KB per class: the KS sums of
	// each class column), and so does the cost of its report.
	DefaultMaxClasses = 1000
	// DefaultMaxCells bounds the canonical cells of ece_bin per window
	// and slice (each 2K + 2 numbers): past it the canonical entries are
	// errors saying so (evaluate.StreamOptions.MaxCells).
	DefaultMaxCells = 1024
	// DefaultSlice is the slice of rows observed without one.
	DefaultSlice = "default"
)

// Metrics are the metrics a monitor computes when Options.Eval.Metrics is
// nil: the metrics of `calib eval` without flags that one pass over the
// rows computes exactly (ece_variational needs a second pass over every
// row, which a monitor does not keep).
var Metrics = func() evaluate.MetricSet {
	var ms evaluate.MetricSet
	for _, m := range evaluate.DefaultMetrics {
		if onePass(m) {
			ms = append(ms, m)
		}
	}
	return ms
}()

// DefaultMode are the notions of smece when Options.Eval.Mode is the zero
// value: top-label only. smece's streamed state is a fixed set of grids per
// notion and class (about 35,000 numbers each), so class-wise smece
// would cost K times that per window and slice.
var DefaultMode = evaluate.NotionSet{Notions: []kde.Notion{kde.TopLabel}}

// onePass reports whether a stream computes m from its first pass alone.
func onePass(m evaluate.Metric) bool {
	s, err := evaluate.NewSums(evaluate.StreamOptions{Options: evaluate.Options{Metrics: evaluate.MetricSet{m}}})
	return err == nil && slices.Contains(evaluate.StreamableMetrics(), m) && !s.KernelPass()
}

// Options configures a Monitor. The zero value is one-hour windows kept
// a day, the metrics of Metrics on 15 equal-width bins, and the
// default bounds.
type Options struct {
	// Window is the length of the tumbling windows (0: DefaultWindow);
	// window i holds the rows whose prediction time t has
	// floor(t / Window) = i (Unix time).
	Window time.Duration
	// Retain is how long a window is kept after it ends, and a
	// prediction waits for its outcome (0: DefaultRetain). The clock is
	// the latest receipt time the monitor has seen, so that replaying a
	// log gives the same state.
	Retain time.Duration
	// Eval are the metrics' options (evaluate.StreamOptions): Metrics nil
	// means Metrics; each must be computed in one pass (no ece_kde, mmce,
	// sharpness, ece_witness, ece_variational, data-dependent bins).
	// Eval.Bins are also the bins of the per-bin counters. MaxCells 0
	// means DefaultMaxCells, Mode's zero value DefaultMode.
	Eval evaluate.StreamOptions
	// ClassWise adds per-class bin counters (K times the top-label's).
	ClassWise bool
	// Alarm configures the calibration alarm of every slice (package
	// alarm): its level, average run length, and whether it bets on each
	// class too.
	Alarm alarm.Options
	// OnAlarm, if not nil, is called (with the monitor locked: it must
	// not call the monitor) when a slice's alarm layer first reaches its
	// threshold after a start or reset, replays included.
	OnAlarm func(Fired)
	// MaxModels, MaxSlices (per model), MaxPending (predictions waiting
	// for their outcome, over all models; past it the oldest are dropped),
	// Dedup (request ids remembered, over all models) and MaxClasses (the
	// K of a model, refused at its first observation past it) bound the
	// state; 0 means the default of each.
	MaxModels, MaxSlices, MaxPending, Dedup, MaxClasses int
}

// withDefaults returns o with its zero fields set, checked.
func (o Options) withDefaults() (Options, error) {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Retain == 0 {
		o.Retain = DefaultRetain
	}
	if o.MaxModels == 0 {
		o.MaxModels = DefaultMaxModels
	}
	if o.MaxSlices == 0 {
		o.MaxSlices = DefaultMaxSlices
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Dedup == 0 {
		o.Dedup = DefaultDedup
	}
	if o.MaxClasses == 0 {
		o.MaxClasses = DefaultMaxClasses
	}
	if o.Eval.MaxCells == 0 {
		o.Eval.MaxCells = DefaultMaxCells
	}
	if o.Eval.Metrics == nil {
		o.Eval.Metrics = Metrics
	}
	if o.Eval.Mode.IsZero() {
		o.Eval.Mode = DefaultMode
	}
	switch {
	case o.Window < time.Second || o.Window%time.Second != 0:
		return o, pkgerr.Errorf("monitor", "window %v: want whole seconds, at least 1s", o.Window)
	case o.Retain < 0:
		return o, pkgerr.Errorf("monitor", "retain %v is negative", o.Retain)
	case o.MaxModels < 0 || o.MaxSlices < 0 || o.MaxPending < 0 || o.Dedup < 0 || o.MaxClasses < 0:
		return o, pkgerr.Errorf("monitor", "negative bounds")
	}
	for _, m := range o.Eval.Metrics {
		if !onePass(m) {
			return o, pkgerr.Errorf("monitor", "metric %s needs a second pass over the rows, which a monitor does not keep (one-pass metrics: %s)", m, onePassNames())
		}
	}
	if !o.Eval.Bins.DataIndependent() {
		return o, pkgerr.Errorf("monitor", "%s bins with the %s rule depend on the data: a monitor takes fixed equal-width bins", o.Eval.Bins.Binning, o.Eval.Bins.Rule)
	}
	if _, err := evaluate.NewSums(o.Eval); err != nil {
		return o, pkgerr.Errorf("monitor", "%w", err)
	}
	if _, err := metric.NewBinSums(o.Eval.Bins); err != nil {
		return o, pkgerr.Errorf("monitor", "%w", err)
	}
	if err := o.Alarm.Check(); err != nil {
		return o, pkgerr.Errorf("monitor", "%w", err)
	}
	return o, nil
}

// onePassNames lists the metrics a monitor can compute.
func onePassNames() string {
	var names []string
	for _, m := range evaluate.StreamableMetrics() {
		if onePass(m) {
			names = append(names, string(m))
		}
	}
	return strings.Join(names, ", ")
}

// Monitor holds the calibration state of the models it is told of: per
// model and slice, the streamed sums (evaluate.Sums) of every retained
// window and of all rows, the per-bin counters, and the predictions
// waiting for their outcome. Check a Record, then Apply it: Apply never
// fails, so that the same records applied in the same order (a replayed
// log) give the same state bit for bit. A Monitor is safe for concurrent
// use.
type Monitor struct {
	o  Options
	mu sync.Mutex
	st monitorState
	// inflight holds the request ids of records checked but not yet
	// applied or dropped (Check, Release); inflightIDs the prediction ids
	// such records will leave waiting; reserved the models and slices
	// they will create. Nothing of a record is in st before it is
	// applied, so that a record refused after Check (a failed write)
	// leaves no trace.
	inflight    map[dedupKey]bool
	inflightIDs map[pendingKey]bool
	reserved    map[string]*reservation
	// swept is the oldest window kept at the last sweep of the windows
	// (expire sweeps them when it moves).
	swept int64
}

// monitorState is what a snapshot holds.
type monitorState struct {
	lsn     uint64 // the last record applied
	clock   int64  // the latest receipt time applied (Unix ns)
	models  map[string]*model
	pending map[pendingKey]*pending
	// queue holds the predictions waiting, oldest first; an entry whose
	// pending prediction has gone, or was replaced (another seq), is
	// skipped.
	queue []queued
	seq   uint64 // the seq of the last prediction queued
	dedup map[dedupKey]bool
	ids   []dedupKey // dedup's ids, oldest first
	// counts of what applying dropped
	unmatched, expired, duplicates int64
}

// dedupKey is a request id of a model: request ids are scoped per model
// (the same id sent to two models is two requests). A key of model ""
// is an id of a snapshot written before ids were scoped: it stands for
// every model.
type dedupKey struct{ model, id string }

// reservation is what the records checked but not yet applied will
// create of a model: the model itself, if it is not in the state yet
// (with the K and weighting of the first such record), and its slices,
// each with the number of records that hold it.
type reservation struct {
	k        int
	weighted bool
	records  int
	slices   map[string]int
}

// model is one model's state.
type model struct {
	k        int
	weighted bool
	slices   map[string]*slice
}

// slice is the state of one model's slice. Its rows are the windows'
// and retired's: a window dropped is merged into retired, and a row of a
// window already dropped is added to retired (so every row is added to
// one part, and the total is their merge).
type slice struct {
	retired  *part
	windows  map[int64]*part // by window index
	top      *metric.BinSums
	class    []*metric.BinSums
	observed int64 // rows observed, with or without label
	labelled int64 // rows counted (with their label)
	alarm    *alarm.Alarm
	// fired says which alarm layers (test, change) reached their
	// threshold since the start or last reset.
	fired [2]bool
}

// Fired is a slice's alarm layer that reached its threshold.
type Fired struct {
	Model, Slice string
	// Layer is "test" (the model is not calibrated: P(this | calibrated)
	// <= alpha) or "change" (the recent rows are miscalibrated: false
	// alarms every ARL rows at most on average).
	Layer    string
	Evidence alarm.Evidence
}

// part is the sums of a window, or of the rows of windows dropped.
type part struct {
	sums *evaluate.Sums
	// readers is the number of reports reading sums outside the lock:
	// while there are any, a change of the part clones the sums first
	// (copy on write), so that the reports read them as they were.
	readers int
	source  string // the Batch.Source of the rows added to it
	next    int64  // rows added as source (the Offset of the next batch)
	rows    int64  // rows in sums (merged parts' included)
}

// windowSource is the Batch.Source of window i's rows.
func windowSource(i int64) string { return "window-" + strconv.FormatInt(i, 10) }

// retiredSource is the Batch.Source of the rows added to a slice's
// retired part directly.
const retiredSource = "retired"

// pending is a prediction waiting for its outcome.
// pendingKey names a prediction waiting for its outcome.
type pendingKey struct{ model, id string }

// queued is an entry of the queue of predictions waiting.
type queued struct {
	key pendingKey
	seq uint64
}

type pending struct {
	seq          uint64 // its queue entry's
	model, slice string
	time         int64 // the prediction's time
	received     int64 // its record's receipt time (for expiry)
	probs        []float64
	weight       float64   // 1 when the model is unweighted
	bet          alarm.Bet // the alarm's bets, fixed when it was observed
}

// New returns an empty monitor.
func New(o Options) (*Monitor, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Monitor{o: o, inflight: map[dedupKey]bool{}, inflightIDs: map[pendingKey]bool{}, reserved: map[string]*reservation{}, swept: math.MinInt64}
	m.st = newState()
	return m, nil
}

func newState() monitorState {
	return monitorState{models: map[string]*model{}, pending: map[pendingKey]*pending{}, dedup: map[dedupKey]bool{}}
}

// Options returns the options, defaults filled in.
func (m *Monitor) Options() Options { return m.o }

// LSN returns the sequence number of the last record applied.
func (m *Monitor) LSN() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.lsn
}

// CheckError is a record that Check refuses: Field names the request's
// field, and row where it is one row's (1-based).
type CheckError struct {
	Field string
	Row   int
	// NotFound says the error is an unknown model or prediction id.
	NotFound bool
	Err      error
}

func (e *CheckError) Error() string {
	where := e.Field
	if e.Row > 0 {
		where = fmt.Sprintf("%s: row %d", e.Field, e.Row)
	}
	if where == "" {
		return e.Err.Error()
	}
	return where + ": " + e.Err.Error()
}

func (e *CheckError) Unwrap() error { return e.Err }

func checkErr(field string, row int, format string, args ...any) error {
	return &CheckError{Field: field, Row: row, Err: fmt.Errorf(format, args...)}
}

// ErrDuplicate is Check's answer to a record whose RequestID the monitor
// has applied for the same model: it is not applied again.
var ErrDuplicate = errors.New("monitor: this request id was recorded before")

// ErrInFlight is Check's answer to a record whose RequestID is that of a
// record of the same model checked but not yet applied or refused (a
// retry sent while the first is being written): it may still be
// refused, so the retry is neither taken nor called a duplicate; send
// it again once the first is answered.
var ErrInFlight = errors.New("monitor: a request with this request id is being recorded: send it again once that one is answered")

// ValidName reports whether s may name a model or a slice: 1 to 128
// letters, digits and "._-:/" characters.
func ValidName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("._-:/", c)) {
			return false
		}
	}
	return true
}

// Check checks r against the monitor's state and reserves what applying
// it takes (its model's K and weighting, its slice, its request id), so
// that records checked in any order all apply; call Apply (or Release,
// when it is not logged) next. A model observed for the first time takes
// r's K and whether r has weights. Errors: a *CheckError naming the field
// and row, or ErrDuplicate.
func (m *Monitor) Check(r *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !ValidName(r.Model) {
		return checkErr("model", 0, "%q: want 1 to 128 letters, digits or ._-:/", r.Model)
	}
	if len(r.RequestID) > MaxID {
		return checkErr("request_id", 0, "%d bytes: at most %d", len(r.RequestID), MaxID)
	}
	if r.RequestID != "" && m.seen(r.Model, r.RequestID) {
		return ErrDuplicate
	}
	if r.RequestID != "" && m.inflight[dedupKey{r.Model, r.RequestID}] {
		return ErrInFlight
	}
	for i, id := range r.IDs {
		if len(id) > MaxID {
			return checkErr("ids", i+1, "%d bytes: at most %d", len(id), MaxID)
		}
	}
	n := r.Rows()
	if n == 0 && r.Kind != Reset {
		return checkErr("labels", 0, "no rows")
	}
	if r.IDs != nil && len(r.IDs) != n || r.Weights != nil && len(r.Weights) != n || r.Times != nil && len(r.Times) != n {
		return checkErr("", 0, "%d labels, %d ids, %d weights, %d times: want as many of each (or none)", n, len(r.IDs), len(r.Weights), len(r.Times))
	}
	md := m.st.models[r.Model]
	res := m.reserved[r.Model]
	switch r.Kind {
	case Observe:
		sl := r.Slice
		if sl == "" {
			sl = DefaultSlice
		}
		if !ValidName(sl) {
			return checkErr("slice", 0, "%q: want 1 to 128 letters, digits or ._-:/", r.Slice)
		}
		k, weighted, known := 0, false, true
		switch {
		case md != nil:
			k, weighted = md.k, md.weighted
		case res != nil:
			k, weighted = res.k, res.weighted
		default:
			known = false
		}
		if !known && r.K > m.o.MaxClasses {
			return checkErr("probs", 0, "%d classes: a monitor takes models of at most %d (--max-classes; a window's state and its report grow as K)", r.K, m.o.MaxClasses)
		}
		if known && k != r.K {
			return checkErr("probs", 0, "%d classes: model %q was observed with K = %d", r.K, r.Model, k)
		}
		if err := checkProbs(r); err != nil {
			return err
		}
		if known && weighted != (r.Weights != nil) {
			return checkErr("weights", 0, "model %q was observed %s weights: give them on every request or on none", r.Model, map[bool]string{true: "with", false: "without"}[weighted])
		}
		if !known && m.models() >= m.o.MaxModels {
			return checkErr("model", 0, "%q would be model %d: the monitor keeps at most %d (--max-models)", r.Model, m.models()+1, m.o.MaxModels)
		}
		if n := m.slices(md, res); !m.hasSlice(md, res, sl) && n >= m.o.MaxSlices {
			return checkErr("slice", 0, "%q would be slice %d of model %q: at most %d (--max-slices)", sl, n+1, r.Model, m.o.MaxSlices)
		}
		seen := map[string]int{}
		for i, l := range r.Labels {
			if l == NoLabel && (r.IDs == nil || r.IDs[i] == "") {
				return checkErr("ids", i+1, "a prediction without a label needs an id (its outcome names it)")
			}
			if l != NoLabel && (l < 0 || l >= r.K) {
				return checkErr("labels", i+1, "label %d out of range 0..%d", l, r.K-1)
			}
			if l != NoLabel {
				continue
			}
			id := r.IDs[i]
			if j, ok := seen[id]; ok {
				return checkErr("ids", i+1, "prediction id %q is row %d's too: an id names one prediction", id, j)
			}
			seen[id] = i + 1
			if k := (pendingKey{r.Model, id}); m.st.pending[k] != nil || m.inflightIDs[k] {
				return checkErr("ids", i+1, "prediction id %q is already waiting for its outcome", id)
			}
		}
		if err := m.checkTimes(r); err != nil {
			return err
		}
	case Outcome:
		if md == nil {
			return &CheckError{Field: "model", NotFound: true, Err: fmt.Errorf("%q has no observations", r.Model)}
		}
		if r.IDs == nil {
			return checkErr("ids", 0, "missing: an outcome names the predictions by id")
		}
		seen := map[string]int{}
		for i, id := range r.IDs {
			if j, ok := seen[id]; ok {
				return checkErr("ids", i+1, "prediction id %q is row %d's too: one label per prediction", id, j)
			}
			seen[id] = i + 1
			p := m.st.pending[pendingKey{r.Model, id}]
			if p == nil {
				return &CheckError{Field: "ids", Row: i + 1, NotFound: true, Err: fmt.Errorf("prediction id %q is not waiting for an outcome of model %q (never observed without a label, already joined, or expired after %v)", id, r.Model, m.o.Retain)}
			}
			if l := r.Labels[i]; l < 0 || l >= md.k {
				return checkErr("labels", i+1, "label %d out of range 0..%d", l, md.k-1)
			}
		}
		r.K = md.k
	case Reset:
		if md == nil {
			return &CheckError{Field: "model", NotFound: true, Err: fmt.Errorf("%q has no observations", r.Model)}
		}
		if r.Slice != "" && md.slices[r.Slice] == nil {
			return &CheckError{Field: "slice", NotFound: true, Err: fmt.Errorf("%q is not a slice of model %q", r.Slice, r.Model)}
		}
	default:
		return checkErr("", 0, "record kind %d", r.Kind)
	}
	if r.RequestID != "" {
		m.inflight[dedupKey{r.Model, r.RequestID}] = true
	}
	if r.Kind == Observe {
		for i, l := range r.Labels {
			if l == NoLabel {
				m.inflightIDs[pendingKey{r.Model, r.IDs[i]}] = true
			}
		}
		m.reserve(r)
	}
	return nil
}

// seen reports whether model's request id was applied.
func (m *Monitor) seen(model, id string) bool {
	return m.st.dedup[dedupKey{model, id}] || m.st.dedup[dedupKey{"", id}]
}

// models returns the number of models, those reserved included.
func (m *Monitor) models() int {
	n := len(m.st.models)
	for name := range m.reserved {
		if m.st.models[name] == nil {
			n++
		}
	}
	return n
}

// slices returns the number of slices of a model, those reserved
// included.
func (m *Monitor) slices(md *model, res *reservation) int {
	n := 0
	if md != nil {
		n = len(md.slices)
	}
	if res != nil {
		for name := range res.slices {
			if md == nil || md.slices[name] == nil {
				n++
			}
		}
	}
	return n
}

// hasSlice reports whether a model has the slice, or a record checked
// will create it.
func (m *Monitor) hasSlice(md *model, res *reservation, name string) bool {
	return md != nil && md.slices[name] != nil || res != nil && res.slices[name] > 0
}

// reserve records what an observation checked will create.
func (m *Monitor) reserve(r *Record) {
	res := m.reserved[r.Model]
	if res == nil {
		res = &reservation{k: r.K, weighted: r.Weights != nil, slices: map[string]int{}}
		m.reserved[r.Model] = res
	}
	res.records++
	res.slices[sliceName(r.Slice)]++
}

// sliceName returns the slice of an observation's rows.
func sliceName(s string) string {
	if s == "" {
		return DefaultSlice
	}
	return s
}

// MaxID is the longest request id or prediction id, in bytes.
const MaxID = 256

// MaxWeight is the largest row weight (so that no sum overflows).
const MaxWeight = 1e12

// checkProbs checks an observation's probabilities: n rows of K >= 2
// values in [0, 1] summing to 1 within data.DefaultTolerance, and its
// weights (finite, >= 0).
func checkProbs(r *Record) error {
	n := r.Rows()
	if r.K < 2 || len(r.Probs) != n*r.K {
		return checkErr("probs", 0, "%d values for %d rows of K = %d classes (K >= 2)", len(r.Probs), n, r.K)
	}
	for i := range n {
		sum := 0.0
		for j, v := range r.Probs[i*r.K : (i+1)*r.K] {
			if !(v >= 0 && v <= 1) {
				return checkErr("probs", i+1, "column %d: %v is not a probability", j+1, v)
			}
			sum += v
		}
		if math.Abs(sum-1) > data.DefaultTolerance {
			return checkErr("probs", i+1, "the row sums to %v, not 1 (within %g)", sum, data.DefaultTolerance)
		}
	}
	for i, w := range r.Weights {
		if !(w >= 0 && w <= MaxWeight) {
			return checkErr("weights", i+1, "%v: want a weight in [0, %g]", w, MaxWeight)
		}
	}
	return nil
}

// checkTimes refuses prediction times more than a window ahead of the
// receipt time.
func (m *Monitor) checkTimes(r *Record) error {
	limit := r.Time + int64(m.o.Window)
	for i, t := range r.Times {
		if t > limit {
			return checkErr("times", i+1, "%s is more than a window (%v) after the request was received (%s)", time.Unix(0, t).UTC().Format(time.RFC3339), m.o.Window, time.Unix(0, r.Time).UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// Release drops the reservation of a record checked but not applied.
func (m *Monitor) Release(r *Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(r)
}

func (m *Monitor) release(r *Record) {
	delete(m.inflight, dedupKey{r.Model, r.RequestID})
	if r.Kind != Observe {
		return
	}
	for i, l := range r.Labels {
		if l == NoLabel && r.IDs != nil {
			delete(m.inflightIDs, pendingKey{r.Model, r.IDs[i]})
		}
	}
	res := m.reserved[r.Model]
	if res == nil {
		return // a replayed record: never checked
	}
	sl := sliceName(r.Slice)
	if res.slices[sl]--; res.slices[sl] <= 0 {
		delete(res.slices, sl)
	}
	if res.records--; res.records <= 0 {
		delete(m.reserved, r.Model)
	}
}

// newSlice returns an empty slice of a model with k classes.
func (m *Monitor) newSlice(k int) (*slice, error) {
	top, err := metric.NewBinSums(m.o.Eval.Bins)
	if err != nil {
		return nil, err
	}
	a, err := alarm.New(k, m.o.Alarm)
	if err != nil {
		return nil, err
	}
	s := &slice{top: top, windows: map[int64]*part{}, alarm: a}
	if m.o.ClassWise {
		s.class = make([]*metric.BinSums, k)
		for c := range s.class {
			s.class[c], _ = metric.NewBinSums(m.o.Eval.Bins)
		}
	}
	return s, nil
}

// Applied is what applying a record did.
type Applied struct {
	LSN uint64 `json:"lsn"`
	// Counted rows were added to the sums (an observation's labelled
	// rows, an outcome's joined ones); Pending rows wait for their
	// outcome; Unmatched outcome rows found no prediction (joined or
	// expired in between).
	Counted   int `json:"counted"`
	Pending   int `json:"pending"`
	Unmatched int `json:"unmatched"`
	// Duplicate says the record's request id was applied before: nothing
	// was done.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Apply applies record lsn (sequence numbers increase by one per record
// of a log) to the state. It never fails: what no longer fits the state
// is counted and skipped.
func (m *Monitor) Apply(lsn uint64, r *Record) Applied {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.apply(lsn, r)
}

func (m *Monitor) apply(lsn uint64, r *Record) Applied {
	out := Applied{LSN: lsn}
	if lsn > m.st.lsn {
		m.st.lsn = lsn
	}
	m.st.clock = max(m.st.clock, r.Time)
	m.release(r)
	if r.RequestID != "" {
		if m.seen(r.Model, r.RequestID) {
			m.st.duplicates++
			out.Duplicate = true
			return out
		}
		m.remember(dedupKey{r.Model, r.RequestID})
	}
	m.expire()
	md := m.st.models[r.Model]
	switch r.Kind {
	case Observe:
		if md == nil {
			md = &model{k: r.K, weighted: r.Weights != nil, slices: map[string]*slice{}}
			m.st.models[r.Model] = md
		}
		if md.k != r.K || md.weighted != (r.Weights != nil) {
			m.st.unmatched += int64(r.Rows())
			out.Unmatched = r.Rows()
			return out
		}
		sl := sliceName(r.Slice)
		s := md.slices[sl]
		if s == nil {
			var err error
			if s, err = m.newSlice(md.k); err != nil {
				return out // unreachable: the options were checked
			}
			md.slices[sl] = s
		}
		var rows []row
		for i, l := range r.Labels {
			t := r.Time
			if r.Times != nil {
				t = r.Times[i]
			}
			w := 1.0
			if r.Weights != nil {
				w = r.Weights[i]
			}
			p := r.Probs[i*r.K : (i+1)*r.K]
			s.observed++
			if l == NoLabel {
				m.wait(pendingKey{r.Model, r.IDs[i]}, &pending{model: r.Model, slice: sl, time: t, received: r.Time, probs: slices.Clone(p), weight: w, bet: s.alarm.Bet(p)})
				out.Pending++
				continue
			}
			s.alarm.Update(p, l, nil)
			rows = append(rows, row{slice: sl, time: t, probs: p, label: l, weight: w})
		}
		m.count(md, rows)
		out.Counted = len(rows)
		m.fire(r.Model, sl, s)
	case Outcome:
		if md == nil {
			out.Unmatched = r.Rows()
			m.st.unmatched += int64(r.Rows())
			return out
		}
		var rows []row
		for i, id := range r.IDs {
			key := pendingKey{r.Model, id}
			p := m.st.pending[key]
			if p == nil || r.Labels[i] < 0 || r.Labels[i] >= md.k {
				out.Unmatched++
				m.st.unmatched++
				continue
			}
			delete(m.st.pending, key)
			rows = append(rows, row{slice: p.slice, time: p.time, probs: p.probs, label: r.Labels[i], weight: p.weight})
			s := md.slices[p.slice]
			s.alarm.Update(p.probs, r.Labels[i], p.bet)
		}
		m.count(md, rows)
		out.Counted = len(rows)
		for _, name := range slices.Sorted(maps.Keys(md.slices)) {
			m.fire(r.Model, name, md.slices[name])
		}
	case Reset:
		if md == nil {
			return out
		}
		for name, s := range md.slices {
			if r.Slice == "" || r.Slice == name {
				s.alarm.Reset()
				s.fired = [2]bool{}
			}
		}
	}
	return out
}

// fire calls OnAlarm for the alarm layers of a slice that reached their
// threshold since the last call.
func (m *Monitor) fire(model, name string, s *slice) {
	e := s.alarm.Evidence()
	for i, on := range []bool{e.TestAlarm(), e.ChangeAlarm()} {
		if on && !s.fired[i] {
			s.fired[i] = true
			if m.o.OnAlarm != nil {
				m.o.OnAlarm(Fired{Model: model, Slice: name, Layer: [2]string{"test", "change"}[i], Evidence: e})
			}
		}
	}
}

// row is a labelled prediction to count.
type row struct {
	slice  string
	time   int64
	probs  []float64
	label  int
	weight float64
}

// count adds labelled rows to their slices' sums: all rows, the windows
// (a row of a window already dropped counts in the total only) and the
// bin counters.
func (m *Monitor) count(md *model, rows []row) {
	if len(rows) == 0 {
		return
	}
	// Group by slice and window, keeping the rows' order within each.
	type key struct {
		slice  string
		window int64
	}
	w := int64(m.o.Window)
	oldest := m.oldestWindow()
	groups := map[key][]row{}
	var keys []key
	for _, r := range rows {
		k := key{r.slice, floorDiv(r.time, w)}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range keys {
		g := groups[k]
		s := md.slices[k.slice]
		var p *part
		if k.window < oldest {
			if s.retired == nil {
				s.retired = &part{source: retiredSource}
			}
			p = s.retired
		} else if p = s.windows[k.window]; p == nil {
			p = &part{source: windowSource(k.window)}
			s.windows[k.window] = p
		}
		set := rowSet(md, g)
		m.add(p, set)
		s.labelled += int64(len(g))
		m.addBins(s, md.k, set)
	}
}

// own makes a part's sums its own before a change: a copy of the sums
// reports are reading (copy on write).
func (p *part) own() {
	if p.readers > 0 {
		if p.sums != nil {
			p.sums = p.sums.Clone()
		}
		p.readers = 0
	}
}

// reading is a part's sums that a report reads outside the lock.
type reading struct {
	p    *part
	sums *evaluate.Sums
}

// readings are the sums a report reads.
type readings []reading

// take marks p's sums read (the caller holds m.mu) and returns them.
func (rs *readings) take(p *part) *evaluate.Sums {
	p.readers++
	*rs = append(*rs, reading{p, p.sums})
	return p.sums
}

// done ends a report's readings: a part whose sums are still those read
// has one reader less (a part copied meanwhile is not read any more).
func (m *Monitor) done(rs readings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		if r.p.sums == r.sums && r.p.readers > 0 {
			r.p.readers--
		}
	}
}

// add adds rows to a part's sums.
func (m *Monitor) add(p *part, set *data.Set) {
	p.own()
	if p.sums == nil {
		p.sums, _ = evaluate.NewSums(m.o.Eval) // the options were checked
	}
	// The rows were checked (Check, DecodeRecord): Add does not fail.
	_ = p.sums.Add(&data.Batch{Set: set, Source: p.source, Offset: p.next})
	p.next += int64(set.N)
	p.rows += int64(set.N)
}

// retire merges the windows before oldest into the slice's retired
// part, in the order of their indices, and drops them.
func (m *Monitor) retire(s *slice, oldest int64) {
	for _, i := range slices.Sorted(maps.Keys(s.windows)) {
		if i >= oldest {
			break
		}
		w := s.windows[i]
		if w.sums != nil {
			if s.retired == nil {
				s.retired = &part{source: retiredSource}
			}
			s.retired.own()
			if s.retired.sums == nil {
				s.retired.sums, _ = evaluate.NewSums(m.o.Eval)
			}
			_ = s.retired.sums.Merge(w.sums) // same options, other rows
			s.retired.rows += w.rows
		}
		delete(s.windows, i)
	}
}

// shareParts returns the sums of a slice's parts, the retired part's
// first then the windows' by index, each taken by rs (the caller holds
// m.mu): they may be read after m.mu is released, until rs is done; a
// change of their part meanwhile copies them first.
func shareParts(s *slice, rs *readings) []*evaluate.Sums {
	idx := slices.Sorted(maps.Keys(s.windows))
	parts := make([]*part, 0, len(idx)+1)
	if s.retired != nil {
		parts = append(parts, s.retired)
	}
	for _, i := range idx {
		parts = append(parts, s.windows[i])
	}
	var out []*evaluate.Sums
	for _, p := range parts {
		if p.sums != nil {
			out = append(out, rs.take(p))
		}
	}
	return out
}

// merged returns the merge of sums (nil when there are none; sums[0]
// itself when it is alone: read it only): with the parts of a slice, the
// sums of every row counted. It only reads sums, and stops with ctx's
// error.
func merged(ctx context.Context, sums []*evaluate.Sums) (*evaluate.Sums, error) {
	switch len(sums) {
	case 0:
		return nil, nil
	case 1:
		return sums[0], nil
	}
	out := sums[0].Clone()
	for _, p := range sums[1:] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		_ = out.Merge(p) // same options, other rows
	}
	return out, nil
}

// rowSet returns rows as a data.Set.
func rowSet(md *model, rows []row) *data.Set {
	k := md.k
	s := &data.Set{N: len(rows), K: k, Probs: make([]float64, 0, len(rows)*k), Labels: make([]int, len(rows))}
	if md.weighted {
		s.Weights = make([]float64, len(rows))
	}
	for i, r := range rows {
		s.Probs = append(s.Probs, r.probs...)
		s.Labels[i] = r.label
		if md.weighted {
			s.Weights[i] = r.weight
		}
	}
	return s
}

// addBins adds rows to a slice's bin counters.
func (m *Monitor) addBins(s *slice, k int, set *data.Set) {
	// The top-label scores and outcomes (metric.TopR at r = 1: ties go
	// to the lower class), without TopR's ranking of every row.
	sc, oc := make([]float64, set.N), make([]float64, set.N)
	for i := range set.N {
		row := set.Probs[i*k : (i+1)*k]
		j := mathx.Argmax(row)
		sc[i] = row[j]
		if j == set.Labels[i] {
			oc[i] = 1
		}
	}
	_ = s.top.Add(sc, oc, set.Weights)
	for c, bs := range s.class {
		col := set.Column(c)
		o := make([]float64, set.N)
		for i, l := range set.Labels {
			if l == c {
				o[i] = 1
			}
		}
		_ = bs.Add(col, o, set.Weights)
	}
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// oldestWindow is the index of the oldest window kept at the clock.
func (m *Monitor) oldestWindow() int64 {
	w := int64(m.o.Window)
	// A window [i w, (i+1) w) is kept while (i+1) w > clock - retain.
	return floorDiv(m.st.clock-int64(m.o.Retain), w)
}

// expire drops the windows that ended more than Retain ago and the
// predictions that waited longer than Retain, or past MaxPending.
func (m *Monitor) expire() {
	if oldest := m.oldestWindow(); oldest != m.swept {
		m.swept = oldest
		for _, md := range m.st.models {
			for _, s := range md.slices {
				m.retire(s, oldest)
			}
		}
	}
	cut := m.st.clock - int64(m.o.Retain)
	q := m.st.queue
	for len(q) > 0 {
		p := m.st.pending[q[0].key]
		live := p != nil && p.seq == q[0].seq
		if live && p.received >= cut && len(m.st.pending) <= m.o.MaxPending {
			break
		}
		if live {
			delete(m.st.pending, q[0].key)
			m.st.expired++
		}
		q = q[1:]
	}
	m.st.queue = q
	if cap(q) > 1024 && len(q) < cap(q)/4 {
		m.st.queue = slices.Clone(q)
	}
}

// wait records a prediction waiting for its outcome (replacing one of
// the same id, whose queue entry is then skipped).
func (m *Monitor) wait(key pendingKey, p *pending) {
	m.st.seq++
	p.seq = m.st.seq
	m.st.queue = append(m.st.queue, queued{key, p.seq})
	m.st.pending[key] = p
	for len(m.st.pending) > m.o.MaxPending {
		m.expire()
	}
}

// remember adds a request id to the ids remembered, forgetting the
// oldest past Dedup.
func (m *Monitor) remember(id dedupKey) {
	m.st.dedup[id] = true
	m.st.ids = append(m.st.ids, id)
	for len(m.st.ids) > m.o.Dedup {
		delete(m.st.dedup, m.st.ids[0])
		m.st.ids = m.st.ids[1:]
	}
	if cap(m.st.ids) > 1024 && len(m.st.ids) < cap(m.st.ids)/4 {
		m.st.ids = slices.Clone(m.st.ids)
	}
}

// Models returns the names of the models observed, sorted.
func (m *Monitor) Models() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.st.models))
}
