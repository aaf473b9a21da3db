package serve

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics (prometheus/client_golang,
// named by its rules: unit suffixes, _total for counters).
type metrics struct {
	requests   *prometheus.CounterVec   // calib_http_requests_total{handler, code}
	duration   *prometheus.HistogramVec // calib_http_request_duration_seconds{handler}
	rows       *prometheus.CounterVec   // calib_calibrated_rows_total{map}
	reloadOK   prometheus.Gauge         // calib_maps_last_reload_successful
	reloadTime prometheus.Gauge         // calib_maps_last_reload_success_timestamp_seconds
	info       *prometheus.GaugeVec     // calib_map_info{name, version, sha256}
	loaded     prometheus.Gauge         // calib_maps
}

// latencyBuckets are the request-duration histogram's upper bounds: 25 µs
// to about 1.6 s, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(25e-6, 2, 17)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "calib_http_requests_total",
			Help: "HTTP requests answered, by endpoint (handler) and status code."}, []string{"handler", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "calib_http_request_duration_seconds",
			Help: "Time from a request's arrival to its answer, by endpoint.", Buckets: latencyBuckets}, []string{"handler"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "calib_calibrated_rows_total",
			Help: "Rows calibrated, by map (both protocols)."}, []string{"map"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "calib_maps_last_reload_successful",
			Help: "1 if the last reload of the maps directory loaded every file, else 0 (a file that failed kept its previous map)."}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "calib_maps_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last reload that loaded every file."}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "calib_map_info",
			Help: "1 for each map served, labelled by its name, version and the SHA-256 of its file."}, []string{"name", "version", "sha256"}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "calib_maps",
			Help: "Maps served."}),
	}
	reg.MustRegister(m.requests, m.duration, m.rows, m.reloadOK, m.reloadTime, m.info, m.loaded)
	return m
}

// request records one answered request.
func (m *metrics) request(handler string, code int, d time.Duration) {
	m.requests.WithLabelValues(handler, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(handler).Observe(d.Seconds())
}

// reloaded records a reload: the maps now served (nil: unchanged, the
// directory failed) and whether every file loaded.
func (m *metrics) reloaded(ms *Maps, ok bool) {
	if ok {
		m.reloadOK.Set(1)
		m.reloadTime.SetToCurrentTime()
	} else {
		m.reloadOK.Set(0)
	}
	if ms == nil {
		return
	}
	m.info.Reset()
	for _, name := range ms.Names() {
		mp := ms.Get(name)
		m.info.WithLabelValues(name, mp.Version, mp.SHA256).Set(1)
	}
	m.loaded.Set(float64(len(ms.Names())))
}
