package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
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
	// LogX puts X on a log2 scale labelled as binary sizes (1K, 32M, 2G);
	// every X must then be positive.
	LogX   bool
	Series []Series
	// Width and Height are the image size in pixels; zero means
	// DefaultWidth × DefaultHeight.
	Width, Height int
}

// The image size of a Chart that does not give one.
const (
	DefaultWidth  = 800
	DefaultHeight = 500
)

// Colours of everything that is not a series.
var (
	paperColor  = color.RGBA{255, 255, 255, 255}
	inkColor    = color.RGBA{25, 25, 25, 255}    // text
	frameColor  = color.RGBA{70, 70, 70, 255}    // plot frame and ticks
	gridColor   = color.RGBA{226, 226, 226, 255} // grid lines
	zeroColor   = color.RGBA{160, 160, 160, 255} // Y = 0 on an axis that goes below it
	legendFrame = color.RGBA{185, 185, 185, 255}
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
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch int(hp) % 6 {
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
// or a size too small to hold the axes is an error, and nothing is written.
func (c Chart) PNG(w io.Writer) error {
	img, err := c.render()
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

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

// layout is where everything goes.
type layout struct {
	width, height int
	scale         int             // pixels per font pixel for labels
	titleBand     int             // rows [0, titleBand) hold the title
	plot          image.Rectangle // the data area
	x, y          axis
	legend        image.Rectangle
	names         []string // series names as the legend shows them
}

func (c Chart) layout() (layout, error) {
	if err := c.validate(); err != nil {
		return layout{}, err
	}
	w, h := c.size()
	s := max(1, min(w, h)/400)
	l := layout{width: w, height: h, scale: s}
	pad := 8 * s
	lineH := lineRows * s
	tickLen := 4 * s

	top := pad
	if c.Title != "" {
		top += textHeight(s+1) + pad
	}
	l.titleBand = top
	bottom := tickLen + pad/2 + lineH + pad
	if c.XLabel != "" {
		bottom += pad/2 + lineH
	}

	// Legend, right of the plot, at most two fifths of the width.
	swatchW := 3 * advanceW * s
	inner := 4 * s
	nameW := 0
	for i, sr := range c.Series {
		name := sr.Name
		if name == "" {
			name = fmt.Sprintf("series %d", i)
		}
		l.names = append(l.names, name)
		nameW = max(nameW, textWidth(name, s))
	}
	chrome := 2*inner + swatchW + advanceW*s
	if maxName := w*2/5 - chrome; nameW > maxName {
		keep := max(3, (maxName+s)/(advanceW*s))
		nameW = 0
		for i, name := range l.names {
			if r := []rune(name); len(r) > keep {
				l.names[i] = string(r[:keep-2]) + ".."
			}
			nameW = max(nameW, textWidth(l.names[i], s))
		}
	}
	legendW := chrome + nameW
	right := pad + legendW + pad

	plotTop, plotBottom := top, h-bottom
	if plotBottom-plotTop < 20*s {
		return layout{}, fmt.Errorf("plot: chart %q: %d×%d leaves %d pixel rows for the data; make it taller", c.Title, w, h, plotBottom-plotTop)
	}

	// Y axis: starts at zero when no value is negative (ends there when
	// none is positive).
	ylo, yhi := math.Inf(1), math.Inf(-1)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, sr := range c.Series {
		for k := range sr.X {
			ylo, yhi = math.Min(ylo, sr.Y[k]), math.Max(yhi, sr.Y[k])
			xlo, xhi = math.Min(xlo, sr.X[k]), math.Max(xhi, sr.X[k])
		}
	}
	if ylo >= 0 {
		ylo = 0
	} else if yhi <= 0 {
		yhi = 0
	}
	l.y = linearAxis(ylo, yhi, min(10, max(2, (plotBottom-plotTop)/(4*lineH))))

	left := pad + l.y.widestLabel(s) + pad/2 + tickLen
	if c.YLabel != "" {
		left += lineH + pad/2
	}
	plotLeft, plotRight := left, w-right
	if plotRight-plotLeft < 20*s {
		return layout{}, fmt.Errorf("plot: chart %q: %d×%d leaves %d pixel columns for the data; make it wider or the names shorter", c.Title, w, h, plotRight-plotLeft)
	}
	l.plot = image.Rect(plotLeft, plotTop, plotRight, plotBottom)
	l.x = xAxis(c.LogX, xlo, xhi, l.plot.Dx(), s)
	l.legend = image.Rect(plotRight+pad, plotTop, plotRight+pad+legendW, plotTop+2*inner+len(c.Series)*(lineH+2*s))
	return l, nil
}

// xAxis picks the X ticks so that their labels do not run into each other.
func xAxis(logX bool, lo, hi float64, plotW, s int) axis {
	fits := func(a axis, apart float64) bool {
		return apart >= float64(a.widestLabel(s)+2*advanceW*s)
	}
	if logX {
		var a axis
		for _, stride := range []int{1, 2, 4, 5, 10, 20, 40, 50, 100} {
			a = log2Axis(lo, hi, stride)
			if fits(a, float64(plotW)*float64(stride)/(a.max-a.min)) {
				break
			}
		}
		return a
	}
	var a axis
	for target := 10; target >= 2; target-- {
		a = linearAxis(lo, hi, target)
		if n := len(a.ticks); n < 2 || fits(a, float64(plotW)/float64(n-1)) {
			break
		}
	}
	return a
}

// render draws the chart.
func (c Chart) render() (*image.RGBA, error) {
	l, err := c.layout()
	if err != nil {
		return nil, err
	}
	s := l.scale
	img := image.NewRGBA(image.Rect(0, 0, l.width, l.height))
	fillRect(img, 0, 0, l.width, l.height, paperColor)
	p := l.plot
	px := func(v float64) float64 { return float64(p.Min.X) + l.x.frac(v)*float64(p.Dx()-1) }
	py := func(v float64) float64 { return float64(p.Max.Y-1) - l.y.frac(v)*float64(p.Dy()-1) }
	tickLen := 4 * s
	pad := 8 * s
	capH := 7 * s // height of a capital: labels centre on it

	// Grid.
	for _, t := range l.y.ticks {
		y := int(math.Round(py(t.pos)))
		col := gridColor
		if t.pos == 0 && l.y.min < 0 {
			col = zeroColor // the zero line, where values go below it
		}
		fillRect(img, p.Min.X, y, p.Dx(), 1, col)
	}
	for _, t := range l.x.ticks {
		x := int(math.Round(float64(p.Min.X) + (t.pos-l.x.min)/(l.x.max-l.x.min)*float64(p.Dx()-1)))
		fillRect(img, x, p.Min.Y, 1, p.Dy(), gridColor)
	}

	// Data: lines first, then every series' markers on top of all lines.
	lineW := s + 1
	for i, sr := range c.Series {
		col := SeriesColor(i)
		for k := 1; k < len(sr.X); k++ {
			drawLine(img, px(sr.X[k-1]), py(sr.Y[k-1]), px(sr.X[k]), py(sr.Y[k]), lineW, col)
		}
	}
	for i, sr := range c.Series {
		for k := range sr.X {
			drawMarker(img, int(math.Round(px(sr.X[k]))), int(math.Round(py(sr.Y[k]))), i, 2+s, SeriesColor(i))
		}
	}

	// Frame, ticks and tick labels.
	strokeRect(img, p.Min.X-1, p.Min.Y-1, p.Dx()+2, p.Dy()+2, frameColor)
	for _, t := range l.y.ticks {
		y := int(math.Round(py(t.pos)))
		fillRect(img, p.Min.X-1-tickLen, y, tickLen, 1, frameColor)
		tw := textWidth(t.label, s)
		drawText(img, p.Min.X-1-tickLen-pad/2-tw, y-capH/2, t.label, s, inkColor)
	}
	xPix := func(pos float64) int {
		return int(math.Round(float64(p.Min.X) + (pos-l.x.min)/(l.x.max-l.x.min)*float64(p.Dx()-1)))
	}
	for _, pos := range l.x.minor {
		fillRect(img, xPix(pos), p.Max.Y+1, 1, tickLen/2, frameColor)
	}
	labelY := p.Max.Y + 1 + tickLen + pad/2
	for _, t := range l.x.ticks {
		x := xPix(t.pos)
		fillRect(img, x, p.Max.Y+1, 1, tickLen, frameColor)
		tw := textWidth(t.label, s)
		drawText(img, clamp(x-tw/2, 0, l.width-tw), labelY, t.label, s, inkColor)
	}

	// Axis titles and chart title.
	if c.XLabel != "" {
		tw := textWidth(c.XLabel, s)
		drawText(img, clamp(p.Min.X+(p.Dx()-tw)/2, 0, l.width-tw), labelY+lineRows*s+pad/2, c.XLabel, s, inkColor)
	}
	if c.YLabel != "" {
		tw := textWidth(c.YLabel, s)
		drawTextUp(img, pad, clamp(p.Min.Y+(p.Dy()+tw)/2, tw, l.height-1), c.YLabel, s, inkColor)
	}
	if c.Title != "" {
		tw := textWidth(c.Title, s+1)
		drawText(img, clamp((l.width-tw)/2, pad, l.width-tw), pad, c.Title, s+1, inkColor)
	}

	// Legend.
	lg := l.legend
	fillRect(img, lg.Min.X, lg.Min.Y, lg.Dx(), lg.Dy(), paperColor)
	strokeRect(img, lg.Min.X, lg.Min.Y, lg.Dx(), lg.Dy(), legendFrame)
	inner := 4 * s
	swatchW := 3 * advanceW * s
	for i, name := range l.names {
		rowTop := lg.Min.Y + inner + i*(lineRows*s+2*s)
		mid := rowTop + capH/2
		x0 := lg.Min.X + inner
		col := SeriesColor(i)
		drawLine(img, float64(x0), float64(mid), float64(x0+swatchW-1), float64(mid), lineW, col)
		drawMarker(img, x0+swatchW/2, mid, i, 2+s, col)
		drawText(img, x0+swatchW+advanceW*s, rowTop, name, s, inkColor)
	}
	return img, nil
}

func clamp(v, lo, hi int) int {
	if hi < lo {
		return lo
	}
	return min(max(v, lo), hi)
}

// fillRect paints the w×h rectangle at (x, y), clipped to the image.
func fillRect(img *image.RGBA, x, y, w, h int, c color.RGBA) {
	r := image.Rect(x, y, x+w, y+h).Intersect(img.Bounds())
	for yy := r.Min.Y; yy < r.Max.Y; yy++ {
		for xx := r.Min.X; xx < r.Max.X; xx++ {
			img.SetRGBA(xx, yy, c)
		}
	}
}

// strokeRect draws the one-pixel outline of the w×h rectangle at (x, y).
func strokeRect(img *image.RGBA, x, y, w, h int, c color.RGBA) {
	fillRect(img, x, y, w, 1, c)
	fillRect(img, x, y+h-1, w, 1, c)
	fillRect(img, x, y, 1, h, c)
	fillRect(img, x+w-1, y, 1, h, c)
}

// drawLine strokes from (x0, y0) to (x1, y1) with a square pen width pixels wide.
func drawLine(img *image.RGBA, x0, y0, x1, y1 float64, width int, c color.RGBA) {
	steps := int(math.Ceil(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))))
	off := (width - 1) / 2
	for k := 0; k <= steps; k++ {
		t := 0.0
		if steps > 0 {
			t = float64(k) / float64(steps)
		}
		x := int(math.Round(x0 + t*(x1-x0)))
		y := int(math.Round(y0 + t*(y1-y0)))
		fillRect(img, x-off, y-off, width, width, c)
	}
}

// drawMarker draws the marker of series i (circle, square, triangle,
// diamond, inverted triangle, in turn) of radius r centred on (x, y).
func drawMarker(img *image.RGBA, x, y, i, r int, c color.RGBA) {
	shape := i % 5
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			var in bool
			switch shape {
			case 0:
				in = dx*dx+dy*dy <= r*r+r/2
			case 1:
				in = abs(dx) < r && abs(dy) < r
			case 2:
				in = 2*abs(dx) <= dy+r
			case 3:
				in = abs(dx)+abs(dy) <= r
			case 4:
				in = 2*abs(dx) <= r-dy
			}
			if in {
				fillRect(img, x+dx, y+dy, 1, 1, c)
			}
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
