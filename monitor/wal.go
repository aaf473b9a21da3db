package monitor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
)

// The log's format and damage rules are in the package doc (doc.go).

// frameHeader is a record's header in the log: the payload's length,
// the CRC-32C of the LSN and payload, and the LSN.
const frameHeader = 4 + 4 + 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maxFrame bounds a record's payload.
const maxFrame = 1 << 30

// DamageError is a log or snapshot that Open does not read: File,
// Offset (in bytes; -1 for a whole file) and what was found there.
// Repair is the way out.
type DamageError struct {
	File   string
	Offset int64
	What   string
}

func (e *DamageError) Error() string {
	where := e.File
	if e.Offset >= 0 {
		where += ", offset " + strconv.FormatInt(e.Offset, 10)
	}
	return fmt.Sprintf("monitor: %s: %s (the state is damaged: acknowledged records may be behind it; calib serve --data DIR --repair keeps every intact record and moves the damaged files aside)", where, e.What)
}

// frameAt parses the frame at b[0:]: its LSN, payload and length in
// bytes, or why not ("" with ok).
func frameAt(b []byte) (lsn uint64, payload []byte, size int, why string) {
	if len(b) < frameHeader {
		return 0, nil, 0, fmt.Sprintf("a record header cut short (%d of %d bytes)", len(b), frameHeader)
	}
	n := binary.LittleEndian.Uint32(b)
	lsn = binary.LittleEndian.Uint64(b[8:])
	if n > maxFrame {
		return lsn, nil, 0, fmt.Sprintf("a record claiming %d bytes (at most %d)", n, maxFrame)
	}
	end := frameHeader + int(n)
	if end > len(b) {
		return lsn, nil, 0, fmt.Sprintf("a record of %d bytes running past the end of the file (%d bytes left)", n, len(b)-frameHeader)
	}
	if crc32.Checksum(b[8:end], crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return lsn, nil, 0, fmt.Sprintf("record %d (%d bytes) whose checksum does not match", lsn, n)
	}
	return lsn, b[frameHeader:end], end, ""
}

// nextFrame returns the offset in b of the first valid frame (checksum
// matching) with an LSN above after, or -1.
func nextFrame(b []byte, after uint64) int {
	for i := 1; i+frameHeader <= len(b); i++ {
		lsn := binary.LittleEndian.Uint64(b[i+8:])
		if lsn <= after || lsn-after > 1<<40 {
			continue
		}
		if _, _, _, why := frameAt(b[i:]); why == "" {
			return i
		}
	}
	return -1
}

// tornTail reports whether rest, the bytes of the last segment after its
// last valid frame, is what an unfinished write leaves (the package's
// rules above), and says what it is.
func tornTail(rest []byte, expect uint64) (bool, string) {
	if len(bytes.TrimLeft(rest, "\x00")) == 0 {
		return true, "zeros"
	}
	if len(rest) < frameHeader {
		return true, "a record header cut short"
	}
	n := binary.LittleEndian.Uint32(rest)
	lsn := binary.LittleEndian.Uint64(rest[8:])
	if lsn != expect || n > maxFrame || int64(frameHeader)+int64(n) <= int64(len(rest)) {
		return false, ""
	}
	if nextFrame(rest, expect) >= 0 {
		return false, ""
	}
	return true, fmt.Sprintf("record %d cut short", lsn)
}

// segment is one segment read whole: its first LSN (its name's) and
// bytes.
type segment struct {
	name  string
	first uint64
	b     []byte
}

// readSegment reads a segment file whose first LSN is first.
func readSegment(name string, first uint64) (*segment, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("monitor: %s: %w", name, err)
	}
	return &segment{name: name, first: first, b: b}, nil
}

// tailCut is a torn tail found at the end of the last segment: cut at
// Offset, Bytes long.
type tailCut struct {
	File          string
	Offset, Bytes int64
	What          string
}

// replaySegment applies the records of seg with an LSN of at least
// *expect, in order, advancing *expect; a record at or below floor (the
// snapshot's LSN) is skipped as one the snapshot holds. In the last segment a torn tail
// is returned to be cut; any other damage is a *DamageError.
func (s *Store) replaySegment(seg *segment, last bool, floor uint64, expect *uint64) (*tailCut, error) {
	b := seg.b
	off := 0
	for want := seg.first; off < len(b); want++ {
		lsn, payload, size, why := frameAt(b[off:])
		if why == "" && lsn != want {
			why = fmt.Sprintf("record %d where the segment's record %d stands", lsn, want)
		}
		if why == "" {
			rec, err := DecodeRecord(payload)
			if err != nil {
				return nil, &DamageError{File: seg.name, Offset: int64(off), What: fmt.Sprintf("record %d does not decode: %v", lsn, err)}
			}
			if lsn >= *expect {
				if lsn != *expect {
					return nil, &DamageError{File: seg.name, Offset: int64(off), What: fmt.Sprintf("record %d where %d was expected (records or a segment are missing)", lsn, *expect)}
				}
				s.m.Apply(lsn, rec)
				*expect = lsn + 1
			} else if lsn > floor {
				// Below the snapshot's LSN a record is one the snapshot
				// holds; above it, one applied already: a repeat.
				return nil, &DamageError{File: seg.name, Offset: int64(off), What: fmt.Sprintf("record %d again (records up to %d were read)", lsn, *expect-1)}
			}
			off += size
			continue
		}
		if last {
			if torn, what := tornTail(b[off:], *expect); torn {
				return &tailCut{File: seg.name, Offset: int64(off), Bytes: int64(len(b) - off), What: what}, nil
			}
		}
		if next := nextFrame(b[off:], *expect-1); next >= 0 {
			why += fmt.Sprintf(", with a valid record %d bytes further", next)
		}
		if !last {
			why += " in a segment that is not the last"
		}
		return nil, &DamageError{File: seg.name, Offset: int64(off), What: why}
	}
	return nil, nil
}

// snapshotPrefix starts a snapshot with a checksum.
const snapshotPrefix = `{"crc32c":`

// sealSnapshot returns the file content of a snapshot of state.
func sealSnapshot(state []byte) []byte {
	out := make([]byte, 0, len(state)+40)
	out = append(out, snapshotPrefix...)
	out = strconv.AppendUint(out, uint64(crc32.Checksum(state, crcTable)), 10)
	out = append(out, `,"state":`...)
	out = append(out, state...)
	return append(out, "}\n"...)
}

// openSnapshot returns the state of a snapshot file's content, checking
// its checksum (a snapshot without one, of calib before it, is returned
// as it is).
func openSnapshot(name string, b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, []byte(snapshotPrefix)) {
		return b, nil
	}
	rest := b[len(snapshotPrefix):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return nil, &DamageError{File: name, Offset: -1, What: "a snapshot cut short"}
	}
	want, err := strconv.ParseUint(string(rest[:i]), 10, 32)
	rest = rest[i:]
	if err != nil || !bytes.HasPrefix(rest, []byte(`,"state":`)) {
		return nil, &DamageError{File: name, Offset: -1, What: "a snapshot whose header is damaged"}
	}
	rest = bytes.TrimRight(rest[len(`,"state":`):], "\n")
	if !bytes.HasSuffix(rest, []byte("}")) {
		return nil, &DamageError{File: name, Offset: -1, What: "a snapshot cut short"}
	}
	state := rest[:len(rest)-1]
	if got := crc32.Checksum(state, crcTable); uint64(got) != want {
		return nil, &DamageError{File: name, Offset: -1, What: fmt.Sprintf("a snapshot whose checksum does not match (%d, its header says %d)", got, want)}
	}
	return state, nil
}
