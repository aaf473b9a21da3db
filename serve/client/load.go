package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/calib-dev/calib/serve"
)

// Bounds of Load: it stops by itself.
const (
	MaxLoadRequests = 10_000_000
	MaxLoadDuration = 10 * time.Minute
)

// LoadOptions configures Load. The zero value but Map and Rows sends
// 1,000 requests from 8 connections over calib's /v1 API, for at most a
// minute.
type LoadOptions struct {
	Map    string
	Rows   [][]float64 // the batch every request sends
	Logits bool        // Rows are logits
	// OIP sends Open Inference Protocol requests (FP64, flat) instead of
	// /v1/calibrate.
	OIP bool
	// Requests is the number of requests, at most MaxLoadRequests; 0
	// means 1,000.
	Requests int
	// Concurrency is the number of connections sending at once; 0 means
	// 8.
	Concurrency int
	// Duration stops the load early, at most MaxLoadDuration; 0 means a
	// minute.
	Duration time.Duration
	// Rate, if above 0, sends the requests at this many per second (an
	// open loop: request i is due at i/Rate seconds, and its latency runs
	// from then, so a server that falls behind is measured, not waited
	// for); 0 sends each as soon as a connection is free.
	Rate float64
}

// LoadResult is what a load measured: requests answered 200, others
// (Errors, the first one's message in FirstError), and the latencies of
// the answered ones.
type LoadResult struct {
	Requests, Errors int
	FirstError       string
	Elapsed          time.Duration
	PerSecond        float64 // answered requests per second
	RowsPerSecond    float64
	P50, P99, Max    time.Duration
}

// Load sends the same request many times to the server, from
// o.Concurrency connections, and measures the answers' latencies: a load
// generator for benchmarks and tests. It sends to a loopback address only
// (127.0.0.1, ::1, localhost) and stops after o.Requests requests or
// o.Duration, whichever comes first, or when ctx ends.
func (c *Client) Load(ctx context.Context, o LoadOptions) (*LoadResult, error) {
	u, err := url.Parse(c.base)
	if err != nil {
		return nil, err
	}
	if host := u.Hostname(); !serve.Loopback(host) {
		return nil, fmt.Errorf("client: Load sends to a loopback address only, not %s", host)
	}
	o.Requests = cmp.Or(o.Requests, 1000)
	o.Concurrency = cmp.Or(o.Concurrency, 8)
	o.Duration = cmp.Or(o.Duration, time.Minute)
	switch {
	case o.Requests < 0 || o.Requests > MaxLoadRequests:
		return nil, fmt.Errorf("client: %d requests: want 1 to %d", o.Requests, MaxLoadRequests)
	case o.Concurrency < 0 || o.Concurrency > 1024:
		return nil, fmt.Errorf("client: concurrency %d: want 1 to 1024", o.Concurrency)
	case o.Duration < 0 || o.Duration > MaxLoadDuration:
		return nil, fmt.Errorf("client: duration %v: want at most %v", o.Duration, MaxLoadDuration)
	case len(o.Rows) == 0:
		return nil, errors.New("client: no rows to send")
	case !(o.Rate >= 0) || math.IsInf(o.Rate, 0):
		return nil, fmt.Errorf("client: rate %v: want requests per second >= 0", o.Rate)
	}
	path, body, err := loadRequest(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency, MaxConnsPerHost: o.Concurrency}}
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	lat := make([][]time.Duration, o.Concurrency)
	errs := make([]int, o.Concurrency)
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(o.Requests) && ctx.Err() == nil; i = next.Add(1) {
				t0 := time.Now()
				if o.Rate > 0 {
					t0 = start.Add(time.Duration(float64(i-1) / o.Rate * float64(time.Second)))
					if d := time.Until(t0); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				err := c.send(ctx, hc, path, body)
				if err != nil {
					if ctx.Err() != nil {
						return // stopped by the duration, not refused
					}
					errs[w]++
					once.Do(func() { firstErr = err })
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	r := &LoadResult{Elapsed: time.Since(start)}
	all := slices.Concat(lat...)
	slices.Sort(all)
	r.Requests = len(all)
	for _, e := range errs {
		r.Errors += e
	}
	if firstErr != nil {
		r.FirstError = firstErr.Error()
	}
	if n := len(all); n > 0 {
		r.P50, r.P99, r.Max = all[(n-1)/2], all[(n-1)*99/100], all[n-1]
		r.PerSecond = float64(n) / r.Elapsed.Seconds()
		r.RowsPerSecond = r.PerSecond * float64(len(o.Rows))
	}
	return r, nil
}

// loadRequest returns the path and body of Load's request.
func loadRequest(o LoadOptions) (string, []byte, error) {
	k := len(o.Rows[0])
	if !o.OIP {
		raw, err := json.Marshal(o.Rows)
		if err != nil {
			return "", nil, err
		}
		req := serve.CalibrateRequest{Probs: raw}
		if o.Logits {
			req = serve.CalibrateRequest{Logits: raw}
		}
		b, err := json.Marshal(req)
		return "/v1/calibrate/" + o.Map, b, err
	}
	raw, err := json.Marshal(slices.Concat(o.Rows...))
	if err != nil {
		return "", nil, err
	}
	name := "probs"
	if o.Logits {
		name = "logits"
	}
	b, err := json.Marshal(serve.InferRequest{Inputs: []serve.InferTensor{{Name: name, Shape: []int64{int64(len(o.Rows)), int64(k)}, Datatype: "FP64", Data: raw}}})
	return "/v2/models/" + o.Map + "/infer", b, err
}

// send posts body to path and reads the whole answer; a status other than
// 2xx is an *Error.
func (c *Client) send(ctx context.Context, hc *http.Client, path string, body []byte) error {
	_, err := c.roundTrip(ctx, hc, http.MethodPost, path, body)
	return err
}
