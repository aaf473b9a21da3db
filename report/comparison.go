package report

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Comparison holds each metric before and after each recalibration method
// (the figures of `calib compare`): Values[i][j] is metric j of method i
// (NaN where the method failed). Methods[0] is normally "uncalibrated".
type Comparison struct {
	Methods []string
	Metrics []ComparisonMetric
	Values  [][]float64
}

// ComparisonMetric names a metric of a Comparison and how to read it.
type ComparisonMetric struct {
	Name   string
	Scale  float64 // values are drawn multiplied by Scale (100 for percentages)
	Unit   string  // e.g. "%"
	Higher bool    // higher is better (accuracy); otherwise lower is
}

// StrictBest returns the method that is strictly best on metric j: the
// only one with the best value (the largest if Higher, else the smallest),
// or -1 when two or more methods tie for it (equal within 1e-12 of the
// value) or no method has a value. A tie is never painted as a win, so the
// uncalibrated row is marked best only when it beats every method.
func (cm *Comparison) StrictBest(j int) int {
	best, ties := -1, 0
	for i := range cm.Methods {
		v := cm.Values[i][j]
		if math.IsNaN(v) {
			continue
		}
		if best < 0 {
			best, ties = i, 1
			continue
		}
		b := cm.Values[best][j]
		switch {
		case math.Abs(v-b) <= 1e-12*math.Max(math.Abs(v), math.Abs(b)):
			ties++
		case cm.Metrics[j].Higher == (v > b):
			best, ties = i, 1
		}
	}
	if ties != 1 {
		return -1
	}
	return best
}

// Axis returns the range of metric j's axis in drawn units (Scale
// applied) and whether it is zoomed: when the values are positive and
// their spread is under half the largest, the axis starts a quarter of the
// spread below the smallest value instead of at 0, so that 94.36 and 94.52
// look different; otherwise it starts at 0 (or below the smallest
// negative value).
func (cm *Comparison) Axis(j int) (lo, hi float64, zoomed bool) {
	scale := cm.Metrics[j].Scale
	if scale == 0 {
		scale = 1
	}
	vmin, vmax := math.Inf(1), math.Inf(-1)
	for i := range cm.Methods {
		if v := cm.Values[i][j] * scale; !math.IsNaN(v) {
			vmin, vmax = math.Min(vmin, v), math.Max(vmax, v)
		}
	}
	switch {
	case math.IsInf(vmin, 1):
		return 0, 1, false
	case vmin > 0 && vmax-vmin < vmax/2:
		spread := vmax - vmin
		if spread == 0 {
			spread = vmax * 0.01
		}
		return vmin - spread/4, vmax + spread/10, true
	}
	lo, hi = math.Min(0, vmin), math.Max(0, vmax)
	if hi == lo {
		hi = lo + 1
	}
	pad := (hi - lo) / 20
	if lo < 0 {
		lo -= pad
	}
	return lo, hi + pad, false
}

// formatValue formats a drawn value with four significant digits.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// Size is 12 inches wide, 0.24 inch per method and panel row, plus the
// legend.
func (cm *Comparison) Size() (vg.Length, vg.Length) {
	rows := (len(cm.Metrics) + 2) / 3
	return 12 * vg.Inch, vg.Length(rows)*(vg.Length(len(cm.Methods))*0.24*vg.Inch+1.2*vg.Inch) + 0.45*vg.Inch
}

// Draw draws one horizontal bar panel per metric, three per row, under a
// legend: the strictly best method of each metric is green (none on a
// tie), the first (uncalibrated) grey, the others blue; each method's
// value is printed after its name, and a zoomed axis says where it starts.
func (cm *Comparison) Draw(c draw.Canvas) { cm.draw(c) }

// draw draws the figure and returns its layout.
func (cm *Comparison) draw(c draw.Canvas) figureLayout { return cm.scene().draw(c) }

// parts returns the legend and the panels as separate parts.
func (cm *Comparison) parts() (int, []*part) { return cm.scene().parts(cm.Size()) }

// scene returns the legend and the panels.
func (cm *Comparison) scene() *scene {
	return &scene{panels: cm.panels(), legend: []legendEntry{
		{text: "strictly best (no mark on a tie)", thumbs: []plot.Thumbnailer{swatch{colGreen}}},
		{text: "uncalibrated", thumbs: []plot.Thumbnailer{swatch{colGrey}}},
		{text: "other methods", thumbs: []plot.Thumbnailer{swatch{colBlue}}},
	}}
}

// panels returns the panel of each metric, three per row.
func (cm *Comparison) panels() [][]*panel {
	cols := 3
	rows := (len(cm.Metrics) + cols - 1) / cols
	panels := make([][]*panel, rows)
	for r := range panels {
		panels[r] = make([]*panel, cols)
	}
	nm := len(cm.Methods)
	for j, m := range cm.Metrics {
		scale := m.Scale
		if scale == 0 {
			scale = 1
		}
		title := m.Name
		if m.Unit != "" {
			title += " (" + m.Unit + ")"
		}
		if m.Higher {
			title += ", higher is better"
		} else {
			title += ", lower is better"
		}
		lo, hi, zoomed := cm.Axis(j)
		xl := ""
		if zoomed {
			xl = "axis starts at " + formatValue(lo) + ", not at 0"
		}
		p := NewPlot(xl, "")
		p.X.Min, p.X.Max = lo, hi
		b := hbars{base: math.Min(math.Max(0, lo), hi), cols: cm.colors(j)}
		names := make([]string, nm)
		for i, name := range cm.Methods {
			v := cm.Values[i][j] * scale
			b.vals = append(b.vals, v)
			if math.IsNaN(v) {
				name += " (failed)"
			} else {
				name += "  " + formatValue(v)
			}
			names[nm-1-i] = name
		}
		p.Add(b)
		p.NominalY(names...)
		p.Y.Min, p.Y.Max = -0.5, float64(nm)-0.5
		panels[j/cols][j%cols] = &panel{plot: p, title: title}
	}
	return panels
}

// colors returns the bar colour of each method on metric j: green for the
// strictly best, grey for the first (uncalibrated), blue for the others.
func (cm *Comparison) colors(j int) []color.Color {
	best := cm.StrictBest(j)
	cols := make([]color.Color, len(cm.Methods))
	for i := range cols {
		switch {
		case i == best:
			cols[i] = colGreen
		case i == 0:
			cols[i] = colGrey
		default:
			cols[i] = colBlue
		}
	}
	return cols
}

// hbars draws horizontal bars from base to each value, method i at
// nominal y = n-1-i (NaN values draw nothing).
type hbars struct {
	vals []float64
	cols []color.Color
	base float64
}

// Plot implements plot.Plotter.
func (b hbars) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	n := len(b.vals)
	half := vg.Points(4.5)
	for i, v := range b.vals {
		if math.IsNaN(v) {
			continue
		}
		y := ty(float64(n - 1 - i))
		x0, x1 := tx(b.base), tx(math.Min(math.Max(v, p.X.Min), p.X.Max))
		c.FillPolygon(b.cols[i], []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}})
	}
}

// swatch is a legend thumbnail filled with one colour.
type swatch struct{ col color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.col, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}
