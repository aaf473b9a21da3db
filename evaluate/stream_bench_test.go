package evaluate

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/calib-dev/calib/data"
)

// synthSource is a streamed set generated on the fly: n rows of K = k
// logits in batches of rows, batch b drawn from its own seed (the same rows
// in every pass), CIFAR-like: logits 3 z with the true class raised by 6,
// the label replaced by a uniform one for 10 % of the rows.
type synthSource struct{ n, k, rows int }

func (s *synthSource) Open() (data.Batches, error) { return &synthBatches{src: s}, nil }

type synthBatches struct {
	src  *synthSource
	next int
}

func (b *synthBatches) Close() error { return nil }

func (b *synthBatches) Next() (*data.Batch, error) {
	src := b.src
	if b.next >= src.n {
		return nil, io.EOF
	}
	i0 := b.next
	n := min(src.rows, src.n-i0)
	b.next += n
	logits, labels := synthLogits(rand.New(rand.NewPCG(uint64(i0), 18)), n, src.k, 6, 0.1)
	s, err := data.New(logits, src.k, labels, true, data.Options{})
	if err != nil {
		return nil, err
	}
	s.File = "synth"
	return &data.Batch{Set: s, Source: "synth", Offset: int64(i0)}, nil
}

func envInt(name string, def int) int {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return int(v)
	}
	return def
}

// BenchmarkStream streams a synthetic set generated on the fly:
// CALIB_STREAM_N rows (default 200,000) of CALIB_STREAM_K classes (default
// 10) in batches of about 1 MiB of predictions (as calib eval --stream
// reads a file, data.DefaultChunkBytes; 65,536 rows at most),
// CALIB_STREAM_M evaluation points
// (default DefaultEvalPoints; 0 leaves ece_kde out), CALIB_STREAM_H a fixed
// bandwidth (default: the LOO grid), CALIB_STREAM_METRICS the metrics
// (comma-separated; default all the stream has), CALIB_STREAM_BINNING and
// CALIB_STREAM_RULE the bins (equal_mass, doane: the score sketches and
// the second pass), CALIB_STREAM_MAX_CELLS StreamOptions.MaxCells. It reports rows/s of the whole
// evaluation (both passes). Run it with -benchtime 1x under
// /usr/bin/time -v for the peak memory.
func BenchmarkStream(b *testing.B) {
	n, m := envInt("CALIB_STREAM_N", 200_000), envInt("CALIB_STREAM_M", int(DefaultEvalPoints))
	h, _ := strconv.ParseFloat(os.Getenv("CALIB_STREAM_H"), 64)
	o := StreamOptions{Options: Options{Bandwidth: Bandwidth(h)}, EvalPoints: EvalPoints(m)}
	if m == 0 {
		o.Metrics = MetricSet{"ece_bin", "mce", "ece_bin_debiased", "ks", "brier", "nll", "accuracy", "confidence"}
	}
	if v := os.Getenv("CALIB_STREAM_METRICS"); v != "" {
		_ = o.Metrics.UnmarshalText([]byte(v))
	}
	if v := os.Getenv("CALIB_STREAM_BINNING"); v != "" {
		if err := o.Bins.Binning.UnmarshalText([]byte(v)); err != nil {
			b.Fatal(err)
		}
	}
	if v := os.Getenv("CALIB_STREAM_RULE"); v != "" {
		if err := o.Bins.Rule.UnmarshalText([]byte(v)); err != nil {
			b.Fatal(err)
		}
	}
	o.MaxCells = envInt("CALIB_STREAM_MAX_CELLS", 0)
	k := envInt("CALIB_STREAM_K", 10)
	src := &synthSource{n: n, k: k, rows: min(1<<16, max(1<<10, data.DefaultChunkBytes/(8*k)))}
	var ev *Evaluation
	for b.Loop() {
		var err error
		if ev, err = Stream(context.Background(), src, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	for _, e := range ev.Results {
		if e.Metric == "ece_kde" || e.Metric == "ece_variational" || (e.Metric == "ece_bin" && e.Notion != "class_wise") {
			if e.Error != "" {
				b.Log(key(e) + ": " + e.Error)
				continue
			}
			line := key(e) + " = " + strconv.FormatFloat(float64(*e.Value), 'g', 6, 64)
			if len(e.Interval) == 2 {
				line += " [" + strconv.FormatFloat(float64(e.Interval[0]), 'g', 6, 64) + ", " + strconv.FormatFloat(float64(e.Interval[1]), 'g', 6, 64) + "]"
				line += " width/value " + strconv.FormatFloat(float64(e.Interval[1]-e.Interval[0])/math.Max(1e-300, float64(*e.Value)), 'f', 4, 64)
			}
			if e.Bandwidth != nil {
				line += " h = " + strconv.FormatFloat(*e.Bandwidth, 'g', 4, 64)
			}
			if e.Bins != nil {
				line += " bins " + strconv.Itoa(*e.Bins)
			}
			for _, w := range e.Warnings {
				line += "; " + w.Error()
			}
			b.Log(line)
		}
	}
}
