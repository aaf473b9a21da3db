package commands

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/monitor"
	"github.com/calib-dev/calib/serve"
)

// minTokenBytes is the shortest bearer token --token-file may hold.
const minTokenBytes = 16

func newServeCmd() *Command {
	var o serve.Options
	var lo serve.ListenOptions
	var tokenFile string
	var maxBodyMiB int
	var mf monitorFlags
	cmd := command("serve --maps DIR [--data STATE_DIR]", "Apply calibration maps over HTTP (calib's /v1 API and the Open Inference Protocol v2) and monitor calibration live, with Prometheus metrics", exactArgs(0), func(cmd *Command, args []string) error {
		if o.MapsDir == "" && mf.dir == "" {
			return usageErrorf("--maps DIR is required (a directory of NAME.json maps written by calib fit), or --data STATE_DIR to monitor only")
		}
		so, err := mf.options(cmd.Flags())
		if err != nil {
			return err
		}
		if (lo.TLSCert == "") != (lo.TLSKey == "") {
			return usageErrorf("--tls-cert and --tls-key: give both or neither")
		}
		if lo.ClientCA != "" && lo.TLSCert == "" {
			return usageErrorf("--tls-client-ca needs TLS: give --tls-cert and --tls-key")
		}
		if tokenFile != "" {
			b, err := os.ReadFile(tokenFile)
			if err != nil {
				return usageErrorf("--token-file: %v", err)
			}
			if o.Token = bytes.TrimSpace(b); len(o.Token) < minTokenBytes {
				return usageErrorf("--token-file %s: the token has %d bytes; want at least %d (a random one: head -c 32 /dev/urandom | base64)", tokenFile, len(o.Token), minTokenBytes)
			}
		}
		if err := serve.CheckExposure(lo.Addr, tokenFile != "", lo.ClientCA != ""); err != nil {
			return usageErrorf("--addr %s", pkgerr.Reason(err))
		}
		if o.ReportTimeout <= 0 {
			return usageErrorf("--report-timeout %v: want a positive duration", o.ReportTimeout)
		}
		o.MaxBodyBytes = int64(maxBodyMiB) << 20
		stderr := cmd.ErrOrStderr()
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		if mf.dir != "" {
			so.Monitor.OnAlarm = func(f monitor.Fired) {
				what := "the model is not calibrated (P(this alarm | calibrated) <= alpha)"
				if f.Layer == "change" {
					what = "the recent rows are miscalibrated (if calibrated, false alarms at most once per ARL rows on average)"
				}
				o.Logger.Warn("calibration alarm", "model", f.Model, "slice", f.Slice, "layer", f.Layer, "meaning", what,
					"test_log_evidence", f.Evidence.Test, "change_log_evidence", f.Evidence.Change, "rows", f.Evidence.Rows)
			}
			so.Snapshotted = func(n int, err error) {
				if err != nil {
					o.Logger.Error("snapshot failed", "dir", mf.dir, "error", err)
				}
			}
			so.Logger = o.Logger
			if mf.repair {
				rep, err := monitor.Repair(mf.dir, so)
				if err != nil {
					return inputError{fmt.Errorf("--data %s --repair: %w", mf.dir, err)}
				}
				writeRepair(stderr, mf.dir, rep)
			}
			st, err := monitor.Open(mf.dir, so)
			if err != nil {
				return inputError{fmt.Errorf("--data %s: %w", mf.dir, err)}
			}
			defer func() {
				if err := st.Close(); err != nil {
					o.Logger.Error("state not saved", "dir", mf.dir, "error", err)
				}
			}()
			o.Store = st
		}
		s, err := serve.New(o)
		if err != nil {
			return inputError{err}
		}
		// SIGTERM drains the requests in flight, then exits 0; SIGHUP
		// reloads the maps; Ctrl-C stops at once.
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
		defer stop()
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					s.Reload()
				}
			}
		}()
		scheme := "http"
		if lo.TLSCert != "" {
			scheme = "https"
		}
		err = s.Serve(ctx, lo, func(a net.Addr) {
			maps := strings.Join(s.Maps().Names(), ", ")
			if maps == "" {
				maps = "none"
			}
			mon := "off"
			if o.Store != nil {
				mon = fmt.Sprintf("%s, record %d", mf.dir, o.Store.Monitor().LSN())
			}
			fmt.Fprintf(stderr, "calib serve: listening on %s://%s (maps: %s; monitors: %s)\n", scheme, a, maps, mon)
		})
		if err == nil {
			fmt.Fprintln(stderr, "calib serve: stopped")
		}
		return err
	})
	fs := cmd.Flags()
	fs.StringVar(&o.MapsDir, "maps", "", "the `DIR` of maps (NAME.json, written by calib fit), each served as NAME")
	fs.StringVar(&lo.Addr, "addr", "127.0.0.1:8080", "`host:port` to listen on (:0: a free port); an address beyond loopback needs --token-file or --tls-client-ca")
	fs.StringVar(&tokenFile, "token-file", "", "a `FILE` holding the bearer token every request but the health checks must carry (at least 16 bytes)")
	fs.StringVar(&lo.TLSCert, "tls-cert", "", "TLS certificate `FILE` (PEM): serve HTTPS")
	fs.StringVar(&lo.TLSKey, "tls-key", "", "TLS key `FILE` (PEM)")
	fs.StringVar(&lo.ClientCA, "tls-client-ca", "", "CA certificates `FILE` (PEM): require and verify client certificates")
	fs.BoolVar(&o.Admin, "admin", false, "turn on POST /v1/admin/reload (reads the maps directory again, as SIGHUP does)")
	fs.IntVar(&maxBodyMiB, "max-body-mib", serve.DefaultMaxBodyBytes>>20, "largest request body, in MiB (413 past it)")
	fs.IntVar(&o.MaxRows, "max-rows", serve.DefaultMaxRows, "most rows of one request (413 past it)")
	fs.DurationVar(&lo.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "time to read a request")
	fs.DurationVar(&lo.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "time to answer a request")
	fs.DurationVar(&lo.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	fs.DurationVar(&o.ReportTimeout, "report-timeout", serve.DefaultReportTimeout, "longest time of a monitor report (GET /v1/monitor; 503 past it, and at most four fifths of --write-timeout)")
	mf.register(fs)
	return cmd
}

