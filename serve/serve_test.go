package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/serve"
	"github.com/calib-dev/calib/serve/client"
)

// calibBin is the calib binary built from this module once per test run.
var calibBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "calib-serve-test-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "calib")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/calib").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return bin, nil
})

func calibBinary(t testing.TB) string {
	t.Helper()
	bin, err := calibBin()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// calib runs the calib binary and fails the test on an error.
func calib(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(calibBinary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("calib %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// server is a calib serve process on a loopback port.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	mu     *sync.Mutex
	done   chan error
}

// start starts calib serve with args (--addr 127.0.0.1:0 added) and
// waits for its listening line; the process is killed at the end of the
// test.
func start(t testing.TB, args ...string) *server {
	t.Helper()
	cmd := exec.Command(calibBinary(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if !sent && strings.Contains(sc.Text(), "listening on") {
				lines <- sc.Text()
				sent = true
			}
		}
	}()
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	select {
	case l := <-lines:
		_, after, _ := strings.Cut(l, "listening on ")
		s.url, _, _ = strings.Cut(after, " ")
	case err := <-s.done:
		t.Fatalf("calib serve exited: %v: %s", err, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("calib serve did not start: %s", s.log())
	}
	return s
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// logitSet writes n rows of K logits and their labels (a miscalibrated
// model: labels drawn from the softmax at temperature 2 of the logits)
// to dir/name.npy and dir/name_labels.txt, and returns the logits.
func logitSet(t testing.TB, dir, name string, n, k int, seed uint64) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	z := make([]float64, n*k)
	y := make([]int, n)
	for i := range n {
		p := make([]float64, k)
		var sum float64
		for j := range k {
			z[i*k+j] = 2.5 * rng.NormFloat64()
			p[j] = math.Exp(z[i*k+j] / 2)
			sum += p[j]
		}
		u := rng.Float64() * sum
		for j := range k {
			if u -= p[j]; u <= 0 || j == k-1 {
				y[i] = j
				break
			}
		}
	}
	if err := data.WriteFile(filepath.Join(dir, name+".npy"), z, k, nil); err != nil {
		t.Fatal(err)
	}
	var lab strings.Builder
	for _, v := range y {
		fmt.Fprintln(&lab, v)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"_labels.txt"), []byte(lab.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return z
}

// readNPY reads calib apply's output.
func readNPY(t testing.TB, name string, k int) []float64 {
	t.Helper()
	s, err := data.Load(name, data.Options{Unlabeled: true, K: k})
	if err != nil {
		t.Fatal(err)
	}
	return s.Probs
}

// rows splits a flat n×k slice into rows.
func rows(x []float64, k int) [][]float64 {
	out := make([][]float64, len(x)/k)
	for i := range out {
		out[i] = x[i*k : (i+1)*k]
	}
	return out
}

// TestServeEqualsApply: for every map method (fitted by calib fit on
// logits; isotonic and spline on probabilities too), the calibrated
// probabilities over /v1/calibrate and over the Open Inference Protocol
// (FP64 nested and flat) equal calib apply's output file bit for bit.
func TestServeEqualsApply(t *testing.T) {
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	if err := os.Mkdir(maps, 0o755); err != nil {
		t.Fatal(err)
	}
	const k = 4
	logitSet(t, dir, "val", 600, k, 1)
	test := logitSet(t, dir, "test", 300, k, 2)
	probsFile := filepath.Join(dir, "test_probs.npy")
	probs := make([]float64, len(test))
	for i := range len(test) / k {
		var m, sum float64 = math.Inf(-1), 0
		for j := range k {
			m = max(m, test[i*k+j])
		}
		for j := range k {
			probs[i*k+j] = math.Exp(test[i*k+j] - m)
			sum += probs[i*k+j]
		}
		for j := range k {
			probs[i*k+j] /= sum
		}
	}
	if err := data.WriteFile(probsFile, probs, k, nil); err != nil {
		t.Fatal(err)
	}
	type fitted struct {
		name   string
		logits bool
	}
	var all []fitted
	for _, m := range recal.MethodNames() {
		calib(t, "fit", filepath.Join(dir, "val.npy"), "--labels", filepath.Join(dir, "val_labels.txt"), "--logits", "--method", m, "-o", filepath.Join(maps, m+".json"), "--progress=false")
		all = append(all, fitted{m, true})
	}
	for _, m := range []string{"isotonic", "spline"} {
		calib(t, "fit", filepath.Join(dir, "val.npy"), "--labels", filepath.Join(dir, "val_labels.txt"), "--logits", "--method", m, "-o", filepath.Join(maps, m+"-probs.json"), "--progress=false")
		all = append(all, fitted{m + "-probs", false})
	}
	s := start(t, "--maps", maps)
	c := client.New("http://"+strings.TrimPrefix(s.url, "http://"), client.Options{})
	ctx := context.Background()
	for _, f := range all {
		in, field := filepath.Join(dir, "test.npy"), "logits"
		x := test
		args := []string{"apply", filepath.Join(maps, f.name+".json"), in, "--logits", "-o", filepath.Join(dir, f.name+".npy")}
		if !f.logits {
			in, field, x = probsFile, "probs", probs
			args = []string{"apply", filepath.Join(maps, f.name+".json"), in, "-o", filepath.Join(dir, f.name+".npy")}
		}
		calib(t, args...)
		want := readNPY(t, filepath.Join(dir, f.name+".npy"), k)
		got, err := c.Calibrate(ctx, f.name, rows(x, k), field == "logits")
		if err != nil {
			t.Fatalf("%s: /v1: %v", f.name, err)
		}
		if !slices.Equal(slices.Concat(got...), want) {
			t.Errorf("%s: /v1 differs from calib apply", f.name)
		}
		for _, nested := range []bool{true, false} {
			var raw []byte
			if nested {
				raw, _ = json.Marshal(rows(x, k))
			} else {
				raw, _ = json.Marshal(x)
			}
			resp, err := c.Infer(ctx, f.name, "", serve.InferRequest{ID: "r-" + f.name, Inputs: []serve.InferTensor{{Name: field, Shape: []int64{int64(len(x) / k), k}, Datatype: "FP64", Data: raw}}})
			if err != nil {
				t.Fatalf("%s: infer: %v", f.name, err)
			}
			if resp.ID != "r-"+f.name || resp.ModelName != f.name || len(resp.ModelVersion) != 12 || len(resp.Outputs) != 1 || !slices.Equal(resp.Outputs[0].Shape, []int64{int64(len(x) / k), k}) {
				t.Errorf("%s: infer answered %+v", f.name, resp)
			}
			if !slices.Equal(resp.Outputs[0].Data, want) {
				t.Errorf("%s: infer (nested %v) differs from calib apply", f.name, nested)
			}
		}
	}
}

// post sends body to path and returns the status and the error message.
func post(t *testing.T, url, path, contentType, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+path, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode/100 == 4 && (e.Error == "" || strings.Contains(e.Error, "\n")) {
		t.Errorf("%s %s: status %d, body %q: want {\"error\": one line}", path, body, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Error
}

// fitOne fits a temperature map on a small logit set into dir/name.json.
func fitOne(t testing.TB, dir, maps, name string, seed uint64) {
	t.Helper()
	logitSet(t, dir, name, 400, 3, seed)
	calib(t, "fit", filepath.Join(dir, name+".npy"), "--labels", filepath.Join(dir, name+"_labels.txt"), "--logits", "--method", "temperature", "-o", filepath.Join(maps, name+".json"), "--progress=false")
}

// TestServeRefusesBadRequests: every bad request is a 4xx with a one-line
// JSON error naming the field, row and column.
func TestServeRefusesBadRequests(t *testing.T) {
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	fitOne(t, dir, maps, "t3", 1)
	s := start(t, "--maps", maps, "--max-rows", "4", "--max-body-mib", "1")
	u := "http://" + strings.TrimPrefix(s.url, "http://")
	const js = "application/json"
	for _, c := range []struct {
		path, ct, body string
		status         int
		want           string
	}{
		{"/v1/calibrate/t3", js, `{"logits": [[0.1, 0.2], [0.3, 0.4]]}`, 400, "the map is for K = 3"},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5], [0.2, 0.3, "NaN"]]}`, 400, "probs: row 2, column 3: want a number"},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5], [0.2, -0.3, 1.1]]}`, 400, "row 2, column 2"},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.6]]}`, 400, `probs: row 1: row does not sum to 1: columns 1-3 sum to 1.1000000000000001 (tolerance 1e-06; "renormalize": true rescales rows)`},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5], [0.2, 0.8]]}`, 400, "probs: row 2: 2 values, row 1 has 3"},
		{"/v1/calibrate/t3", js, `{"probs": [0.2, 0.3, 1e999]}`, 400, "probs: column 3: 1e999 is out of float64's range"},
		{"/v1/calibrate/t3", js, `{"probs": [[1,0,0],[1,0,0],[1,0,0],[1,0,0],[1,0,0]]}`, 413, "more than 4 rows"},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5]], "logits": [[1, 2, 3]]}`, 400, "not both"},
		{"/v1/calibrate/t3", js, `{}`, 400, `give "probs"`},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5]], "extra": 1}`, 400, `unknown field "extra"`},
		{"/v1/calibrate/t3", js, `{"probs": []}`, 400, "no values"},
		{"/v1/calibrate/t3", js, `[1]`, 400, "not the JSON object"},
		{"/v1/calibrate/t3", "multipart/form-data; boundary=x", `{"probs": [[0.2, 0.3, 0.5]]}`, 415, "want a JSON body"},
		{"/v1/calibrate/nope", js, `{"probs": [[0.2, 0.3, 0.5]]}`, 404, `map "nope": not served (maps: t3)`},
		{"/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.5]]}` + strings.Repeat(" ", 2<<20), 413, "request body over"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP64", "data": [0.2, 0.3, 0.5]}]}`, 400, `inputs[0].name: "x"`},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [1, 3], "datatype": "INT8", "data": [0, 0, 1]}]}`, 400, "datatype: \"INT8\": want FP64 or FP32"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [2, 3], "datatype": "FP64", "data": [0.2, 0.3, 0.5]}]}`, 400, "3 values for the shape's 6"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [3], "datatype": "FP64", "data": [0.2, 0.3, 0.5]}]}`, 400, "want [N, C]"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [2, 3], "datatype": "FP64", "data": [[0.2, 0.8], [0.2, 0.3, 0.5, 0.5]]}]}`, 400, "a row of 2 values: the shape's rows have 3"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [1, 3], "datatype": "FP32", "data": [0.2, 0.3, 1e39]}]}`, 400, "out of FP32's range"},
		{"/v2/models/t3/infer", js, `{"inputs": []}`, 400, "0 tensors"},
		{"/v2/models/t3/infer", js, `{"inputs": [{"name": "probs", "shape": [1, 3], "datatype": "FP64", "data": [0.2, 0.3, 0.5]}], "outputs": [{"name": "y"}]}`, 400, `outputs[0].name: "y"`},
		{"/v2/models/t3/versions/000000000000/infer", js, `{"inputs": [{"name": "probs", "shape": [1, 3], "datatype": "FP64", "data": [0.2, 0.3, 0.5]}]}`, 404, `version "000000000000": not served`},
		{"/v1/nothing", js, `{}`, 404, "no such endpoint"},
		{"/v1/admin/reload", js, `{}`, 404, "no such endpoint"}, // off without --admin
	} {
		status, msg := post(t, u, c.path, c.ct, c.body)
		if status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s %.80s: %d %q; want %d with %q", c.path, c.body, status, msg, c.status, c.want)
		}
	}
	// "renormalize": true divides the row by its sum, as calib apply
	// --renormalize does.
	if status, msg := post(t, u, "/v1/calibrate/t3", js, `{"probs": [[0.2, 0.3, 0.6]], "renormalize": true}`); status != 200 {
		t.Errorf("renormalize: %d %s", status, msg)
	}
	// curl -d's default Content-Type: read as JSON, as the README's
	// commands send it.
	if status, msg := post(t, u, "/v1/calibrate/t3", "application/x-www-form-urlencoded", `{"probs": [[0.2, 0.3, 0.5]]}`); status != 200 {
		t.Errorf("curl's form content type: %d %s", status, msg)
	}
	// FP32 input is rounded to float32 first, as a float32 file is read.
	c := client.New(u, client.Options{})
	r32, err := c.Infer(context.Background(), "t3", "", serve.InferRequest{Inputs: []serve.InferTensor{{Name: "logits", Shape: []int64{1, 3}, Datatype: "FP32", Data: json.RawMessage(`[[0.1, 0.2, 0.3]]`)}}})
	if err != nil {
		t.Fatal(err)
	}
	r64, err := c.Calibrate(context.Background(), "t3", [][]float64{{float64(float32(0.1)), float64(float32(0.2)), float64(float32(0.3))}}, true)
	if err != nil || !slices.Equal(r32.Outputs[0].Data, r64[0]) {
		t.Errorf("FP32: %v, %v (err %v)", r32.Outputs[0].Data, r64, err)
	}
	if !strings.Contains(s.log(), "listening on http://127.0.0.1:") {
		t.Errorf("log: %s", s.log())
	}
}

