package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// parquet-go trusts the sizes a file announces and allocates them before it
// reads (the footer's lists, a page's bytes and values, snappy's decoded
// length). The checks here run first, so that a damaged or hostile file is
// an *Error and never a multi-gigabyte allocation. Decompression by gzip,
// zstd, brotli and lz4 is bounded only by the ratio of the codec.

// Bounds of one page (real writers write pages of about 1 MiB:
// parquet-go 256 KiB, pyarrow 1 MiB and at most 20,000 rows).
const (
	maxPageBytes  = 1 << 28 // uncompressed bytes
	maxPageValues = 1 << 24 // values, levels and dictionary entries
	maxThriftNest = 64
)

// errThrift is a thrift structure that does not fit its bytes.
var errThrift = errors.New("malformed metadata")

// checkThrift walks the thrift compact-protocol struct at the start of b
// and returns its length in bytes. Every list, set, map and binary must fit
// in the bytes left, so decoding it allocates O(len(b)) elements at most;
// io.ErrUnexpectedEOF means b ends inside the struct.
func checkThrift(b []byte) (int, error) {
	c := thriftChecker{b: b}
	if err := c.structure(0); err != nil {
		return 0, err
	}
	return c.i, nil
}

type thriftChecker struct {
	b []byte
	i int
}

func (c *thriftChecker) byte() (byte, error) {
	if c.i >= len(c.b) {
		return 0, io.ErrUnexpectedEOF
	}
	c.i++
	return c.b[c.i-1], nil
}

func (c *thriftChecker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(c.b[c.i:])
	switch {
	case n == 0:
		return 0, io.ErrUnexpectedEOF
	case n < 0:
		return 0, errThrift
	}
	c.i += n
	return v, nil
}

func (c *thriftChecker) skip(n uint64) error {
	if n > uint64(len(c.b)-c.i) {
		return io.ErrUnexpectedEOF
	}
	c.i += int(n)
	return nil
}

// size reads a count of elements, each at least one byte.
func (c *thriftChecker) size(n uint64) error {
	if n > uint64(len(c.b)-c.i) {
		return fmt.Errorf("%w: %d elements in %d bytes", errThrift, n, len(c.b)-c.i)
	}
	return nil
}

func (c *thriftChecker) structure(depth int) error {
	if depth > maxThriftNest {
		return fmt.Errorf("%w: nested too deep", errThrift)
	}
	for {
		h, err := c.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		if h>>4 == 0 { // long form: the field id follows
			if _, err := c.uvarint(); err != nil {
				return err
			}
		}
		if err := c.value(h&0x0f, depth); err != nil {
			return err
		}
	}
}

