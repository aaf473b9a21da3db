package monitor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sync says when the log is flushed to disk, and so what an
// acknowledged record survives.
type Sync int

const (
	// SyncGroup (the default) writes the records that arrive while the
	// disk is busy as one group and fsyncs it once; each record is
	// acknowledged after its group's fsync: it survives a crash of the
	// process, of the machine and a power loss.
	SyncGroup Sync = iota
	// SyncEach writes and fsyncs every record on its own (one fsync per
	// request: the slowest, for comparison).
	SyncEach
	// SyncNone writes the records without fsync: an acknowledged record
	// survives the process's crash (it is in the kernel's page cache)
	// but not the machine's.
	SyncNone
)

var syncNames = []string{"group", "each", "none"}

func (s Sync) String() string {
	if s >= 0 && int(s) < len(syncNames) {
		return syncNames[s]
	}
	return "Sync(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (s Sync) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: group, each or
// none.
func (s *Sync) UnmarshalText(b []byte) error {
	i := slices.Index(syncNames, string(b))
	if i < 0 {
		return fmt.Errorf("%q: want group, each or none", b)
	}
	*s = Sync(i)
	return nil
}

// Defaults of StoreOptions.
const (
	DefaultSnapshotEvery = 5 * time.Minute
	DefaultSegmentBytes  = 64 << 20
)

// StoreOptions configures a Store.
type StoreOptions struct {
	Monitor Options
	Sync    Sync
	// SnapshotEvery is how often the state is written to a snapshot and
	// the log cut (0: DefaultSnapshotEvery; -1: only on Close and
	// Snapshot).
	SnapshotEvery time.Duration
	// SegmentBytes is the size past which the log starts a new segment
	// file (0: DefaultSegmentBytes); a snapshot deletes the segments it
	// holds.
	SegmentBytes int64
	// Now is the clock of the receipt times (nil: time.Now).
	Now func() time.Time
	// Snapshotted, if not nil, is called after each snapshot (its error
	// nil) or failed snapshot.
	Snapshotted func(bytes int, err error)
	// Logger receives what Open and Repair cut or drop (a torn tail, a
	// state restored under other alarm options) and the writes that
	// fail; nil means slog.Default().
	Logger *slog.Logger
}

// Store is a Monitor kept in a directory: every record is appended to a
// write-ahead log (segments wal-LSN.log, LSN the first record's) and
// acknowledged once it is on disk as StoreOptions.Sync says; the state is
// written to snapshot-LSN.json atomically (write, fsync, rename, fsync
// the directory) every SnapshotEvery and on Close, and the segments it
// holds are deleted. Open restores the latest snapshot and replays the
// log after it, so that a process killed at any point restarts with
// every acknowledged record applied once.
type Store struct {
	o   StoreOptions
	dir string
	m   *Monitor

	mu    sync.Mutex // guards the queue and the log's state
	cond  *sync.Cond
	queue []*entry
	// next is the LSN of the next record to be written (the commit
	// goroutine's: a record gets its LSN when it is written, so that a
	// failed write leaves no gap); written is the same, read by
	// openSegment under segMu (the first LSN of a new segment).
	next    uint64
	written uint64
	closed  bool

	// health: writeErr is the error of the last write while writes fail
	// (nil once one succeeds, or a probe of the disk does); failedWrites
	// counts the failed writes (a probe clears the error only if none
	// failed while it ran).
	healthMu     sync.Mutex
	writeErr     error
	failedWrites int64
	// dirty says a failed write may have left bytes after segSize: the
	// next write cuts them first. failedSize is the largest write that
	// failed (what the probe writes).
	dirty      bool
	failedSize int

	segMu    sync.Mutex // guards the segment being written
	seg      *os.File   // the segment being written
	segFirst uint64     // its first LSN
	segSize  int64

	done     chan struct{}
	snapMu   sync.Mutex // one snapshot at a time
	lastSnap uint64     // the LSN of the latest snapshot
	stop     chan struct{}
	wg       sync.WaitGroup
	lock     *os.File // the directory's lock, held while open
}

// entry is a record waiting for its group's commit.
type entry struct {
	lsn   uint64
	rec   *Record
	frame []byte
	done  chan struct{}
	out   Applied
	err   error
}

// Open opens (or creates) the store in dir: the latest snapshot is
// restored and the log after it replayed. A torn tail of the last
// segment (a write the process did not finish, never acknowledged: the
// rules are in the package doc) is cut off, with a log line; any other
// damage is a *DamageError naming the file and offset, and nothing is
// changed (Repair is the way out).
func Open(dir string, o StoreOptions) (*Store, error) {
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Sync < SyncGroup || o.Sync > SyncNone {
		return nil, fmt.Errorf("monitor: sync %d", o.Sync)
	}
	m, err := New(o.Monitor)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("monitor: state directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{o: o, dir: dir, m: m, done: make(chan struct{}), stop: make(chan struct{}), lock: lock}
	s.cond = sync.NewCond(&s.mu)
	if err := s.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	s.written = s.next
	if err := s.openSegment(); err != nil {
		lock.Close()
		return nil, err
	}
	go s.commit()
	s.wg.Add(1)
	go s.every(time.Second, s.probeHealth)
	if o.SnapshotEvery > 0 {
		s.wg.Add(1)
		go s.every(o.SnapshotEvery, func() { _ = s.Snapshot() }) // reported through Snapshotted
	}
	return s, nil
}

// Monitor returns the store's monitor (for its reports and counters;
// records go through Submit).
func (s *Store) Monitor() *Monitor { return s.m }

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// snapshots and segments of a directory, sorted by LSN.
func (s *Store) files(prefix, suffix string) ([]uint64, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	var lsns []uint64
	for _, e := range ents {
		name := e.Name()
		num, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		num, ok = strings.CutSuffix(num, suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		lsns = append(lsns, n)
	}
	slices.Sort(lsns)
	return lsns, nil
}

// segments returns the first LSNs of the log's segments that hold bytes,
// and of the segment current (0: none) whatever it holds, sorted: an
// empty segment (one a failed rotation left) holds no record, and must
// not be taken for the end of the one before it.
func (s *Store) segments(current uint64) ([]uint64, error) {
	all, err := s.files("wal-", ".log")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, n := range all {
		if fi, err := os.Stat(s.segName(n)); n == current || err == nil && fi.Size() > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

func (s *Store) segName(lsn uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("wal-%020d.log", lsn))
}

func (s *Store) snapName(lsn uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("snapshot-%020d.json", lsn))
}

// recover restores the latest snapshot and replays the log after it,
// cutting a torn tail of the last segment.
func (s *Store) recover() error {
	snaps, err := s.files("snapshot-", ".json")
	if err != nil {
		return err
	}
	if len(snaps) > 0 {
		last := snaps[len(snaps)-1]
		if err := s.restore(last); err != nil {
			return err
		}
	}
	segs, err := s.segments(0)
	if err != nil {
		return err
	}
	expect := s.m.LSN() + 1
	for i, first := range segs {
		lastSeg := i == len(segs)-1
		if i+1 < len(segs) && segs[i+1] <= expect {
			continue // every record of this segment is in the snapshot
		}
		seg, err := readSegment(s.segName(first), first)
		if err != nil {
			return err
		}
		cut, err := s.replaySegment(seg, lastSeg, s.lastSnap, &expect)
		if err != nil {
			return err
		}
		if cut != nil {
			if err := truncate(cut.File, cut.Offset); err != nil {
				return err
			}
			s.o.Logger.Warn("monitor: a torn write cut off the end of the log (never acknowledged)", "file", cut.File, "offset", cut.Offset, "bytes", cut.Bytes, "found", cut.What)
		}
	}
	s.next = expect
	return nil
}

// restore restores snapshot lsn, checking its checksum and the LSN it
// holds.
func (s *Store) restore(lsn uint64) error {
	name := s.snapName(lsn)
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	state, err := openSnapshot(name, b)
	if err != nil {
		return err
	}
	warnings, err := s.m.Restore(state)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("monitor: %s: %w", name, err)
	}
	if err != nil {
		return &DamageError{File: name, Offset: -1, What: fmt.Sprintf("a snapshot that does not decode: %v", err)}
	}
	for _, w := range warnings {
		s.o.Logger.Warn(w.Error(), "snapshot", name)
	}
	if got := s.m.LSN(); got != lsn {
		return &DamageError{File: name, Offset: -1, What: fmt.Sprintf("a snapshot holding the state after record %d, where its name says %d", got, lsn)}
	}
	s.lastSnap = lsn
	return nil
}

// truncate cuts the file name at off and fsyncs it.
func truncate(name string, off int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	defer f.Close()
	if err := truncateFile(f, off); err != nil {
		return fmt.Errorf("monitor: %s: %w", name, err)
	}
	return nil
}

// truncateFile cuts f at off and fsyncs it.
func truncateFile(f *os.File, off int64) error {
	if err := f.Truncate(off); err != nil {
		return err
	}
	return f.Sync()
}

// encodeFrame returns the frame of r without its LSN and checksum
// (sealFrame sets them): the payload's length, then the payload.
func encodeFrame(r *Record) ([]byte, error) {
	b, err := r.AppendBinary(make([]byte, frameHeader, frameHeader+64+9*len(r.Labels)+8*len(r.Probs)))
	if err != nil {
		return nil, err
	}
	if n := len(b) - frameHeader; n > maxFrame {
		return nil, fmt.Errorf("monitor: a record of %d bytes: at most %d (send smaller batches)", n, maxFrame)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-frameHeader))
	return b, nil
}

// sealFrame sets the LSN of a frame from encodeFrame and its checksum,
// the CRC-32C of the LSN and payload.
func sealFrame(b []byte, lsn uint64) {
	binary.LittleEndian.PutUint64(b[8:], lsn)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crcTable))
}