// TestServeReloadUnderLoad: while clients send requests, the maps
// directory changes (a new version of a map, then a bad file in its
// place) and is reloaded by the admin call and by SIGHUP: no request
// fails, every answer is one of the two versions' whole, the bad file
// never replaces the good map, and the metrics say which reload failed.
func TestServeReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	fitOne(t, dir, maps, "m", 1)
	fitOne(t, dir, dir, "m2", 2) // the next version, beside the directory
	next, _ := os.ReadFile(filepath.Join(dir, "m2.json"))
	s := start(t, "--maps", maps, "--admin")
	u := "http://" + strings.TrimPrefix(s.url, "http://")
	c := client.New(u, client.Options{})
	ctx := context.Background()
	x := [][]float64{{0.3, -1.2, 2.0}, {1.5, 0.1, -0.4}}
	before, err := c.Calibrate(ctx, "m", x, true)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answers [][][]float64
	var failures []error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				got, err := c.Calibrate(ctx, "m", x, true)
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else if len(answers) < 50 || !slices.EqualFunc(got, answers[len(answers)-1], slices.Equal) {
					answers = append(answers, got)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	// A new version, atomically in place; reloaded by the admin call.
	writeAtomic(t, filepath.Join(maps, "m.json"), next)
	rep, err := c.Reload(ctx)
	if err != nil || rep.Maps["m"] == "" {
		t.Fatalf("reload: %v %+v", err, rep)
	}
	time.Sleep(100 * time.Millisecond)
	after, err := c.Calibrate(ctx, "m", x, true)
	if err != nil || slices.EqualFunc(after, before, slices.Equal) {
		t.Fatalf("after the reload: %v %v", after, err)
	}
	// A bad file in its place, reloaded by SIGHUP: the good map stays.
	writeAtomic(t, filepath.Join(maps, "m.json"), []byte(`{"schema_version": 1, "method": "temperature"`))
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.log(), "map not loaded") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed during the reloads, first: %v", len(failures), failures[0])
	}
	for _, a := range answers {
		if !slices.EqualFunc(a, before, slices.Equal) && !slices.EqualFunc(a, after, slices.Equal) {
			t.Fatalf("an answer of neither version: %v", a)
		}
	}
	still, err := c.Calibrate(ctx, "m", x, true)
	if err != nil || !slices.EqualFunc(still, after, slices.Equal) {
		t.Fatalf("after the bad file: %v %v (want the good map kept)", still, err)
	}
	// The metrics parse with Prometheus's own text parser and say that
	// the last reload failed and which map version is served.
	text, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation) // Prometheus's classic names: calib's follow them
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	if g := families["calib_maps_last_reload_successful"]; g == nil || g.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("calib_maps_last_reload_successful: %v", g)
	}
	info := families["calib_map_info"]
	if info == nil || len(info.Metric) != 1 {
		t.Fatalf("calib_map_info: %v", info)
	}
	ms, _ := c.Maps(ctx)
	labels := map[string]string{}
	for _, l := range info.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if len(ms) != 1 || labels["version"] != ms[0].Version || labels["sha256"] != ms[0].SHA256 || labels["name"] != "m" {
		t.Errorf("calib_map_info %v, maps %+v", labels, ms)
	}
	rows := families["calib_calibrated_rows_total"]
	if rows == nil || rows.Metric[0].GetCounter().GetValue() < 2 {
		t.Errorf("calib_calibrated_rows_total: %v", rows)
	}
	if families["calib_http_request_duration_seconds"] == nil {
		t.Errorf("no request-duration histogram")
	}
}

