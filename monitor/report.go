package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/calib-dev/calib/evaluate"
)

// Report is the calibration of one model: per slice, the evaluation of
// every row counted and of each retained window, each the document of
// `calib eval --json` (evaluate.WriteJSON) on those rows.
type Report struct {
	Model string `json:"model"`
	K     int    `json:"k"`
	// WindowSeconds and RetainSeconds are Options.Window and Retain.
	WindowSeconds int64         `json:"window_seconds"`
	RetainSeconds int64         `json:"retain_seconds"`
	Slices        []SliceReport `json:"slices"`
}

// SliceReport is one slice of a Report.
type SliceReport struct {
	Slice string `json:"slice"`
	// Observed counts the rows observed; Counted those counted (with
	// their label); the others wait for their outcome or expired.
	Observed int64 `json:"observed"`
	Counted  int64 `json:"counted"`
	// Total is the evaluation of every row counted (null before the
	// first).
	Total   json.RawMessage `json:"total"`
	Windows []WindowReport  `json:"windows"`
	// Alarm is the slice's calibration alarm.
	Alarm AlarmReport `json:"alarm"`
}

// AlarmReport is a slice's calibration alarm (package alarm): each
// layer's log-evidence, its threshold, and whether it reached it since
// the start or the last reset.
type AlarmReport struct {
	// Test: is the model still calibrated? An alarm happens at some time
	// with probability at most alpha = exp(-TestThreshold) if it is.
	Test            float64 `json:"test_log_evidence"`
	TestThreshold   float64 `json:"test_threshold"`
	TestAlarm       bool    `json:"test_alarm"`
	TestTop         float64 `json:"test_top_label"`
	TestClassWise   float64 `json:"test_class_wise"`
	Change          float64 `json:"change_log_evidence"`
	ChangeThreshold float64 `json:"change_threshold"`
	ChangeAlarm     bool    `json:"change_alarm"`
	ChangeTop       float64 `json:"change_top_label"`
	ChangeClassWise float64 `json:"change_class_wise"`
	// Rows are the labelled rows bet on since the start or last reset.
	Rows int64 `json:"rows"`
}

func alarmReport(s *slice) AlarmReport {
	e := s.alarm.Evidence()
	return AlarmReport{Test: e.Test, TestThreshold: e.TestThreshold, TestAlarm: s.fired[0], TestTop: e.TestTop, TestClassWise: e.TestClass,
		Change: e.Change, ChangeThreshold: e.ChangeThreshold, ChangeAlarm: s.fired[1], ChangeTop: e.ChangeTop, ChangeClassWise: e.ChangeClass, Rows: e.Rows}
}

// SliceAlarm is one slice's alarm, for gauges.
type SliceAlarm struct {
	Model, Slice string
	AlarmReport
}

// Alarms returns every slice's alarm, sorted by model and slice.
func (m *Monitor) Alarms() []SliceAlarm {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SliceAlarm
	m.eachSlice(func(model, name string, s *slice) {
		out = append(out, SliceAlarm{Model: model, Slice: name, AlarmReport: alarmReport(s)})
	})
	return out
}

// eachSlice calls f on every slice, sorted by model and slice name; the
// caller holds m.mu.
func (m *Monitor) eachSlice(f func(model, name string, s *slice)) {
	for _, model := range slices.Sorted(maps.Keys(m.st.models)) {
		md := m.st.models[model]
		for _, name := range slices.Sorted(maps.Keys(md.slices)) {
			f(model, name, md.slices[name])
		}
	}
}

// WindowReport is one window of a slice: the rows whose prediction time
// is in [Start, End).
type WindowReport struct {
	Start      time.Time       `json:"start"`
	End        time.Time       `json:"end"`
	Counted    int64           `json:"counted"`
	Evaluation json.RawMessage `json:"evaluation"`
}

// Query selects what a Report holds: Slice "" means every slice;
// Windows is the number of most recent windows (0: all retained, -1:
// none).
type Query struct {
	Slice   string
	Windows int
}

// Report returns the model's report: ReportContext without a deadline.
func (m *Monitor) Report(model string, q Query) (*Report, error) {
	return m.ReportContext(context.Background(), model, q)
}

