package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ColumnNames names the columns of a Parquet prediction file. Each field's
// zero value ("") means the default in brackets. The predictions are, in this
// order of preference:
//
//   - a list column Probs ["probs"] of K probabilities per row (list<double>
//     or list<float>, as pyarrow and parquet-go write them; a plain float
//     column is one value per row, the binary case);
//   - a list column Logits ["logits"] of K logits per row;
//   - columns ProbsPrefix ["p"] followed by 0, 1, ..., K-1 (p0, p1, ...), one
//     per class, float or double;
//   - columns LogitsPrefix ["logit"] followed by 0, 1, ..., K-1.
//
// Options.Logits makes probability columns logits. Label ["label"] is an
// integer column (int32, int64, boolean, or whole float numbers) of labels in
// 0..K-1, needed unless a labels file is given or Options.Unlabeled is set;
// Weight ["weight"] is an optional numeric column of sample weights. Other
// columns are not read. A null value is an error. Errors name the 1-based row
// (Error.Row) and the column: for a prediction value, the 1-based class (its
// place among the row's K values); for a label, a weight or a column that
// does not fit, the 1-based place of the column among the file's top-level
// columns.
type ColumnNames struct {
	Probs        string // list column of probabilities ["probs"]
	Logits       string // list column of logits ["logits"]
	ProbsPrefix  string // prefix of per-class probability columns ["p"]
	LogitsPrefix string // prefix of per-class logit columns ["logit"]
	Label        string // label column ["label"]
	Weight       string // weight column ["weight"]
}

// withDefaults returns n with every empty name set to its default.
func (n ColumnNames) withDefaults() ColumnNames {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&n.Probs, "probs")
	def(&n.Logits, "logits")
	def(&n.ProbsPrefix, "p")
	def(&n.LogitsPrefix, "logit")
	def(&n.Label, "label")
	def(&n.Weight, "weight")
	return n
}

// parquetValues is the number of values read from a page at a time.
const parquetValues = 1024

// parquetSource streams the rows of a Parquet file, row group by row
// group, each column page by page.
type parquetSource struct {
	name   string
	file   *parquet.File
	ra     io.ReaderAt
	size   int64
	group  int   // next row group
	left   int64 // rows left in the current row group
	list   bool  // one list column holds the predictions
	preds  []*pqColumn
	label  *pqColumn // nil: no label column
	weight *pqColumn // nil: no weight column
	logits bool
	cols   int // values per row; 0 until the first row of a list column
	done   int // rows read
	broken error
}

// pqColumn reads the values of one leaf column of the current row group.
type pqColumn struct {
	name   string
	field  int // 1-based place among the top-level columns
	leaf   int // index of the leaf column
	kind   parquet.Kind
	uint   bool // unsigned integers
	repDef int  // definition level of a present list element; 0 for a plain column
	pages  parquet.Pages
	page   parquet.Page
	vr     parquet.ValueReader
	buf    []parquet.Value
	i, n   int
}

// parquetError returns the *Error for a problem of a Parquet file.
func parquetError(name, format string, args ...any) *Error {
	return &Error{File: name, Err: fmt.Errorf("%w: Parquet: "+format, append([]any{ErrFormat}, args...)...)}
}

