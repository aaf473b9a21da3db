package beam

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

func init() {
	beam.RegisterCoder(reflect.TypeOf((*data.Batch)(nil)), EncodeBatch, DecodeBatch)
	beam.RegisterCoder(reflect.TypeOf((*evaluate.Sums)(nil)), encodeSums, decodeSums)
	beam.RegisterCoder(reflect.TypeOf((*evaluate.KernelSums)(nil)), encodeKernelSums, decodeKernelSums)
	// The block-pair plan's accumulator, as JSON: Beam's schema coder would
	// encode the struct field by field and drop what the sums keep in
	// unexported fields.
	beam.RegisterCoder(reflect.TypeOf((*blockAcc)(nil)), encodeBlockAcc, decodeBlockAcc)
}

// batchVersion is the first byte of an encoded Batch.
const batchVersion = 2

// Flags of an encoded Batch.
const (
	flagBinary = 1 << iota
	flagLabels
	flagLogits
	flagWeights
)

// ErrCoder is an encoded element or accumulator that cannot be decoded.
var ErrCoder = errors.New("bad encoding")

// EncodeBatch encodes a batch for Beam: its Source, Shard, Offset and rows (the
// data.Set's N, K, Binary, File, Renormalized, Rounded, Probs, Labels,
// Logits and Weights, nil slices kept apart from empty ones), integers as
// varints and floats as their IEEE 754 bits, little-endian. A nil batch or
// set encodes as a batch of no rows.
func EncodeBatch(b *data.Batch) []byte {
	var s data.Set
	var src string
	var off int64
	var shard int
	if b != nil {
		src, off, shard = b.Source, b.Offset, b.Shard
		if b.Set != nil {
			s = *b.Set
		}
	}
	var flags byte
	for i, set := range []bool{s.Binary, s.Labels != nil, s.Logits != nil, s.Weights != nil} {
		if set {
			flags |= 1 << i
		}
	}
	buf := make([]byte, 0, 64+len(src)+len(s.File)+8*(len(s.Probs)+len(s.Logits)+len(s.Weights))+2*len(s.Labels))
	buf = append(buf, batchVersion, flags)
	buf = appendString(buf, src)
	buf = binary.AppendVarint(buf, int64(shard))
	buf = binary.AppendVarint(buf, off)
	buf = appendString(buf, s.File)
	for _, v := range []int{s.N, s.K, s.Renormalized, s.Rounded} {
		buf = binary.AppendVarint(buf, int64(v))
	}
	buf = appendFloats(buf, s.Probs)
	buf = binary.AppendUvarint(buf, uint64(len(s.Labels)))
	for _, y := range s.Labels {
		buf = binary.AppendVarint(buf, int64(y))
	}
	buf = appendFloats(buf, s.Logits)
	return appendFloats(buf, s.Weights)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendFloats(buf []byte, x []float64) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(x)))
	for _, v := range x {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return buf
}

// DecodeBatch decodes what EncodeBatch wrote. Bytes that EncodeBatch cannot
// have written (a short buffer, a length that does not match N and K) are
// an error wrapping ErrCoder.
func DecodeBatch(p []byte) (*data.Batch, error) {
	d := decoder{p: p}
	if v := d.byte(); v != batchVersion && d.err == nil {
		return nil, errorf("%w: batch version %d, want %d", ErrCoder, v, batchVersion)
	}
	flags := d.byte()
	b := &data.Batch{Set: &data.Set{}}
	s := b.Set
	b.Source = d.string()
	b.Shard = int(d.varint())
	b.Offset = d.varint()
	s.File = d.string()
	s.N, s.K, s.Renormalized, s.Rounded = d.int(), d.int(), d.int(), d.int()
	s.Binary = flags&flagBinary != 0
	s.Probs = d.floats()
	n := d.length(1)
	if flags&flagLabels != 0 {
		s.Labels = make([]int, n)
		for i := range s.Labels {
			s.Labels[i] = int(d.varint())
		}
	}
	logits, weights := d.floats(), d.floats()
	if flags&flagLogits != 0 {
		s.Logits = logits
	}
	if flags&flagWeights != 0 {
		s.Weights = weights
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.p) > 0:
		return nil, errorf("%w: %d bytes after a batch", ErrCoder, len(d.p))
	case s.N < 0 || s.K < 0 || len(s.Probs) != s.N*s.K,
		s.Labels != nil && len(s.Labels) != s.N,
		s.Weights != nil && len(s.Weights) != s.N,
		s.Logits != nil && s.N > 0 && len(s.Logits)%s.N != 0:
		return nil, errorf("%w: a batch of %d rows of %d columns with %d probabilities, %d labels, %d logits, %d weights", ErrCoder, s.N, s.K, len(s.Probs), len(s.Labels), len(s.Logits), len(s.Weights))
	}
	return b, nil
}

// decoder reads the fields of an encoded batch; the first error sticks.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errorf("%w: batch: %s", ErrCoder, what)
	}
	d.p = nil
}

func (d *decoder) byte() byte {
	if len(d.p) < 1 {
		d.fail("short")
		return 0
	}
	v := d.p[0]
	d.p = d.p[1:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if v != int64(int(v)) {
		d.fail("integer overflow")
		return 0
	}
	return int(v)
}

// length reads a count of items of at least size bytes each.
func (d *decoder) length(size int) int {
	v, n := binary.Uvarint(d.p)
	if n <= 0 || v > uint64(len(d.p)-n)/uint64(size) {
		d.fail("bad length")
		return 0
	}
	d.p = d.p[n:]
	return int(v)
}

func (d *decoder) string() string {
	n := d.length(1)
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}

func (d *decoder) floats() []float64 {
	n := d.length(8)
	if n == 0 {
		return []float64{}
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.p[8*i:]))
	}
	d.p = d.p[8*n:]
	return x
}

// encodeSums is the coder of *evaluate.Sums: its versioned JSON form (null
// for nil).
func encodeSums(s *evaluate.Sums) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, errorf("encoding the sums: %w", err)
	}
	return b, nil
}

func decodeSums(b []byte) (*evaluate.Sums, error) {
	var s *evaluate.Sums
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errorf("decoding the sums: %w", err)
	}
	return s, nil
}

// encodeKernelSums is the coder of *evaluate.KernelSums: its JSON form
// (null for nil, the empty accumulator of kernelMergeFn).
func encodeKernelSums(ks *evaluate.KernelSums) ([]byte, error) {
	b, err := json.Marshal(ks)
	if err != nil {
		return nil, errorf("encoding the kernel sums: %w", err)
	}
	return b, nil
}

func decodeKernelSums(b []byte) (*evaluate.KernelSums, error) {
	var ks *evaluate.KernelSums
	if err := json.Unmarshal(b, &ks); err != nil {
		return nil, errorf("decoding the kernel sums: %w", err)
	}
	return ks, nil
}

func encodeBlockAcc(a *blockAcc) ([]byte, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, errorf("encoding the blocks' kernel sums: %w", err)
	}
	return b, nil
}

func decodeBlockAcc(b []byte) (*blockAcc, error) {
	var a *blockAcc
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, errorf("decoding the blocks' kernel sums: %w", err)
	}
	return a, nil
}
