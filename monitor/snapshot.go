package monitor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/state"
	"github.com/calib-dev/calib/metric"
)

// stateKind is the envelope of a monitor's snapshot (package
// internal/state).
var stateKind = state.Kind{Name: "monitor.State", Version: 1}

// snapshot is the JSON form of a monitor's state.
type snapshot struct {
	Version int `json:"version"`
	// Config is what the state's meaning depends on: a snapshot is read
	// only by a monitor of the same.
	Config  snapshotConfig `json:"config"`
	LSN     uint64         `json:"lsn"`
	Clock   int64          `json:"clock"`
	Models  []modelJSON    `json:"models"`
	Pending []pendingJSON  `json:"pending"`
	// RequestIDs are the request ids remembered, oldest first, each with
	// its model; Dedup holds those of a snapshot written before the ids
	// were scoped per model (read, never written: each stands for every
	// model).
	RequestIDs []requestIDJSON `json:"request_ids"`
	Dedup      []string        `json:"dedup,omitempty"`
	Unmatched  int64           `json:"unmatched"`
	Expired    int64           `json:"expired"`
	Duplicates int64           `json:"duplicates"`
}

type snapshotConfig struct {
	WindowSeconds int64  `json:"window_seconds"`
	Metrics       string `json:"metrics"`
	Bins          int    `json:"bins"`
	ClassWise     bool   `json:"class_wise"`
	Options       string `json:"options"` // the metrics' options, as evaluate.Options' JSON
}

type modelJSON struct {
	Name     string      `json:"name"`
	K        int         `json:"k"`
	Weighted bool        `json:"weighted"`
	Slices   []sliceJSON `json:"slices"`
}

type sliceJSON struct {
	Name     string            `json:"name"`
	Observed int64             `json:"observed"`
	Labelled int64             `json:"counted"`
	Retired  *partJSON         `json:"retired"`
	Windows  []partJSON        `json:"windows"`
	Top      *metric.BinSums   `json:"top_bins"`
	Class    []*metric.BinSums `json:"class_bins,omitempty"`
	Alarm    json.RawMessage   `json:"alarm"`
	Fired    [2]bool           `json:"fired"`
}

type partJSON struct {
	Window int64          `json:"window,omitempty"`
	Next   int64          `json:"next"`
	Rows   int64          `json:"rows"`
	Sums   *evaluate.Sums `json:"sums"`
}

type requestIDJSON struct {
	Model string `json:"model"`
	ID    string `json:"id"`
}

type pendingJSON struct {
	ID       string    `json:"id"`
	Model    string    `json:"model"`
	Slice    string    `json:"slice"`
	Time     int64     `json:"time"`
	Received int64     `json:"received"`
	Probs    []float64 `json:"probs"`
	Weight   float64   `json:"weight"`
	Bet      []float64 `json:"bet"`
}

// config returns what a snapshot of m records of its options.
func (m *Monitor) config() snapshotConfig {
	opts, _ := json.Marshal(struct {
		Bins       any
		KSR        any
		P          any
		SmECE      any
		ClassMean  bool
		Convention any
		KSCells    int
		MaxCells   int
		Mode       any
		Alarm      any
	}{m.o.Eval.Bins, m.o.Eval.KS.R, m.o.Eval.P, m.o.Eval.SmECE, m.o.Eval.ClassMean, m.o.Eval.Convention, m.o.Eval.KSCells, m.o.Eval.MaxCells, m.o.Eval.Mode, m.o.Alarm})
	b := m.o.Eval.Bins.Bins
	if b == 0 {
		b = metric.DefaultBins
	}
	return snapshotConfig{WindowSeconds: int64(m.o.Window / time.Second), Metrics: m.o.Eval.Metrics.String(), Bins: b, ClassWise: m.o.ClassWise, Options: string(opts)}
}

// MarshalJSON writes the monitor's state: {"kind": "monitor.State",
// "version": 1, ...}, every sum in its own envelope.
func (m *Monitor) MarshalJSON() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.marshal()
}

