package report

import (
	"image/color"
	"math"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// sansFont is the typeface of every text of the figures: Liberation Sans
// (metric-compatible with Arial and Helvetica), which Document embeds in
// the HTML page so that a browser draws the text with the widths the
// layout measured.
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Font sizes of the figures, in points.
const (
	titleSize  = 11
	legendSize = 9
	labelSize  = 10.5
	tickSize   = 9
	// The same in the compact (small multiple) figures.
	compactTitleSize  = 10
	compactLegendSize = 8.5
	compactLabelSize  = 9.5
	compactTickSize   = 8.5
)

// face returns the sans-serif face at size.
func face(size vg.Length) *font.Face {
	f := font.DefaultCache.Lookup(sansFont, size)
	return &f
}

// textStyle returns a black sans-serif text style at size.
// sansPlot sets every text style of p to the sans-serif font at the
// figure sizes (compact: the smaller ones).
func sansPlot(p *plot.Plot, compact bool) {
	ts, ls, ks := vg.Length(titleSize), vg.Length(legendSize), vg.Length(labelSize)
	tk := vg.Length(tickSize)
	if compact {
		ts, ls, ks, tk = compactTitleSize, compactLegendSize, compactLabelSize, compactTickSize
	}
	for _, s := range []struct {
		sty  *text.Style
		size vg.Length
	}{{&p.Title.TextStyle, ts}, {&p.Legend.TextStyle, ls}, {&p.X.Label.TextStyle, ks}, {&p.Y.Label.TextStyle, ks},
		{&p.X.Tick.Label, tk}, {&p.Y.Tick.Label, tk}} {
		s.sty.Font = font.From(sansFont, s.size)
	}
}

// lineStep is the distance between the baselines of two lines of text
// at size (1.2 times the size: more than the ascent plus the descent of
// Liberation Sans, so lines never overprint).
func lineStep(size vg.Length) vg.Length { return 1.2 * size }

// wrap breaks s into lines no wider than width at size: at spaces, and
// within a word (after a '/', '_' or '-' where possible) only when the
// word alone is wider than width.
func wrap(s string, size, width vg.Length) []string {
	f := face(size)
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		if cur != "" && f.Width(cur+" "+w) <= width {
			cur += " " + w
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
			cur = ""
		}
		for f.Width(w) > width {
			cut := fitPrefix(f, w, width)
			lines = append(lines, w[:cut])
			w = w[cut:]
		}
		cur = w
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// fitPrefix returns the length of the longest prefix of w no wider than
// width, cut after a '/', '_' or '-' if one falls in its second half, and
// at least one character.
func fitPrefix(f *font.Face, w string, width vg.Length) int {
	cut := 0
	for i, r := range w {
		end := i + utf8.RuneLen(r)
		if f.Width(w[:end]) > width {
			break
		}
		cut = end
	}
	if cut == 0 {
		_, n := utf8.DecodeRuneInString(w)
		return n
	}
	if k := strings.LastIndexAny(w[:cut], "/_-"); k+1 > cut/2 && k+1 < cut {
		return k + 1
	}
	return cut
}

// placedText is one line of text at its baseline origin, with its box.
type placedText struct {
	Text string
	Size vg.Length
	At   vg.Point // the left end of the baseline
	Box  vg.Rectangle
}

// place returns s at size with its baseline starting at at.
func place(s string, size vg.Length, at vg.Point) placedText {
	f := face(size)
	e := f.Extents()
	return placedText{Text: s, Size: size, At: at,
		Box: vg.Rectangle{Min: vg.Point{X: at.X, Y: at.Y - e.Descent}, Max: vg.Point{X: at.X + f.Width(s), Y: at.Y + e.Ascent}}}
}

// draw draws the text in col.
func (t placedText) draw(c draw.Canvas, col color.Color) {
	c.SetColor(col)
	c.FillString(*face(t.Size), t.At, t.Text)
}

// legendEntry is one entry of a legend: a thumbnail and its text.
type legendEntry struct {
	text   string
	thumbs []plot.Thumbnailer
}

// panel is one plot of a figure with its heading: the title, wrapped to
// the width of the panel, and the legend, laid out in as many columns as
// fit, between the title and the plot, outside the data area. The plot's
// own title and legend stay empty.
type panel struct {
	plot    *plot.Plot
	title   string
	entries []legendEntry
	compact bool // smaller fonts
}

// add adds a legend entry.
func (pn *panel) add(text string, thumbs ...plot.Thumbnailer) {
	pn.entries = append(pn.entries, legendEntry{text: text, thumbs: thumbs})
}

// headingLayout is where a panel's heading goes: the lines of the title
// and, per legend entry, the thumbnail's box and the lines of the text.
type headingLayout struct {
	Title   []placedText
	Thumbs  []vg.Rectangle
	Entries [][]placedText
	// X0 and X1 bound the band the heading was laid out in; Height is
	// the height it takes below its top.
	X0, X1, Height vg.Length
	entries        []legendEntry
}

// EntryBox returns the box of legend entry i: its thumbnail and text.
func (h headingLayout) EntryBox(i int) vg.Rectangle {
	r := h.Thumbs[i]
	for _, t := range h.Entries[i] {
		r = union(r, t.Box)
	}
	return r
}

// union returns the smallest rectangle holding a and b.
func union(a, b vg.Rectangle) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: min(a.Min.X, b.Min.X), Y: min(a.Min.Y, b.Min.Y)},
		Max: vg.Point{X: max(a.Max.X, b.Max.X), Y: max(a.Max.Y, b.Max.Y)}}
}