// writeAtomic writes b to name through a temporary file and a rename.
func writeAtomic(t *testing.T, name string, b []byte) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// TestServeSafety: an address beyond loopback without a token is refused
// (exit 2); with a token file, a request without the token is 401 and
// one with it is answered (the health checks need none); SIGTERM stops
// the server with exit 0; a map directory with a bad file does not start.
func TestServeSafety(t *testing.T) {
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	fitOne(t, dir, maps, "m", 1)
	out, err := exec.Command(calibBinary(t), "serve", "--maps", maps, "--addr", "0.0.0.0:0").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--addr 0.0.0.0:0 listens beyond this machine") {
		t.Errorf("0.0.0.0 without a token: %v: %s", err, out)
	}
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("short\n"), 0o600)
	out, err = exec.Command(calibBinary(t), "serve", "--maps", maps, "--addr", "0.0.0.0:0", "--token-file", tok).CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "want at least 16") {
		t.Errorf("a short token: %v: %s", err, out)
	}
	secret := "0123456789abcdef0123456789abcdef"
	os.WriteFile(tok, []byte(secret+"\n"), 0o600)
	s := start(t, "--maps", maps, "--token-file", tok)
	u := "http://" + strings.TrimPrefix(s.url, "http://")
	if _, err := client.New(u, client.Options{}).Maps(context.Background()); !isStatus(err, 401) {
		t.Errorf("no token: %v", err)
	}
	if _, err := client.New(u, client.Options{Token: "wrong-token-0123456789"}).Maps(context.Background()); !isStatus(err, 401) {
		t.Errorf("a wrong token: %v", err)
	}
	if ms, err := client.New(u, client.Options{Token: secret}).Maps(context.Background()); err != nil || len(ms) != 1 {
		t.Errorf("the token: %v %v", ms, err)
	}
	if ok, err := client.New(u, client.Options{}).Ready(context.Background()); !ok || err != nil {
		t.Errorf("ready without a token: %v %v", ok, err)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil || !strings.Contains(s.log(), "calib serve: stopped") {
			t.Errorf("SIGTERM: %v: %s", err, s.log())
		}
		s.done <- err // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatal("SIGTERM did not stop the server")
	}
	os.WriteFile(filepath.Join(maps, "bad.json"), []byte("{}"), 0o644)
	out, err = exec.Command(calibBinary(t), "serve", "--maps", maps, "--addr", "127.0.0.1:0").CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "bad.json") {
		t.Errorf("a bad map at start: %v: %s", err, out)
	}
}

