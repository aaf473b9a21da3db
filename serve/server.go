package serve

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/calib-dev/calib/monitor"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 64 << 20 // a request body, in bytes
	DefaultMaxRows      = 100_000  // rows of one request
	// DefaultReportTimeout is the longest a report may take.
	DefaultReportTimeout = 30 * time.Second
)

// Options configures a Server. The zero value but MapsDir serves the
// maps with the default limits, no token, and no admin endpoint.
type Options struct {
	// MapsDir holds the maps, one NAME.json file (written by calib fit)
	// per map.
	MapsDir string
	// Token, if not empty, is the bearer token every request but the
	// health checks must carry (Authorization: Bearer TOKEN), compared in
	// constant time.
	Token []byte
	// MaxBodyBytes bounds a request's body (413 past it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxRows bounds the rows of one request (413 past it); 0 means
	// DefaultMaxRows.
	MaxRows int
	// Admin turns on the admin endpoint POST /v1/admin/reload.
	Admin bool
	// Logger receives the reloads' and errors' log lines; nil means
	// slog.Default().
	Logger *slog.Logger
	// Store, if not nil, holds the monitors of /v1/observe, /v1/outcome
	// and /v1/monitor (the server does not close it); nil turns them
	// off. With a Store, MapsDir may be "" (no maps).
	Store *monitor.Store
	// ReportTimeout bounds the time of a report (GET /v1/monitor): past
	// it the report is refused with 503 and a message saying what to ask
	// for instead, well before the connection's write timeout would close
	// it unanswered. 0 means DefaultReportTimeout, or four fifths of the
	// write timeout of Serve if that is less.
	ReportTimeout time.Duration
}

// Server applies the maps of a directory over HTTP (the handler of
// Handler): calib's own /v1 API and the Open Inference Protocol v2 (KServe
// and Triton clients), with Prometheus metrics. Reload reads the
// directory again; requests in flight finish on the maps they started
// with.
type Server struct {
	o       Options
	log     *slog.Logger
	maps    atomic.Pointer[Maps]
	reload  sync.Mutex // one reload at a time
	reg     *prometheus.Registry
	metrics *metrics
	mux     *http.ServeMux
	handler http.Handler
	// reportTimeout is Options.ReportTimeout, its default set (Serve
	// lowers it to four fifths of its write timeout).
	reportTimeout atomic.Int64
}

