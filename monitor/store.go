package monitor

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
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
	next  uint64 // the next LSN to give a record
	// written is the LSN of the next record to be written: the first of
	// a new segment.
	written uint64
	closed  bool
	failed  error // a write or fsync failed: the store takes no more records

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
// restored and the log after it replayed; a record cut short at the end
// of the last segment (a write the process did not finish, never
// acknowledged) is dropped, and a damaged record anywhere else is an
// error naming the file and offset.
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
	if o.SnapshotEvery > 0 {
		s.wg.Add(1)
		go s.snapshotLoop()
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

func (s *Store) segName(lsn uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("wal-%020d.log", lsn))
}

func (s *Store) snapName(lsn uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("snapshot-%020d.json", lsn))
}

// recover restores the latest snapshot and replays the log after it.
func (s *Store) recover() error {
	snaps, err := s.files("snapshot-", ".json")
	if err != nil {
		return err
	}
	if len(snaps) > 0 {
		last := snaps[len(snaps)-1]
		b, err := os.ReadFile(s.snapName(last))
		if err != nil {
			return fmt.Errorf("monitor: %w", err)
		}
		if err := s.m.Restore(b); err != nil {
			return fmt.Errorf("monitor: %s: %w", s.snapName(last), err)
		}
		if got := s.m.LSN(); got != last {
			return fmt.Errorf("monitor: %s holds the state after record %d, its name says %d", s.snapName(last), got, last)
		}
		s.lastSnap = last
	}
	segs, err := s.files("wal-", ".log")
	if err != nil {
		return err
	}
	expect := s.m.LSN() + 1
	for i, first := range segs {
		lastSeg := i == len(segs)-1
		if i+1 < len(segs) && segs[i+1] <= expect {
			continue // every record of this segment is in the snapshot
		}
		if err := s.replay(s.segName(first), lastSeg, &expect); err != nil {
			return err
		}
	}
	s.next = expect
	return nil
}

// frameHeader is a record's header in the log: the payload's length,
// the CRC-32C of the LSN and payload, and the LSN.
const frameHeader = 4 + 4 + 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

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

// maxFrame bounds a record's payload.
const maxFrame = 1 << 30

// replay applies the records of one segment with an LSN of at least
// *expect, in order, advancing *expect. In the last segment a record cut
// short or damaged at the end is dropped and the file truncated there.
func (s *Store) replay(name string, last bool, expect *uint64) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	size := info.Size()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [frameHeader]byte
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			return nil
		}
		// bad handles a record that cannot be read: cut short or damaged
		// at the end of the last segment (its claimed end at or past the
		// file's end: a write the process did not finish, never
		// acknowledged), it is dropped and the file truncated; anywhere
		// else the log is damaged.
		bad := func(why string, end int64) error {
			if last && end >= size {
				// A write the process did not finish: never acknowledged.
				if err := f.Truncate(off); err != nil {
					return fmt.Errorf("monitor: %s: %w", name, err)
				}
				return f.Sync()
			}
			return fmt.Errorf("monitor: %s, offset %d: %s (the log is damaged; the records after it cannot be read)", name, off, why)
		}
		if err != nil {
			return bad("a record header cut short", size)
		}
		n := binary.LittleEndian.Uint32(hdr[0:])
		end := off + frameHeader + int64(n)
		if n > maxFrame {
			return bad(fmt.Sprintf("a record of %d bytes", n), max(end, size))
		}
		payload := make([]byte, 8+n)
		copy(payload, hdr[8:])
		if _, err := io.ReadFull(r, payload[8:]); err != nil {
			return bad("a record cut short", size)
		}
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:]) {
			return bad("a record whose checksum does not match", end)
		}
		lsn := binary.LittleEndian.Uint64(hdr[8:])
		rec, err := DecodeRecord(payload[8:])
		if err != nil {
			return bad(err.Error(), end)
		}
		off += int64(frameHeader) + int64(n)
		if lsn < *expect {
			continue
		}
		if lsn != *expect {
			return fmt.Errorf("monitor: %s: record %d where %d was expected (a segment is missing)", name, lsn, *expect)
		}
		s.m.Apply(lsn, rec)
		*expect = lsn + 1
	}
}

// openSegment starts a new segment at the next LSN to be written (the
// directory fsynced so that the file's name survives); s.segMu is held,
// or the commit goroutine is not running.
func (s *Store) openSegment() error {
	if s.seg != nil {
		// Whatever Sync says, the records of a closed segment are on
		// disk before a later segment's name is: a crash then loses the
		// tail of the last segment only.
		err := s.seg.Sync()
		if cerr := s.seg.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("monitor: %w", err)
		}
	}
	f, err := os.OpenFile(s.segName(s.written), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("monitor: %w", err)
	}
	s.seg, s.segFirst, s.segSize = f, s.written, st.Size()
	return syncDir(s.dir)
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
// applied once, on restart too. A duplicate request id returns an
// Applied with Duplicate set and nothing logged. Errors: Check's
// (*CheckError), ErrClosed, a write or fsync failure (after which the
// store takes no more records), or ctx's error while waiting (the record
// may still be applied).
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
	if s.closed || s.failed != nil {
		err := s.failed
		if err == nil {
			err = ErrClosed
		}
		s.mu.Unlock()
		s.m.Release(r)
		return Applied{}, err
	}
	e.lsn = s.next
	sealFrame(e.frame, e.lsn)
	s.next++
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

// commit is the one goroutine that writes the log: it takes the records
// queued (all of them, or one with SyncEach), writes them in one write,
// fsyncs, applies them in order and wakes their callers.
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
		failed := s.failed
		s.mu.Unlock()

		err := failed
		if err == nil {
			buf = buf[:0]
			for _, e := range batch {
				buf = append(buf, e.frame...)
			}
			err = s.write(buf, batch[len(batch)-1].lsn+1)
		}
		if err != nil {
			s.mu.Lock()
			if s.failed == nil {
				s.failed = fmt.Errorf("monitor: the log could not be written, no record is taken any more: %w", err)
			}
			s.mu.Unlock()
			for _, e := range batch {
				s.m.Release(e.rec)
				e.err = s.failed
				close(e.done)
			}
			continue
		}
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

// write appends a group of frames (the records s.written to end-1) to
// the log, starting a new segment past SegmentBytes, and flushes it as
// Sync says.
func (s *Store) write(b []byte, end uint64) error {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if s.segSize >= s.o.SegmentBytes {
		if err := s.openSegment(); err != nil {
			return err
		}
	}
	_, err := s.seg.Write(b)
	if err == nil && s.o.Sync != SyncNone {
		err = s.seg.Sync()
	}
	if err != nil {
		// The callers hear of a failure: the records must not come back
		// on replay. Cut them off (best effort: the store takes no more
		// records either way).
		if terr := s.seg.Truncate(s.segSize); terr == nil {
			s.seg.Sync()
		}
		return err
	}
	s.segSize += int64(len(b))
	s.written = end
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
	tmp, err := os.CreateTemp(s.dir, ".snapshot-*.tmp")
	if err != nil {
		return fmt.Errorf("monitor: snapshot: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.snapName(lsn))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("monitor: snapshot: %w", err)
	}
	return syncDir(s.dir)
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
	segs, err := s.files("wal-", ".log")
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

func (s *Store) snapshotLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.o.SnapshotEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.Snapshot() // reported through Snapshotted
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
	if cerr := s.seg.Close(); err == nil {
		err = cerr
	}
	s.seg = nil
	s.segMu.Unlock()
	s.lock.Close()
	return err
}