func isStatus(err error, status int) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == status
}

// TestServeBinaryTensors: Triton's binary tensor extension: an FP32 or
// FP64 input sent as bytes after the JSON header, and the output asked as
// bytes, give the numbers of the JSON protocol bit for bit; a size that
// does not match the shape is refused.
func TestServeBinaryTensors(t *testing.T) {
	dir := t.TempDir()
	maps := filepath.Join(dir, "maps")
	os.Mkdir(maps, 0o755)
	fitOne(t, dir, maps, "m", 1)
	s := start(t, "--maps", maps)
	u := "http://" + strings.TrimPrefix(s.url, "http://")
	x := []float64{0.3, -1.2, 2.0, 1.5, 0.1, -0.4}
	c := client.New(u, client.Options{})
	for _, dt := range []string{"FP64", "FP32"} {
		raw, _ := json.Marshal(x)
		want, err := c.Infer(context.Background(), "m", "", serve.InferRequest{Inputs: []serve.InferTensor{{Name: "logits", Shape: []int64{2, 3}, Datatype: dt, Data: raw}}})
		if err != nil {
			t.Fatal(err)
		}
		var blob []byte
		for _, v := range x {
			if dt == "FP32" {
				blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(float32(v)))
			} else {
				blob = binary.LittleEndian.AppendUint64(blob, math.Float64bits(v))
			}
		}
		head := fmt.Sprintf(`{"id": "b", "inputs": [{"name": "logits", "shape": [2, 3], "datatype": %q, "parameters": {"binary_data_size": %d}}], "outputs": [{"name": "probs", "parameters": {"binary_data": true}}]}`, dt, len(blob))
		req, _ := http.NewRequest(http.MethodPost, u+"/v2/models/m/infer", bytes.NewReader(append([]byte(head), blob...)))
		req.Header.Set("Inference-Header-Content-Length", fmt.Sprint(len(head)))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var n int
		fmt.Sscan(resp.Header.Get("Inference-Header-Content-Length"), &n)
		if resp.StatusCode != 200 || n <= 0 || n > len(body) {
			t.Fatalf("%s: %d, header %d: %s", dt, resp.StatusCode, n, body)
		}
		var h struct {
			ID      string `json:"id"`
			Outputs []struct {
				Shape      []int64        `json:"shape"`
				Parameters map[string]int `json:"parameters"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(body[:n], &h); err != nil || h.ID != "b" || h.Outputs[0].Parameters["binary_data_size"] != 48 || len(body)-n != 48 {
			t.Fatalf("%s: header %s (%v), %d bytes after it", dt, body[:n], err, len(body)-n)
		}
		got := make([]float64, 6)
		for i := range got {
			got[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[n+8*i:]))
		}
		if !slices.Equal(got, want.Outputs[0].Data) {
			t.Errorf("%s: bytes %v, JSON %v", dt, got, want.Outputs[0].Data)
		}
		// A size that does not match: refused, naming the parameter.
		req, _ = http.NewRequest(http.MethodPost, u+"/v2/models/m/infer", bytes.NewReader(append([]byte(head), blob[:len(blob)-1]...)))
		req.Header.Set("Inference-Header-Content-Length", fmt.Sprint(len(head)))
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), "binary_data_size") {
			t.Errorf("%s: a short blob: %d %s", dt, resp.StatusCode, body)
		}
	}
}
