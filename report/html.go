package report

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"gonum.org/v1/plot/font"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/evaluate"
)

// Document is a calibration report as data (Build makes one): the text of
// every part, preformatted, and the figures as data, drawn only by a
// renderer (WriteHTML: one self-contained HTML page, where every figure is
// an inline <svg>, the style sheet is inline, and nothing refers to a
// network host). The zero value is an empty report.
type Document struct {
	Title    string
	Subtitle string
	// Answer is the first screen's facts: the number to report with its
	// interval (evaluate.Headline), the paper number and the tests'
	// verdict; the reliability diagrams follow it.
	Answer   []Fact
	Summary  []Fact    // the data summary
	Metrics  *Table    // every metric with its interval (below the figures, folded)
	Sections []Section // figures with captions
	Notes    []string  // closing notes (how numbers were computed, citations)
	Footer   string    // e.g. the command line that made the report

	// Evaluation and Comparison are the results the report shows (Build:
	// Comparison is nil without a validation set); WriteHTML does not
	// read them.
	Evaluation *evaluate.Evaluation
	Comparison *compare.Comparison
	// Tests holds the hypothesis tests of the section "Is it calibrated?"
	// (nil with Options.NoTests or without labels).
	Tests *calibtest.Report
	// Warnings lists what could not be made (a *FigureError per figure
	// left out); the notes say the same.
	Warnings []error
}

// Fact is one line of the data summary.
type Fact struct{ Name, Value string }

// Table is a plain table; Caption says how to read it.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Section is a titled part of the report: text, then figures with
// captions, then an optional table.
type Section struct {
	ID, Title, Text string
	Figures         []Captioned
	Table           *Table
	// Grid lays the figures out side by side (small multiples).
	Grid bool
}

// Captioned is a figure with a plain-language caption.
type Captioned struct {
	Figure  Figure
	Title   string
	Caption string
}

// inlineFig is a figure as the page shows it: one <svg>, or for a figure
// of several panels (splitter) one <svg> per part in a grid of Cols
// columns that a phone stacks.
type inlineFig struct {
	SVG            template.HTML
	Parts          []inlinePart
	Cols           int
	Title, Caption string
}

type inlinePart struct {
	SVG  template.HTML
	Wide bool
}

type htmlSection struct {
	ID, Title, Text string
	Figures         []inlineFig
	Table           *htmlTable
	Grid            bool
}

// htmlTable is a Table as the page shows it: every cell knows its column
// header (the label of the cell when a phone stacks the table into one
// card per row) and whether it is a number (right-aligned, never broken).
type htmlTable struct {
	Caption string
	Header  []string
	Rows    [][]htmlCell
}

type htmlCell struct {
	Label, Text string
	Num         bool // a number or an interval of numbers: never broken
	Long        bool // holds a run of 24 or more characters without a space: may break anywhere
	Empty       bool // "" or "-": left out of a phone's card
}

// numericCell matches a number, with an optional unit, or an interval of
// two numbers in brackets.
var numericCell = regexp.MustCompile(`^(` + num + `( ?%| s)?|\[` + num + `, ?` + num + `\])$`)

const num = `[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?`

// longWord matches 24 characters without a space.
var longWord = regexp.MustCompile(`\S{24}`)

// newHTMLTable labels every cell of t with its header.
func newHTMLTable(t *Table) *htmlTable {
	if t == nil {
		return nil
	}
	ht := &htmlTable{Caption: t.Caption, Header: t.Header}
	for _, row := range t.Rows {
		var cells []htmlCell
		for i, v := range row {
			label := ""
			if i < len(t.Header) {
				label = t.Header[i]
			}
			num := numericCell.MatchString(strings.TrimSpace(v))
			tv := strings.TrimSpace(v)
			cells = append(cells, htmlCell{Label: label, Text: v, Num: num, Long: !num && longWord.MatchString(v), Empty: tv == "" || tv == "-"})
		}
		ht.Rows = append(ht.Rows, cells)
	}
	return ht
}