// New loads the maps of o.MapsDir and returns the server. A map file that
// does not load is an error here (a server does not start on a bad map:
// ReloadReport.Errors), as is a directory without maps.
func New(o Options) (*Server, error) {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBodyBytes < 0 || o.MaxRows < 0 || o.ReportTimeout < 0 {
		return nil, fmt.Errorf("serve: negative limits (body %d bytes, %d rows, report timeout %v)", o.MaxBodyBytes, o.MaxRows, o.ReportTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{o: o, log: o.Logger, reg: prometheus.NewRegistry()}
	s.reportTimeout.Store(int64(cmp.Or(o.ReportTimeout, DefaultReportTimeout)))
	s.metrics = newMetrics(s.reg)
	if o.Store != nil {
		s.reg.MustRegister(newMonitorCollector(o.Store))
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.MapsDir == "" && o.Store != nil {
		s.maps.Store(&Maps{byName: map[string]*Map{}})
		s.routes()
		return s, nil
	}
	r := s.Reload()
	if r.Err != "" {
		return nil, fmt.Errorf("serve: %s", r.Err)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("serve: %d map file(s) do not load: %s", len(r.Errors), strings.Join(r.Errors, "; "))
	}
	if len(r.Maps) == 0 {
		return nil, fmt.Errorf("serve: no map in %s: put NAME.json files written by calib fit there", o.MapsDir)
	}
	s.routes()
	return s, nil
}

// Maps returns the maps being served.
func (s *Server) Maps() *Maps { return s.maps.Load() }

// ReloadReport is what a reload did.
type ReloadReport struct {
	// Maps are the maps served after it, by name: the version of each.
	Maps map[string]string `json:"maps"`
	// Errors are the files that did not load (each kept its previous map,
	// if it had one), one line each.
	Errors []string `json:"errors,omitempty"`
	// Err is the error of the directory itself (nothing changed).
	Err string `json:"error,omitempty"`
}

// OK reports whether the reload read every file.
func (r ReloadReport) OK() bool { return r.Err == "" && len(r.Errors) == 0 }

// Reload reads the maps directory again and swaps the new maps in at once
// (a bad file keeps its previous map; a removed file's map is dropped).
// The metrics calib_maps_last_reload_successful, ..._success_timestamp_seconds
// and calib_map_info follow it.
func (s *Server) Reload() ReloadReport {
	if s.o.MapsDir == "" {
		return ReloadReport{Maps: map[string]string{}}
	}
	s.reload.Lock()
	defer s.reload.Unlock()
	old := s.maps.Load()
	ms, errs, err := LoadMaps(s.o.MapsDir, old)
	r := ReloadReport{Maps: map[string]string{}}
	if err != nil {
		r.Err = err.Error()
		s.metrics.reloaded(nil, false)
		s.log.Error("maps not reloaded", "dir", s.o.MapsDir, "error", err)
		for _, name := range old.Names() {
			r.Maps[name] = old.Get(name).Version
		}
		return r
	}
	for _, e := range errs {
		r.Errors = append(r.Errors, e.Error())
		s.log.Error("map not loaded; its previous version, if any, is kept", "error", e)
	}
	s.maps.Store(ms)
	for _, name := range ms.Names() {
		r.Maps[name] = ms.Get(name).Version
	}
	s.metrics.reloaded(ms, len(errs) == 0)
	s.log.Info("maps loaded", "dir", s.o.MapsDir, "maps", len(ms.Names()), "errors", len(errs))
	return r
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// openPaths are the endpoints that answer without the token: the health
// checks (a prober has no token).
var openPaths = map[string]bool{"/v2/health/live": true, "/v2/health/ready": true}

// methods are the methods tried to tell a path of another method (405)
// from no path (404).
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// route answers a request: the token first (but for the health checks),
// then the endpoint, or 405 with Allow for a path of other methods, or
// 404.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if !openPaths[r.URL.Path] && !s.authorized(r) {
		s.instrument("unauthorized", func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("WWW-Authenticate", `Bearer realm="calib"`)
			return &RequestError{Status: http.StatusUnauthorized, Err: errors.New("missing or wrong bearer token (Authorization: Bearer TOKEN)")}
		}).ServeHTTP(w, r)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range methods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	s.instrument("unknown", func(w http.ResponseWriter, r *http.Request) error {
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return &RequestError{Status: http.StatusMethodNotAllowed, Field: r.URL.Path, Err: fmt.Errorf("method %s not allowed (allowed: %s)", r.Method, strings.Join(allow, ", "))}
		}
		return &RequestError{Status: http.StatusNotFound, Field: r.URL.Path, Err: errors.New("no such endpoint (see docs/serve.md: /v1/calibrate/{map}, /v2/models/{map}/infer, /v1/observe/{model}, /v1/outcome/{model}, /v1/monitor/{model}, /metrics)")}
	}).ServeHTTP(w, r)
}

// routes registers every endpoint.
func (s *Server) routes() {
	mux := http.NewServeMux()
	handle := func(pattern, name string, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.Handle(pattern, s.instrument(name, h))
	}
	handle("POST /v1/calibrate/{name}", "calibrate", s.calibrate)
	handle("GET /v1/maps", "maps", s.listMaps)
	handle("POST /v1/observe/{model}", "observe", s.observe)
	handle("POST /v1/outcome/{model}", "outcome", s.outcome)
	handle("GET /v1/monitor/{model}", "monitor", s.monitorReport)
	if s.o.Admin {
		handle("POST /v1/admin/reload", "reload", s.adminReload)
		handle("POST /v1/admin/reset/{model}", "reset", s.adminReset)
	}
	handle("GET /v2/health/live", "live", s.live)
	handle("GET /v2/health/ready", "ready", s.ready)
	handle("GET /v2", "server_metadata", s.serverMetadata)
	handle("GET /v2/models/{name}", "model_metadata", s.modelMetadata)
	handle("GET /v2/models/{name}/versions/{version}", "model_metadata", s.modelMetadata)
	handle("GET /v2/models/{name}/ready", "model_ready", s.modelReady)
	handle("GET /v2/models/{name}/versions/{version}/ready", "model_ready", s.modelReady)
	handle("POST /v2/models/{name}/infer", "infer", s.infer)
	handle("POST /v2/models/{name}/versions/{version}/infer", "infer", s.infer)
	metrics := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelError)})
	handle("GET /metrics", "metrics", func(w http.ResponseWriter, r *http.Request) error {
		metrics.ServeHTTP(w, r)
		return nil
	})
	s.mux = mux
	s.handler = http.HandlerFunc(s.route)
}

