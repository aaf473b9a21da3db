package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/calib-dev/calib/monitor"
)

// monitorCollector exports a store's monitors to Prometheus at each
// scrape: the per-bin counters of every model and slice (exact running
// sums, restored on restart), so that
//
//	sum by (model) (abs(sum by (model, bin) (increase(calib_bin_correct_total[w]))
//	  - sum by (model, bin) (increase(calib_bin_confidence_sum[w]))))
//	/ sum by (model) (increase(calib_bin_observations_total[w]))
//
// is the binned top-label ECE (ece_bin top_label p=1) of the rows counted
// in the range, over every replica scraped; and the monitors' totals.
// Series per model: 3 B per slice (B bins), 3 B K more with class-wise
// bins, at most --max-slices slices.
type monitorCollector struct {
	st                          *monitor.Store
	obs, conf, correct          *prometheus.Desc
	cobs, cconf, ccorrect       *prometheus.Desc
	observed, counted           *prometheus.Desc
	pending, unmatched, expired *prometheus.Desc
	duplicates, lsn, models     *prometheus.Desc
	evidence, threshold, firing *prometheus.Desc
	failedWrites, writable      *prometheus.Desc
}

func newMonitorCollector(st *monitor.Store) *monitorCollector {
	bin := []string{"model", "slice", "bin"}
	cls := []string{"model", "slice", "class", "bin"}
	ms := []string{"model", "slice"}
	return &monitorCollector{
		st: st,
		obs: prometheus.NewDesc("calib_bin_observations_total",
			"Rows counted (labelled) per top-label confidence bin: their total weight (their number when unweighted). Bin b of B is ((b-1)/B, b/B], the first [0, 1/B].", bin, nil),
		conf: prometheus.NewDesc("calib_bin_confidence_sum",
			"Sum of the weighted top-label confidences of the rows counted, per bin.", bin, nil),
		correct: prometheus.NewDesc("calib_bin_correct_total",
			"Weighted count of the rows counted whose top label was right, per bin.", bin, nil),
		cobs: prometheus.NewDesc("calib_class_bin_observations_total",
			"Rows counted per bin of class c's probability (--class-wise-bins): their total weight.", cls, nil),
		cconf: prometheus.NewDesc("calib_class_bin_confidence_sum",
			"Sum of the weighted probabilities of class c of the rows counted, per bin of it.", cls, nil),
		ccorrect: prometheus.NewDesc("calib_class_bin_correct_total",
			"Weighted count of the rows counted whose label is class c, per bin of its probability.", cls, nil),
		observed: prometheus.NewDesc("calib_monitor_observed_rows_total",
			"Predictions observed, with or without their label.", ms, nil),
		counted: prometheus.NewDesc("calib_monitor_counted_rows_total",
			"Predictions counted with their label (at once, or when their outcome came).", ms, nil),
		pending: prometheus.NewDesc("calib_monitor_pending_predictions",
			"Predictions waiting for their outcome.", nil, nil),
		unmatched: prometheus.NewDesc("calib_monitor_unmatched_outcomes_total",
			"Outcome rows whose prediction had gone (joined before, or expired) when they were applied.", nil, nil),
		expired: prometheus.NewDesc("calib_monitor_expired_predictions_total",
			"Predictions dropped before their outcome came (older than --retain, or past --max-pending).", nil, nil),
		duplicates: prometheus.NewDesc("calib_monitor_duplicate_requests_total",
			"Requests whose request_id was recorded before (not counted again).", nil, nil),
		lsn: prometheus.NewDesc("calib_monitor_last_record",
			"Sequence number of the last record applied (the write-ahead log's).", nil, nil),
		models: prometheus.NewDesc("calib_monitor_models",
			"Models observed.", nil, nil),
		evidence: prometheus.NewDesc("calib_alarm_log_evidence",
			"Log-evidence of a slice's calibration alarm since its start or reset: layer test (is it calibrated? a test martingale) or change (are the recent rows miscalibrated? a CUSUM e-detector, quick on a miscalibration that starts late); event top_label, class_wise (the mean over classes) or combined (the mean of both: the one compared with the threshold).", []string{"model", "slice", "layer", "event"}, nil),
		threshold: prometheus.NewDesc("calib_alarm_log_threshold",
			"The log-evidence at which a layer alarms: log(1/alpha) for test (P(ever | calibrated) <= alpha), log(ARL) for change (average run length to a false alarm >= ARL rows).", []string{"layer"}, nil),
		failedWrites: prometheus.NewDesc("calib_monitor_failed_writes_total",
			"Writes of the write-ahead log that failed (a full disk, an I/O error): their records were refused with 503, not taken.", nil, nil),
		writable: prometheus.NewDesc("calib_monitor_log_writable",
			"1 while the write-ahead log takes writes, 0 from a failed write until one succeeds again (or a probe of the disk does); /v2/health/ready says the same.", nil, nil),
		firing: prometheus.NewDesc("calib_alarm_firing",
			"1 once a slice's alarm layer reached its threshold (until a reset), else 0.", []string{"model", "slice", "layer"}, nil),
	}
}

