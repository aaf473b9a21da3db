package commands

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/recal"
)

// autoStreamBytes is the input size past which calib eval streams without
// --stream (the README names it): a set of this size in float64 would take
// several times as much memory.
const autoStreamBytes = 2 << 30

// StreamHeapLimit is the soft limit on the Go heap of a streamed
// evaluation (runtime/debug.SetMemoryLimit) where the environment sets
// none (GOMEMLIMIT): the default metrics' state at K = 100 (the class-wise
// KS cells, 10 MB; ece_variational's samples, up to 12.5 MB, and their
// fit; the canonical cells until they pass their bound) is about 35 MB at
// its peak, and without a limit the collector lets the heap grow to twice
// that. Measured on 10^7 rows, K = 100 (7 NPY shards): 58 MB peak RSS; on
// 1.43 x 10^6 of them, 61 MB with the limit, 103 MB without, 11 % more
// time. A state larger than the limit slows the collector down (it takes
// at most half the CPU), never the answer. The limit is the process's:
// through the C ABI (Python), other Go work of the same process while a
// stream runs shares it, and the last stream to end restores the limit
// the first found.
const StreamHeapLimit = 40 << 20

// heapLimit counts the streamed evaluations running, the first of which
// set the limit, the last restores it (calls through the C ABI share one
// process).
var heapLimit struct {
	sync.Mutex
	running int
	prev    int64
}

// limitHeap sets StreamHeapLimit unless GOMEMLIMIT is set, and returns
// the function that lifts it.
func limitHeap() func() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	heapLimit.Lock()
	defer heapLimit.Unlock()
	if heapLimit.running == 0 {
		heapLimit.prev = debug.SetMemoryLimit(StreamHeapLimit)
	}
	heapLimit.running++
	return func() {
		heapLimit.Lock()
		defer heapLimit.Unlock()
		if heapLimit.running--; heapLimit.running == 0 {
			debug.SetMemoryLimit(heapLimit.prev)
		}
	}
}

// streamFlags are eval's flags of the streamed evaluation.
// streamFlags are eval's flags of the streamed evaluation that are not
// options of evaluate (those, --eval-points, --ks-cells and --max-cells
// included, are evalFlags').
type streamFlags struct {
	on      bool
	rows    int
	skipped []string // files of a shard directory that are not shards, with the reason
}

func (f *streamFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "stream", false, "read PRED in chunks in bounded memory (PRED may be a file, a glob or a directory of shards; automatic for several shards or a file over 2 GiB; --stream=false turns that off): exact sums for the binned metrics, KS and the scores, ece_kde from --eval-points sampled points with an interval")
	fs.IntVar(&f.rows, "rows", 0, "with --stream: rows per chunk (0: about 1 MiB of predictions, 2^17/K rows from 1,024 to 65,536)")
}

// streamOnly returns the flags of a streamed evaluation only: --rows and
// the options of evaluate.StreamOptions alone, in name order.
func streamOnly() []string {
	names := []string{"rows"}
	for _, spec := range evaluate.OptionSpecs() {
		if spec.StreamOnly {
			names = append(names, spec.Name)
		}
	}
	slices.Sort(names)
	return names
}

// decide says whether eval streams PRED (a file, glob or directory) and
// returns its shards when it does.
func (f *streamFlags) decide(cmd *Command, pred string) (bool, []string, error) {
	fs := cmd.Flags()
	if f.rows < 0 {
		return false, nil, usageErrorf("--rows %d: want 0 (the default) or more", f.rows)
	}
	st, err := os.Stat(pred)
	single := err == nil && !st.IsDir()
	off := fs.Changed("stream") && !f.on // --stream=false: never stream
	if single && !f.on && (off || st.Size() <= autoStreamBytes) {
		for _, name := range streamOnly() {
			if fs.Changed(name) {
				return false, nil, usageErrorf("--%s applies to a streamed evaluation: add --stream", name)
			}
		}
		return false, nil, nil
	}
	names, skipped, err := data.ShardsOf(pred)
	if err != nil {
		return false, nil, err
	}
	f.skipped = skipped
	if !f.on && len(names) == 1 && !single {
		// A glob or directory of one file: that file, streamed only past
		// the size (or with --stream).
		if st1, err := os.Stat(names[0]); off || (err == nil && st1.Size() <= autoStreamBytes) {
			return false, names, nil
		}
	}
	if off {
		return false, nil, usageErrorf("%s names %d prediction files: calib eval reads several only as a stream (drop --stream=false)", pred, len(names))
	}
	if !f.on {
		reason := fmt.Sprintf("%d shards", len(names))
		if single {
			reason = fmt.Sprintf("%.1f GiB", float64(st.Size())/(1<<30))
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "calib: streaming %s (%s; see --stream)\n", pred, reason)
	}
	return true, names, nil
}