func (m *Monitor) marshal() ([]byte, error) {
	st := &m.st
	out := snapshot{Version: stateKind.Version, Config: m.config(), LSN: st.lsn, Clock: st.clock,
		RequestIDs: []requestIDJSON{}, Unmatched: st.unmatched, Expired: st.expired, Duplicates: st.duplicates, Models: []modelJSON{}, Pending: []pendingJSON{}}
	for _, k := range st.ids {
		if k.model == "" {
			out.Dedup = append(out.Dedup, k.id)
			continue
		}
		out.RequestIDs = append(out.RequestIDs, requestIDJSON{Model: k.model, ID: k.id})
	}
	for _, name := range slices.Sorted(maps.Keys(st.models)) {
		md := st.models[name]
		mj := modelJSON{Name: name, K: md.k, Weighted: md.weighted}
		for _, sn := range slices.Sorted(maps.Keys(md.slices)) {
			s := md.slices[sn]
			a, err := s.alarm.MarshalJSON()
			if err != nil {
				return nil, err
			}
			sj := sliceJSON{Name: sn, Observed: s.observed, Labelled: s.labelled, Top: s.top, Class: s.class, Windows: []partJSON{}, Alarm: a, Fired: s.fired}
			if r := s.retired; r != nil && r.sums != nil {
				sj.Retired = &partJSON{Next: r.next, Rows: r.rows, Sums: r.sums}
			}
			for _, i := range slices.Sorted(maps.Keys(s.windows)) {
				w := s.windows[i]
				sj.Windows = append(sj.Windows, partJSON{Window: i, Next: w.next, Rows: w.rows, Sums: w.sums})
			}
			mj.Slices = append(mj.Slices, sj)
		}
		out.Models = append(out.Models, mj)
	}
	for _, q := range st.queue {
		p := st.pending[q.key]
		if p == nil || p.seq != q.seq {
			continue
		}
		out.Pending = append(out.Pending, pendingJSON{ID: q.key.id, Model: p.model, Slice: p.slice, Time: p.time, Received: p.received, Probs: p.probs, Weight: p.weight, Bet: p.bet})
	}
	return stateKind.Encode(out)
}

// Restore replaces m's state by the one b holds (MarshalJSON's form),
// written by a monitor of the same window, metrics, bins and metric
// options (the options the state's sums depend on); anything else is
// refused with one line per option that differs. A state written with
// other alarm options (Options.Alarm) is restored with every alarm
// started again under m's options, which a warning says: the alarms'
// evidence does not carry over from one set of options to another.
func (m *Monitor) Restore(b []byte) (warnings []error, err error) {
	var in snapshot
	if _, err := stateKind.Decode(b, &in); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pinned, alarmDiff := configDiff(in.Config, m.config())
	if len(pinned) > 0 {
		return nil, &ConfigError{Diffs: pinned}
	}
	restart := len(alarmDiff) > 0
	if restart {
		warnings = append(warnings, fmt.Errorf("monitor: every alarm starts again: the state was written with other alarm options (%s)", strings.Join(alarmDiff, "; ")))
	}
	if err := m.restore(&in, restart); err != nil {
		return nil, err
	}
	return warnings, nil
}

