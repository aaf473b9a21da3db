package monitor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// RecordKind says what a Record does.
type RecordKind uint8

const (
	// Observe records predictions: the rows with a label are counted at
	// once, the rows without one wait for their outcome under their id.
	Observe RecordKind = 1
	// Outcome records the labels of predictions observed earlier without
	// one, by prediction id.
	Outcome RecordKind = 2
	// Reset starts the alarms of a model's slice (Slice), or of all its
	// slices (Slice ""), again.
	Reset RecordKind = 3
)

func (k RecordKind) String() string {
	switch k {
	case Observe:
		return "observe"
	case Outcome:
		return "outcome"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("RecordKind(%d)", uint8(k))
}

// NoLabel is the label of a prediction whose outcome is not known yet.
const NoLabel = -1

// Record is one request to a monitor, as the write-ahead log holds it:
// everything that applying it reads, so that replaying the log rebuilds
// the state bit for bit.
type Record struct {
	Kind  RecordKind
	Model string
	// Slice is the slice of an Observe's rows ("" is DefaultSlice).
	Slice string
	// RequestID, if not empty, makes the record idempotent: a record
	// whose id the monitor holds is not applied again (Options.Dedup).
	RequestID string
	// Time is when the server received the request (Unix nanoseconds):
	// the monitor's clock, and the rows' time when Times is nil.
	Time int64
	// K is the number of classes of Probs (an Observe's).
	K int
	// Probs holds an Observe's n×K probabilities, row-major (already
	// through the map the request named, if any).
	Probs []float64
	// Labels holds the n labels: an Observe's in 0..K-1 or NoLabel, an
	// Outcome's in 0..K-1.
	Labels []int
	// Weights holds an Observe's n row weights (finite, >= 0), or nil:
	// all 1.
	Weights []float64
	// IDs holds the n prediction ids (an Outcome's, or an Observe's:
	// required for a row without a label, "" for none), or nil.
	IDs []string
	// Times holds an Observe's n prediction times (Unix nanoseconds), or
	// nil: all Time.
	Times []int64
}

// Rows returns the number of rows of r.
func (r *Record) Rows() int { return len(r.Labels) }

// The flags of an encoded record.
const (
	flagWeights = 1 << iota
	flagIDs
	flagTimes
)

// maxString bounds the strings of a record (names and ids).
const maxString = 1 << 10

// AppendBinary appends the binary form of r to b: the kind, the
// strings (uvarint length, bytes), Time (varint), K, n (uvarints), the
// flags, then the n×K probabilities and the weights as little-endian
// float64, the labels as varints (NoLabel is -1), the ids and the times.
func (r *Record) AppendBinary(b []byte) ([]byte, error) {
	n := len(r.Labels)
	switch {
	case r.Kind != Observe && r.Kind != Outcome && r.Kind != Reset:
		return b, fmt.Errorf("monitor: record kind %d", r.Kind)
	case r.Kind == Observe && len(r.Probs) != n*r.K:
		return b, fmt.Errorf("monitor: %d probabilities for %d rows of %d", len(r.Probs), n, r.K)
	case r.Weights != nil && len(r.Weights) != n, r.IDs != nil && len(r.IDs) != n, r.Times != nil && len(r.Times) != n:
		return b, fmt.Errorf("monitor: %d labels, %d weights, %d ids, %d times", n, len(r.Weights), len(r.IDs), len(r.Times))
	}
	b = append(b, byte(r.Kind))
	for _, s := range []string{r.Model, r.Slice, r.RequestID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, r.Time)
	b = binary.AppendUvarint(b, uint64(r.K))
	b = binary.AppendUvarint(b, uint64(n))
	var flags byte
	if r.Weights != nil {
		flags |= flagWeights
	}
	if r.IDs != nil {
		flags |= flagIDs
	}
	if r.Times != nil {
		flags |= flagTimes
	}
	b = append(b, flags)
	for _, v := range r.Probs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	for _, l := range r.Labels {
		b = binary.AppendVarint(b, int64(l))
	}
	for _, w := range r.Weights {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
	}
	for _, id := range r.IDs {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	for _, t := range r.Times {
		b = binary.AppendVarint(b, t)
	}
	return b, nil
}

// errShort is a record cut short.
var errShort = errors.New("cut short")

// decoder reads a record's binary form.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(max uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(fmt.Errorf("%s: %w", what, errShort))
		return 0
	}
	if v > max {
		d.fail(fmt.Errorf("%s %d is over %d", what, v, max))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(fmt.Errorf("%s: %w", what, errShort))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(what string) string {
	n := d.uvarint(maxString, what+" length")
	if d.err != nil {
		return ""
	}
	if uint64(len(d.b)) < n {
		d.fail(fmt.Errorf("%s: %w", what, errShort))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) floats(n int, what string) []float64 {
	if d.err != nil {
		return nil
	}
	if len(d.b)/8 < n {
		d.fail(fmt.Errorf("%s: %w", what, errShort))
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.b[8*i:]))
	}
	d.b = d.b[8*n:]
	return out
}

// DecodeRecord decodes the binary form of a record (AppendBinary) and
// checks it: a known kind, the lengths, labels in 0..K-1 (or NoLabel in an
// Observe), finite probabilities and weights >= 0.
func DecodeRecord(b []byte) (*Record, error) {
	d := &decoder{b: b}
	r := &Record{Kind: RecordKind(d.byte())}
	if d.err == nil && r.Kind != Observe && r.Kind != Outcome && r.Kind != Reset {
		return nil, fmt.Errorf("monitor: record kind %d", r.Kind)
	}
	r.Model = d.string("model")
	r.Slice = d.string("slice")
	r.RequestID = d.string("request id")
	r.Time = d.varint("time")
	r.K = int(d.uvarint(maxK, "K"))
	// Every row takes at least one byte (its label), so n is bounded by
	// what is left; n×K floats are checked against it below.
	n := int(d.uvarint(uint64(len(d.b)), "rows"))
	flags := d.byte()
	if d.err != nil {
		return nil, fmt.Errorf("monitor: record: %w", d.err)
	}
	if flags&^(flagWeights|flagIDs|flagTimes) != 0 {
		return nil, fmt.Errorf("monitor: record: unknown flags %#x", flags)
	}
	if r.Kind == Reset && (n != 0 || flags != 0) {
		return nil, fmt.Errorf("monitor: record: a reset with %d rows", n)
	}
	if r.Kind == Observe {
		if r.K < 2 {
			return nil, fmt.Errorf("monitor: record: K = %d", r.K)
		}
		if n > 0 && len(d.b)/8/n < r.K {
			return nil, fmt.Errorf("monitor: record: probabilities: %w", errShort)
		}
		r.Probs = d.floats(n*r.K, "probabilities")
	}
	r.Labels = make([]int, n)
	for i := range r.Labels {
		l := d.varint("label")
		if d.err == nil && (l < NoLabel || l >= int64(max(r.K, 1)) || l == NoLabel && r.Kind == Outcome) {
			return nil, fmt.Errorf("monitor: record: row %d: label %d out of range for K = %d", i+1, l, r.K)
		}
		r.Labels[i] = int(l)
	}
	if flags&flagWeights != 0 {
		r.Weights = d.floats(n, "weights")
	}
	if flags&flagIDs != 0 {
		r.IDs = make([]string, n)
		for i := range r.IDs {
			r.IDs[i] = d.string("id")
		}
	}
	if flags&flagTimes != 0 {
		r.Times = make([]int64, n)
		for i := range r.Times {
			r.Times[i] = d.varint("time")
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("monitor: record: %w", d.err)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("monitor: record: %d bytes after its end", len(d.b))
	}
	for i, v := range r.Probs {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("monitor: record: row %d: probability %v", i/r.K+1, v)
		}
	}
	for i, w := range r.Weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("monitor: record: row %d: weight %v", i+1, w)
		}
	}
	return r, nil
}

// maxK bounds the classes of a record.
const maxK = 1 << 20