// newParquetSource opens the Parquet file in, finds the columns names asks
// for and checks their types; needLabel says a label column is required.
func newParquetSource(in input, names ColumnNames, needLabel bool) (src *parquetSource, err error) {
	defer func() {
		if r := recover(); r != nil {
			src, err = nil, parquetError(in.name, "corrupt file (%v)", r)
		}
	}()
	if err := checkParquetFooter(in); err != nil {
		return nil, err
	}
	if err := checkParquetMetadata(in); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(in.ra, in.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<16))
	if err != nil {
		return nil, parquetError(in.name, "%v", err)
	}
	if f.Metadata().EncryptionAlgorithm.Value != nil {
		return nil, parquetError(in.name, "encrypted files are not supported")
	}
	s := &parquetSource{name: in.name, file: f, ra: in.ra, size: in.size}
	names = names.withDefaults()
	top := f.Root().Columns()
	field := func(name string) (*parquet.Column, int) {
		for i, c := range top {
			if c.Name() == name {
				return c, i + 1
			}
		}
		return nil, 0
	}
	var predErr error
	addPred := func(c *parquet.Column, fieldNum int, list bool) {
		col, err := s.column(c, fieldNum, list, "float or double", parquet.Float, parquet.Double)
		if err != nil && predErr == nil {
			predErr = err
		}
		s.preds = append(s.preds, col)
	}
	pc, pf := field(names.Probs)
	lc, lf := field(names.Logits)
	switch {
	case pc != nil && lc != nil:
		return nil, parquetError(in.name, "both a %q and a %q column; keep one", names.Probs, names.Logits)
	case pc != nil:
		s.list = true
		addPred(pc, pf, true)
	case lc != nil:
		s.list, s.logits = true, true
		addPred(lc, lf, true)
	default:
		for _, pre := range []string{names.ProbsPrefix, names.LogitsPrefix} {
			for k := 0; ; k++ {
				c, f := field(pre + strconv.Itoa(k))
				if c == nil {
					break
				}
				addPred(c, f, false)
			}
			if len(s.preds) > 0 {
				s.logits = pre == names.LogitsPrefix
				break
			}
		}
	}
	if predErr != nil {
		return nil, predErr
	}
	if len(s.preds) == 0 {
		have := make([]string, len(top))
		for i, c := range top {
			have[i] = c.Name()
		}
		return nil, parquetError(in.name, "no prediction columns: want a list column %q or %q, or columns %s0, %s1, ... or %s0, %s1, ...; the file has %q",
			names.Probs, names.Logits, names.ProbsPrefix, names.ProbsPrefix, names.LogitsPrefix, names.LogitsPrefix, have)
	}
	if !s.list {
		s.cols = len(s.preds)
	}
	if c, f := field(names.Label); c != nil {
		if s.label, err = s.column(c, f, false, "integers", parquet.Int32, parquet.Int64, parquet.Boolean, parquet.Float, parquet.Double); err != nil {
			return nil, err
		}
	} else if needLabel {
		return nil, &Error{File: in.name, Err: fmt.Errorf("%w: Parquet: no %q column; add one or give a labels file", ErrNoLabels, names.Label)}
	}
	if c, f := field(names.Weight); c != nil {
		if s.weight, err = s.column(c, f, false, "numbers", parquet.Int32, parquet.Int64, parquet.Float, parquet.Double); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkParquetFooter checks the magic bytes and the footer length of a
// Parquet file before parquet-go reads it (it allocates the length the
// file announces).
func checkParquetFooter(in input) error {
	if in.size < 12 {
		return parquetError(in.name, "not a Parquet file (%d bytes)", in.size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := in.ra.ReadAt(head[:], 0); err != nil {
		return &Error{File: in.name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	if _, err := in.ra.ReadAt(tail[:], in.size-8); err != nil {
		return &Error{File: in.name, Err: fmt.Errorf("%w: %w", ErrRead, err)}
	}
	switch {
	case string(head[:]) == "PARE" || string(tail[4:]) == "PARE":
		return parquetError(in.name, "encrypted files are not supported")
	case string(head[:]) != "PAR1" || string(tail[4:]) != "PAR1":
		return parquetError(in.name, "not a Parquet file (no PAR1 magic bytes at both ends)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > in.size-12 {
		return parquetError(in.name, "footer length %d beyond the file's %d bytes", n, in.size)
	}
	return nil
}

// column checks the top-level column c (1-based place fieldNum): a plain
// leaf, or with list a list of one leaf, of one of the kinds (want names
// them).
func (s *parquetSource) column(c *parquet.Column, fieldNum int, list bool, want string, kinds ...parquet.Kind) (*pqColumn, error) {
	bad := func(format string, args ...any) error {
		return &Error{File: s.name, Column: fieldNum, Err: fmt.Errorf("%w: Parquet: column %q: "+format, append([]any{ErrFormat, c.Name()}, args...)...)}
	}
	def, repDef := 0, 0
	leaf := c
	for {
		if leaf.Optional() || leaf.Repeated() {
			def++
		}
		if leaf.Repeated() {
			repDef = def
		}
		if leaf.Leaf() {
			break
		}
		if cs := leaf.Columns(); len(cs) == 1 {
			leaf = cs[0]
		} else {
			return nil, bad("a group of %d columns, want one value or a list of values", len(cs))
		}
	}
	switch r := leaf.MaxRepetitionLevel(); {
	case r > 1:
		return nil, bad("nested lists (repetition level %d)", r)
	case r == 1 && !list:
		return nil, bad("a list, want one value per row")
	}
	kind := leaf.Type().Kind()
	if !slices.Contains(kinds, kind) {
		return nil, bad("holds %s values, want %s", kindName(kind), want)
	}
	col := &pqColumn{name: c.Name(), field: fieldNum, leaf: leaf.Index(), kind: kind, repDef: repDef, buf: make([]parquet.Value, parquetValues)}
	if lt := leaf.Type().LogicalType(); lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
			col.uint = true
		}
	}
	return col, nil
}

// kindName names a Parquet physical type in messages.
func kindName(k parquet.Kind) string {
	switch k {
	case parquet.Boolean:
		return "boolean"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Int96:
		return "int96"
	case parquet.Float:
		return "float"
	case parquet.Double:
		return "double"
	case parquet.ByteArray:
		return "byte array (string)"
	case parquet.FixedLenByteArray:
		return "fixed-length byte array"
	}
	return "unknown"
}

// columns returns every column the source reads.
func (s *parquetSource) columns() []*pqColumn {
	cs := slices.Clone(s.preds)
	if s.label != nil {
		cs = append(cs, s.label)
	}
	if s.weight != nil {
		cs = append(cs, s.weight)
	}
	return cs
}

// nextGroup opens the pages of the next row group; false at the end of
// the file.
func (s *parquetSource) nextGroup() (bool, error) {
	groups := s.file.RowGroups()
	meta := s.file.Metadata()
	for _, c := range s.columns() {
		c.close()
	}
	if s.group >= len(groups) || s.group >= len(meta.RowGroups) {
		return false, nil
	}
	g := groups[s.group]
	gm := &meta.RowGroups[s.group]
	s.group++
	s.left = g.NumRows()
	if s.left < 0 {
		return false, parquetError(s.name, "row group %d has %d rows", s.group, s.left)
	}
	chunks := g.ColumnChunks()
	for _, c := range s.columns() {
		if c.leaf >= len(chunks) || c.leaf >= len(gm.Columns) {
			return false, parquetError(s.name, "row group %d has no column %q", s.group, c.name)
		}
		m := gm.Columns[c.leaf].MetaData
		start := m.DataPageOffset // where parquet-go starts reading
		if m.DictionaryPageOffset != 0 {
			start = m.DictionaryPageOffset
		}
		if start < 0 || m.TotalCompressedSize < 0 || start > s.size || m.TotalCompressedSize > s.size-start {
			return false, parquetError(s.name, "row group %d, column %q: data outside the file", s.group, c.name)
		}
		if err := s.checkPages(c, start, m.TotalCompressedSize, m.Codec); err != nil {
			return false, err
		}
		c.pages = chunks[c.leaf].Pages()
	}
	return true, nil
}

// close closes the pages of the current row group.
func (c *pqColumn) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
	c.vr = nil
	c.i, c.n = 0, 0
}

// peek returns the next value of the column in its row group; false at
// the end of the row group's values.
func (c *pqColumn) peek() (parquet.Value, bool, error) {
	for c.i >= c.n {
		if c.vr == nil {
			if c.page != nil {
				parquet.Release(c.page)
				c.page = nil
			}
			p, err := c.pages.ReadPage()
			if err == io.EOF {
				return parquet.Value{}, false, nil
			}
			if err != nil {
				return parquet.Value{}, false, err
			}
			c.page, c.vr = p, p.Values()
		}
		n, err := c.vr.ReadValues(c.buf)
		c.i, c.n = 0, n
		if err == io.EOF || (err == nil && n == 0) {
			c.vr = nil
		} else if err != nil {
			return parquet.Value{}, false, err
		}
	}
	return c.buf[c.i], true, nil
}

// float returns the number v holds.
func (c *pqColumn) float(v parquet.Value) float64 {
	switch c.kind {
	case parquet.Boolean:
		if v.Boolean() {
			return 1
		}
		return 0
	case parquet.Int32:
		if c.uint {
			return float64(v.Uint32())
		}
		return float64(v.Int32())
	case parquet.Int64:
		if c.uint {
			return float64(v.Uint64())
		}
		return float64(v.Int64())
	case parquet.Float:
		return float64(v.Float())
	}
	return v.Double()
}

// appendRow appends the values of the column's next row (row: its 1-based
// row in the file, for errors) to dst.
func (c *pqColumn) appendRow(dst []float64, row int, file string) ([]float64, error) {
	v, ok, err := c.peek()
	switch {
	case err != nil:
		return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: Parquet: column %q: %w", ErrFormat, c.name, err)}
	case !ok:
		return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: Parquet: column %q ends before the rows of its row group", ErrFormat, c.name)}
	case v.RepetitionLevel() != 0:
		return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: Parquet: column %q: a row does not start where the last ended", ErrFormat, c.name)}
	}
	start := len(dst)
	for first := true; ; first = false {
		c.i++
		if v.IsNull() {
			if first && c.repDef > 0 && v.DefinitionLevel() < c.repDef {
				return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: empty or null %q list", ErrShape, c.name)}
			}
			return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: null in column %q", ErrNotFinite, c.name)}
		}
		dst = append(dst, c.float(v))
		if c.repDef == 0 {
			return dst, nil
		}
		if v, ok, err = c.peek(); err != nil {
			return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: Parquet: column %q: %w", ErrFormat, c.name, err)}
		}
		if !ok || v.RepetitionLevel() == 0 {
			break
		}
		if len(dst)-start >= maxChunkValues {
			return nil, &Error{File: file, Row: row, Column: c.field, Err: fmt.Errorf("%w: more than %d values in a row", ErrShape, maxChunkValues)}
		}
	}
	return dst, nil
}

func (s *parquetSource) next(rows int) (t *table, lc *labelColumn, err error) {
	if s.broken != nil {
		return nil, nil, s.broken
	}
	defer func() {
		if r := recover(); r != nil {
			t, lc, err = nil, nil, parquetError(s.name, "corrupt file near row %d (%v)", s.done+1, r)
		}
		if err != nil {
			s.broken = err
		}
	}()
	t = &table{positions: positions{file: s.name, base: s.done}, cols: s.cols, logits: s.logits}
	if s.label != nil {
		lc = &labelColumn{positions: positions{file: s.name, base: s.done}, col: s.label.field}
	}
	if s.weight != nil {
		t.weights = &weightColumn{positions: positions{file: s.name, base: s.done}, col: s.weight.field}
	}
	if s.cols > 0 {
		rows = min(rows, maxChunkValues/s.cols)
	}
	for n := 0; n < rows; n++ {
		for s.left == 0 {
			ok, err := s.nextGroup()
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				return t, lc, nil
			}
		}
		row := s.done + 1
		before := len(t.values)
		for _, c := range s.preds {
			if t.values, err = c.appendRow(t.values, row, s.name); err != nil {
				return nil, nil, err
			}
		}
		if k := len(t.values) - before; s.cols == 0 {
			s.cols, t.cols = k, k
			rows = min(rows, maxChunkValues/k)
		} else if k != s.cols {
			return nil, nil, &Error{File: s.name, Row: row, Column: s.preds[0].field, Err: fmt.Errorf("%w: %d values, the first row has %d", ErrRagged, k, s.cols)}
		}
		if s.label != nil {
			if lc.values, err = s.label.appendRow(lc.values, row, s.name); err != nil {
				if errors.Is(err, ErrNotFinite) {
					err.(*Error).Err = fmt.Errorf("%w: null label", ErrLabel)
				}
				return nil, nil, err
			}
		}
		if s.weight != nil {
			if t.weights.values, err = s.weight.appendRow(t.weights.values, row, s.name); err != nil {
				if errors.Is(err, ErrNotFinite) {
					err.(*Error).Err = fmt.Errorf("%w: null weight", ErrWeights)
				}
				return nil, nil, err
			}
		}
		s.done++
		s.left--
	}
	return t, lc, nil
}

// ParquetWriteOptions says how WriteParquet writes.
type ParquetWriteOptions struct {
	// RowGroupRows is the number of rows of a row group (the last may
	// have fewer); 0 means DefaultChunkRows.
	RowGroupRows int
}

// WriteParquet writes n rows of k probabilities (probs, row-major, n×k) as a
// Parquet file: a column "probs" of lists of k doubles, an int64 column
// "label" when labels is not nil (n labels) and a double column "weight"
// when weights is not nil (n weights), uncompressed, in row groups of
// opts.RowGroupRows rows. Load and OpenChunks read it back bit for bit. It
// panics when the lengths do not fit (a caller's bug).
func WriteParquet(w io.Writer, probs []float64, k int, labels []int, weights []float64, opts ParquetWriteOptions) error {
	if k < 1 || len(probs)%k != 0 {
		panic(fmt.Sprintf("data: WriteParquet: %d values do not make rows of %d", len(probs), k))
	}
	n := len(probs) / k
	if (labels != nil && len(labels) != n) || (weights != nil && len(weights) != n) {
		panic(fmt.Sprintf("data: WriteParquet: %d rows, %d labels, %d weights", n, len(labels), len(weights)))
	}
	g := parquet.Group{"probs": parquet.List(parquet.Leaf(parquet.DoubleType))}
	if labels != nil {
		g["label"] = parquet.Int(64)
	}
	if weights != nil {
		g["weight"] = parquet.Leaf(parquet.DoubleType)
	}
	schema := parquet.NewSchema("predictions", g)
	col := map[string]int{}
	for i, p := range schema.Columns() {
		col[p[0]] = i
	}
	rg := opts.RowGroupRows
	if rg <= 0 {
		rg = DefaultChunkRows
	}
	pw := parquet.NewWriter(w, schema, parquet.MaxRowsPerRowGroup(int64(rg)))
	const batch = 1024
	rows := make([]parquet.Row, 0, batch)
	for i := 0; i < n; i++ {
		row := make(parquet.Row, 0, k+2)
		// Values go in the order of the schema's columns: label, probs,
		// weight (a Group sorts its fields by name).
		if labels != nil {
			row = append(row, parquet.Int64Value(int64(labels[i])).Level(0, 0, col["label"]))
		}
		for m, v := range probs[i*k : (i+1)*k] {
			rep := 1
			if m == 0 {
				rep = 0
			}
			row = append(row, parquet.DoubleValue(v).Level(rep, 1, col["probs"]))
		}
		if weights != nil {
			row = append(row, parquet.DoubleValue(weights[i]).Level(0, 0, col["weight"]))
		}
		if rows = append(rows, row); len(rows) == batch || i == n-1 {
			if _, err := pw.WriteRows(rows); err != nil {
				return fmt.Errorf("data: write Parquet: %w", err)
			}
			rows = rows[:0]
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("data: write Parquet: %w", err)
	}
	return nil
}
