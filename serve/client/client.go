// Package client is a Go client of `calib serve` (package serve): it
// calibrates rows with a served map over calib's /v1 API or the Open
// Inference Protocol v2, records predictions and outcomes with the
// monitors and reads their reports, and reads the server's health, maps
// and metrics.
//
//	c := client.New("http://127.0.0.1:8080", client.Options{})
//	probs, err := c.Calibrate(ctx, "temperature", rows, false)
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/monitor"
	"github.com/calib-dev/calib/serve"
)

// Options configures a Client. The zero value uses http.DefaultClient and
// no token.
type Options struct {
	// Token is sent as a bearer token (Authorization: Bearer Token).
	Token string
	// HTTP is the HTTP client; nil means http.DefaultClient.
	HTTP *http.Client
}

// Client talks to one calib server.
type Client struct {
	base string
	o    Options
}

// New returns a client of the server at base ("http://127.0.0.1:8080").
func New(base string, o Options) *Client {
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(base, "/"), o: o}
}

// Error is a request the server refused or failed: its status and the
// message of its {"error": "..."} body.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("calib serve: %d: %s", e.Status, e.Message) }

// do sends a request with body (nil: none; else JSON-encoded) and decodes
// a 2xx answer's JSON into out (nil: discarded).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("client: encode the request: %w", err)
		}
	}
	ans, err := c.roundTrip(ctx, c.o.HTTP, method, path, b)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(ans, out); err != nil {
		return fmt.Errorf("client: decode the answer: %w", err)
	}
	return nil
}

// roundTrip sends body (nil: none; else JSON) to path with the token and
// returns the whole answer of a 2xx status; another status is an *Error
// with the message of its {"error": "..."} body (or the body).
func (c *Client) roundTrip(ctx context.Context, hc *http.Client, method, path string, body []byte) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return nil, &Error{Status: resp.StatusCode, Message: e.Error}
	}
	return b, nil
}

// Calibrate returns the calibrated probabilities of rows (probabilities,
// or logits with logits true) by the map name, over /v1/calibrate.
func (c *Client) Calibrate(ctx context.Context, name string, rows [][]float64, logits bool) ([][]float64, error) {
	raw, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	req := serve.CalibrateRequest{Probs: raw}
	if logits {
		req = serve.CalibrateRequest{Logits: raw}
	}
	var resp struct {
		Probs [][]float64 `json:"probs"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/calibrate/"+name, req, &resp); err != nil {
		return nil, err
	}
	if len(resp.Probs) != len(rows) {
		return nil, fmt.Errorf("client: %d rows answered for %d", len(resp.Probs), len(rows))
	}
	return resp.Probs, nil
}

// Infer sends an Open Inference Protocol request to the map name (version
// "": the one served).
func (c *Client) Infer(ctx context.Context, name, version string, req serve.InferRequest) (*serve.InferResponse, error) {
	path := "/v2/models/" + name
	if version != "" {
		path += "/versions/" + version
	}
	var resp serve.InferResponse
	if err := c.do(ctx, http.MethodPost, path+"/infer", req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Maps lists the maps served.
func (c *Client) Maps(ctx context.Context) ([]serve.MapInfo, error) {
	var resp serve.MapsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/maps", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Maps, nil
}

// Reload asks the server to read its maps directory again (the admin
// endpoint, on with calib serve --admin); a reload that left some file
// unloaded is an *Error of status 422, its report in the message.
func (c *Client) Reload(ctx context.Context) (*serve.ReloadReport, error) {
	var rep serve.ReloadReport
	if err := c.do(ctx, http.MethodPost, "/v1/admin/reload", struct{}{}, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// Ready reports whether the server is ready (GET /v2/health/ready).
func (c *Client) Ready(ctx context.Context) (bool, error) {
	err := c.do(ctx, http.MethodGet, "/v2/health/ready", nil, nil)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
		return false, nil
	}
	return err == nil, err
}

// Metrics returns the server's metrics in the Prometheus text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	b, err := c.roundTrip(ctx, c.o.HTTP, http.MethodGet, "/metrics", nil)
	return string(b), err
}

// Observation is a batch of predictions for Observe: Probs (rows of
// probabilities) and Labels (a class index, or -1 for an outcome that
// Outcome will bring under the row's id); the rest as
// serve.ObserveRequest says (nil or "": absent).
type Observation struct {
	Probs     [][]float64
	Labels    []int
	Weights   []float64
	IDs       []string
	Slice     string
	Map       string
	Times     []float64 // Unix seconds, one per row
	RequestID string
}

// Observe records predictions with the monitor of model; it returns once
// they are on disk (the answer's LSN is their record's).
func (c *Client) Observe(ctx context.Context, model string, o Observation) (*serve.ObserveResponse, error) {
	probs, err := json.Marshal(o.Probs)
	if err != nil {
		return nil, fmt.Errorf("client: encode the request: %w", err)
	}
	req := serve.ObserveRequest{Probs: probs, Labels: labelsJSON(o.Labels), IDs: o.IDs, Slice: o.Slice, Map: o.Map, RequestID: o.RequestID}
	if o.Weights != nil {
		req.Weights, _ = json.Marshal(o.Weights)
	}
	if o.Times != nil {
		req.Times, _ = json.Marshal(o.Times)
	}
	var out serve.ObserveResponse
	if err := c.do(ctx, http.MethodPost, "/v1/observe/"+model, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Outcome records the labels of predictions observed without one, by id.
func (c *Client) Outcome(ctx context.Context, model string, ids []string, labels []int, requestID string) (*serve.ObserveResponse, error) {
	var out serve.ObserveResponse
	if err := c.do(ctx, http.MethodPost, "/v1/outcome/"+model, serve.OutcomeRequest{IDs: ids, Labels: labelsJSON(labels), RequestID: requestID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// labelsJSON writes labels as JSON, -1 as null.
func labelsJSON(labels []int) json.RawMessage {
	b := []byte{'['}
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		if l < 0 {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, int64(l), 10)
		}
	}
	return append(b, ']')
}

// Monitor returns the monitor's report of model (slice "": every slice;
// windows: the number of most recent windows, 0 all, -1 none).
func (c *Client) Monitor(ctx context.Context, model, slice string, windows int) (*monitor.Report, error) {
	q := url.Values{}
	if slice != "" {
		q.Set("slice", slice)
	}
	if windows != 0 {
		q.Set("windows", strconv.Itoa(windows))
	}
	path := "/v1/monitor/" + model
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out monitor.Report
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