// overlaps reports whether a and b share more than slack in both
// directions.
func overlaps(a, b vg.Rectangle, slack vg.Length) bool {
	return min(a.Max.X, b.Max.X)-max(a.Min.X, b.Min.X) > slack && min(a.Max.Y, b.Max.Y)-max(a.Min.Y, b.Min.Y) > slack
}

// heading lays out the heading of pn in the band from x0 to x1 whose top
// is at top: the title centred, one line step per line, then the legend
// entries in rows of equal columns, centred.
func (pn *panel) heading(x0, x1, top vg.Length) headingLayout {
	ts, ls := vg.Length(titleSize), vg.Length(legendSize)
	if pn.compact {
		ts, ls = compactTitleSize, compactLegendSize
	}
	width := x1 - x0
	h := headingLayout{entries: pn.entries, X0: x0, X1: x1}
	y := top
	if pn.title != "" {
		asc := face(ts).Extents().Ascent
		for _, line := range wrap(pn.title, ts, width) {
			w := face(ts).Width(line)
			h.Title = append(h.Title, place(line, ts, vg.Point{X: x0 + (width-w)/2, Y: y - asc}))
			y -= lineStep(ts)
		}
		y -= 0.25 * ts
	}
	if n := len(pn.entries); n > 0 {
		f := face(ls)
		e := f.Extents()
		thumbW, gap, colGap := 2*ls, 0.5*ls, 1.5*ls
		textW := vg.Length(0)
		for _, en := range pn.entries {
			textW = max(textW, f.Width(en.text))
		}
		if thumbW+gap+textW > width {
			textW = width - thumbW - gap
		}
		colW := thumbW + gap + textW
		cols := max(1, min(n, int((width+colGap)/(colW+colGap))))
		rows := (n + cols - 1) / cols
		cols = (n + rows - 1) / rows // balance: no short last row where avoidable
		left := x0 + (width-(vg.Length(cols)*colW+vg.Length(cols-1)*colGap))/2
		for r := 0; r < rows; r++ {
			lines := 1
			for c := 0; c < cols && r*cols+c < n; c++ {
				i := r*cols + c
				x := left + vg.Length(c)*(colW+colGap)
				var pts []placedText
				for k, line := range wrap(pn.entries[i].text, ls, textW) {
					pts = append(pts, place(line, ls, vg.Point{X: x + thumbW + gap, Y: y - e.Ascent - vg.Length(k)*lineStep(ls)}))
				}
				lines = max(lines, len(pts))
				base := y - e.Ascent
				h.Thumbs = append(h.Thumbs, vg.Rectangle{Min: vg.Point{X: x, Y: base - 0.1*ls}, Max: vg.Point{X: x + thumbW, Y: base + 0.7*ls}})
				h.Entries = append(h.Entries, pts)
			}
			y -= vg.Length(lines) * lineStep(ls)
		}
		y -= 0.2 * ls
	}
	h.Height = top - y
	return h
}