// restore sets m's state from a snapshot whose configuration is m's,
// the alarms started again when restart is set.
func (m *Monitor) restore(in *snapshot, restart bool) error {
	st := newState()
	st.lsn, st.clock, st.unmatched, st.expired, st.duplicates = in.LSN, in.Clock, in.Unmatched, in.Expired, in.Duplicates
	for _, mj := range in.Models {
		if !ValidName(mj.Name) || mj.K < 2 || st.models[mj.Name] != nil {
			return stateKind.Errorf("model %q (K = %d): a bad or repeated model", mj.Name, mj.K)
		}
		md := &model{k: mj.K, weighted: mj.Weighted, slices: map[string]*slice{}}
		for _, sj := range mj.Slices {
			if !ValidName(sj.Name) || md.slices[sj.Name] != nil || sj.Top == nil || (m.o.ClassWise && len(sj.Class) != mj.K) {
				return stateKind.Errorf("model %q, slice %q: bad, repeated or missing bins", mj.Name, sj.Name)
			}
			s, err := m.newSlice(mj.K)
			if err != nil {
				return stateKind.Errorf("model %q: %v", mj.Name, err)
			}
			if !restart {
				if err := s.alarm.UnmarshalJSON(sj.Alarm); err != nil {
					return stateKind.Errorf("model %q, slice %q: %v", mj.Name, sj.Name, err)
				}
				s.fired = sj.Fired
			}
			s.observed, s.labelled, s.top, s.class = sj.Observed, sj.Labelled, sj.Top, sj.Class
			if sj.Retired != nil {
				if err := checkPart(sj.Retired, mj); err != nil {
					return stateKind.Errorf("model %q, slice %q: %v", mj.Name, sj.Name, err)
				}
				s.retired = &part{sums: sj.Retired.Sums, source: retiredSource, next: sj.Retired.Next, rows: sj.Retired.Rows}
			}
			for _, pj := range sj.Windows {
				if err := checkPart(&pj, mj); err != nil || s.windows[pj.Window] != nil {
					return stateKind.Errorf("model %q, slice %q, window %d: bad or repeated (%v)", mj.Name, sj.Name, pj.Window, err)
				}
				s.windows[pj.Window] = &part{sums: pj.Sums, source: windowSource(pj.Window), next: pj.Next, rows: pj.Rows}
			}
			md.slices[sj.Name] = s
		}
		st.models[mj.Name] = md
	}
	for _, pj := range in.Pending {
		md := st.models[pj.Model]
		key := pendingKey{pj.Model, pj.ID}
		if md == nil || md.slices[pj.Slice] == nil || len(pj.Probs) != md.k || !mathx.Finite(pj.Probs...) || !(pj.Weight >= 0 && pj.Weight <= MaxWeight) || st.pending[key] != nil {
			return stateKind.Errorf("prediction %q: no such model or slice, %d probabilities, or repeated", pj.ID, len(pj.Probs))
		}
		if restart {
			// The bets are fixed anew by the new alarm, still before the
			// label: the alarm's guarantee holds.
			pj.Bet = md.slices[pj.Slice].alarm.Bet(pj.Probs)
		}
		if !md.slices[pj.Slice].alarm.ValidBet(pj.Probs, pj.Bet) {
			return stateKind.Errorf("prediction %q: bets %v are not bets of this alarm on its probabilities", pj.ID, pj.Bet)
		}
		st.seq++
		st.pending[key] = &pending{seq: st.seq, model: pj.Model, slice: pj.Slice, time: pj.Time, received: pj.Received, probs: pj.Probs, weight: pj.Weight, bet: pj.Bet}
		st.queue = append(st.queue, queued{key, st.seq})
	}
	for _, id := range in.Dedup {
		st.ids = append(st.ids, dedupKey{"", id})
	}
	for _, r := range in.RequestIDs {
		if r.Model == "" {
			return stateKind.Errorf("request id %q without a model", r.ID)
		}
		st.ids = append(st.ids, dedupKey{r.Model, r.ID})
	}
	for _, k := range st.ids {
		st.dedup[k] = true
	}
	m.st = st
	m.swept = math.MinInt64
	return nil
}

// checkPart checks a part read from a snapshot: sums of the model's K
// holding Rows rows.
func checkPart(p *partJSON, mj modelJSON) error {
	if p.Sums == nil {
		return fmt.Errorf("no sums")
	}
	if p.Sums.N() != p.Rows || p.Next > p.Rows || p.Next < 0 || (p.Sums.K() != 0 && p.Sums.K() != mj.K) {
		return fmt.Errorf("sums of %d rows of K = %d, want %d rows of K = %d", p.Sums.N(), p.Sums.K(), p.Rows, mj.K)
	}
	return nil
}

