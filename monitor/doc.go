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
// serve --data serves it over HTTP (package serve).
//
// # The write-ahead log, as it is on disk
//
// A state directory holds segments wal-LSN.log (LSN, 20 digits, is the
// sequence number of the segment's first record) and snapshots
// snapshot-LSN.json (the state after record LSN). A segment is a run of
// frames, one per record, with nothing between them:
//
//	offset  size  field
//	0       4     n, the payload's length in bytes (little-endian uint32, at most 2^30)
//	4       4     CRC-32C (Castagnoli) of bytes 8 .. 16+n: the LSN and the payload
//	8       8     LSN (little-endian uint64): one more than the previous record's
//	16      n     payload: the record (Record.AppendBinary)
//
// The records of a log have consecutive LSNs; a segment starts where
// the previous one ends. Writes are appends: a group of frames is
// written with one write(2), fsynced as StoreOptions.Sync says, and only
// then acknowledged. A segment is fsynced before the next one is
// created, so that a crash can only leave the last segment's tail
// unfinished. Open reads the log by these rules:
//
//   - A torn tail is what a write the process or machine did not finish
//     leaves at the end of the last segment, and nothing else: fewer
//     bytes than a frame header; zeros only (what some file systems leave
//     in the blocks of a file extended before the crash); or one frame
//     whose header carries the expected LSN and whose length runs past
//     the end, with no valid frame starting anywhere in the bytes after
//     its header. A torn tail was never acknowledged: it is cut off (the
//     file truncated), and a log line says how many bytes went.
//   - Everything else is damage: a frame whose checksum does not match
//     (complete, whatever follows it), a length past the end with a valid
//     frame after it, an LSN other than the expected one, a payload that
//     does not decode, a torn tail in a segment that is not the last.
//     Open refuses to start, naming the file, the offset and what it
//     found (a *DamageError): acknowledged records may be behind it.
//     Repair keeps every intact record (each frame whose checksum
//     matches, found past the damage) in a new snapshot and moves the
//     damaged files aside, saying how many records were lost.
//
// A snapshot is written to a temporary file, fsynced, renamed, and the
// directory fsynced. Its content is
//
//	{"crc32c":C,"state":S}
//
// where S is the monitor's state (Monitor.MarshalJSON) and C the decimal
// CRC-32C of S's bytes; a snapshot whose checksum does not match is
// refused as damage. (A snapshot of calib before the checksum is the
// state S alone, and read as it is.)
package monitor
