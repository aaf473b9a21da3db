// Command calib-beam evaluates a sharded prediction set on an Apache Beam
// runner and writes the `calib eval --json` document: the numbers of
// `calib eval --stream` over the same shards (see package
// github.com/calib-dev/calib/beam).
//
// It runs in this process on Beam's Prism runner by default:
//
//	calib-beam --input 'shards/*.parquet' --output eval.json
//
// and on a cluster through Beam's own flags (--runner, --endpoint,
// --environment_type, --project, ...; see beam/README.md). Its evaluation
// flags and their defaults are those of calib eval --stream.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/calib-dev/calib/atomicfile"
	calibbeam "github.com/calib-dev/calib/beam"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
)

// config holds the flags of calib-beam (Beam's own flags live in Beam's
// packages, on the same flag.CommandLine).
type config struct {
	input, labels, weights, format, output string
	logits, renormalize                    bool
	tolerance                              float64
	eval                                   *evalflag.Flags // the options of a stream (evaluate.OptionSpecs)
	rows, blocks                           int
	verbose                                bool
}

// register defines the flags on fs, with calib eval's defaults.
func (c *config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.input, "input", "", "the prediction `files`: a file, a glob or a directory of shards (csv, jsonl, npy, parquet), or a name with a scheme (gs://bucket/preds-*.parquet)")
	fs.StringVar(&c.labels, "label-files", "", "labels `files` (.npy or text), one per prediction file, paired in sorted order (a file, glob or directory)")
	fs.StringVar(&c.weights, "weight-files", "", "sample-weights `files`, one per prediction file, paired in sorted order")
	fs.StringVar(&c.format, "format", "", "input `format`: "+strings.Join(data.Formats(), ", ")+" (default: by extension)")
	c.eval = evalflag.Register(fs, evalflag.Beam)
	fs.BoolVar(&c.logits, "logits", false, "the prediction columns are logits (softmax; one column: sigmoid)")
	fs.BoolVar(&c.renormalize, "renormalize", false, "divide rows whose sum is off by more than the tolerance by their sum instead of failing")
	fs.Float64Var(&c.tolerance, "tolerance", data.DefaultTolerance, "largest accepted |row sum - 1|")
	fs.StringVar(&c.output, "output", "-", "where the last stage writes the JSON document: a `file` (local, or gs://... on a cluster), or - for stdout (a runner whose workers run in this process only)")
	fs.IntVar(&c.blocks, "eval-blocks", 1, "the block-pair plan: cut the evaluation points into this many blocks, each (block, shard) pair a work item of its own (for the exact estimates, --eval-points all, at moderate n); the document is the same")
	fs.IntVar(&c.rows, "rows", data.DefaultChunkRows, "rows per batch")
	fs.BoolVar(&c.verbose, "verbose", false, "show the runner's log on stderr and, on a failure in the pipeline, the runner's whole report (by default: one line naming the shard and row)")
}

