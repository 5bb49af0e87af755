package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line of a chart: points (X[k], Y[k]) joined in the order
// given.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is a line chart of one or more series.
type Chart struct {
	Title, XLabel, YLabel string
	// LogX puts X on a log scale with ticks at powers of two labelled as
	// binary sizes (1K, 32M, 2G); every X must then be positive.
	LogX   bool
	Series []Series
	// Width and Height are the image size in pixels; zero means
	// DefaultWidth × DefaultHeight.
	Width, Height int
}

// The image size of a Chart that does not give one, and the least that
// holds the title, the axes and a legend.
const (
	DefaultWidth  = 800
	DefaultHeight = 500
	MinWidth      = 240
	MinHeight     = 160
)

// palette is the first series colours: ten hues that stay apart on screen
// and in print.
var palette = []color.RGBA{
	{31, 119, 180, 255},  // blue
	{214, 39, 40, 255},   // red
	{44, 160, 44, 255},   // green
	{255, 127, 14, 255},  // orange
	{148, 103, 189, 255}, // purple
	{140, 86, 75, 255},   // brown
	{227, 119, 194, 255}, // pink
	{23, 190, 207, 255},  // cyan
	{188, 189, 34, 255},  // olive
	{127, 127, 127, 255}, // grey
}

// SeriesColor is the colour a chart draws its i-th series in: the ten
// palette colours first, then hues spread by the golden angle.
func SeriesColor(i int) color.RGBA {
	if i >= 0 && i < len(palette) {
		return palette[i]
	}
	hue := math.Mod(float64(i)*137.50776, 360)
	value := 0.62 + 0.22*float64(i%3)/2
	return hsv(hue, 0.7, value)
}

// hsv converts a hue in degrees, saturation and value in [0, 1] to RGB.
func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	var r, g, b float64
	switch int(h/60) % 6 {
	case 0:
		r, g = c, x
	case 1:
		r, g = x, c
	case 2:
		g, b = c, x
	case 3:
		g, b = x, c
	case 4:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := v - c
	to8 := func(f float64) uint8 { return uint8(math.Round((f + m) * 255)) }
	return color.RGBA{to8(r), to8(g), to8(b), 255}
}

// PNG draws the chart and writes it to w as a PNG image. A chart without
// series, a series without points or with different numbers of X and Y
// values, a value that is NaN or infinite, a non-positive X on a LogX chart,
// or a size below MinWidth × MinHeight is an error, and nothing is written.
func (c Chart) PNG(w io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	p, err := c.plot()
	if err != nil {
		return err
	}
	width, height := c.size()
	// At 72 dots per inch a point is a pixel: the image is exactly
	// width × height.
	canvas := vgimg.NewWith(vgimg.UseWH(vg.Points(float64(width)), vg.Points(float64(height))), vgimg.UseDPI(72))
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(12) // keeps the last tick label and marker off the edge
	p.Draw(draw.Crop(dc, margin, -margin, margin/2, -margin/2))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: canvas}).WriteTo(&buf); err != nil {
		return fmt.Errorf("plot: chart %q: %w", c.Title, err)
	}
	_, err = buf.WriteTo(w)
	return err
}

// plot is the chart as a gonum plot.
func (c Chart) plot() (*gonum.Plot, error) {
	p := gonum.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font.Size = vg.Points(15)
	p.X.Label.Text, p.Y.Label.Text = c.XLabel, c.YLabel
	for _, a := range []*gonum.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(13)
		a.Tick.Label.Font.Size = vg.Points(11)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(-8) // off the axes
	p.Legend.Padding = vg.Points(2)
	p.Add(plotter.NewGrid())
	if c.LogX {
		p.X.Scale = gonum.LogScale{}
		p.X.Tick.Marker = pow2Ticks{}
	}
	nonNegative := true
	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.X))
		for k := range s.X {
			xys[k] = plotter.XY{X: s.X[k], Y: s.Y[k]}
			nonNegative = nonNegative && s.Y[k] >= 0
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: chart %q, series %q: %w", c.Title, s.Name, err)
		}
		col := SeriesColor(i)
		line.Color, line.Width = col, vg.Points(2)
		points.Color, points.Radius = col, vg.Points(3)
		points.Shape = glyphs[i%len(glyphs)]
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	if nonNegative {
		p.Y.Min = 0
	}
	if p.Y.Max <= p.Y.Min { // one value: give the axis a span
		p.Y.Max = p.Y.Min + 1
	}
	return p, nil
}

// glyphs tell series apart where colours do not (print, colour blindness).
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}

// size is the image size, with the defaults applied.
func (c Chart) size() (int, int) {
	w, h := c.Width, c.Height
	if w == 0 {
		w = DefaultWidth
	}
	if h == 0 {
		h = DefaultHeight
	}
	return w, h
}

func (c Chart) validate() error {
	w, h := c.size()
	if w < 0 || h < 0 {
		return fmt.Errorf("plot: chart %q: size %d×%d is negative", c.Title, c.Width, c.Height)
	}
	if w < MinWidth || h < MinHeight {
		return fmt.Errorf("plot: chart %q: size %d×%d is too small for the title, axes and legend: make it at least %d×%d", c.Title, w, h, MinWidth, MinHeight)
	}
	if len(c.Series) == 0 {
		return fmt.Errorf("plot: chart %q has no series", c.Title)
	}
	for i, s := range c.Series {
		name := fmt.Sprintf("series %d (%q) of chart %q", i, s.Name, c.Title)
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot: %s has %d X values but %d Y values", name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return fmt.Errorf("plot: %s has no points", name)
		}
		for k := range s.X {
			x, y := s.X[k], s.Y[k]
			if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
				return fmt.Errorf("plot: %s: point %d is (%v, %v); values must be finite", name, k, x, y)
			}
			if c.LogX && x <= 0 {
				return fmt.Errorf("plot: %s: point %d has X = %v, but a LogX chart needs X > 0", name, k, x)
			}
		}
	}
	return nil
}

// pow2Ticks marks a log axis at powers of two: every power a minor tick,
// labelled ones spaced so that about eight labels show.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(lo, hi float64) []gonum.Tick {
	first, last := int(math.Floor(math.Log2(lo))), int(math.Ceil(math.Log2(hi)))
	stride := max(1, (last-first+7)/8)
	var ticks []gonum.Tick
	for e := first; e <= last; e++ {
		v := math.Ldexp(1, e)
		if v < lo || v > hi {
			continue
		}
		t := gonum.Tick{Value: v}
		if ((e%stride)+stride)%stride == 0 {
			t.Label = formatPow2(e)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// formatPow2 names 2^e as a size: 1, 512, 1K, 32M, 2G, 4T; negative powers
// as decimals (0.5, 0.25).
func formatPow2(e int) string {
	if e < 0 {
		return strconv.FormatFloat(math.Ldexp(1, e), 'g', -1, 64)
	}
	if e >= 70 {
		return "2^" + strconv.Itoa(e)
	}
	suffixes := []string{"", "K", "M", "G", "T", "P", "E"}
	unit := min(e/10, len(suffixes)-1)
	return strconv.FormatInt(int64(1)<<(e-10*unit), 10) + suffixes[unit]
}