// pairShards pairs the prediction files names of pred with the labels
// and weights files that --labels and --weights name (each "", one file
// for one prediction file, or a file, glob or directory of one file per
// shard, paired in sorted order as calib-beam's --label-files). Files
// that the labels or weights patterns name are not prediction shards
// (labels .npy files beside NPY shards in one directory).
func pairShards(pred string, names []string, labels, weights string) ([]data.Shard, error) {
	side := map[string]bool{}
	lists := make([][]string, 2)
	for i, pattern := range []string{labels, weights} {
		if pattern == "" {
			continue
		}
		files, err := data.Shards(pattern)
		if err != nil {
			return nil, inputError{err}
		}
		lists[i] = files
		for _, f := range files {
			side[absPath(f)] = true
		}
	}
	var preds []string
	for _, n := range names {
		if !side[absPath(n)] {
			preds = append(preds, n)
		}
	}
	if len(preds) == 0 {
		return nil, usageErrorf("%s: every file it names is a labels or weights file", pred)
	}
	shards := make([]data.Shard, len(preds))
	for i, n := range preds {
		shards[i].File = n
	}
	for i, flag := range []string{"--labels", "--weights"} {
		files := lists[i]
		if files == nil {
			continue
		}
		if len(files) == 1 && len(preds) == 1 {
			files = []string{[]string{labels, weights}[i]} // one file, as named
		}
		if len(files) != len(preds) {
			return nil, usageErrorf("%s names %d file(s) for the %d prediction shards of %s; give one per shard (a glob or a directory; they are paired in sorted order)", flag, len(files), len(preds), pred)
		}
		for j, f := range files {
			if i == 0 {
				shards[j].Labels = f
			} else {
				shards[j].Weights = f
			}
		}
	}
	return shards, nil
}

// absPath is name made absolute and clean (as given when that fails), so
// that a file named by a relative and an absolute path is one file.
func absPath(name string) string {
	if a, err := filepath.Abs(name); err == nil {
		return a
	}
	return filepath.Clean(name)
}

// streamOptions are the options of a streamed evaluation, checked (by
// evaluate.StreamOptions.Settle) before any data is read: an option no
// metric of the stream reads, or that its other options leave unread, is
// refused (with the stream's metrics: its defaults where none are named).
func (f *evalFlags) streamOptions() (evaluate.StreamOptions, error) {
	so, err := f.flags.StreamOptions(f.given)
	if err != nil {
		return so, optionError("", err)
	}
	return so, nil
}

// stream evaluates the shards names of args[0] in two passes of chunks.
func (f *evalFlags) stream(cmd *Command, in *inputFlags, sf *streamFlags, args, names []string) (*evaluate.Evaluation, error) {
	start, prov := time.Now(), newProvenance(cmd, args)
	so, err := f.streamOptions()
	if err != nil {
		return nil, err
	}
	shards, err := pairShards(args[0], names, in.o.Labels, in.o.Weights)
	if err != nil {
		return nil, err
	}
	var transform func(*data.Set) (*data.Set, error)
	if f.calibrator != "" {
		c, err := recal.LoadFile(f.calibrator)
		if err != nil {
			return nil, err
		}
		transform = func(s *data.Set) (*data.Set, error) { return recal.Apply(c, s) }
		prov.Mapping = &data.Mapping{File: f.calibrator, Method: c.Info().Method}
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.progress)
	so.Progress = ui
	defer limitHeap()()
	out, err := evaluate.Stream(cmd.Context(), data.ShardFiles(shards, in.o, sf.rows, transform), so)
	ui.wait()
	if errors.Is(err, data.ErrNoLabels) {
		err = fmt.Errorf("%w (--labels FILES: one labels file per shard, a glob or a directory, paired with the shards in sorted order)", err)
	}
	if err != nil {
		return nil, err
	}
	if len(sf.skipped) > 0 {
		out.Warnings = append(out.Warnings, &evaluate.Warning{Kind: evaluate.SkippedInput,
			Text: fmt.Sprintf("%s: skipped %d file(s) that are not shards: %s", args[0], len(sf.skipped), strings.Join(sf.skipped, "; "))})
	}
	out.File = args[0]
	// One input: the stream as named (a file, glob or directory), its
	// rows over every shard.
	prov.Inputs = append(prov.Inputs, data.Input{File: args[0], Labels: in.o.Labels, Kind: out.Input, N: out.N, K: out.K,
		Renormalized: out.Renormalized, Rounded: out.Rounded, WeightSum: out.WeightSum})
	out.Seconds, out.Provenance = time.Since(start).Seconds(), prov
	if prov.Mapping != nil {
		out.Calibrated = prov.Mapping.String()
	}
	return out, nil
}
