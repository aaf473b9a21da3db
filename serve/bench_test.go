package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/calib-dev/calib/serve/client"
)

// TestLoadGenerator: the load generator sends to loopback only, stops
// after its requests, and counts refused requests as errors.
func TestLoadGenerator(t *testing.T) {
	if _, err := client.New("http://10.1.2.3:8080", client.Options{}).Load(context.Background(), client.LoadOptions{Map: "m", Rows: [][]float64{{1}}}); err == nil || !strings.Contains(err.Error(), "loopback address only") {
		t.Errorf("a remote address: %v", err)
	}
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	fitOne(t, dir, maps, "m", 1)
	s := start(t, "--maps", maps)
	c := client.New("http://"+strings.TrimPrefix(s.url, "http://"), client.Options{})
	for _, oip := range []bool{false, true} {
		r, err := c.Load(context.Background(), client.LoadOptions{Map: "m", Rows: [][]float64{{0.1, 0.2, 0.3}, {1, -1, 0}}, Logits: true, OIP: oip, Requests: 300, Concurrency: 4})
		if err != nil || r.Requests != 300 || r.Errors != 0 || !(r.P50 > 0 && r.P50 <= r.P99 && r.P99 <= r.Max) || r.RowsPerSecond != 2*r.PerSecond {
			t.Errorf("oip %v: %+v, %v", oip, r, err)
		}
	}
	r, err := c.Load(context.Background(), client.LoadOptions{Map: "m", Rows: [][]float64{{0.1, 0.2}}, Logits: true, Requests: 10, Concurrency: 2})
	if err != nil || r.Errors != 10 || r.Requests != 0 || !strings.Contains(r.FirstError, "K = 3") {
		t.Errorf("refused requests: %+v, %v", r, err)
	}
}

// BenchmarkServeRate measures one-row requests (K = 10, temperature, /v1)
// sent at a fixed rate (the load generator's open loop, from 8
// connections): b.N requests at 5,000 per second; the p99 latency is the
// figure to read.
func BenchmarkServeRate(b *testing.B) {
	dir := b.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	logitSet(b, dir, "val", 3000, 10, 10)
	calib(b, "fit", filepath.Join(dir, "val.npy"), "--labels", filepath.Join(dir, "val_labels.txt"), "--logits", "--method", "temperature", "-o", filepath.Join(maps, "t.json"), "--progress=false")
	s := start(b, "--maps", maps)
	c := client.New("http://"+strings.TrimPrefix(s.url, "http://"), client.Options{})
	row := [][]float64{{0.3, -1.2, 2.0, 1.5, 0.1, -0.4, 0.9, -2.2, 0.05, 1.1}}
	for _, rate := range []float64{1000, 5000} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			r, err := c.Load(context.Background(), client.LoadOptions{Map: "t", Rows: row, Logits: true, Requests: b.N, Concurrency: 8, Rate: rate, Duration: 5 * time.Minute})
			if err != nil || r.Errors > 0 {
				b.Fatalf("%v: %+v", err, r)
			}
			b.ReportMetric(r.PerSecond, "req/s")
			b.ReportMetric(float64(r.P50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(r.P99.Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkServe measures calib serve (the real binary on a loopback
// port) under the load generator: b.N requests of one row or 256 rows,
// K = 10 and 100, temperature and spline maps, over /v1 and the Open
// Inference Protocol, from 8 connections. It reports requests/s, rows/s
// and the p50 and p99 latencies (the client's: request written to answer
// read).
func BenchmarkServe(b *testing.B) {
	dir := b.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	for _, k := range []int{10, 100} {
		name := fmt.Sprintf("val%d", k)
		logitSet(b, dir, name, 3000, k, uint64(k))
		for _, m := range []string{"temperature", "spline"} {
			calib(b, "fit", filepath.Join(dir, name+".npy"), "--labels", filepath.Join(dir, name+"_labels.txt"), "--logits", "--method", m,
				"-o", filepath.Join(maps, fmt.Sprintf("%s-k%d.json", m, k)), "--progress=false")
		}
	}
	s := start(b, "--maps", maps)
	c := client.New("http://"+strings.TrimPrefix(s.url, "http://"), client.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, proto := range []string{"v1", "oip"} {
		for _, k := range []int{10, 100} {
			for _, m := range []string{"temperature", "spline"} {
				for _, n := range []int{1, 256} {
					rows := make([][]float64, n)
					for i := range rows {
						rows[i] = make([]float64, k)
						for j := range rows[i] {
							rows[i][j] = 2.5 * rng.NormFloat64()
						}
					}
					b.Run(fmt.Sprintf("%s/K=%d/%s/rows=%d", proto, k, m, n), func(b *testing.B) {
						r, err := c.Load(context.Background(), client.LoadOptions{Map: fmt.Sprintf("%s-k%d", m, k), Rows: rows, Logits: true, OIP: proto == "oip",
							Requests: b.N, Concurrency: 8, Duration: 5 * time.Minute})
						if err != nil || r.Errors > 0 {
							b.Fatalf("%v: %+v", err, r)
						}
						b.ReportMetric(r.PerSecond, "req/s")
						b.ReportMetric(r.RowsPerSecond, "rows/s")
						b.ReportMetric(float64(r.P50.Microseconds()), "p50-µs")
						b.ReportMetric(float64(r.P99.Microseconds()), "p99-µs")
					})
				}
			}
		}
	}
}

// BenchmarkObserve measures /v1/observe on calib serve --data (the real
// binary on a loopback port): b.N requests of 1,000 labelled rows (K =
// 10, CIFAR-10 test predictions, the JSON encoded once) from 4
// connections, by --fsync mode, and with reports=on while a loop of
// reports of another model of 10 slices x 25 windows (bigModel) runs
// beside them. It reports rows/s and the p50 and p99 latencies of a
// request, and the reports finished meanwhile.
func BenchmarkObserve(b *testing.B) {
	s := cifar(b)
	const batch = 1000
	bodies := make([][]byte, s.N/batch)
	for i := range bodies {
		lab, _ := json.Marshal(s.Labels[i*batch : (i+1)*batch])
		p, _ := json.Marshal(rows(s.Probs[i*batch*s.K:(i+1)*batch*s.K], s.K))
		bodies[i] = []byte(fmt.Sprintf(`{"probs": %s, "labels": %s}`, p, lab))
	}
	for _, c := range []struct {
		mode    string
		reports bool
	}{{"group", false}, {"each", false}, {"group", true}} {
		name := "fsync=" + c.mode
		if c.reports {
			name += "/reports=on"
		}
		b.Run(name, func(b *testing.B) {
			srv := start(b, "--data", b.TempDir(), "--fsync", c.mode, "--window", "1m")
			stop := func() int { return 0 }
			if c.reports {
				bigModel(b, srv.url)
				stop = reportLoop(b, srv.url)
			}
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			var next atomic.Int64
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			b.ResetTimer()
			t0 := time.Now()
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						start := time.Now()
						resp, err := hc.Post(srv.url+"/v1/observe/m", "application/json", bytes.NewReader(bodies[i%len(bodies)]))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
						lat[i] = time.Since(start)
					}
				}()
			}
			wg.Wait()
			el := time.Since(t0)
			if reports := stop(); c.reports {
				b.ReportMetric(float64(reports), "reports")
			}
			slices.Sort(lat)
			b.ReportMetric(float64(b.N*batch)/el.Seconds(), "rows/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
