package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/goldenjson"
	"github.com/calib-dev/calib/monitor"
	"github.com/calib-dev/calib/serve/client"
)

// cifar returns the CIFAR-10 test predictions of the repository's
// testdata as probabilities.
func cifar(t testing.TB) *data.Set {
	t.Helper()
	dir := filepath.Join("..", "testdata", "logits", "cifar10_densenet121-flsd53")
	s, err := data.Load(filepath.Join(dir, "test_logits.npy"), data.Options{Logits: true, Labels: filepath.Join(dir, "test_labels.npy")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// observeAll sends the rows [lo, hi) of s to model in batches of 500:
// every fourth row without its label, which an outcome brings after the
// batch.
func observeAll(t testing.TB, c *client.Client, model string, s *data.Set, lo, hi int) {
	t.Helper()
	ctx := context.Background()
	for i := lo; i < hi; i += 500 {
		j := min(hi, i+500)
		o := client.Observation{Probs: rows(s.Probs[i*s.K:j*s.K], s.K), Labels: make([]int, j-i), IDs: make([]string, j-i), Slice: "eu"}
		var ids []string
		var labels []int
		for k := i; k < j; k++ {
			o.Labels[k-i] = s.Labels[k]
			if k%4 == 1 {
				o.Labels[k-i] = -1
				o.IDs[k-i] = fmt.Sprintf("%s-%d", model, k)
				ids = append(ids, o.IDs[k-i])
				labels = append(labels, s.Labels[k])
			}
		}
		if _, err := c.Observe(ctx, model, o); err != nil {
			t.Fatal(err)
		}
		if ids != nil {
			r, err := c.Outcome(ctx, model, ids, labels, "")
			if err != nil || r.Counted != len(ids) {
				t.Fatalf("outcome: %+v, %v", r, err)
			}
		}
	}
}

// evalStream runs calib eval --stream --json on the rows of s (written
// to a CSV file with every digit) with the monitors' metrics.
func evalStream(t testing.TB, s *data.Set) map[string]any {
	t.Helper()
	name := filepath.Join(t.TempDir(), "rows.csv")
	if err := data.WriteFile(name, s.Probs, s.K, s.Labels); err != nil {
		t.Fatal(err)
	}
	out := calib(t, "eval", "--stream", name, "--json", "--metrics", monitor.Metrics.String(), "--mode", "top_label", "--max-cells", strconv.Itoa(monitor.DefaultMaxCells))
	v, err := goldenjson.Decode([]byte(out)) // how it was run, how long it took: dropped
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// What only a file's evaluation has.
	return goldenjson.Drop(v, "file").(map[string]any)
}

// TestMonitorEqualsEval: the rows observed (a quarter of their labels
// coming later as outcomes), /v1/monitor's total and its window are the
// document of calib eval --json on the same rows, every number within
// 1e-12 relative (the sums are added in another order); after a restart
// (SIGTERM: drained, snapshotted) the report is the same bit for bit.
func TestMonitorEqualsEval(t *testing.T) {
	s := cifar(t)
	dir := t.TempDir()
	srv := start(t, "--data", dir)
	c := client.New(srv.url, client.Options{})
	observeAll(t, c, "resnet", s, 0, s.N)
	rep, err := c.Monitor(context.Background(), "resnet", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Slices) != 1 || rep.Slices[0].Slice != "eu" || rep.Slices[0].Counted != int64(s.N) || len(rep.Slices[0].Windows) != 1 {
		t.Fatalf("report: %d slices %+v", len(rep.Slices), rep.Slices)
	}
	want := evalStream(t, s)
	for name, doc := range map[string]json.RawMessage{"total": rep.Slices[0].Total, "window": rep.Slices[0].Windows[0].Evaluation} {
		goldenjson.RequireWithin(t, name, want, doc, 1e-12)
	}
	// A restart restores the same state.
	before, _ := json.Marshal(rep)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.wait(); err != nil {
		t.Fatalf("calib serve after SIGTERM: %v: %s", err, srv.log())
	}
	srv = start(t, "--data", dir)
	c = client.New(srv.url, client.Options{})
	rep, err = c.Monitor(context.Background(), "resnet", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(rep); !bytes.Equal(before, after) {
		t.Fatalf("the report changed across a restart")
	}
}

// TestMonitorReplicasPromQL: two servers fed disjoint halves of the rows;
// their /metrics, parsed by prometheus/common's text parser, give by the
// README's PromQL expression (bins summed over replicas before the
// absolute value) ece_bin top_label p=1 of calib eval on all the rows,
// within 1e-12.
func TestMonitorReplicasPromQL(t *testing.T) {
	s := cifar(t)
	half := s.N / 2
	correct, conf, obs := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for i, r := range [][2]int{{0, half}, {half, s.N}} {
		srv := start(t, "--data", t.TempDir())
		c := client.New(srv.url, client.Options{})
		observeAll(t, c, "resnet", s, r[0], r[1])
		text, err := c.Metrics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("replica %d: /metrics does not parse: %v", i, err)
		}
		if f := fams["calib_alarm_log_evidence"]; f == nil || len(f.Metric) != 6 {
			t.Fatalf("replica %d: calib_alarm_log_evidence: %v", i, f)
		}
		if f := fams["calib_alarm_log_threshold"]; f == nil || len(f.Metric) != 2 || f.Metric[0].GetGauge().GetValue() <= 0 {
			t.Fatalf("replica %d: calib_alarm_log_threshold: %v", i, f)
		}
		for name, into := range map[string]map[string]float64{"calib_bin_correct_total": correct, "calib_bin_confidence_sum": conf, "calib_bin_observations_total": obs} {
			f := fams[name]
			if f == nil || len(f.Metric) != 15 {
				t.Fatalf("replica %d: %s: %v", i, name, f)
			}
			for _, m := range f.Metric {
				bin := ""
				for _, l := range m.Label {
					if l.GetName() == "bin" {
						bin = l.GetValue()
					}
				}
				into[bin] += m.GetCounter().GetValue()
			}
		}
	}
	var num, den float64
	for bin := range obs {
		num += math.Abs(correct[bin] - conf[bin])
		den += obs[bin]
	}
	ece := num / den
	var want float64
	for _, r := range evalStream(t, s)["results"].([]any) {
		e := r.(map[string]any)
		if e["metric"] == "ece_bin" && e["notion"] == "top_label" && e["p"] == 1.0 {
			want = e["value"].(float64)
		}
	}
	if want == 0 || math.Abs(ece-want) > 1e-12 {
		t.Fatalf("the counters' ECE %v, calib eval's %v", ece, want)
	}
	t.Logf("ECE from two replicas' counters %.17g, calib eval %.17g", ece, want)
}

// TestMonitorSurvivesSIGKILL: four writers send 10^6 rows (batches of
// 1,000 with request ids, retried until acknowledged) while the server
// is killed with SIGKILL at random points and restarted on the same
// state directory; at the end the monitor has counted every row once:
// its report equals the evaluation of the rows sent.
func TestMonitorSurvivesSIGKILL(t *testing.T) {
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	s := cifar(t)
	dir := t.TempDir()
	const batch = 1000
	batches := total / batch
	var mu sync.Mutex
	srv := start(t, "--data", dir, "--snapshot-every", "1s")
	url := func() string {
		mu.Lock()
		defer mu.Unlock()
		return srv.url
	}
	hc := &httpClient{}
	var next atomic.Int64
	var acked atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				o := client.Observation{Probs: make([][]float64, batch), Labels: make([]int, batch), RequestID: "batch-" + strconv.Itoa(b)}
				for i := range batch {
					row := (b*batch + i) % s.N
					o.Probs[i] = s.Probs[row*s.K : (row+1)*s.K]
					o.Labels[i] = s.Labels[row]
				}
				for ctx.Err() == nil {
					c := client.New(url(), client.Options{HTTP: hc.get()})
					_, err := c.Observe(ctx, "m", o)
					if err == nil {
						acked.Add(1)
						break
					}
					if strings.Contains(err.Error(), "calib serve:") {
						t.Errorf("batch %d: %v", b, err)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for kills < 4 && acked.Load() < int64(batches)*3/4 {
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		mu.Lock()
		old := srv
		mu.Unlock()
		old.cmd.Process.Signal(syscall.SIGKILL)
		old.wait()
		kills++
		t.Logf("kill %d after %d batches", kills, acked.Load())
		hc.reset()
		fresh := start(t, "--data", dir, "--snapshot-every", "1s")
		mu.Lock()
		srv = fresh
		mu.Unlock()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("timed out: %d of %d batches acknowledged", acked.Load(), batches)
	}
	c := client.New(url(), client.Options{})
	rep, err := c.Monitor(context.Background(), "m", "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Slices[0].Counted; got != int64(total) {
		t.Fatalf("%d kills: %d rows counted, %d sent", kills, got, total)
	}
	// The rows sent are the test set repeated: their evaluation.
	sums, err := evaluate.NewSums(evaluate.StreamOptions{Options: evaluate.Options{Metrics: monitor.Metrics, Mode: monitor.DefaultMode}, MaxCells: monitor.DefaultMaxCells})
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < total; off += s.N {
		n := min(s.N, total-off)
		sub := &data.Set{N: n, K: s.K, Probs: s.Probs[:n*s.K], Labels: s.Labels[:n]}
		if err := sums.Add(&data.Batch{Set: sub, Source: "rows", Offset: int64(off)}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := evaluate.Finish(sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	evaluate.WriteJSON(&buf, ev)
	want, err := goldenjson.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	goldenjson.RequireWithin(t, "total", want, rep.Slices[0].Total, 1e-9)
	t.Logf("%d rows, %d kills with SIGKILL, every acknowledged row counted once", total, kills)
}

// httpClient is an HTTP client whose connections are dropped when the
// server is restarted.
type httpClient struct {
	mu sync.Mutex
	c  *http.Client
}

func (h *httpClient) get() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		h.c = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	}
	return h.c
}

func (h *httpClient) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c != nil {
		h.c.CloseIdleConnections()
	}
	h.c = nil
}

// wait waits for the server's process to exit and returns its error
// (the test's cleanup can wait again).
func (s *server) wait() error {
	err := <-s.done
	s.done <- err
	return err
}