// draw draws the heading.
func (h headingLayout) draw(c draw.Canvas) {
	for _, t := range h.Title {
		t.draw(c, color.Black)
	}
	for i, en := range h.entries {
		tc := &draw.Canvas{Canvas: c.Canvas, Rectangle: h.Thumbs[i]}
		for _, th := range en.thumbs {
			th.Thumbnail(tc)
		}
		for _, t := range h.Entries[i] {
			t.draw(c, color.Black)
		}
	}
}

// gridLayout is where a grid of panels goes: the canvas of each plot (as
// plot.Align gives it) and each heading. Entries of nil panels are zero.
type gridLayout struct {
	Canvases [][]draw.Canvas
	Headings [][]headingLayout
	plots    [][]*plot.Plot
}

// DataAreas returns the data rectangle of every plot.
func (l gridLayout) DataAreas() []vg.Rectangle {
	var rs []vg.Rectangle
	for i, row := range l.plots {
		for j, p := range row {
			if p != nil {
				rs = append(rs, p.DataCanvas(l.Canvases[i][j]).Rectangle)
			}
		}
	}
	return rs
}

// Grid spacing.
const (
	gridPad  = 2 * vg.Millimeter // around the grid
	gridPadX = 5 * vg.Millimeter // between columns
	gridPadY = 4 * vg.Millimeter // between rows
)

// layoutGrid lays out a rows × cols grid of panels on c: every heading
// gets the height of the tallest (at the width of a tile) above its plot,
// and the plots are aligned (plot.Align).
func layoutGrid(c draw.Canvas, panels [][]*panel) gridLayout {
	rows, cols := len(panels), len(panels[0])
	tw := (c.Max.X - c.Min.X - 2*gridPad - vg.Length(cols-1)*gridPadX) / vg.Length(cols)
	hh := vg.Length(0)
	l := gridLayout{Canvases: make([][]draw.Canvas, rows), Headings: make([][]headingLayout, rows), plots: make([][]*plot.Plot, rows)}
	for i, row := range panels {
		l.plots[i] = make([]*plot.Plot, cols)
		for j, pn := range row {
			if pn != nil {
				l.plots[i][j] = pn.plot
				hh = max(hh, pn.heading(0, tw, 0).Height)
			}
		}
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: gridPadX, PadY: gridPadY + hh,
		PadTop: gridPad + hh, PadBottom: gridPad, PadLeft: gridPad, PadRight: gridPad}
	l.Canvases = plot.Align(l.plots, t, c)
	for i, row := range panels {
		l.Headings[i] = make([]headingLayout, cols)
		top := vg.Length(math.Inf(-1))
		for j, pn := range row {
			if pn != nil {
				top = max(top, l.Canvases[i][j].Max.Y)
			}
		}
		for j, pn := range row {
			if pn != nil {
				tile := t.At(c, j, i)
				l.Headings[i][j] = pn.heading(tile.Min.X, tile.Max.X, top+hh)
			}
		}
	}
	return l
}

// figureLegend lays out a legend across the top of c (as a heading
// without title) and returns it with the canvas left below it.
func figureLegend(c draw.Canvas, entries []legendEntry) (headingLayout, draw.Canvas) {
	pn := &panel{entries: entries}
	h := pn.heading(c.Min.X+gridPad, c.Max.X-gridPad, c.Max.Y-gridPad)
	rest := c
	rest.Max.Y -= h.Height + gridPad
	return h, rest
}

// figureLayout is the layout of a whole figure: its figure-wide legend
// (if any) and its grids of panels, for the tests.
type figureLayout struct {
	Legend headingLayout
	Grids  []gridLayout
	// Texts are other texts the figure drew outside the plots.
	Texts []placedText
}