// usageError is a bad flag (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// options checks the flags, before any file is read, and returns the
// pipeline's options; set lists the flags given.
func (c *config) options(set map[string]bool) (calibbeam.Options, error) {
	var o calibbeam.Options
	if c.input == "" {
		return o, usageErrorf("--input is required: a file, a glob or a directory of prediction files")
	}
	if c.output == "" {
		return o, usageErrorf("--output is empty: give a file, or - for stdout")
	}
	if c.rows < 1 {
		return o, usageErrorf("--rows %d: want at least 1", c.rows)
	}
	if !(c.tolerance > 0 && c.tolerance < 1) {
		return o, usageErrorf("--tolerance %v: want a number in (0, 1)", c.tolerance)
	}
	if c.logits && (set["tolerance"] || set["renormalize"]) {
		return o, usageErrorf("--tolerance and --renormalize apply to probabilities (their row sums), not to --logits")
	}
	if c.blocks < 1 || c.blocks > calibbeam.MaxEvalBlocks {
		return o, usageErrorf("--eval-blocks %d: want 1 to %d", c.blocks, calibbeam.MaxEvalBlocks)
	}
	if set["format"] && !slices.Contains(data.Formats(), c.format) {
		return o, usageErrorf("--format %q: valid formats are %s", c.format, strings.Join(data.Formats(), ", "))
	}
	// The stream's options, each checked by its declaration, then
	// together (evaluate.StreamOptions.Settle: --mode alone means ece_kde
	// only, an option no metric reads is refused), as in calib eval.
	given := func(name string) bool { return set[name] }
	var err error
	if o.Stream, err = c.eval.StreamOptions(given); err != nil {
		return o, usageErrorf("%s", evalflag.FlagMessage(err))
	}
	// Each block needs an evaluation point (with --eval-points all, the
	// rows: checked against the first pass), and only the kernel
	// estimators have them.
	if points := cmp.Or(o.Stream.EvalPoints, evaluate.DefaultEvalPoints); points != evaluate.AllPoints && c.blocks > int(points) {
		return o, usageErrorf("--eval-blocks %d: more blocks than the %d evaluation points (--eval-points)", c.blocks, points)
	}
	ms := o.Stream.Metrics
	if ms == nil {
		ms = evaluate.DefaultMetrics
	}
	if spec, _ := evaluate.LookupOption("eval-points"); set["eval-blocks"] && !slices.ContainsFunc(spec.Metrics, ms.Has) {
		return o, usageErrorf("--eval-blocks applies to %s, and none is computed (metrics: %s): add one to the metrics or leave the option out",
			strings.ReplaceAll(spec.Metrics.String(), ",", ", "), ms)
	}
	o.Data = data.Options{Format: c.format, Logits: c.logits, Renormalize: c.renormalize, Tolerance: c.tolerance}
	o.Rows, o.File, o.Output, o.EvalBlocks = c.rows, c.input, c.output, c.blocks
	return o, nil
}

// inProcess reports whether the workers run in this process (Prism
// started here, the default, or --environment_type=LOOPBACK), so that they
// can write a file this process reads.
func inProcess() bool {
	env := strings.ToLower(*jobopts.EnvironmentType)
	if env == "loopback" {
		return true
	}
	switch strings.ToLower(*runners.Runner) {
	case "", "prism", "prismrunner":
		return env == "" && *jobopts.Endpoint == ""
	case "direct", "directrunner":
		return true
	}
	return false
}

