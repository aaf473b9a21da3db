package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/calib-dev/calib/atomicfile"
)

// Figure is a drawing of a fixed size: each figure type of this package
// (Reliability, KSGraphs, Simplex, BandwidthView, Comparison) holds its data
// and draws itself with gonum.org/v1/plot.
type Figure interface {
	// Size is the natural size of the figure.
	Size() (width, height vg.Length)
	// Draw draws the figure on c.
	Draw(c draw.Canvas)
}

// Formats returns the formats of Write.
func Formats() []string { return slices.Clone(figureFormats) }

var figureFormats = []string{"svg", "png", "pdf"}

// Write renders f in format "svg", "png" (150 dpi) or "pdf" (fonts
// embedded) to w.
func Write(w io.Writer, f Figure, format string) error {
	wd, ht := f.Size()
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		c = vgsvg.New(wd, ht)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(wd, ht), vgimg.UseDPI(150))}
	case "pdf":
		p := vgpdf.New(wd, ht)
		p.EmbedFonts(true)
		c = p
	default:
		return fmt.Errorf("report: format %q (valid: %s)", format, strings.Join(figureFormats, ", "))
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.Draw(dc)
	_, err := c.WriteTo(w)
	return err
}

// Save writes f to the file name in the format of its extension (.svg,
// .png or .pdf), atomically: the file is either the old one or the whole
// figure.
func Save(name string, f Figure) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
	var buf bytes.Buffer
	if err := Write(&buf, f, format); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return atomicfile.WriteBytes(name, buf.Bytes())
}

// SaveHTML writes the document as one HTML page (WriteHTML) to the file
// name, atomically.
func (d *Document) SaveHTML(name string) error {
	var buf bytes.Buffer
	if err := d.WriteHTML(&buf); err != nil {
		return err
	}
	return atomicfile.WriteBytes(name, buf.Bytes())
}

var (
	svgProlog  = regexp.MustCompile(`(?s)^.*?(<svg\b)`)
	svgComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	svgSize    = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)
)

// InlineSVG returns f as an <svg> element for an HTML page: no XML
// prolog or comments, width 100% of the page up to the figure's natural
// width (the viewBox keeps the aspect ratio), and the text in Liberation
// Sans with the metric-compatible Arial and Helvetica as fallbacks.
func InlineSVG(f Figure) (string, error) {
	var buf bytes.Buffer
	if err := Write(&buf, f, "svg"); err != nil {
		return "", err
	}
	w, _ := f.Size()
	s := svgProlog.ReplaceAllString(buf.String(), "$1")
	s = svgComment.ReplaceAllString(s, "")
	s = svgSize.ReplaceAllString(s, fmt.Sprintf(`<svg width="100%%" style="max-width:%.0fpt" role="img"`, w.Points()))
	// Liberation Sans is embedded by Document; Arial and Helvetica have
	// the same metrics.
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	return s, nil
}

// grid draws a rows × cols grid of panels on c with aligned axes (nil
// entries are left blank) and returns where everything went.
func grid(c draw.Canvas, panels [][]*panel) gridLayout {
	l := layoutGrid(c, panels)
	for i, row := range panels {
		for j, pn := range row {
			if pn == nil {
				continue
			}
			l.Headings[i][j].draw(c)
			pn.plot.Draw(l.Canvases[i][j])
		}
	}
	return l
}

// colorAlpha returns c with alpha a.
func colorAlpha(c color.NRGBA, a uint8) color.NRGBA {
	c.A = a
	return c
}