// openSegment starts a new segment at the next LSN to be written (the
// directory fsynced so that the file's name survives); s.segMu is held,
// or the commit goroutine is not running.
func (s *Store) openSegment() error {
	if s.dirty {
		// A failed write's bytes must not stay in a segment left behind.
		if err := s.cut(); err != nil {
			return err
		}
	}
	if s.seg != nil {
		// Whatever Sync says, the records of a closed segment are on
		// disk before a later segment's name is: a crash then loses the
		// tail of the last segment only. On failure the segment stays
		// the one written (the next write tries again).
		if err := s.seg.Sync(); err != nil {
			return fmt.Errorf("monitor: %w", err)
		}
	}
	f, err := os.OpenFile(s.segName(s.written), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		f.Close()
		if s.seg != nil && st != nil && st.Size() == 0 {
			os.Remove(f.Name())
			syncDir(s.dir) // an empty segment left is harmless (segments)
		}
		return fmt.Errorf("monitor: %w", err)
	}
	if s.seg != nil {
		s.seg.Close() // fsynced above
	}
	s.seg, s.segFirst, s.segSize = f, s.written, st.Size()
	return nil
}

// syncDir fsyncs a directory (its entries).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("monitor: fsync %s: %w", dir, err)
	}
	return nil
}

// ErrClosed is Submit's error after Close.
var ErrClosed = errors.New("monitor: the store is closed")

