package data

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// DefaultChunkRows is the most rows of a chunk when OpenChunks is given
// rows <= 0, and the rows a CSV's label column is detected on.
const DefaultChunkRows = 1 << 16

// DefaultChunkBytes is the size of the predictions of a chunk when
// OpenChunks is given rows <= 0: the first chunk has autoFirstRows rows,
// the next DefaultChunkBytes / (8K) (from autoFirstRows to
// DefaultChunkRows), so that a stream's chunks take about 1 MiB whatever K
// (at K = 10: 13,107 rows; a chunk of 65,536 rows took 5 MiB, several of
// them in flight, most of a stream's memory).
const DefaultChunkBytes = 1 << 20

// autoFirstRows is the rows of the first chunk when the size is automatic,
// before K is known.
const autoFirstRows = 1 << 10

// autoRows returns the rows of a chunk of about DefaultChunkBytes of
// predictions at K columns.
func autoRows(k int) int {
	return min(DefaultChunkRows, max(autoFirstRows, DefaultChunkBytes/(8*max(k, 1))))
}

// maxChunkValues bounds the values of one chunk of an array file (NPY): a
// chunk holds fewer than the rows asked for when its rows have more than
// maxChunkValues values in all (1<<24 float64, 128 MiB).
const maxChunkValues = 1 << 24

// Chunks reads a prediction file a chunk of rows at a time, in memory
// proportional to the rows of a chunk times K, never the whole file: the
// reader of streamed evaluation. Each chunk is the validated Set
// that Load would give for those rows: the same probabilities (logits through
// the softmax, one column as the binary case), labels, weights, and the
// Renormalized and Rounded counts of the chunk. What Load decides for the
// whole file is decided on the first rows, then kept:
//
//   - CSV: the header, the weight column, the number of columns and the label
//     column, as Load decides them. When the label column is found by content
//     (no header, no Options.K, see Options.Unlabeled), it is decided on the
//     first max(rows, DefaultChunkRows) rows.
//   - JSON Lines: probabilities or logits, their number and the presence of
//     "weight" are fixed by the first row, as in Load. When labels are
//     optional (Options.Unlabeled), a label on the first row asks one of
//     every row (an *Error wrapping ErrNoLabels names the first row without
//     one; Load would drop all labels instead), and without a label on the
//     first row the labels of the other rows are checked but not returned.
//     With a labels file, a chunk's own labels are checked against the
//     file's when every row of the chunk has one.
//   - NPY: the prediction array is read row by row (C order only, see
//     NPYRows), with its labels (Options.Labels, required unless
//     Options.Unlabeled: an NPY file of shape (n,) or (n, 1), or text with one
//     label per line) and weights (Options.Weights, likewise) read in step.
//   - Parquet: see ColumnNames; row groups are read page by page.
//   - NPZ is refused (an *Error wrapping ErrFormat): it is a zip archive.
//
// A later row with another number of columns is an *Error naming its line or
// row. Errors name the real line of a text file (counted through the file) or
// the 1-based row of an array file, as Load would; the first problem of the
// first chunk that has one is returned, which need not be the problem Load
// reports first. Weights may be all zero within a chunk (the Set's Weights
// then are); weights that are zero in every row of the file are an *Error
// wrapping ErrWeights from the Next that would return io.EOF (unless
// Options.ZeroWeightFile), and so are
// labels or weights files longer or shorter than the predictions (ErrLength,
// ErrWeights). A Chunks is not safe for concurrent use.
type Chunks struct {
	name     string
	opts     Options
	rows     int
	autoSize bool // rows is set from K after the first chunk (rows <= 0 given)
	src      chunkSource
	labels   sideReader // nil: labels, if any, are in the predictions file
	weights  sideReader // nil: weights, if any, are in the predictions file
	closers  []io.Closer
	size     int64
	bytes    int64 // bytes of the predictions file read so far
	offset   int64 // row index of the first row of the last chunk
	done     int64 // rows returned
	started  bool  // a chunk was read
	// weighted says a chunk had weights, positive that one was > 0.
	weighted, positive bool
	err                error // sticky: io.EOF or the first error
}

// chunkSource reads the next rows of a predictions file into a table; its
// label column is nil when the file has none. A table with no rows means
// the end of the file.
type chunkSource interface {
	next(rows int) (*table, *labelColumn, error)
}

// sideReader reads the next labels or weights of a side file in step with
// the predictions: read returns at most n values, fewer only at the end of
// the file.
type sideReader interface {
	read(n int) (*labelColumn, error)
	name() string
}