// value skips a value of compact type t (1 and 2: a boolean in a field
// header; in a list, one byte).
func (c *thriftChecker) value(t byte, depth int) error {
	switch t {
	case 1, 2:
		return nil
	case 3:
		return c.skip(1)
	case 4, 5, 6:
		_, err := c.uvarint()
		return err
	case 7:
		return c.skip(8)
	case 8:
		n, err := c.uvarint()
		if err != nil {
			return err
		}
		return c.skip(n)
	case 9, 10:
		h, err := c.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = c.uvarint(); err != nil {
				return err
			}
		}
		if err := c.size(n); err != nil {
			return err
		}
		et := h & 0x0f
		for range n {
			if et == 1 || et == 2 {
				err = c.skip(1)
			} else {
				err = c.value(et, depth+1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case 11:
		n, err := c.uvarint()
		if err != nil || n == 0 {
			return err
		}
		if err := c.size(n); err != nil {
			return err
		}
		kv, err := c.byte()
		if err != nil {
			return err
		}
		for range n {
			for _, et := range []byte{kv >> 4, kv & 0x0f} {
				if et == 1 || et == 2 {
					err = c.skip(1)
				} else {
					err = c.value(et, depth+1)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	case 12:
		return c.structure(depth + 1)
	}
	return fmt.Errorf("%w: thrift type %d", errThrift, t)
}

// checkParquetMetadata checks the footer of the Parquet file in (whose
// length checkParquetFooter checked) with checkThrift.
func checkParquetMetadata(in input) error {
	var tail [8]byte
	if _, err := in.ra.ReadAt(tail[:], in.size-8); err != nil {
		return &Error{File: in.name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	b := make([]byte, n)
	if _, err := in.ra.ReadAt(b, in.size-8-n); err != nil {
		return &Error{File: in.name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	if _, err := checkThrift(b); err != nil {
		return parquetError(in.name, "footer: %v", err)
	}
	return nil
}

// checkPages reads the page headers of the column chunk of c that starts
// at start and has length bytes, and checks that each page lies in the
// chunk and that its sizes and counts are within the bounds above.
func (s *parquetSource) checkPages(c *pqColumn, start, length int64, codec format.CompressionCodec) error {
	bad := func(format string, args ...any) error {
		return &Error{File: s.name, Row: s.done + 1, Column: c.field, Err: fmt.Errorf("%w: Parquet: column %q: "+format, append([]any{ErrFormat, c.name}, args...)...)}
	}
	var proto thrift.CompactProtocol
	buf := make([]byte, 1<<10)
	for off, end := start, start+length; off < end; {
		var h format.PageHeader
		var hn int
		for size := int64(1 << 10); ; size = 1 << 16 {
			w := buf[:min(size, end-off)]
			if cap(buf) < len(w) {
				buf = make([]byte, size)
				w = buf[:min(size, end-off)]
			}
			if m, err := s.ra.ReadAt(w, off); m < len(w) {
				return bad("page header at byte %d: %v", off, err)
			}
			var err error
			hn, err = checkThrift(w)
			if errors.Is(err, io.ErrUnexpectedEOF) && size < 1<<16 && int64(len(w)) < end-off {
				continue
			}
			if err != nil {
				return bad("page header at byte %d: %v", off, err)
			}
			if err := thrift.Unmarshal(&proto, w[:hn], &h); err != nil {
				return bad("page header at byte %d: %v", off, err)
			}
			break
		}
		off += int64(hn)
		if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > end-off {
			return bad("page of %d bytes at byte %d, the column chunk ends at %d", h.CompressedPageSize, off, end)
		}
		if h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
			return bad("page of %d uncompressed bytes (at most %d)", h.UncompressedPageSize, maxPageBytes)
		}
		var values, levels int32
		switch {
		case h.DataPageHeader.Valid:
			values = h.DataPageHeader.V.NumValues
		case h.DataPageHeaderV2.Valid:
			v := &h.DataPageHeaderV2.V
			values = v.NumValues
			if v.NumRows < 0 || v.NumRows > maxPageValues {
				return bad("page of %d rows", v.NumRows)
			}
			if v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 ||
				int64(v.RepetitionLevelsByteLength)+int64(v.DefinitionLevelsByteLength) > int64(h.CompressedPageSize) {
				return bad("page levels of %d and %d bytes in a page of %d", v.RepetitionLevelsByteLength, v.DefinitionLevelsByteLength, h.CompressedPageSize)
			}
			levels = v.RepetitionLevelsByteLength + v.DefinitionLevelsByteLength
		case h.DictionaryPageHeader.Valid:
			values = h.DictionaryPageHeader.V.NumValues
		}
		if values < 0 || values > maxPageValues {
			return bad("page of %d values (at most %d)", values, maxPageValues)
		}
		compressed := !h.DataPageHeaderV2.Valid || !h.DataPageHeaderV2.V.IsCompressed.Valid || h.DataPageHeaderV2.V.IsCompressed.V
		if codec == format.Snappy && compressed && h.CompressedPageSize > levels {
			// The snappy block starts with its decoded length.
			var v [binary.MaxVarintLen32]byte
			w := v[:min(int64(len(v)), int64(h.CompressedPageSize-levels))]
			if m, err := s.ra.ReadAt(w, off+int64(levels)); m < len(w) {
				return bad("page at byte %d: %v", off, err)
			}
			if n, k := binary.Uvarint(w); k <= 0 || n > uint64(h.UncompressedPageSize) {
				return bad("snappy block of %d bytes in a page of %d uncompressed bytes", n, h.UncompressedPageSize)
			}
		}
		off += int64(h.CompressedPageSize)
	}
	return nil
}
