package monitor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// RepairReport is what Repair found and did.
type RepairReport struct {
	// Damage lists what was found, one line each (file, offset, what);
	// empty when the state needed no repair (nothing was changed).
	Damage []string
	// Kept is the number of records in the repaired state: those of the
	// snapshot it started from and every intact record of the log after
	// it. LSN is the last of them, the new snapshot's.
	Kept uint64
	LSN  uint64
	// Lost counts the records known to be lost: the LSNs missing between
	// intact records (and those of damaged snapshots not held by the
	// log). LostBytes counts the bytes skipped in the log, which may hold
	// records after the last intact one that no count can tell.
	Lost      uint64
	LostBytes int64
	// Aside is the directory the damaged files and the log's segments
	// went to (DIR/damaged-TIME); Moved names them.
	Aside string
	Moved []string
}

// Repair makes a damaged state directory readable again (Open refuses
// one with a *DamageError), keeping every intact record: it restores the
// latest snapshot whose checksum matches, applies every frame of the log
// after it whose checksum matches and whose record decodes (skipping the
// damaged bytes up to the next valid frame), writes the result as a new
// snapshot, and moves the damaged snapshots and every segment into a new
// directory DIR/damaged-TIME (nothing is deleted). A state without damage
// is left as it is (a torn tail is Open's to cut). The directory must not
// be in use (its lock is taken).
func Repair(dir string, o StoreOptions) (*RepairReport, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	m, err := New(o.Monitor)
	if err != nil {
		return nil, err
	}
	s := &Store{o: o, dir: dir, m: m}
	rep := &RepairReport{}
	snaps, err := s.files("snapshot-", ".json")
	if err != nil {
		return nil, err
	}
	var badSnaps []string
	restored := uint64(0)
	for i := len(snaps) - 1; i >= 0; i-- {
		err := s.restore(snaps[i])
		var de *DamageError
		if errors.As(err, &de) {
			rep.Damage = append(rep.Damage, de.File+": "+de.What)
			badSnaps = append(badSnaps, s.snapName(snaps[i]))
			if m, err = New(o.Monitor); err != nil {
				return nil, err
			}
			s.m = m
			if restored == 0 {
				restored = snaps[i] // the records up to it are lost unless the log holds them
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	segs, err := s.segments(0)
	if err != nil {
		return nil, err
	}
	expect := s.m.LSN() + 1
	for i, first := range segs {
		last := i == len(segs)-1
		if i+1 < len(segs) && segs[i+1] <= expect {
			continue
		}
		seg, err := readSegment(s.segName(first), first)
		if err != nil {
			return nil, err
		}
		s.salvage(seg, last, s.lastSnap, &expect, rep)
	}
	if restored >= expect {
		rep.Lost += restored - expect + 1
	}
	if len(rep.Damage) == 0 {
		return rep, nil
	}
	rep.LSN = s.m.LSN()
	rep.Kept = rep.LSN - rep.Lost
	if rep.Lost > rep.LSN {
		rep.Kept = 0
	}
	rep.Aside = filepath.Join(dir, "damaged-"+time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Mkdir(rep.Aside, 0o755); err != nil {
		return nil, fmt.Errorf("monitor: repair: %w", err)
	}
	move := func(name string) error {
		if err := os.Rename(name, filepath.Join(rep.Aside, filepath.Base(name))); err != nil {
			return fmt.Errorf("monitor: repair: %w", err)
		}
		rep.Moved = append(rep.Moved, filepath.Base(name))
		return nil
	}
	// The damaged snapshots first (one of them may be the latest), then
	// the new snapshot, then the log and the older snapshots it makes
	// unneeded: a crash in between leaves a state that Repair reads again.
	for _, name := range badSnaps {
		if err := move(name); err != nil {
			return nil, err
		}
	}
	b, err := s.m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := writeSnapshotFile(dir, s.snapName(rep.LSN), b); err != nil {
		return nil, err
	}
	for _, first := range segs {
		if err := move(s.segName(first)); err != nil {
			return nil, err
		}
	}
	left, err := s.files("snapshot-", ".json")
	if err != nil {
		return nil, err
	}
	for _, n := range left {
		if n != rep.LSN {
			if err := move(s.snapName(n)); err != nil {
				return nil, err
			}
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	o.Logger.Warn("monitor: state repaired", "dir", dir, "records", rep.Kept, "lost", rep.Lost, "lost_bytes", rep.LostBytes, "moved_to", rep.Aside)
	return rep, nil
}

// salvage applies every intact record of seg with an LSN of at least
// *expect, skipping damage to the next valid frame, and notes in rep what
// it found; a torn tail of the last segment is counted, not damage.
func (s *Store) salvage(seg *segment, last bool, floor uint64, expect *uint64, rep *RepairReport) {
	b := seg.b
	off := 0
	want := seg.first
	for off < len(b) {
		lsn, payload, size, why := frameAt(b[off:])
		if why == "" && (lsn < want || lsn < *expect && lsn > floor) {
			// A frame repeated or out of place: its record is applied
			// where it stands (if it is not yet), the rest skipped.
			rep.Damage = append(rep.Damage, fmt.Sprintf("%s, offset %d: record %d where the segment's record %d stands", seg.name, off, lsn, want))
		}
		if why == "" {
			want = max(want, lsn+1)
			rec, err := DecodeRecord(payload)
			if err == nil && lsn >= *expect {
				if lsn > *expect {
					rep.Damage = append(rep.Damage, fmt.Sprintf("%s, offset %d: record %d where %d was expected", seg.name, off, lsn, *expect))
					rep.Lost += lsn - *expect
				}
				s.m.Apply(lsn, rec)
				*expect = lsn + 1
			}
			if err != nil && lsn >= *expect {
				rep.Damage = append(rep.Damage, fmt.Sprintf("%s, offset %d: record %d does not decode: %v", seg.name, off, lsn, err))
			}
			off += size
			continue
		}
		if last {
			if torn, _ := tornTail(b[off:], *expect); torn {
				rep.LostBytes += int64(len(b) - off)
				return
			}
		}
		rep.Damage = append(rep.Damage, fmt.Sprintf("%s, offset %d: %s", seg.name, off, why))
		next := nextFrame(b[off:], *expect-1)
		if next < 0 {
			rep.LostBytes += int64(len(b) - off)
			return
		}
		rep.LostBytes += int64(next)
		off += next
	}
}