func (c *monitorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.obs, c.conf, c.correct, c.cobs, c.cconf, c.ccorrect, c.observed, c.counted, c.pending, c.unmatched, c.expired, c.duplicates, c.lsn, c.models, c.evidence, c.threshold, c.firing, c.failedWrites, c.writable} {
		ch <- d
	}
}

func (c *monitorCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.st.Monitor()
	for _, bc := range m.Counters() {
		for b := range bc.Observations {
			bin := strconv.Itoa(b + 1)
			ch <- prometheus.MustNewConstMetric(c.obs, prometheus.CounterValue, bc.Observations[b], bc.Model, bc.Slice, bin)
			ch <- prometheus.MustNewConstMetric(c.conf, prometheus.CounterValue, bc.Confidence[b], bc.Model, bc.Slice, bin)
			ch <- prometheus.MustNewConstMetric(c.correct, prometheus.CounterValue, bc.Correct[b], bc.Model, bc.Slice, bin)
		}
		for k, cb := range bc.Class {
			class := strconv.Itoa(k)
			for b := range cb.Observations {
				bin := strconv.Itoa(b + 1)
				ch <- prometheus.MustNewConstMetric(c.cobs, prometheus.CounterValue, cb.Observations[b], bc.Model, bc.Slice, class, bin)
				ch <- prometheus.MustNewConstMetric(c.cconf, prometheus.CounterValue, cb.Confidence[b], bc.Model, bc.Slice, class, bin)
				ch <- prometheus.MustNewConstMetric(c.ccorrect, prometheus.CounterValue, cb.Correct[b], bc.Model, bc.Slice, class, bin)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.observed, prometheus.CounterValue, float64(bc.Observed), bc.Model, bc.Slice)
		ch <- prometheus.MustNewConstMetric(c.counted, prometheus.CounterValue, float64(bc.Counted), bc.Model, bc.Slice)
	}
	alarms := m.Alarms()
	for _, a := range alarms {
		for _, v := range []struct {
			layer, event string
			x            float64
		}{{"test", "top_label", a.TestTop}, {"test", "class_wise", a.TestClassWise}, {"test", "combined", a.Test},
			{"change", "top_label", a.ChangeTop}, {"change", "class_wise", a.ChangeClassWise}, {"change", "combined", a.Change}} {
			ch <- prometheus.MustNewConstMetric(c.evidence, prometheus.GaugeValue, v.x, a.Model, a.Slice, v.layer, v.event)
		}
		ch <- prometheus.MustNewConstMetric(c.firing, prometheus.GaugeValue, b2f(a.TestAlarm), a.Model, a.Slice, "test")
		ch <- prometheus.MustNewConstMetric(c.firing, prometheus.GaugeValue, b2f(a.ChangeAlarm), a.Model, a.Slice, "change")
	}
	if len(alarms) > 0 {
		ch <- prometheus.MustNewConstMetric(c.threshold, prometheus.GaugeValue, alarms[0].TestThreshold, "test")
		ch <- prometheus.MustNewConstMetric(c.threshold, prometheus.GaugeValue, alarms[0].ChangeThreshold, "change")
	}
	st := m.Stats()
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(c.unmatched, prometheus.CounterValue, float64(st.Unmatched))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(st.Expired))
	ch <- prometheus.MustNewConstMetric(c.duplicates, prometheus.CounterValue, float64(st.Duplicates))
	ch <- prometheus.MustNewConstMetric(c.lsn, prometheus.GaugeValue, float64(st.LSN))
	ch <- prometheus.MustNewConstMetric(c.models, prometheus.GaugeValue, float64(st.Models))
	ch <- prometheus.MustNewConstMetric(c.failedWrites, prometheus.CounterValue, float64(c.st.FailedWrites()))
	ch <- prometheus.MustNewConstMetric(c.writable, prometheus.GaugeValue, b2f(c.st.Healthy() == nil))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