// Submit checks r (Monitor.Check, with r.Time set to the receipt time
// when 0), appends it to the log, waits until it is on disk (Sync) and
// applied, and returns what applying it did. A record is acknowledged
// when Submit returns no error: it survives a crash as Sync says and is
// applied once, on restart too. A duplicate request id (of the same
// model) returns an Applied with Duplicate set and nothing logged.
// Errors: Check's (*CheckError), ErrClosed, a *WriteError (the disk is
// full or failing: the record is not in the log, not applied, and left
// nothing in the state; the next record is tried again, and Healthy says
// whether writes succeed), or ctx's error while waiting (the record may
// still be applied).
func (s *Store) Submit(ctx context.Context, r *Record) (Applied, error) {
	if r.Time == 0 {
		r.Time = s.o.Now().UnixNano()
	}
	if err := s.m.Check(r); err != nil {
		if errors.Is(err, ErrDuplicate) {
			return Applied{Duplicate: true}, nil
		}
		return Applied{}, err
	}
	// The record is encoded before the lock, which only orders it.
	frame, err := encodeFrame(r)
	if err != nil {
		s.m.Release(r)
		return Applied{}, err
	}
	e := &entry{rec: r, frame: frame, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.m.Release(r)
		return Applied{}, ErrClosed
	}
	s.queue = append(s.queue, e)
	s.cond.Signal()
	s.mu.Unlock()
	select {
	case <-e.done:
		return e.out, e.err
	case <-ctx.Done():
		return Applied{}, ctx.Err()
	}
}

// WriteError is a record the log could not take: the write or fsync
// failed (a full disk, an I/O error). Nothing of the record is in the
// log or the state.
type WriteError struct{ Err error }