// run evaluates the shards of c on the runner of --runner and writes the
// document to c.output (stdout for -).
func run(ctx context.Context, c *config, set map[string]bool, stdout, stderr io.Writer) error {
	o, err := c.options(set)
	if err != nil {
		return err
	}
	toStdout := o.Output == "-"
	switch {
	case toStdout && !inProcess():
		return usageErrorf("--output -: the document is written by a worker of the cluster; give a file every worker can write and this machine can read (gs://bucket/eval.json)")
	case toStdout:
		dir, err := os.MkdirTemp("", "calib-beam-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.Output = filepath.Join(dir, "eval.json")
	case !strings.Contains(o.Output, "://") && inProcess():
		if err := atomicfile.Check(o.Output); err != nil {
			return usageErrorf("--output %v", err)
		}
	}
	shards, err := calibbeam.Shards(ctx, c.input, c.labels, c.weights)
	if err != nil {
		return err
	}
	// The shards and the options against them, before the pipeline: an
	// error here is one line.
	checked, err := calibbeam.Check(ctx, shards, o)
	if err != nil {
		return err
	}
	if err := evalflag.CheckSet(o.Stream.Options, checked.First); err != nil {
		return usageErrorf("%s", evalflag.FlagMessage(err))
	}
	if len(checked.Empty) > 0 {
		fmt.Fprintf(stderr, "calib-beam: skipped %d shard(s) without rows: %s\n", len(checked.Empty), strings.Join(checked.Empty, ", "))
	}
	p, s := beam.NewPipelineWithRoot()
	if _, err := calibbeam.Build(s, checked.Shards, o); err != nil {
		return err
	}
	if err := beamx.Run(ctx, p); err != nil {
		return fmt.Errorf("running the pipeline: %w", err)
	}
	if toStdout {
		doc, err := os.ReadFile(o.Output)
		if err != nil {
			return err
		}
		_, err = stdout.Write(doc)
		return err
	}
	return nil
}

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs calib-beam with the arguments args (without the program
// name) and returns the exit status: 0, 1 (a failure of the runner or the
// machine), 2 (bad flags, or data that the evaluation refuses: one line
// naming the shard and row), 130 (interrupted).
func Main(args []string, stdout, stderr io.Writer) int {
	var c config
	c.register(flag.CommandLine)
	flag.CommandLine.Init("calib-beam", flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard) // a bad flag: one line, not the ~100 flags of Beam's runners
	if err := flag.CommandLine.Parse(args); err != nil {
		if err == flag.ErrHelp {
			flag.CommandLine.SetOutput(stdout)
			flag.CommandLine.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "calib-beam: %v (calib-beam -h lists the flags)\n", err)
		return 2
	}
	flag.CommandLine.SetOutput(stderr)
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(stderr, "calib-beam: %q: calib-beam takes flags only (the predictions are --input)\n", flag.CommandLine.Arg(0))
		return 2
	}
	// On a cluster's worker, Init runs the worker and does not return:
	// nothing before it may need the evaluation flags.
	beam.Init()
	if !c.verbose { // the runner's log (Prism's slog lines) only with --verbose
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := beamFlagsMisused(set); err != nil {
		fmt.Fprintln(stderr, "calib-beam:", err)
		return 2
	}
	if err := knownRunner(*runners.Runner); err != nil {
		fmt.Fprintln(stderr, "calib-beam:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, &c, set, stdout, stderr)
	interrupted := ctx.Err() != nil // before stop, which cancels ctx
	stop()
	if interrupted {
		fmt.Fprintln(stderr, "calib-beam: interrupted")
		return 130
	}
	if err == nil {
		return 0
	}
	if msg, status, ok := calibbeam.PipelineError(err); ok {
		if c.verbose {
			fmt.Fprintln(stderr, "calib-beam:", err)
		}
		fmt.Fprintln(stderr, "calib-beam:", msg)
		return status
	}
	msg := calibbeam.Reason(err)
	if errors.Is(err, evaluate.ErrOptions) { // an option the data refuse (--ks-r above K): the flag's name
		msg = evalflag.FlagMessage(err)
	}
	fmt.Fprintln(stderr, "calib-beam:", msg)
	var ue *usageError
	if errors.As(err, &ue) || calibbeam.DataFault(err) {
		return 2
	}
	return 1
}

// registeredRunners are the names Beam's runners register under, those
// that beamx (which calib-beam runs through) imports: Beam exits the
// process with a log line on any other name, which calib-beam shows only
// with --verbose. TestRegisteredRunners checks the list against Beam's
// registry.
var registeredRunners = []string{"DataflowRunner", "DirectRunner", "FlinkRunner", "PortableRunner", "PrismRunner", "SparkRunner",
	"dataflow", "direct", "dot", "flink", "portable", "prism", "spark", "universal"}

// knownRunner refuses a --runner that Beam has not registered, naming
// those it has ("" is beamx's default).
func knownRunner(name string) error {
	if name == "" || slices.Contains(registeredRunners, name) {
		return nil
	}
	return fmt.Errorf("--runner %q: not a runner (registered: %s)", name, strings.Join(registeredRunners, ", "))
}

// beamFlagsMisused refuses Beam's own flags given where calib-beam's were
// meant: --labels is Dataflow's job labels (JSON), not the labels files
// (--label-files).
func beamFlagsMisused(set map[string]bool) error {
	if set["async"] && flag.Lookup("async").Value.String() == "true" {
		return usageErrorf("--async: calib-beam waits for the pipeline, whose last stage writes the document (--output); run without --async")
	}
	if set["dry_run"] && flag.Lookup("dry_run").Value.String() == "true" {
		return usageErrorf("--dry_run: the runners calib-beam runs through do not honour it (the job would run); calib-beam checks its flags and the first row of every shard before the pipeline starts anyway")
	}
	if !set["labels"] {
		return nil
	}
	v := flag.Lookup("labels").Value.String()
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return nil // Dataflow's job labels
	}
	return usageErrorf("--labels %q is Beam's flag for Dataflow job labels (JSON); the labels files of the shards are --label-files", v)
}
