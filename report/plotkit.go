package report

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// The helpers of this file draw in the style of the report's figures; the
// experiment package draws its figures with them too.

// Colours shared by the figures (colour-blind safe, Okabe-Ito).
var (
	colBlue   = color.NRGBA{0, 114, 178, 255}
	colOrange = color.NRGBA{230, 159, 0, 255}
	colRed    = color.NRGBA{213, 94, 0, 255}
	colGreen  = color.NRGBA{0, 158, 115, 255}
	colGrey   = color.NRGBA{120, 120, 120, 255}
	colGap    = color.NRGBA{213, 94, 0, 110}
)

// Palette returns the colours of the series of a figure, in the order they are
// taken: the Okabe-Ito colour-blind-safe palette (blue, orange, bluish
// green, vermillion, reddish purple, sky blue), then grey, black, yellow
// and brown. The report's figures use its first colours.
func Palette() []color.Color { return slices.Clone(okabeIto) }

// SeriesColor returns the colour of a figure's series i, Palette's
// colours in turn: Palette()[i % len(Palette())].
func SeriesColor(i int) color.Color { return okabeIto[i%len(okabeIto)] }

var okabeIto = []color.Color{
	colBlue, colOrange, colGreen, colRed, color.NRGBA{204, 121, 167, 255}, color.NRGBA{86, 180, 233, 255},
	colGrey, color.NRGBA{0, 0, 0, 255}, color.NRGBA{240, 228, 66, 255}, color.NRGBA{150, 75, 0, 255},
}

// NewPlot returns a plot with every text in the figures' sans-serif font
// (Liberation Sans, at the figures' sizes) and the axis labels set. The
// report's figures leave its title and legend empty (a panel draws them
// above the plot, outside the data area); other figures may set them.
func NewPlot(x, y string) *plot.Plot {
	p := plot.New()
	sansPlot(p, false)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	return p
}

// LogAxis makes a a logarithmic axis with ticks at the powers of ten (and
// between them where the range is short). Every value drawn on it must be
// positive.
func LogAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = plot.LogTicks{Prec: -1}
}

// DrawGrid draws plots on c in a grid (rows of equal length; nil entries
// are left blank) with aligned axes (plot.Align) and the spacing of the
// report's figures. Each plot draws its own title and legend.
func DrawGrid(c draw.Canvas, plots [][]*plot.Plot) {
	panels := make([][]*panel, len(plots))
	for i, row := range plots {
		panels[i] = make([]*panel, len(row))
		for j, p := range row {
			if p != nil {
				panels[i][j] = &panel{plot: p}
			}
		}
	}
	grid(c, panels)
}