func (e *WriteError) Error() string {
	return "monitor: the log could not be written (the record is not taken; the next one is tried again): " + e.Err.Error()
}

func (e *WriteError) Unwrap() error { return e.Err }

// commit is the one goroutine that writes the log: it takes the records
// queued (all of them, or one with SyncEach), gives them their LSNs,
// writes them in one write, fsyncs, applies them in order and wakes their
// callers. A failed write fails its records and gives their LSNs to the
// next.
func (s *Store) commit() {
	defer close(s.done)
	var buf []byte
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		if len(s.queue) == 0 && s.closed {
			s.mu.Unlock()
			return
		}
		batch := s.queue
		if s.o.Sync == SyncEach {
			batch = s.queue[:1]
		}
		s.queue = s.queue[len(batch):]
		s.mu.Unlock()

		buf = buf[:0]
		for i, e := range batch {
			e.lsn = s.next + uint64(i)
			sealFrame(e.frame, e.lsn)
			buf = append(buf, e.frame...)
		}
		if err := s.write(buf, s.next+uint64(len(batch))); err != nil {
			s.wrote(err)
			werr := &WriteError{Err: err}
			for _, e := range batch {
				s.m.Release(e.rec)
				e.err = werr
				close(e.done)
			}
			continue
		}
		s.wrote(nil)
		s.next += uint64(len(batch))
		s.m.mu.Lock()
		for _, e := range batch {
			e.out = s.m.apply(e.lsn, e.rec)
		}
		s.m.mu.Unlock()
		for _, e := range batch {
			close(e.done)
		}
	}
}

// wrote records a write's outcome for Healthy.
func (s *Store) wrote(err error) {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if err != nil {
		if s.writeErr == nil {
			s.o.Logger.Error("monitor: writes to the log fail; records are refused until one succeeds", "dir", s.dir, "error", err)
		}
		s.failedWrites++
	} else if s.writeErr != nil {
		s.o.Logger.Info("monitor: the log is written again", "dir", s.dir)
	}
	s.writeErr = err
}

// Healthy returns nil while the log is written, or the error of the last
// write while writes fail (a full disk): until a write succeeds again, or
// a probe of the disk does (every second while writes fail: a failed
// write still in the segment is cut off, and a temporary file of the size
// of the largest write that failed is written, fsynced and removed).
func (s *Store) Healthy() error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.writeErr
}

// FailedWrites returns the number of writes of the log that failed.
func (s *Store) FailedWrites() int64 {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.failedWrites
}