// fontFace returns the CSS @font-face rule of the figures' font (Liberation
// Sans, the font gonum/plot measured the text with), embedded as a data
// URI, so that a browser without the font draws the figures' text at the
// widths the layout assumed; "" if the font cannot be read.
var fontFace = sync.OnceValue(func() string {
	f := font.DefaultCache.Lookup(sansFont, 10)
	var buf bytes.Buffer
	if f.Face == nil {
		return ""
	}
	if _, err := f.Face.WriteSourceTo(nil, &buf); err != nil {
		return ""
	}
	return `@font-face { font-family: "Liberation Sans"; font-style: normal; font-weight: normal; src: url(data:font/ttf;base64,` +
		base64.StdEncoding.EncodeToString(buf.Bytes()) + `) format("truetype"); }`
})

// WriteHTML renders the document.
func (d *Document) WriteHTML(w io.Writer) error {
	var secs []htmlSection
	nfig := 0
	for _, s := range d.Sections {
		hs := htmlSection{ID: s.ID, Title: s.Title, Text: s.Text, Table: newHTMLTable(s.Table), Grid: s.Grid}
		for _, f := range s.Figures {
			fig := inlineFig{Title: f.Title, Caption: f.Caption}
			// The SVG is produced here by gonum/plot from our own data;
			// text in it is escaped by the SVG writer.
			if sp, ok := f.Figure.(splitter); ok {
				cols, parts := sp.parts()
				fig.Cols = cols
				for _, p := range parts {
					svg, err := InlineSVG(p)
					if err != nil {
						return fmt.Errorf("report: figure %q: %w", f.Title, err)
					}
					fig.Parts = append(fig.Parts, inlinePart{SVG: template.HTML(svg), Wide: p.wide})
				}
			} else {
				svg, err := InlineSVG(f.Figure)
				if err != nil {
					return fmt.Errorf("report: figure %q: %w", f.Title, err)
				}
				fig.SVG = template.HTML(svg)
			}
			hs.Figures = append(hs.Figures, fig)
			nfig++
		}
		secs = append(secs, hs)
	}
	// The first screen: the answer, then the reliability diagrams.
	slices.SortStableFunc(secs, func(a, b htmlSection) int {
		return cmp.Compare(boolInt(a.ID != "reliability"), boolInt(b.ID != "reliability"))
	})
	var face template.CSS
	if nfig > 0 {
		// The rule is built here from the font's bytes (base64).
		face = template.CSS(fontFace())
	}
	return page.Execute(w, struct {
		*Document
		MetricsTable *htmlTable
		HTMLSections []htmlSection
		FontFace     template.CSS
	}{d, newHTMLTable(d.Metrics), secs, face})
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --fg: #1b1b1b; --muted: #5a5a5a; --line: #d8d8d8; --accent: #0072b2; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; color: var(--fg); background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; margin: 0.5rem 0 0.2rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; padding-top: 0.6rem; border-top: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.2rem 0 0.3rem; }
p.sub { color: var(--muted); margin: 0 0 1rem; }
nav { margin: 0.8rem 0 1rem; font-size: 0.95rem; }
nav a { color: var(--accent); margin-right: 1rem; text-decoration: none; white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: fit-content(16rem) minmax(0, 1fr); gap: 0.2rem 1rem; margin: 0.5rem 0; }
dl.facts dt { color: var(--muted); overflow-wrap: break-word; }
dl.facts dd { margin: 0; word-break: break-word; }
dl.answer dd:first-of-type { font-size: 1.25rem; font-weight: 600; }
details > summary { cursor: pointer; color: var(--accent); margin: 0.4rem 0; }
/* Tables fit their column: text cells wrap between words (long runs
   without spaces anywhere), numbers and intervals never break; on a
   phone each row becomes a card of "header: value" lines. */
.tablewrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { background: #f4f4f4; }
td.num { text-align: right; white-space: nowrap; }
td.long { overflow-wrap: anywhere; }
p.cap { color: var(--muted); font-size: 0.92rem; margin: 0.3rem 0; }
figure { margin: 1rem 0 1.6rem; }
figure svg { display: block; width: 100%; height: auto; max-width: 100%; }
figcaption { color: var(--muted); font-size: 0.92rem; margin-top: 0.3rem; max-width: 60rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 0.5rem 1.2rem; }
.grid figure { margin: 0.5rem 0; }
/* A figure of several panels: one part per panel, side by side as drawn,
   one under the other on a phone; legends and colour bars span the row. */
.parts { display: grid; grid-template-columns: repeat(var(--cols, 1), minmax(0, 1fr)); align-items: start; }
.parts > .wide { grid-column: 1 / -1; }
.parts svg { margin: 0 auto; }
footer { margin-top: 3rem; color: var(--muted); font-size: 0.85rem; word-break: break-word; }
@media (max-width: 600px) { body { font-size: 15px; } main { padding: 0.6rem; } h1 { font-size: 1.4rem; } dl.facts { grid-template-columns: fit-content(40%) minmax(0, 1fr); } }
@media (max-width: 760px) {
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 0.6rem; padding: 0.3rem 0.6rem; }
  table.stack td { display: grid; grid-template-columns: minmax(5.5rem, 35%) minmax(0, 1fr); gap: 0.8rem; border: 0; padding: 0.12rem 0; text-align: left; white-space: normal; }
  table.stack td::before { content: attr(data-label); color: var(--muted); }
  table.stack td.empty { display: none; }
  .parts { grid-template-columns: minmax(0, 1fr); row-gap: 0.8rem; }
}
{{with .FontFace}}{{.}}{{end}}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{with .Subtitle}}<p class="sub">{{.}}</p>{{end}}
<nav>{{if .Answer}}<a href="#answer">Answer</a> {{end}}{{range .HTMLSections}}<a href="#{{.ID}}">{{.Title}}</a> {{end}}{{if .Summary}}<a href="#summary">Data</a> {{end}}{{if .Metrics}}<a href="#metrics">Metrics</a> {{end}}</nav>
{{if .Answer}}<section id="answer"><h2>How miscalibrated is the model?</h2><dl class="facts answer">{{range .Answer}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl></section>{{end}}
{{range .HTMLSections}}<section id="{{.ID}}"><h2>{{.Title}}</h2>
{{with .Text}}<p>{{.}}</p>{{end}}
<div{{if .Grid}} class="grid"{{end}}>
{{range .Figures}}<figure>{{with .Title}}<h3>{{.}}</h3>{{end}}{{if .Parts}}<div class="parts" style="--cols: {{.Cols}}">{{range .Parts}}<div{{if .Wide}} class="wide"{{end}}>{{.SVG}}</div>{{end}}</div>{{else}}{{.SVG}}{{end}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}</div>
{{with .Table}}{{template "table" .}}{{end}}
</section>
{{end}}
{{if .Summary}}<section id="summary"><h2>Data</h2><dl class="facts">{{range .Summary}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl></section>{{end}}
{{with .MetricsTable}}<section id="metrics"><h2>Metrics</h2><details><summary>Every metric ({{len .Rows}} rows), grouped by notion</summary>{{template "table" .}}</details></section>{{end}}
{{if .Notes}}<section id="notes"><h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{with .Footer}}<footer>{{.}}</footer>{{end}}
</main>
</body>
</html>
{{define "table"}}{{with .Caption}}<p class="cap">{{.}}</p>{{end}}<div class="tablewrap"><table class="stack">
<thead><tr>{{range .Header}}<th scope="col">{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td data-label="{{.Label}}"{{if .Num}} class="num"{{else if .Long}} class="long"{{else if .Empty}} class="empty"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
`))

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