// instrument wraps h: the body limit, the error response, and the
// request metrics (by endpoint name and status). The token is route's.
func (s *Server) instrument(name string, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBodyBytes)
		if err := h(sw, r); err != nil {
			s.writeError(sw, r, err)
		}
		s.metrics.request(name, sw.code(), time.Since(start))
	})
}

// authorized reports whether r carries the token (or none is needed):
// "Authorization: Bearer TOKEN", the scheme in any case (RFC 7235).
func (s *Server) authorized(r *http.Request) bool {
	if len(s.o.Token) == 0 {
		return true
	}
	f := strings.Fields(r.Header.Get("Authorization"))
	return len(f) == 2 && strings.EqualFold(f[0], "bearer") && subtle.ConstantTimeCompare([]byte(f[1]), s.o.Token) == 1
}

// writeError writes err as {"error": "..."} with its status: a
// RequestError's (400 by default), 413 for a body past the limit, 500
// for anything else (logged).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var re *RequestError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		status = http.StatusRequestEntityTooLarge
		err = fmt.Errorf("request body over %d bytes: send smaller batches", mbe.Limit)
	case errors.As(err, &re):
		status = re.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
	default:
		s.log.Error("request failed", "path", r.URL.Path, "error", err)
	}
	writeJSON(w, status, map[string]string{"error": oneLine(err.Error())})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"the response could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// oneLine replaces line breaks in msg by spaces.
func oneLine(msg string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(msg) }

// statusWriter records the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// readJSON decodes r's body into v, refusing unknown fields and trailing
// data; its errors are RequestErrors naming what is wrong. The body is
// read as JSON whatever its Content-Type says (curl -d sends
// application/x-www-form-urlencoded), but for a multipart form, refused.
func readJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "multipart/") {
		return &RequestError{Status: http.StatusUnsupportedMediaType, Err: fmt.Errorf("Content-Type %q: want a JSON body (application/json)", ct)}
	}
	return decodeObject(r.Body, v, "the body is not the JSON object this endpoint takes")
}

// decodeObject decodes one JSON object from r into v, refusing unknown
// fields, and reads the rest of r (so that a body limit holds for all of
// it), which may only be white space. Its errors are RequestErrors (what
// starts the message of a decoding error), or the limit's
// *http.MaxBytesError.
func decodeObject(r io.Reader, v any, what string) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var mbe *http.MaxBytesError
	if err := dec.Decode(v); err != nil {
		if errors.As(err, &mbe) {
			return err
		}
		return &RequestError{Err: fmt.Errorf("%s: %v", what, err)}
	}
	rest, err := io.ReadAll(io.MultiReader(dec.Buffered(), r))
	if errors.As(err, &mbe) {
		return err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return &RequestError{Err: errors.New("data after the JSON object")}
	}
	return nil
}

// MapInfo is a served map as GET /v1/maps lists it.
type MapInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Method  string `json:"method"`
	Input   string `json:"input"`
	K       int    `json:"k"`
}

// MapsResponse is the answer of GET /v1/maps.
type MapsResponse struct {
	Maps []MapInfo `json:"maps"`
}

func (s *Server) listMaps(w http.ResponseWriter, r *http.Request) error {
	ms := s.maps.Load()
	out := MapsResponse{Maps: []MapInfo{}}
	for _, name := range ms.Names() {
		m := ms.Get(name)
		h := m.Calibrator.Info()
		out.Maps = append(out.Maps, MapInfo{name, m.Version, m.SHA256, h.Method, h.Input, h.K})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) adminReload(w http.ResponseWriter, r *http.Request) error {
	rep := s.Reload()
	status := http.StatusOK
	if !rep.OK() {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, rep)
	return nil
}