// monitorFlags are calib serve's monitor flags (all but --data need it).
type monitorFlags struct {
	dir                 string
	window, retain      days
	snapshotEvery       time.Duration
	fsync               string
	metrics             string
	bins                int
	classWise           bool
	models, slices      int
	pending, requestIDs int
	alpha, arl          float64
	alarmClassWise      bool
	classes             int
	repair              bool
}

func (mf *monitorFlags) register(fs *pflag.FlagSet) {
	mf.window, mf.retain = days(monitor.DefaultWindow), days(monitor.DefaultRetain)
	fs.StringVar(&mf.dir, "data", "", "state `DIR` of the monitors (/v1/observe, /v1/outcome, /v1/monitor): write-ahead log and snapshots; monitors are off without it")
	fs.Var(&mf.window, "window", "length of the monitors' tumbling windows (whole seconds; 30m, 1h, 1d)")
	fs.Var(&mf.retain, "retain", "how long a window is kept after it ends, and a prediction waits for its outcome (7d, 36h)")
	fs.DurationVar(&mf.snapshotEvery, "snapshot-every", monitor.DefaultSnapshotEvery, "how often the monitors' state is written to a snapshot and the log cut")
	fs.StringVar(&mf.fsync, "fsync", "group", "when an observation is acknowledged: group (after its group's fsync), each (fsync per request), none (written, not fsynced: survives a crash of calib, not of the machine)")
	fs.StringVar(&mf.metrics, "metrics", monitor.Metrics.String(), "metrics of the monitors' reports, each computed in one pass")
	fs.IntVar(&mf.bins, "bins", 15, "equal-width bins of the monitors' ece_bin and of the per-bin counters of /metrics")
	fs.BoolVar(&mf.classWise, "class-wise-bins", false, "export per-class bin counters too (K times the series)")
	fs.IntVar(&mf.models, "max-models", monitor.DefaultMaxModels, "most models monitored")
	fs.IntVar(&mf.slices, "max-slices", monitor.DefaultMaxSlices, "most slices per model")
	fs.IntVar(&mf.pending, "max-pending", monitor.DefaultMaxPending, "most predictions waiting for their outcome (past it the oldest are dropped)")
	fs.IntVar(&mf.requestIDs, "max-request-ids", monitor.DefaultDedup, "request ids remembered to refuse a request recorded twice")
	fs.Float64Var(&mf.alpha, "alarm-alpha", alarm.DefaultAlpha, "level of the alarm's test: P(ever alarm | calibrated) <= alpha")
	fs.Float64Var(&mf.arl, "alarm-arl", alarm.DefaultARL, "average run length, in labelled rows, of the change detector to a false alarm")
	fs.BoolVar(&mf.alarmClassWise, "alarm-class-wise", true, "the alarm bets on every class's probability too (one threshold for all: their mean)")
	fs.IntVar(&mf.classes, "max-classes", monitor.DefaultMaxClasses, "most classes K of a monitored model (a window's state and its report grow as K)")
	fs.BoolVar(&mf.repair, "repair", false, "before serving, repair a damaged state directory: keep every intact record in a new snapshot and move the damaged files and the log aside (into STATE_DIR/damaged-TIME); a state without damage is left as it is")
}

