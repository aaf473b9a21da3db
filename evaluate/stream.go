package evaluate

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/smooth"
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
// Both have Add (a batch) and Merge (another shard's state), which return
// an error for a batch or state that does not fit, and a JSON form in the
// one envelope of calib's states ({"kind": "evaluate.Sums", "version": 2,
// ...}, package internal/state) with its promise: a released calib reads
// the states any earlier released calib wrote (from version 2). Finish
// turns them into the Evaluation that Evaluate would
// give, with the kernel estimates' sampling intervals. Stream runs both
// passes over a Source that can be read twice.

// EvalPoints is the number m of evaluation points of a stream's kernel
// estimators (StreamOptions.EvalPoints): a uniform sample of m rows; 0
// means DefaultEvalPoints, AllPoints every row. Its text form is the
// number, or "all"; "" is 0.
type EvalPoints int

const (
	// DefaultEvalPoints is the number of evaluation points that
	// EvalPoints 0 stands for.
	DefaultEvalPoints EvalPoints = 2000
	// AllPoints evaluates the kernel estimators at every row: the exact
	// plug-in estimates (memory O(n K x grid), refused past MaxAllPoints
	// rows).
	AllPoints EvalPoints = -1
	// MaxAllPoints is the largest number of rows AllPoints accepts, and
	// the largest number of evaluation points.
	MaxAllPoints EvalPoints = 200_000
)

// String returns the number, "all" for AllPoints, or "" for 0.
func (m EvalPoints) String() string {
	switch m {
	case 0:
		return ""
	case AllPoints:
		return "all"
	}
	return strconv.Itoa(int(m))
}

// MarshalText implements encoding.TextMarshaler.
func (m EvalPoints) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "" is 0 (the
// default), "all" AllPoints, else a number >= 1 (surrounding spaces
// ignored). Its error is an OptionError of "eval-points": `eval-points
// "x": want a number >= 1, or all`.
func (m *EvalPoints) UnmarshalText(b []byte) error {
	switch v := strings.TrimSpace(string(b)); v {
	case "":
		*m = 0
	case "all":
		*m = AllPoints
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return optionError("eval-points", "eval-points %q: want a number >= 1, or all", string(b))
		}
		*m = EvalPoints(n)
	}
	return nil
}

// StreamOptions configures a streamed evaluation: Options (Metrics,
// Strict, Mode, P, Bandwidth, ClassMean, Bins, KS, MMCE, Level, Seed,
// Workers, Progress; the bootstrap, debiasing and witness options are
// refused) and the stream's own.
type StreamOptions struct {
	Options
	// EvalPoints is the number m of evaluation points of ece_kde (a
	// uniform sample of the rows); 0 means DefaultEvalPoints, AllPoints
	// every row.
	EvalPoints EvalPoints
	// Grid lists the candidate bandwidths of the leave-one-out choice
	// (nil: kde.StreamGrid()); with Options.Bandwidth set it is not used.
	Grid []float64
	// KSCells is the number of score cells of KS (0:
	// metric.DefaultKSCells).
	KSCells int
	// MaxCells bounds the occupied cells of the canonical binned metrics
	// (each holds 2K + 2 numbers); 0 means maxCellFloats / (2K + 2). Past
	// it the canonical entries of ece_bin and mce are errors and the
	// other entries are unaffected.
	MaxCells int
}

// maxCellFloats is the default budget of the canonical cells of a stream:
// 2^20 numbers (47,662 cells at K = 10, about 296 bytes of heap each: 14
// MB), so that a stream stays under 64 MB with the default options at any
// n. Predictions spread over more cells than that hold too few samples per
// cell for the canonical binned values to mean anything (the sparse-cell
// warning); a larger MaxCells computes them, at about (2K + 2) x 8 x 1.7
// bytes a cell.
const maxCellFloats = 1 << 20

// cellBytes is about the heap a canonical cell of K classes takes (296
// bytes measured at K = 10: its 2K + 2 sums, the key, the map entry).
func cellBytes(k int) int { return (2*k + 2) * 8 * 17 / 10 }

