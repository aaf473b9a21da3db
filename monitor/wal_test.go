package monitor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// smallRecords returns n observations of model "m" (K = 3, one row each,
// request ids r1..rn).
func smallRecords(n int) []*Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	out := make([]*Record, n)
	for i := range out {
		p := 0.2 + 0.5*float64(i%7)/7
		out[i] = &Record{Kind: Observe, Model: "m", RequestID: fmt.Sprintf("r%d", i+1), Time: t0 + int64(i)*int64(time.Second), K: 3,
			Probs: []float64{p, (1 - p) / 2, (1 - p) / 2}, Labels: []int{i % 3}}
	}
	return out
}

// kill abandons a store as a killed process would: the lock goes, no
// snapshot is written.
func kill(st *Store) { st.lock.Close() }

// frames returns the offsets of the frames of a segment's bytes and its
// length, as the end.
func frames(t *testing.T, b []byte) []int {
	t.Helper()
	var offs []int
	for off := 0; off < len(b); {
		offs = append(offs, off)
		_, _, size, why := frameAt(b[off:])
		if why != "" {
			t.Fatalf("frame at %d: %s", off, why)
		}
		off += size
	}
	return append(offs, len(b))
}

// applied returns the report of a monitor that applied recs[i] for each i
// in keep, in order, with LSN i+1.
func applied(t *testing.T, recs []*Record, keep func(i int) bool) []byte {
	t.Helper()
	m, _ := New(Options{})
	for i, r := range recs {
		if keep(i) {
			m.Apply(uint64(i+1), r)
		}
	}
	return reportJSON(t, m)
}

// reseal sets a frame's checksum to match its bytes.
func reseal(b []byte) {
	n := binary.LittleEndian.Uint32(b)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:frameHeader+int(n)], crcTable))
}

