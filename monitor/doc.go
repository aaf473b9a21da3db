// Package monitor watches the calibration of models in production: a
// Monitor keeps, per model and slice, the streamed sums of calib eval's
// one-pass metrics (evaluate.Sums) for every row counted and for each
// tumbling window, per-bin counters for Prometheus, and the predictions
// whose labels come later (joined by prediction id); a Store keeps a
// Monitor in a directory, durable: every record is in a write-ahead log
// on disk before it is acknowledged, snapshots are written atomically,
// and Open replays the log after the latest snapshot.
//
//	st, err := monitor.Open("state", monitor.StoreOptions{})
//	_, err = st.Submit(ctx, &monitor.Record{Kind: monitor.Observe, Model: "resnet",
//		K: 10, Probs: probs, Labels: labels})
//	rep, err := st.Monitor().Report("resnet", monitor.Query{})
//
// A window's or slice's report is the document `calib eval --stream
// --json --metrics smece,ece_bin,ks,brier,nll,accuracy,confidence --mode
// top_label` prints for the same rows (every number within 1e-12
// relative: the sums are added in another order; all but ks, a bound's
// midpoint from score cells, are also the in-memory evaluation's). calib
// serve --data serves it over HTTP (package serve). The log's format and
// the rules by which a damaged one is read or refused are in wal.go.
package monitor