// probeHealth probes the disk while writes fail, and marks the store
// healthy when the probe succeeds.
func (s *Store) probeHealth() {
	s.healthMu.Lock()
	failed, failing := s.failedWrites, s.writeErr != nil
	s.healthMu.Unlock()
	if !failing || s.probe() != nil {
		return
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.writeErr != nil && s.failedWrites == failed {
		s.o.Logger.Info("monitor: the disk takes writes again", "dir", s.dir)
		s.writeErr = nil
	}
}

// probe cuts a failed write off the segment if it is still there, then
// writes, fsyncs and removes a temporary file in the state directory of
// the size of the largest write that failed (at least 64 KiB).
func (s *Store) probe() error {
	s.segMu.Lock()
	size := max(64<<10, s.failedSize)
	var err error
	if s.dirty {
		err = s.cut()
	}
	s.segMu.Unlock()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".probe-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// write appends a group of frames (the records s.written to end-1) to
// the log, starting a new segment past SegmentBytes, and flushes it as
// Sync says. A failed write is cut off the segment (or, if that fails
// too, before the next write), so that a record refused never comes back
// on replay.
func (s *Store) write(b []byte, end uint64) error {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if s.dirty {
		if err := s.cut(); err != nil {
			return err
		}
	}
	if s.segSize >= s.o.SegmentBytes {
		if err := s.openSegment(); err != nil {
			return err
		}
	}
	n, err := s.write1(b)
	if err == nil && s.o.Sync != SyncNone {
		err = s.seg.Sync()
	}
	if err != nil {
		s.failedSize = max(s.failedSize, len(b))
		if n > 0 || s.o.Sync != SyncNone {
			s.dirty = true
			if cerr := s.cut(); cerr != nil {
				s.o.Logger.Error("monitor: a failed write could not be cut off the log: its records, refused, are in the segment until the next write cuts them (if the process stops first, the next start applies them)",
					"file", s.seg.Name(), "offset", s.segSize, "error", cerr)
			}
		}
		return err
	}
	s.segSize += int64(len(b))
	s.written = end
	return nil
}

// write1 writes b to the segment (testWrite in tests).
func (s *Store) write1(b []byte) (int, error) {
	if testWrite != nil {
		if err := testWrite(b); err != nil {
			return 0, err
		}
	}
	return s.seg.Write(b)
}

// testWrite, if not nil, fails the writes of the log it returns an
// error for (the tests' full disk).
var testWrite func(b []byte) error

// cut truncates the segment back to segSize (what was written and
// acknowledged) and fsyncs it; s.segMu is held.
func (s *Store) cut() error {
	if err := truncateFile(s.seg, s.segSize); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// Snapshot writes the state to a snapshot file atomically and deletes
// the segments and older snapshots it makes unneeded. The log goes on
// while it writes.
func (s *Store) Snapshot() error {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	// Cut the log first so that the segments before the cut hold only
	// records the snapshot will hold.
	s.m.mu.Lock()
	lsn := s.m.st.lsn
	if lsn == s.lastSnap {
		s.m.mu.Unlock()
		return nil // nothing new
	}
	b, err := s.m.marshal()
	s.m.mu.Unlock()
	if err == nil {
		err = s.writeSnapshot(lsn, b)
	}
	if s.o.Snapshotted != nil {
		s.o.Snapshotted(len(b), err)
	}
	if err != nil {
		return err
	}
	s.lastSnap = lsn
	return s.prune(lsn)
}

// writeSnapshot writes b as snapshot-LSN.json: a temporary file, fsync,
// rename, fsync of the directory.
func (s *Store) writeSnapshot(lsn uint64, b []byte) error {
	return writeSnapshotFile(s.dir, s.snapName(lsn), b)
}

// writeSnapshotFile writes the snapshot of state b as name in dir, with
// its checksum: a temporary file, fsync, rename, fsync of the directory.
func writeSnapshotFile(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, ".snapshot-*.tmp")
	if err != nil {
		return fmt.Errorf("monitor: snapshot: %w", err)
	}
	_, err = tmp.Write(sealSnapshot(b))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("monitor: snapshot: %w", err)
	}
	return syncDir(dir)
}

// prune deletes the snapshots before lsn's and the segments whose
// records it holds, and starts a new segment so that the current one
// can go at the next snapshot.
func (s *Store) prune(lsn uint64) error {
	s.segMu.Lock()
	if s.segSize > 0 && s.seg != nil {
		// The records not yet written go to the new segment: the commit
		// goroutine writes under s.segMu, so the cut is exact.
		if err := s.openSegment(); err != nil {
			s.segMu.Unlock()
			return err
		}
	}
	s.segMu.Unlock()
	snaps, err := s.files("snapshot-", ".json")
	if err != nil {
		return err
	}
	for _, n := range snaps {
		if n < lsn {
			os.Remove(s.snapName(n))
		}
	}
	s.segMu.Lock()
	current := s.segFirst
	s.segMu.Unlock()
	segs, err := s.segments(current)
	if err != nil {
		return err
	}
	for i, first := range segs {
		// Segment i holds the records first .. segs[i+1]-1.
		if i+1 < len(segs) && segs[i+1] <= lsn+1 {
			os.Remove(s.segName(first))
		}
	}
	// Temporary files of snapshots a killed process left.
	if tmps, _ := filepath.Glob(filepath.Join(s.dir, ".snapshot-*.tmp")); len(tmps) > 0 {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	return nil
}

// every calls f every d until the store is closed.
func (s *Store) every(d time.Duration, f func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// Close stops taking records, waits for those queued, writes a last
// snapshot and closes the log.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	<-s.done
	err := s.Snapshot()
	s.segMu.Lock()
	if s.dirty {
		if cerr := s.cut(); cerr != nil && err == nil {
			err = fmt.Errorf("monitor: a failed write could not be cut off %s: its refused records will be applied at the next start: %w", s.seg.Name(), cerr)
		}
	}
	if cerr := s.seg.Close(); err == nil {
		err = cerr
	}
	s.seg = nil
	s.segMu.Unlock()
	s.lock.Close()
	return err
}