// TestLogDamageRules: a table of damaged logs (300 acknowledged records
// in one segment, then one change), each either read with a torn tail cut
// (the state is that of the records before it, and the file is cut) or
// refused with a *DamageError naming the file and the offset of the
// damage; Repair then keeps every intact record (the state is that of
// every record whose frame is intact) and Open reads the result.
func TestLogDamageRules(t *testing.T) {
	const n = 300
	recs := smallRecords(n)
	dir0 := t.TempDir()
	st, err := Open(dir0, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	submitAll(t, st, recs)
	kill(st)
	segName := filepath.Base(st.segName(1))
	orig, err := os.ReadFile(filepath.Join(dir0, segName))
	if err != nil {
		t.Fatal(err)
	}
	offs := frames(t, orig)
	if len(offs) != n+1 {
		t.Fatalf("%d frames", len(offs)-1)
	}
	frame := func(i int) (int, int) { return offs[i], offs[i+1] } // record i+1
	all := func(int) bool { return true }
	for _, c := range []struct {
		name   string
		damage func(b []byte) []byte
		// torn: Open cuts a tail and reads the records before it; else
		// Open refuses at offset at.
		torn bool
		at   int
		// kept: the records the state holds after Open (torn) or Repair.
		kept func(i int) bool
		lost uint64
	}{
		{"intact", func(b []byte) []byte { return b }, true, 0, all, 0},
		{"last frame cut in its payload", func(b []byte) []byte { return b[:len(b)-7] }, true, 0, func(i int) bool { return i < n-1 }, 0},
		{"last frame cut in its header", func(b []byte) []byte { s, _ := frame(n - 1); return b[:s+5] }, true, 0, func(i int) bool { return i < n-1 }, 0},
		{"zeros after the last frame", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, true, 0, all, 0},
		{"last frame zeroed, file extended", func(b []byte) []byte {
			s, _ := frame(n - 1)
			return append(b[:s], make([]byte, 8192)...)
		}, true, 0, func(i int) bool { return i < n-1 }, 0},
		{"last frame cut, zeros after", func(b []byte) []byte {
			s, e := frame(n - 1)
			return append(b[:s+(e-s)/2], make([]byte, 100)...)
		}, false, offs[n-1], func(i int) bool { return i < n-1 }, 0},
		{"a middle length past the end", func(b []byte) []byte {
			s, _ := frame(49)
			binary.LittleEndian.PutUint32(b[s:], uint32(len(b)))
			return b
		}, false, offs[49], func(i int) bool { return i != 49 }, 1},
		{"a middle length a little longer", func(b []byte) []byte {
			s, _ := frame(49)
			binary.LittleEndian.PutUint32(b[s:], binary.LittleEndian.Uint32(b[s:])+3)
			return b
		}, false, offs[49], func(i int) bool { return i != 49 }, 1},
		{"a payload byte flipped", func(b []byte) []byte {
			s, e := frame(149)
			b[(s+e)/2] ^= 0x40
			return b
		}, false, offs[149], func(i int) bool { return i != 149 }, 1},
		{"the last frame's checksum wrong", func(b []byte) []byte {
			s, _ := frame(n - 1)
			b[s+4] ^= 1
			return b
		}, false, offs[n-1], func(i int) bool { return i < n-1 }, 0},
		{"an LSN changed", func(b []byte) []byte {
			s, _ := frame(99)
			b[s+8] ^= 0x10
			return b
		}, false, offs[99], func(i int) bool { return i != 99 }, 1},
		{"a frame missing", func(b []byte) []byte {
			s, e := frame(99)
			return append(b[:s:s], b[e:]...)
		}, false, offs[99], func(i int) bool { return i != 99 }, 1},
		{"a frame zeroed in the middle", func(b []byte) []byte {
			s, e := frame(99)
			clear(b[s:e])
			return b
		}, false, offs[99], func(i int) bool { return i != 99 }, 1},
		{"garbage between frames", func(b []byte) []byte {
			s, _ := frame(199)
			return append(b[:s:s], append([]byte("garbage"), b[s:]...)...)
		}, false, offs[199], all, 0},
		{"a valid frame that does not decode", func(b []byte) []byte {
			s, e := frame(9)
			b[s+frameHeader] = 99 // the record's kind
			reseal(b[s:e])
			return b
		}, false, offs[9], func(i int) bool { return i != 9 }, 1},
		{"a frame repeated", func(b []byte) []byte {
			s, e := frame(19)
			return append(b[:e:e], b[s:]...)
		}, false, offs[20], all, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := c.damage(bytes.Clone(orig))
			seg := filepath.Join(dir, segName)
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			want := applied(t, recs, c.kept)
			re, err := Open(dir, StoreOptions{SnapshotEvery: -1})
			if c.torn {
				if err != nil {
					t.Fatalf("a torn tail refused: %v", err)
				}
				defer re.Close()
				if got := reportJSON(t, re.Monitor()); !bytes.Equal(got, want) {
					t.Fatal("the state after the torn tail is not that of the records before it")
				}
				if fi, _ := os.Stat(seg); fi.Size() > int64(len(orig)) {
					t.Fatalf("the torn tail was not cut: %d bytes", fi.Size())
				}
				return
			}
			var de *DamageError
			if !errors.As(err, &de) {
				if re != nil {
					re.Close()
				}
				t.Fatalf("damage read: %v", err)
			}
			if de.File != seg || de.Offset != int64(c.at) || !strings.Contains(err.Error(), "--repair") {
				t.Fatalf("%v: want file %s, offset %d and the way out", err, seg, c.at)
			}
			if after, _ := os.ReadFile(seg); !bytes.Equal(after, b) {
				t.Fatal("a refused log was changed")
			}
			rep, err := Repair(dir, StoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Damage) == 0 || rep.Lost != c.lost || rep.Aside == "" {
				t.Fatalf("repair: %+v, want %d lost", rep, c.lost)
			}
			if _, err := os.Stat(filepath.Join(rep.Aside, segName)); err != nil {
				t.Fatalf("the damaged segment was not moved aside: %v", err)
			}
			re, err = Open(dir, StoreOptions{SnapshotEvery: -1})
			if err != nil {
				t.Fatalf("after repair: %v", err)
			}
			defer re.Close()
			if got := reportJSON(t, re.Monitor()); !bytes.Equal(got, want) {
				t.Fatal("the repaired state is not that of every intact record")
			}
			// Records go on after the repaired state.
			if _, err := re.Submit(context.Background(), &Record{Kind: Observe, Model: "m", K: 3, Probs: []float64{0.2, 0.3, 0.5}, Labels: []int{2}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRepairLeavesIntactState: Repair of a state with nothing damaged
// changes nothing.
func TestRepairLeavesIntactState(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, StoreOptions{SnapshotEvery: -1})
	submitAll(t, st, smallRecords(20))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	rep, err := Repair(dir, StoreOptions{})
	if err != nil || len(rep.Damage) != 0 || rep.Aside != "" {
		t.Fatalf("repair of an intact state: %+v %v", rep, err)
	}
	after, _ := os.ReadDir(dir)
	if len(before) != len(after) {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
}

// TestSnapshotChecksum: a snapshot with one count edited is refused,
// naming the file; Repair moves it aside and keeps what the log still
// holds (here nothing: the snapshot had cut it), counting the records
// lost.
func TestSnapshotChecksum(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, StoreOptions{SnapshotEvery: -1})
	submitAll(t, st, smallRecords(20))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshot-*.json"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v", snaps)
	}
	b, _ := os.ReadFile(snaps[0])
	if !bytes.HasPrefix(b, []byte(`{"crc32c":`)) {
		t.Fatalf("a snapshot without its checksum: %.40s", b)
	}
	edited := bytes.Replace(b, []byte(`"observed":20`), []byte(`"observed":21`), 1)
	if bytes.Equal(edited, b) {
		t.Fatal("no count to edit")
	}
	os.WriteFile(snaps[0], edited, 0o644)
	_, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	var de *DamageError
	if !errors.As(err, &de) || de.File != snaps[0] || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("an edited snapshot: %v", err)
	}
	rep, err := Repair(dir, StoreOptions{})
	if err != nil || rep.Lost != 20 {
		t.Fatalf("repair: %+v %v, want 20 records lost", rep, err)
	}
	re, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	re.Close()
}