// streamConfig is StreamOptions resolved: what Sums carries to its merge
// partners and to Finish.
type streamConfig struct {
	Metrics []Metric `json:"metrics"`
	// Defaulted says Metrics are the defaults: the canonical ece_bin is
	// then left out where Evaluate's default leaves it out, and where its
	// cells pass the memory bound.
	Defaulted bool `json:"defaulted,omitempty"`
	// A metric's own configuration (metricDef.configure) is declared in
	// its file and embedded here; the JSON form is flat, in this order.
	smeceConfig
	Mode      string            `json:"mode"`
	P         []float64         `json:"p"`
	Bandwidth float64           `json:"bandwidth,omitempty"`
	Grid      []float64         `json:"grid"`
	ClassMean bool              `json:"class_mean,omitempty"`
	Bins      metric.BinOptions `json:"bins"`
	ksConfig
	mmceConfig
	M        int     `json:"m"`             // evaluation points
	All      bool    `json:"all,omitempty"` // every row an evaluation point (M is then MaxAllPoints)
	Strict   bool    `json:"strict,omitempty"`
	Level    float64 `json:"level"`
	Seed     uint64  `json:"seed"`
	MaxCells int     `json:"max_cells,omitempty"`
	variationalConfig
	witnessConfig
}

// resolve checks the options of a stream, before any data is read.
func (o StreamOptions) resolve() (*streamConfig, error) {
	if err := o.checkStreamable(); err != nil {
		return nil, err
	}
	if err := o.Options.checkMetrics(); err != nil {
		return nil, err
	}
	// The mode's names as Evaluate checks them, before its text (which
	// the configuration holds) could read a name such as "all" otherwise.
	if _, _, err := o.Mode.Resolve(nil); err != nil {
		return nil, err
	}
	c := &streamConfig{Mode: modeText(o.Mode), P: o.P, Bandwidth: float64(o.Bandwidth), ClassMean: o.ClassMean, Bins: o.Bins, MaxCells: o.MaxCells, M: int(o.EvalPoints), Level: o.Level, Seed: o.seed(), Strict: o.Strict}
	if err := c.setMetrics(o.Metrics); err != nil {
		return nil, err
	}
	// The checks of Options.resolve that need no data.
	base, err := Options{P: o.P, Bandwidth: o.Bandwidth, KS: o.KS, Level: o.Level, SmECE: o.SmECE, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical}}, Metrics: MetricSet{Accuracy}}.resolve(&data.Set{})
	if err != nil {
		return nil, err
	}
	c.P, c.Level = base.ps, base.boot.Level
	if c.Bins.Bins == 0 {
		c.Bins.Bins = metric.DefaultBins
	}
	if _, err := metric.NewBinSums(metric.BinOptions{Bins: c.Bins.Bins}); err != nil {
		return nil, optionError("bins", "%v", err)
	}
	switch {
	case c.M == 0:
		c.M = int(DefaultEvalPoints)
	case c.M == int(AllPoints):
		c.M, c.All = int(MaxAllPoints), true
	}
	if c.Grid = o.Grid; c.Grid == nil {
		c.Grid = kde.StreamGrid()
	}
	if c.Bandwidth > 0 {
		c.Grid = []float64{c.Bandwidth}
	}
	// Each metric's own configuration, every metric's (a state holds its
	// defaults whatever the metrics), in the table's order.
	for _, d := range metricTable {
		if d.configure == nil {
			continue
		}
		if err := d.configure(c, o); err != nil {
			return nil, err
		}
	}
	for i, h := range c.Grid {
		if !(h > 0) || math.IsInf(h, 0) || (i > 0 && !(h > c.Grid[i-1])) {
			return nil, optionError("grid", "bandwidth grid %v: want increasing positive numbers", c.Grid)
		}
	}
	return c, nil
}

// checkStreamable refuses the options that need the whole set in memory
// and those out of a stream's range.
func (o StreamOptions) checkStreamable() error {
	switch {
	case o.CI || o.CIExact:
		return optionError("ci", "bootstrap intervals need the whole set in memory; a streamed evaluation gives the kernel estimates' sampling intervals and the KS bounds instead")
	case o.Debias:
		return optionError("debias", "the debiased estimators are not available in a streamed evaluation")
	case o.Exact:
		return optionError("exact", "the exact O(n^2) sweeps need the set in memory; a streamed evaluation sums kernels at its sampled points (--eval-points all: every row)")
	case o.PValues:
		return optionError("p-values", "p-values redraw every label from the predictions, which needs the whole set in memory; run calib eval or calib test without --stream")
	case o.Objective != kde.LOO:
		return optionError("bandwidth-objective", "a streamed evaluation chooses the bandwidth by the LOO objective only")
	case o.MaxCells < 0:
		return optionError("max-cells", "%d canonical cells: want a positive number, or 0 for the default", o.MaxCells)
	case o.EvalPoints < AllPoints || o.EvalPoints > MaxAllPoints:
		return optionError("eval-points", "%d evaluation points: want a number from 1 to %d, or all", o.EvalPoints, MaxAllPoints)
	case o.SmECE.Convention != smooth.Relplot:
		return optionError("convention", "a streamed evaluation computes relplot 1.0.3's smece (its grids are sums); relplot 1.0.1's grid follows its search and needs the set in memory")
	case o.Convention != "" && o.Convention != convention.Calib:
		return optionError("convention", "a streamed evaluation computes calib's binned entries only; other libraries' conventions (%s) need the set in memory", o.Convention)
	}
	return nil
}