// writeRepair says what Repair did, one line per damage found.
func writeRepair(w io.Writer, dir string, rep *monitor.RepairReport) {
	if len(rep.Damage) == 0 {
		fmt.Fprintf(w, "calib serve: --repair: %s has no damage; nothing changed\n", dir)
		return
	}
	for _, d := range rep.Damage {
		fmt.Fprintf(w, "calib serve: --repair: damage: %s\n", d)
	}
	fmt.Fprintf(w, "calib serve: --repair: kept %d records (state after record %d); lost %d records and %d bytes of the log; %d files moved to %s\n",
		rep.Kept, rep.LSN, rep.Lost, rep.LostBytes, len(rep.Moved), rep.Aside)
}

// options checks the monitor flags (before any file is read) and returns
// the store's options.
func (mf *monitorFlags) options(fs *pflag.FlagSet) (monitor.StoreOptions, error) {
	var so monitor.StoreOptions
	if mf.dir == "" {
		for _, name := range []string{"window", "retain", "snapshot-every", "fsync", "metrics", "bins", "class-wise-bins", "max-models", "max-slices", "max-pending", "max-request-ids", "alarm-alpha", "alarm-arl", "alarm-class-wise", "max-classes", "repair"} {
			if fs.Changed(name) {
				return so, usageErrorf("--%s applies to the monitors: give --data STATE_DIR", name)
			}
		}
		return so, nil
	}
	if time.Duration(mf.window) < time.Second || time.Duration(mf.window)%time.Second != 0 {
		return so, usageErrorf("--window %v: want whole seconds, at least 1s", time.Duration(mf.window))
	}
	if mf.retain <= 0 {
		return so, usageErrorf("--retain %v: want a positive duration", time.Duration(mf.retain))
	}
	if mf.snapshotEvery < time.Second {
		return so, usageErrorf("--snapshot-every %v: want at least 1s", mf.snapshotEvery)
	}
	if err := so.Sync.UnmarshalText([]byte(mf.fsync)); err != nil {
		return so, usageErrorf("--fsync %v", err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"bins", mf.bins}, {"max-models", mf.models}, {"max-slices", mf.slices}, {"max-pending", mf.pending}, {"max-request-ids", mf.requestIDs}, {"max-classes", mf.classes}} {
		if f.v < 1 {
			return so, usageErrorf("--%s %d: want at least 1", f.name, f.v)
		}
	}
	if mf.bins > 1000 {
		return so, usageErrorf("--bins %d: at most 1000 (each is 3 series per slice)", mf.bins)
	}
	var ms evaluate.MetricSet
	if err := listItems("metrics", mf.metrics); err != nil {
		return so, err
	}
	if err := ms.UnmarshalText([]byte(mf.metrics)); err != nil {
		return so, optionError("", err)
	}
	so.Monitor = monitor.Options{Window: time.Duration(mf.window), Retain: time.Duration(mf.retain), ClassWise: mf.classWise,
		MaxModels: mf.models, MaxSlices: mf.slices, MaxPending: mf.pending, Dedup: mf.requestIDs, MaxClasses: mf.classes}
	so.Monitor.Alarm = alarm.Options{Alpha: mf.alpha, ARL: mf.arl, ClassWise: mf.alarmClassWise}
	if err := so.Monitor.Alarm.Check(); err != nil {
		flag := "alarm-alpha"
		if pkgerr.Field(err) == "ARL" {
			flag = "alarm-arl"
		}
		return so, usageErrorf("--%s: %s", flag, pkgerr.Reason(err))
	}
	so.Monitor.Eval.Metrics = ms
	so.Monitor.Eval.Bins.Bins = mf.bins
	so.SnapshotEvery = mf.snapshotEvery
	if _, err := monitor.New(so.Monitor); err != nil {
		return so, usageErrorf("--metrics: %s", pkgerr.Reason(err))
	}
	return so, nil
}

// days is a duration flag that also takes days ("7d", "1d12h").
type days time.Duration

func (d *days) String() string { return time.Duration(*d).String() }

// Type is "duration": the flag reads as one.
func (d *days) Type() string { return "duration" }

func (d *days) Set(s string) error {
	rest, n := s, time.Duration(0)
	if i := strings.Index(s, "d"); i > 0 {
		v, err := strconv.ParseUint(s[:i], 10, 32)
		if err == nil && v > 100_000 {
			return fmt.Errorf("%q: at most 100000d", s)
		}
		if err != nil {
			return fmt.Errorf("%q: want a duration (90m, 36h, 7d)", s)
		}
		n, rest = time.Duration(v)*24*time.Hour, s[i+1:]
	}
	if rest != "" {
		v, err := time.ParseDuration(rest)
		if err != nil {
			return fmt.Errorf("%q: want a duration (90m, 36h, 7d)", s)
		}
		n += v
	} else if n == 0 {
		return fmt.Errorf("%q: want a duration (90m, 36h, 7d)", s)
	}
	*d = days(n)
	return nil
}