// OpenChunks opens the prediction file name (and the labels and weights
// files opts names) for reading in chunks of at most rows rows (rows <= 0
// means about DefaultChunkBytes of predictions a chunk). The format is picked as Load picks it. Errors
// that the start of the files shows (a missing file, an unknown format, an
// NPY shape, Parquet columns) are *Error values as Load returns them; the
// others come from Next. Close the Chunks when done.
func OpenChunks(name string, opts Options, rows int) (*Chunks, error) {
	f, err := openFile(name, "a prediction file")
	if err != nil {
		return nil, err
	}
	format, err := formatFor(name, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return openChunksFile(f, name, format, opts, rows)
}

// openChunksFile is OpenChunks for the opened predictions file f (which
// the Chunks closes, or closes on error).
func openChunksFile(f *os.File, name, format string, opts Options, rows int) (*Chunks, error) {
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	c := &Chunks{name: name, opts: opts, closers: []io.Closer{f}, size: size}
	pred := input{name: name, r: &countingReader{r: f, n: &c.bytes}, ra: &countingReaderAt{r: f, n: &c.bytes}, size: size}
	var labels, weights *input
	for _, side := range []struct {
		name, what string
		in         **input
	}{{opts.Labels, "a labels file", &labels}, {opts.Weights, "a weights file", &weights}} {
		if side.name == "" {
			continue
		}
		sf, err := openFile(side.name, side.what)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.closers = append(c.closers, sf)
		var ss int64
		if st, err := sf.Stat(); err == nil {
			ss = st.Size()
		}
		*side.in = &input{name: side.name, r: sf, ra: sf, size: ss}
	}
	if err := c.init(format, pred, labels, weights, rows); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// input is a file to read: sequentially through r, or at offsets through
// ra (Parquet).
type input struct {
	name string
	r    io.Reader
	ra   io.ReaderAt
	size int64 // bytes; 0 when not known
}

// init sets up the sources of c: the predictions pred in format, and the
// labels and weights files (nil when none).
func (c *Chunks) init(format string, pred input, labels, weights *input, rows int) error {
	if rows <= 0 {
		rows, c.autoSize = autoFirstRows, true
	}
	c.rows = rows
	opts := c.opts
	sep := labels != nil
	inFile := !sep && !opts.Unlabeled
	var err error
	switch format {
	case "csv":
		lay := csvLayout{labels: inFile, detect: !inFile, k: opts.K, tol: opts.tolerance(), logits: opts.Logits}
		c.src = &csvSource{p: newCSVParser(pred.name, pred.r, lay), window: max(rows, DefaultChunkRows)}
	case "jsonl":
		c.src = &jsonlSource{p: &jsonlParser{name: pred.name, br: newTextReader(pred.r), needLabel: inFile, stream: !sep}}
	case "npy":
		c.src, err = newNPYSource(pred)
	case "parquet":
		c.src, err = newParquetSource(pred, opts.Columns, inFile)
	default:
		err = &Error{File: pred.name, Err: fmt.Errorf("%w: %s is a zip archive and cannot be streamed; convert it to .npy or Parquet", ErrFormat, formatNames[format])}
	}
	if err != nil {
		return err
	}
	if labels != nil {
		if c.labels, err = newSideReader(*labels, true); err != nil {
			return err
		}
	}
	if weights != nil {
		if c.weights, err = newSideReader(*weights, false); err != nil {
			return err
		}
	}
	if ns, ok := c.src.(*npySource); ok {
		if labels == nil && !opts.Unlabeled {
			return &Error{File: pred.name, Err: fmt.Errorf("%w: an NPY file holds none; give a labels file", ErrNoLabels)}
		}
		if ls, ok := c.labels.(*npySide); ok && ls.rows != ns.rows {
			return &Error{File: pred.name, Err: fmt.Errorf("%w: %d prediction rows, %d labels", ErrLength, ns.rows, ls.rows)}
		}
		if ws, ok := c.weights.(*npySide); ok && ws.rows != ns.rows {
			return &Error{File: ws.file, Err: fmt.Errorf("%w: %d weights for the %d prediction rows of %s", ErrWeights, ws.rows, ns.rows, pred.name)}
		}
	}
	return nil
}

// formatNames names the formats in messages.
var formatNames = map[string]string{"csv": "CSV", "npy": "NPY", "npz": "NPZ", "jsonl": "JSON Lines", "parquet": "Parquet"}

// Next returns the next chunk of at most rows rows as a validated Set, or
// io.EOF after the last one. A file with no rows is an *Error wrapping
// ErrEmpty from the first call. After an error every call returns it.
func (c *Chunks) Next() (*Set, error) {
	if c.err != nil {
		return nil, c.err
	}
	s, err := c.next()
	if err != nil {
		c.err = err
		return nil, err
	}
	return s, nil
}

// next reads and validates the next chunk.
func (c *Chunks) next() (s *Set, err error) {
	t, lc, err := c.src.next(c.rows)
	if err != nil {
		return nil, err
	}
	n := t.rows()
	if n == 0 && c.started {
		return nil, c.finish()
	}
	c.started = true
	if n > 0 {
		if lc, err = c.sideLabels(t, lc, n); err != nil {
			return nil, err
		}
		if err := c.sideWeights(t, n); err != nil {
			return nil, err
		}
	}
	if t.weights != nil {
		t.weights.partial = true
	}
	if s, err = build(t, lc, c.opts); err != nil {
		return nil, err
	}
	if s.Weights != nil {
		c.weighted = true
		c.positive = c.positive || slices.ContainsFunc(s.Weights, func(w float64) bool { return w > 0 })
	}
	c.offset = c.done
	c.done += int64(n)
	if c.autoSize {
		c.rows, c.autoSize = autoRows(s.K), false
	}
	return s, nil
}

// sideLabels reads the n labels of the chunk t from the labels file, if
// any, and returns the labels of the chunk: the file's, checked against
// own (the label column of the predictions file, nil when none).
func (c *Chunks) sideLabels(t *table, own *labelColumn, n int) (*labelColumn, error) {
	if c.labels == nil {
		return own, nil
	}
	fl, err := c.labels.read(n)
	if err != nil {
		return nil, err
	}
	if got := len(fl.values); got < n {
		return nil, &Error{File: c.name, Err: fmt.Errorf("%w: %s ends after %d labels, the predictions have more rows", ErrLength, c.labels.name(), c.done+int64(got))}
	}
	if err := sameLabels(own, fl); err != nil {
		return nil, err
	}
	if own == nil {
		own = fl
	}
	return own, nil
}

// sideWeights reads the n weights of the chunk t from the weights file, if
// any, into t.
func (c *Chunks) sideWeights(t *table, n int) error {
	if c.weights == nil {
		return nil
	}
	if t.weights != nil {
		return &Error{File: t.file, Err: fmt.Errorf("%w: the file has a weight column and a weights file %s was given; give one", ErrWeights, c.weights.name())}
	}
	w, err := c.weights.read(n)
	if err != nil {
		return err
	}
	if got := len(w.values); got < n {
		return &Error{File: c.weights.name(), Err: fmt.Errorf("%w: %d weights, the predictions of %s have more rows", ErrWeights, c.done+int64(got), c.name)}
	}
	t.weights = &weightColumn{positions: w.positions, values: w.values, col: w.col}
	return nil
}

// finish checks, at the end of the predictions, that the side files end
// too and that some weight was positive, and returns io.EOF or the error.
func (c *Chunks) finish() error {
	if c.labels != nil {
		if more, err := c.labels.read(1); err != nil {
			return err
		} else if len(more.values) > 0 {
			return &Error{File: c.name, Err: fmt.Errorf("%w: %d prediction rows, more labels in %s", ErrLength, c.done, c.labels.name())}
		}
	}
	if c.weights != nil {
		if more, err := c.weights.read(1); err != nil {
			return err
		} else if len(more.values) > 0 {
			return &Error{File: c.weights.name(), Err: fmt.Errorf("%w: more weights than the %d prediction rows of %s", ErrWeights, c.done, c.name)}
		}
	}
	if c.weighted && !c.positive && !c.opts.ZeroWeightFile {
		return &Error{File: c.name, Err: fmt.Errorf("%w: all %d weights are zero", ErrWeights, c.done)}
	}
	return io.EOF
}

// Offset returns the 0-based index in the file of the first row of the
// chunk the last Next returned (0 before the first).
func (c *Chunks) Offset() int64 { return c.offset }

// BytesRead returns how many bytes of the predictions file were read so
// far (read ahead included), at most Size, for a progress bar.
func (c *Chunks) BytesRead() int64 {
	if c.size > 0 {
		return min(c.bytes, c.size)
	}
	return c.bytes
}

// Size returns the size of the predictions file in bytes (0 when not
// known).
func (c *Chunks) Size() int64 { return c.size }

// Close closes the files; the Chunks cannot be read after it. It returns
// the first error of closing them.
func (c *Chunks) Close() error {
	var first error
	for _, cl := range c.closers {
		if err := cl.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.closers = nil
	if c.err == nil {
		c.err = &Error{File: c.name, Err: fmt.Errorf("%w: read after Close", ErrRead)}
	}
	return first
}

// readAllChunks reads every chunk of c into one Set, as Load returns it.
func readAllChunks(c *Chunks) (*Set, error) {
	var all *Set
	for {
		s, err := c.Next()
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = s
			continue
		}
		all.N += s.N
		all.Probs = append(all.Probs, s.Probs...)
		if all.Labels != nil {
			all.Labels = append(all.Labels, s.Labels...)
		}
		if all.Logits != nil {
			all.Logits = append(all.Logits, s.Logits...)
		}
		if all.Weights != nil {
			all.Weights = append(all.Weights, s.Weights...)
		}
		all.Renormalized += s.Renormalized
		all.Rounded += s.Rounded
	}
}

// countingReader counts the bytes read through it into *n.
type countingReader struct {
	r io.Reader
	n *int64
}

// Read reads from the wrapped reader and counts the bytes.
func (r *countingReader) Read(p []byte) (int, error) {
	m, err := r.r.Read(p)
	*r.n += int64(m)
	return m, err
}

// countingReaderAt counts the bytes read through it into *n.
type countingReaderAt struct {
	r io.ReaderAt
	n *int64
}

// ReadAt reads from the wrapped reader and counts the bytes.
func (r *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	m, err := r.r.ReadAt(p, off)
	*r.n += int64(m)
	return m, err
}

// csvSource streams a CSV file.
type csvSource struct {
	p       *csvParser
	window  int  // rows that decide a label column found by content
	decided bool // the label column is decided
	// pending holds the rows read to decide the label column and not yet
	// returned (with their labels), from row next on.
	pending   *table
	pendingLC *labelColumn
	next0     int
}

func (s *csvSource) next(rows int) (*table, *labelColumn, error) {
	if s.pending != nil {
		i := s.next0
		j := min(i+rows, s.pending.rows())
		t, lc := sliceRows(s.pending, s.pendingLC, i, j)
		if s.next0 = j; j == s.pending.rows() {
			s.pending, s.pendingLC = nil, nil
		}
		return t, lc, nil
	}
	t, lc, heads, err := s.p.read(rows)
	if err != nil {
		return nil, nil, err
	}
	if !s.decided {
		s.decided = true
		if heads != nil {
			if t.rows() < s.window && !s.p.eof {
				u, _, h, err := s.p.read(s.window - t.rows())
				if err != nil {
					return nil, nil, err
				}
				t.values = append(t.values, u.values...)
				t.lines = append(t.lines, u.lines...)
				t.digits = append(t.digits, u.digits...)
				heads = append(heads, h...)
			}
			labelled := looksLabelled(t, heads, s.p.lay.tol)
			if labelled {
				lc = splitLabels(t, heads)
			}
			s.p.fixLabels(labelled)
			t.labelHint = lc == nil
			if t.rows() > rows {
				s.pending, s.pendingLC = t, lc
				return s.next(rows)
			}
		}
	}
	t.labelHint = lc == nil
	return t, lc, nil
}

// sliceRows returns rows i to j-1 of a text table and its labels (nil when
// none).
func sliceRows(t *table, lc *labelColumn, i, j int) (*table, *labelColumn) {
	k := t.cols
	u := &table{positions: positions{file: t.file, lines: t.lines[i:j:j]}, cols: k, values: t.values[i*k : j*k : j*k], logits: t.logits, labelHint: t.labelHint}
	if t.digits != nil {
		u.digits = t.digits[i:j:j]
	}
	if w := t.weights; w != nil {
		u.weights = &weightColumn{positions: positions{file: w.file, lines: w.lines[i:j:j]}, values: w.values[i:j:j], col: w.col}
	}
	if lc == nil {
		return u, nil
	}
	return u, &labelColumn{positions: positions{file: lc.file, lines: lc.lines[i:j:j]}, values: lc.values[i:j:j], col: lc.col}
}

// jsonlSource streams a JSON Lines file.
type jsonlSource struct{ p *jsonlParser }

func (s *jsonlSource) next(rows int) (*table, *labelColumn, error) {
	t, lc, missing, err := s.p.read(rows)
	if err != nil {
		return nil, nil, err
	}
	if missing > 0 || len(lc.values) == 0 || !s.p.labelled {
		lc = nil
	}
	return t, lc, nil
}

// npySource streams an NPY prediction array.
type npySource struct {
	nr         *NPYRows
	file       string
	rows, cols int
	done       int
}

// newNPYSource reads the header of an NPY predictions file.
func newNPYSource(in input) (*npySource, error) {
	nr, err := newNPYRowsIn(in)
	if err != nil {
		return nil, err
	}
	if !nr.Float() {
		return nil, &Error{File: in.name, Err: fmt.Errorf("%w: predictions must be float32 or float64; an integer array is a labels file: give it with --labels (for shards, a glob of one per shard), not as predictions", ErrFormat)}
	}
	rows, cols := nr.Shape()
	return &npySource{nr: nr, file: in.name, rows: rows, cols: cols}, nil
}

// newNPYRowsIn reads the header of an NPY stream and, when the size of the
// file is known, checks that it can hold the rows the header announces
// (so that no chunk is allocated for data that is not there).
func newNPYRowsIn(in input) (*NPYRows, error) {
	nr, err := NewNPYRows(in.r, in.name)
	if err != nil {
		return nil, err
	}
	rows, cols := nr.Shape()
	if in.size > 0 && int64(rows) > in.size/int64(cols*nr.dt.size) {
		return nil, &Error{File: in.name, Err: fmt.Errorf("%w: NPY: shape (%d, %d) needs more data bytes than the file's %d", ErrFormat, rows, cols, in.size)}
	}
	return nr, nil
}

func (s *npySource) next(rows int) (*table, *labelColumn, error) {
	t := &table{positions: positions{file: s.file, base: s.done}, cols: s.cols}
	k := min(rows, s.rows-s.done, max(1, maxChunkValues/s.cols))
	if k == 0 {
		// Read to the end, where NPYRows checks for bytes after the data.
		if _, err := s.nr.Read(make([]float64, s.cols)); err != io.EOF {
			return nil, nil, err
		}
		return t, nil, nil
	}
	t.values = make([]float64, k*s.cols)
	m, err := s.nr.Read(t.values)
	if err != nil {
		return nil, nil, err
	}
	t.values = t.values[:m*s.cols]
	s.done += m
	return t, nil, nil
}

// newSideReader opens a labels file (labels) or a weights file: NPY by its
// extension, else text with one value per line and an optional header.
func newSideReader(in input, labels bool) (sideReader, error) {
	if FormatOf(in.name) == "npy" {
		nr, err := newNPYRowsIn(in)
		if err != nil {
			return nil, err
		}
		rows, cols := nr.Shape()
		if cols != 1 {
			what := "weights"
			if labels {
				what = "labels"
			}
			return nil, &Error{File: in.name, Err: fmt.Errorf("%w: %s need shape (n,) or (n, 1), got [%d %d]", ErrShape, what, rows, cols)}
		}
		return &npySide{nr: nr, file: in.name, rows: rows}, nil
	}
	lay := csvLayout{plain: true}
	if labels {
		lay = csvLayout{only: true}
	}
	return &textSide{p: newCSVParser(in.name, in.r, lay), labels: labels}, nil
}

// npySide streams the labels or weights of an NPY file.
type npySide struct {
	nr   *NPYRows
	file string
	rows int
	done int
}

func (s *npySide) name() string { return s.file }

func (s *npySide) read(n int) (*labelColumn, error) {
	lc := &labelColumn{positions: positions{file: s.file, base: s.done}, col: 1}
	k := min(n, s.rows-s.done)
	if k == 0 {
		// Read to the end, where NPYRows checks for bytes after the data.
		if _, err := s.nr.Read(make([]float64, 1)); err != io.EOF {
			return nil, err
		}
		return lc, nil
	}
	lc.values = make([]float64, k)
	m, err := s.nr.Read(lc.values)
	if err != nil {
		return nil, err
	}
	lc.values = lc.values[:m]
	s.done += m
	return lc, nil
}

// textSide streams the labels or weights of a text file.
type textSide struct {
	p      *csvParser
	labels bool
}

func (s *textSide) name() string { return s.p.name }

func (s *textSide) read(n int) (*labelColumn, error) {
	t, lc, _, err := s.p.read(n)
	if err != nil {
		return nil, err
	}
	if s.labels {
		if lc == nil { // no rows
			lc = &labelColumn{positions: positions{file: s.p.name, lines: []int32{}}, col: 1}
		}
		return lc, nil
	}
	if t.cols > 1 {
		return nil, &Error{File: s.p.name, Err: fmt.Errorf("%w: a weights file has one column, got %d", ErrShape, t.cols)}
	}
	return &labelColumn{positions: t.positions, values: t.values, col: 1}, nil
}