// setMetrics sets the stream's metrics to ms (nil: the streamed
// defaults), each once, refusing those a stream cannot compute.
func (c *streamConfig) setMetrics(ms MetricSet) error {
	if ms == nil {
		c.Metrics, c.Defaulted = slices.Clone(streamMetrics), true
	}
	for _, m := range ms {
		if !slices.Contains(Metrics, m) {
			return optionError("metrics", "unknown metric %q (valid: %s)", m, Metrics.words())
		}
		if !slices.Contains(streamable, m) {
			return optionError("metrics", "%s is not available in a streamed evaluation (streamed: %s)", m, streamable.words())
		}
		if !slices.Contains(c.Metrics, m) {
			c.Metrics = append(c.Metrics, m)
		}
	}
	if len(c.Metrics) == 0 {
		return optionError("metrics", "no metric given")
	}
	return nil
}

// modeText is the stream configuration's form of a mode: "" for the zero
// value, else its text.
func modeText(ns NotionSet) string {
	if ns.IsZero() {
		return ""
	}
	return ns.String()
}

// streamNotions is NotionSet.Resolve for a stream, whose configuration
// holds the mode as text: "all" (or "") means canonical and top_label
// (binary and top_label for one-column input) whatever K, since marginal
// costs K times canonical at every one of the n rows; marginal is there
// when asked for.
func streamNotions(mode string, k int, binary bool) ([]kde.Notion, string, error) {
	var ns NotionSet
	if err := ns.UnmarshalText([]byte(mode)); err != nil {
		return nil, "", err
	}
	if !ns.asksAll() {
		return ns.Resolve(&data.Set{K: k, Binary: binary})
	}
	all := []kde.Notion{kde.Canonical, kde.TopLabel}
	note := "all = canonical, top_label (streamed: class_wise costs K times canonical at every row; ask for it with --mode class_wise)"
	if binary {
		all = []kde.Notion{kde.Binary, kde.TopLabel}
		note = "all = binary, top_label (one-column input)"
	}
	if extra := (NotionSet{Notions: ns.Notions}); !extra.IsZero() {
		ex, _, err := extra.Resolve(&data.Set{K: k, Binary: binary})
		if err != nil {
			return nil, "", err
		}
		for _, n := range ex {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
		note = fmt.Sprintf("all = %s, top_label, and %s as named (streamed)", all[0], extra)
	}
	return all, note, nil
}

// has reports whether the configuration has the metric m.
func (c *streamConfig) has(m Metric) bool { return slices.Contains(c.Metrics, m) }

// Stream evaluates the streamed set src in two passes (one without
// ece_kde): the first adds every batch to the Sums (and draws the
// evaluation points), the second adds every batch to the KernelSums. The
// batches are added in the order the source gives them, so a source that
// gives them in a fixed order gives bit-identical results for any
// o.Workers. o.Progress, if set, is told of each pass ("pass 1 of 2:
// sums") with a step per batch.
func Stream(ctx context.Context, src data.Source, o StreamOptions) (*Evaluation, error) {
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
	pass := func(i int, name string, add func(b *data.Batch) error) error {
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
	if s.st.N == 0 {
		if sk, ok := src.(interface{ Skipped() []string }); ok && len(sk.Skipped()) > 0 {
			return nil, &data.StreamError{Err: fmt.Errorf("%w: every shard is without rows (%s)", data.ErrEmpty, strings.Join(sk.Skipped(), ", "))}
		}
		return nil, &data.StreamError{Err: data.ErrEmpty}
	}
	var ks *KernelSums
	if passes == 2 {
		// s's samples are not read again: the fits may reuse their memory.
		if ks, err = s.kernelSumsFitted(ctx, 0, 1, true); err != nil {
			return nil, err
		}
		if err := pass(2, "kernel sums", func(b *data.Batch) error { return ks.Add(ctx, b, o.Workers) }); err != nil {
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

// skippedWarning is the warning of a stream whose source skipped shards.
func skippedWarning(names []string) error {
	base := make([]string, len(names))
	for i, n := range names {
		base[i] = filepath.Base(n)
	}
	return warn(SkippedInput, fmt.Sprintf("skipped %d shard(s) without rows: %s", len(names), strings.Join(base, ", ")))
}