// ConfigError is a snapshot that Restore refuses because it was written
// with other options than the monitor's, for which its sums mean other
// things: one line per option that differs.
type ConfigError struct {
	Diffs []string
}

func (e *ConfigError) Error() string {
	return stateKind.Errorf("written with other options than this monitor's (keep the state directory's options, or start another): %s", strings.Join(e.Diffs, "; ")).Error()
}

// configDiff compares the configuration a snapshot was written with
// (state) to the monitor's (now): the differences in the options the
// sums depend on (pinned), and those in the alarm's options, each
// "name: STATE in the state, NOW now (--flag)".
func configDiff(state, now snapshotConfig) (pinned, alarmDiff []string) {
	line := func(name, flag string, a, b any) string {
		return fmt.Sprintf("%s: %v in the state, %v now (%s)", name, a, b, flag)
	}
	if state.WindowSeconds != now.WindowSeconds {
		pinned = append(pinned, line("window", "--window", time.Duration(state.WindowSeconds)*time.Second, time.Duration(now.WindowSeconds)*time.Second))
	}
	if state.Metrics != now.Metrics {
		pinned = append(pinned, line("metrics", "--metrics", state.Metrics, now.Metrics))
	}
	if state.Bins != now.Bins {
		pinned = append(pinned, line("bins", "--bins", state.Bins, now.Bins))
	}
	if state.ClassWise != now.ClassWise {
		pinned = append(pinned, line("class-wise bin counters", "--class-wise-bins", state.ClassWise, now.ClassWise))
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal([]byte(state.Options), &a) != nil || json.Unmarshal([]byte(now.Options), &b) != nil {
		if state.Options != now.Options {
			pinned = append(pinned, line("metric options", "the metrics' options", state.Options, now.Options))
		}
		return pinned, nil
	}
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if string(a[k]) == string(b[k]) {
			continue
		}
		if k != "Alarm" {
			pinned = append(pinned, line(k, optionFlags[k], orNone(a[k]), orNone(b[k])))
			continue
		}
		// The alarm's options are compared with their defaults set: a
		// zero and the default it stands for are the same alarm.
		var oa, ob alarm.Options
		ea, eb := json.Unmarshal(a[k], &oa), json.Unmarshal(b[k], &ob)
		if ea == nil && eb == nil {
			oa, ea = oa.WithDefaults()
			ob, eb = ob.WithDefaults()
		}
		if ea != nil || eb != nil {
			alarmDiff = append(alarmDiff, line("alarm options", "--alarm-*", orNone(a[k]), orNone(b[k])))
			continue
		}
		for _, f := range []struct {
			field, flag string
			a, b        any
		}{{"alpha", "--alarm-alpha", oa.Alpha, ob.Alpha}, {"ARL", "--alarm-arl", oa.ARL, ob.ARL}, {"bins", "the alarm's bins", oa.Bins, ob.Bins},
			{"half-life", "the alarm's half-life", oa.HalfLife, ob.HalfLife}, {"class-wise", "--alarm-class-wise", oa.ClassWise, ob.ClassWise}} {
			if f.a != f.b {
				alarmDiff = append(alarmDiff, line("alarm "+f.field, f.flag, f.a, f.b))
			}
		}
	}
	return pinned, alarmDiff
}

// optionFlags names the calib serve flag of each metric option a
// snapshot pins (config's fields), where there is one.
var optionFlags = map[string]string{"Bins": "--bins", "MaxCells": "the canonical cells' bound", "Mode": "the notions of smece", "KSR": "ks's r", "P": "the metrics' p",
	"SmECE": "smece's options", "ClassMean": "the class-wise mean", "Convention": "the binned convention", "KSCells": "ks's cells"}

// orNone writes a JSON value for a message.
func orNone(v json.RawMessage) string {
	if len(v) == 0 {
		return "none"
	}
	return string(v)
}
