// Package serve applies calibration maps over HTTP: the server behind
// `calib serve`.
//
// A Server serves every map (NAME.json, written by calib fit) of a
// directory under its file name, in two protocols:
//
//   - calib's own: POST /v1/calibrate/{map} with {"probs": [[...], ...]} or
//     {"logits": ...} (rows, or one row) answers {"map", "version",
//     "probs"}; GET /v1/maps lists the maps; POST /v1/admin/reload (with
//     Options.Admin) reads the directory again.
//   - the Open Inference Protocol v2 (KServe, Triton): POST
//     /v2/models/{map}[/versions/{version}]/infer with one input tensor
//     "probs" or "logits" [N, C] (FP64 or FP32, nested or flat) answers
//     the output "probs" [N, K] FP64, as JSON or, with Triton's binary
//     tensor extension (Inference-Header-Content-Length), as
//     little-endian bytes after the JSON header; /v2/health/live, /v2/health/ready,
//     /v2/models/{map}/ready, GET /v2 and /v2/models/{map} (metadata).
//
// The probabilities are those of `calib apply` on a file holding the same
// numbers, bit for bit (Map.Apply: the same checks and the same map; JSON
// numbers are written in the shortest form that reads back to the same
// float64). A map's version is the first 12 hexadecimal digits of its
// file's SHA-256. Server.Reload swaps a new set of maps in at once: a
// file that fails to load keeps its previous map; requests in flight
// finish on the maps they started with. GET /metrics exposes Prometheus
// metrics (calib_http_requests_total, calib_http_request_duration_seconds,
// calib_calibrated_rows_total, calib_maps_last_reload_successful,
// calib_maps_last_reload_success_timestamp_seconds, calib_map_info).
//
// Every refused request is answered 4xx with {"error": "..."} naming the
// field, row and column; the body and the rows of a request are bounded
// (Options.MaxBodyBytes, MaxRows). Server.Serve listens on a loopback
// address unless a token or client certificates authenticate the
// clients (CheckExposure).
package serve
