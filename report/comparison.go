package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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

// Size is 12 inches wide, 0.22 inch per method and panel row.
func (cm *Comparison) Size() (vg.Length, vg.Length) {
	rows := (len(cm.Metrics) + 2) / 3
	return 12 * vg.Inch, vg.Length(rows)*(vg.Length(len(cm.Methods))*0.22*vg.Inch+1.1*vg.Inch) + 0.1*vg.Inch
}

// Draw draws one horizontal bar panel per metric, three per row; the best
// method of each metric is green, the first (uncalibrated) grey.
func (cm *Comparison) Draw(c draw.Canvas) {
	cols := 3
	rows := (len(cm.Metrics) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
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
		p := plot.New()
		p.Title.Text = title
		p.Title.TextStyle.Font.Size = vg.Points(10)
		best := -1
		for i := 0; i < nm; i++ {
			v := cm.Values[i][j]
			if math.IsNaN(v) {
				continue
			}
			if best < 0 || (m.Higher && v > cm.Values[best][j]) || (!m.Higher && v < cm.Values[best][j]) {
				best = i
			}
		}
		// One bar chart per method so each bar has its own colour; the
		// methods run top to bottom.
		lo := 0.0
		for i := 0; i < nm; i++ {
			v := cm.Values[i][j] * scale
			if math.IsNaN(v) {
				continue
			}
			lo = math.Min(lo, v)
			vals := make(plotter.Values, nm)
			vals[nm-1-i] = v
			b, err := plotter.NewBarChart(vals, vg.Points(9))
			if err != nil {
				continue
			}
			b.Horizontal = true
			b.LineStyle.Width = 0
			var col color.Color = colBlue
			switch {
			case i == best:
				col = colGreen
			case i == 0:
				col = colGrey
			}
			b.Color = col
			p.Add(b)
		}
		names := make([]string, nm)
		for i, name := range cm.Methods {
			if math.IsNaN(cm.Values[i][j]) {
				name += " (failed)"
			}
			names[nm-1-i] = name
		}
		p.NominalY(names...)
		p.X.Min = lo
		p.Y.Tick.Label.Font.Size = vg.Points(8)
		plots[j/cols][j%cols] = p
	}
	grid(c, plots)
}