// ReportContext returns the model's report. An unknown model or slice is
// a *CheckError with NotFound set; ctx's error when it ends before the
// report is finished (checked before each evaluation).
//
// The monitor is locked only to take the counts, the alarms and the sums
// of the parts the report reads (no copy: the parts are marked read, and
// an observation that changes one while the report runs copies it
// first); the evaluations are
// finished after the lock is released, so that a report stalls no
// observation. Its cost is one evaluate.Finish per part read: per slice,
// the total (every row) and each window asked for, each about
// 50 ms + 0.2 ms x K on one core of a 2.3 GHz Xeon (docs/serve.md,
// "What a report costs").
func (m *Monitor) ReportContext(ctx context.Context, model string, q Query) (*Report, error) {
	type pending struct {
		total   []*evaluate.Sums
		windows []*evaluate.Sums
	}
	var todo []pending
	var rs readings
	defer func() { m.done(rs) }()
	out, err := func() (*Report, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		md := m.st.models[model]
		if md == nil {
			return nil, &CheckError{Field: "model", NotFound: true, Err: fmt.Errorf("%q has no observations (models: %d)", model, len(m.st.models))}
		}
		out := &Report{Model: model, K: md.k, WindowSeconds: int64(m.o.Window / time.Second), RetainSeconds: int64(m.o.Retain / time.Second), Slices: []SliceReport{}}
		names := slices.Sorted(maps.Keys(md.slices))
		if q.Slice != "" {
			if md.slices[q.Slice] == nil {
				return nil, &CheckError{Field: "slice", NotFound: true, Err: fmt.Errorf("%q is not a slice of model %q", q.Slice, model)}
			}
			names = []string{q.Slice}
		}
		w := int64(m.o.Window)
		for _, name := range names {
			s := md.slices[name]
			sr := SliceReport{Slice: name, Observed: s.observed, Counted: s.labelled, Windows: []WindowReport{}, Alarm: alarmReport(s)}
			job := pending{total: shareParts(s, &rs)}
			idx := slices.Sorted(maps.Keys(s.windows))
			switch {
			case q.Windows < 0:
				idx = nil
			case q.Windows > 0 && len(idx) > q.Windows:
				idx = idx[len(idx)-q.Windows:]
			}
			for _, i := range idx {
				p := s.windows[i]
				sr.Windows = append(sr.Windows, WindowReport{Start: time.Unix(0, i*w).UTC(), End: time.Unix(0, (i+1)*w).UTC(), Counted: p.rows})
				job.windows = append(job.windows, rs.take(p))
			}
			out.Slices = append(out.Slices, sr)
			todo = append(todo, job)
		}
		return out, nil
	}()
	if err != nil {
		return nil, err
	}
	for i, job := range todo {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sr := &out.Slices[i]
		total, err := merged(ctx, job.total)
		if err != nil {
			return nil, err
		}
		sr.Total = evaluation(total)
		for j, sums := range job.windows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			sr.Windows[j].Evaluation = evaluation(sums)
		}
	}
	return out, nil
}

// Evaluation returns the evaluation of a slice's rows (window: its
// index, or AllRows): what evaluate.Finish gives on its sums, nil when no
// row was counted there. As in ReportContext, the monitor is locked only
// to take the sums.
func (m *Monitor) Evaluation(model, slice string, window int64) (*evaluate.Evaluation, error) {
	var parts []*evaluate.Sums
	var rs readings
	defer func() { m.done(rs) }()
	err := func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		md := m.st.models[model]
		if md == nil || md.slices[slice] == nil {
			return &CheckError{Field: "model", NotFound: true, Err: fmt.Errorf("no slice %q of model %q", slice, model)}
		}
		s := md.slices[slice]
		if window == AllRows {
			parts = shareParts(s, &rs)
		} else if p := s.windows[window]; p != nil && p.sums != nil {
			parts = []*evaluate.Sums{rs.take(p)}
		}
		return nil
	}()
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	sums, err := merged(context.Background(), parts)
	if err != nil {
		return nil, err
	}
	return evaluate.Finish(sums, nil)
}

// testEvaluation, if not nil, is called before each evaluation of a
// report (the tests hold a report there).
var testEvaluation func()

// AllRows is the window of Evaluation that means every row counted.
const AllRows = -1 << 63

// evaluation returns the JSON document of the evaluation of sums, or
// null (no rows), or {"error": ...}.
func evaluation(sums *evaluate.Sums) json.RawMessage {
	if testEvaluation != nil {
		testEvaluation()
	}
	if sums == nil {
		return json.RawMessage("null")
	}
	ev, err := evaluate.Finish(sums, nil)
	var buf bytes.Buffer
	if err == nil {
		err = evaluate.WriteJSON(&buf, ev)
	}
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return b
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

// BinCounters are the running per-bin sums of one model's slice since
// the state began (they never decrease): the top-label bins, and the
// class-wise bins when Options.ClassWise is set. Over any set of rows
// whose counters are summed bin by bin (ranges of time, replicas), the
// binned top-label ECE is
//
//	sum_b |Correct_b - Confidence_b| / sum_b Observations_b,
//
// ece_bin top_label p=1 of those rows (Options.Eval.Bins).
type BinCounters struct {
	Model, Slice string
	// Edges are the bins' edges: bin b is (Edges[b], Edges[b+1]], the
	// first [0, Edges[1]].
	Edges []float64
	// Observations, Confidence and Correct are per bin: the total weight
	// of the rows (their number when unweighted), the weighted sum of
	// their top-label confidence, and the weighted count of those whose
	// top label was right.
	Observations, Confidence, Correct []float64
	// Class holds, per class c, the bins of column c (Correct: the rows
	// of label c).
	Class []ClassBins
	// Observed and Counted are the slice's rows observed and counted.
	Observed, Counted int64
}

// ClassBins are one class's bin counters.
type ClassBins struct {
	Observations, Confidence, Correct []float64
}

// Counters returns every model's and slice's bin counters, sorted by
// model and slice.
func (m *Monitor) Counters() []BinCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []BinCounters
	m.eachSlice(func(model, name string, s *slice) {
		c := BinCounters{Model: model, Slice: name, Edges: s.top.Bins().Edges, Observed: s.observed, Counted: s.labelled}
		c.Observations, c.Confidence, c.Correct = s.top.Totals()
		for _, bs := range s.class {
			var cb ClassBins
			cb.Observations, cb.Confidence, cb.Correct = bs.Totals()
			c.Class = append(c.Class, cb)
		}
		out = append(out, c)
	})
	return out
}

// Stats are the monitor's totals, for its gauges.
type Stats struct {
	LSN        uint64
	Models     int
	Pending    int
	Unmatched  int64 // outcome rows that found no prediction
	Expired    int64 // predictions dropped before their outcome
	Duplicates int64 // records applied twice by request id (skipped)
}

// Stats returns the monitor's totals.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{LSN: m.st.lsn, Models: len(m.st.models), Pending: len(m.st.pending), Unmatched: m.st.unmatched, Expired: m.st.expired, Duplicates: m.st.duplicates}
}
