package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
)

// bandwidthChart is a chart like the benchmarks draw: bus bandwidth of three
// implementations over sizes from 1 MiB to 2 GiB.
func bandwidthChart() Chart {
	var sizes []float64
	for e := 20; e <= 31; e++ {
		sizes = append(sizes, math.Ldexp(1, e))
	}
	curve := func(peak, half float64) []float64 {
		y := make([]float64, len(sizes))
		for k, s := range sizes {
			y[k] = peak * s / (s + half)
		}
		return y
	}
	return Chart{
		Title:  "ReduceScatter2D, 4x H200, bf16",
		XLabel: "bytes per rank",
		YLabel: "bus bandwidth (GB/s)",
		LogX:   true,
		Series: []Series{
			{Name: "hiercoll copy engine", X: sizes, Y: curve(380, 16<<20)},
			{Name: "NCCL 2.28 (torch)", X: sizes, Y: curve(340, 24<<20)},
			{Name: "ring, 2 slots", X: sizes, Y: curve(250, 8<<20)},
		},
		Width:  900,
		Height: 560,
	}
}

// decode renders c through PNG and image/png.
func decode(t *testing.T, c Chart) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := c.PNG(&buf); err != nil {
		t.Fatalf("PNG: %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("the output is not a PNG: %v", err)
	}
	return img
}

func rgba(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// countColor counts the pixels of colour want inside r.
func countColor(img image.Image, r image.Rectangle, want color.RGBA) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if rgba(img.At(x, y)) == want {
				n++
			}
		}
	}
	return n
}

// countDark counts the near-black pixels inside r.
func countDark(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := rgba(img.At(x, y))
			if int(c.R)+int(c.G)+int(c.B) < 3*80 {
				n++
			}
		}
	}
	return n
}

func TestPNGDrawsEverySeries(t *testing.T) {
	c := bandwidthChart()
	img := decode(t, c)
	if got := img.Bounds(); got != image.Rect(0, 0, 900, 560) {
		t.Fatalf("image is %v, want 900×560", got)
	}
	l, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range c.Series {
		col := SeriesColor(i)
		if n := countColor(img, l.plot, col); n < 200 {
			t.Errorf("series %d (%s): %d pixels of %v in the plot area, want its line and markers", i, s.Name, n, col)
		}
		if n := countColor(img, l.legend, col); n == 0 {
			t.Errorf("series %d (%s): no swatch of %v in the legend", i, s.Name, col)
		}
	}
	if n := countDark(img, l.legend); n < 100 {
		t.Errorf("legend has %d dark pixels, want the series names", n)
	}
	if os.Getenv("PLOT_KEEP") != "" {
		var buf bytes.Buffer
		_ = c.PNG(&buf)
		_ = os.WriteFile(os.Getenv("PLOT_KEEP"), buf.Bytes(), 0o644)
	}
}

func TestPNGDefaultSize(t *testing.T) {
	c := Chart{Series: []Series{{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 1, 2}}}}
	if got := decode(t, c).Bounds(); got != image.Rect(0, 0, DefaultWidth, DefaultHeight) {
		t.Fatalf("image is %v, want the default %d×%d", got, DefaultWidth, DefaultHeight)
	}
}

func TestLabelsRender(t *testing.T) {
	c := bandwidthChart()
	l, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, c)
	// The title band, between the plot's left and right edges (the top Y
	// tick label and the legend lie outside them) and above its frame.
	band := func(l layout) image.Rectangle {
		return image.Rect(l.plot.Min.X+1, 0, l.plot.Max.X-1, l.titleBand-2)
	}
	if n := countDark(img, band(l)); n < 100 {
		t.Errorf("title band has %d dark pixels, want the title", n)
	}
	below := image.Rect(l.plot.Min.X, l.plot.Max.Y+2, l.plot.Max.X, img.Bounds().Dy())
	if n := countDark(img, below); n < 100 {
		t.Errorf("%d dark pixels below the plot, want X tick labels and the X title", n)
	}
	leftOf := image.Rect(0, l.plot.Min.Y, l.plot.Min.X-2, l.plot.Max.Y)
	if n := countDark(img, leftOf); n < 100 {
		t.Errorf("%d dark pixels left of the plot, want Y tick labels and the Y title", n)
	}

	c.Title = ""
	if l, err = c.layout(); err != nil {
		t.Fatal(err)
	}
	if n := countDark(decode(t, c), band(l)); n != 0 {
		t.Errorf("a chart without a title has %d dark pixels where the title would be", n)
	}
}

func TestLog2Ticks(t *testing.T) {
	c := bandwidthChart()
	l, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, tk := range l.x.ticks {
		labels = append(labels, tk.label)
	}
	got := strings.Join(labels, " ")
	// 1 MiB to 2 GiB: every power of two fits on a 900-pixel chart.
	if got != "1M 2M 4M 8M 16M 32M 64M 128M 256M 512M 1G 2G" {
		t.Errorf("X tick labels %q", got)
	}
	if len(l.x.minor) != 12 {
		t.Errorf("%d minor ticks, want 12", len(l.x.minor))
	}

	// A narrow chart labels fewer powers, all of them sizes still.
	c.Width = 420
	c.Series = c.Series[:1]
	c.Series[0].Name = "hc"
	l, err = c.layout()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.x.ticks) >= 12 || len(l.x.ticks) < 2 {
		t.Errorf("narrow chart has %d labelled X ticks", len(l.x.ticks))
	}
	for _, tk := range l.x.ticks {
		if !strings.HasSuffix(tk.label, "M") && !strings.HasSuffix(tk.label, "G") {
			t.Errorf("label %q is not a size", tk.label)
		}
	}

	for e, want := range map[int]string{0: "1", 9: "512", 10: "1K", 25: "32M", 31: "2G", 40: "1T", -1: "0.5"} {
		if got := formatPow2(e); got != want {
			t.Errorf("formatPow2(%d) = %q, want %q", e, got, want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	a := linearAxis(0, 337, 6)
	if a.min != 0 || a.max < 337 {
		t.Errorf("axis [%v, %v] does not cover [0, 337]", a.min, a.max)
	}
	var labels []string
	for _, tk := range a.ticks {
		labels = append(labels, tk.label)
	}
	if got := strings.Join(labels, " "); got != "0 50 100 150 200 250 300 350" {
		t.Errorf("ticks %q", got)
	}
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1, "0 0.2 0.4 0.6 0.8 1.0"},
		{-1, 1, "-1.0 -0.5 0 0.5 1.0"},
		{0, 3e9, "0 0.5G 1.0G 1.5G 2.0G 2.5G 3.0G"},
		{5, 5, "4.4 4.6 4.8 5.0 5.2 5.4 5.6"},
		{0, 0.0004, "0 0.0001 0.0002 0.0003 0.0004"},
	} {
		a := linearAxis(tc.lo, tc.hi, 5)
		var labels []string
		for _, tk := range a.ticks {
			labels = append(labels, tk.label)
		}
		if got := strings.Join(labels, " "); got != tc.want {
			t.Errorf("linearAxis(%v, %v) ticks %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestLinearXChart(t *testing.T) {
	c := Chart{
		Title:  "latency",
		XLabel: "GPUs",
		YLabel: "us",
		Series: []Series{
			{Name: "a", X: []float64{2, 4, 8}, Y: []float64{-3, 5, 12.5}},
			{Name: "b", X: []float64{2, 4, 8}, Y: []float64{1, 2, 3}},
		},
	}
	img := decode(t, c)
	l, _ := c.layout()
	for i := range c.Series {
		if countColor(img, l.plot, SeriesColor(i)) == 0 {
			t.Errorf("series %d not drawn", i)
		}
	}
	if l.y.min > -3 || l.y.max < 12.5 {
		t.Errorf("Y axis [%v, %v] does not cover the data", l.y.min, l.y.max)
	}
}

func TestInvalidCharts(t *testing.T) {
	ok := Series{Name: "ok", X: []float64{1, 2}, Y: []float64{1, 2}}
	for _, tc := range []struct {
		name  string
		chart Chart
		want  string
	}{
		{"no series", Chart{Title: "t"}, "no series"},
		{"empty series", Chart{Series: []Series{ok, {Name: "e"}}}, "no points"},
		{"mismatched", Chart{Series: []Series{{Name: "m", X: []float64{1, 2, 3}, Y: []float64{1, 2}}}}, "3 X values but 2 Y values"},
		{"NaN", Chart{Series: []Series{{X: []float64{1}, Y: []float64{math.NaN()}}}}, "finite"},
		{"Inf", Chart{Series: []Series{{X: []float64{math.Inf(1)}, Y: []float64{1}}}}, "finite"},
		{"log of zero", Chart{LogX: true, Series: []Series{{X: []float64{0, 1}, Y: []float64{1, 2}}}}, "X > 0"},
		{"negative size", Chart{Width: -1, Series: []Series{ok}}, "negative"},
		{"too small", Chart{Width: 60, Height: 40, Series: []Series{ok}}, "make it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := tc.chart.PNG(&buf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PNG error %v, want one saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "plot: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written for an invalid chart", buf.Len())
			}
		})
	}
}

func TestSeriesColorsDistinct(t *testing.T) {
	seen := map[color.RGBA]int{}
	for _, c := range []color.RGBA{paperColor, inkColor, frameColor, gridColor, zeroColor, legendFrame} {
		seen[c] = -1
	}
	for i := range 40 {
		c := SeriesColor(i)
		if j, dup := seen[c]; dup {
			t.Errorf("series %d has colour %v, already used by %d", i, c, j)
		}
		seen[c] = i
	}
}

func TestLongLegendNamesAreShortened(t *testing.T) {
	c := bandwidthChart()
	c.Series[0].Name = strings.Repeat("a very long series name ", 10)
	l, err := c.layout()
	if err != nil {
		t.Fatal(err)
	}
	if l.legend.Dx() > c.Width*2/5+1 {
		t.Errorf("legend is %d pixels wide on a %d-pixel chart", l.legend.Dx(), c.Width)
	}
	if !strings.HasSuffix(l.names[0], "..") {
		t.Errorf("long name shown as %q", l.names[0])
	}
}

func TestFont(t *testing.T) {
	want := "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.,:-_()/%×x "
	for _, r := range want {
		if _, ok := glyphs[r]; !ok {
			t.Errorf("no glyph for %q", r)
		}
	}
	// Every glyph but the space has ink, and no two glyphs look the same.
	drawn := map[glyph]rune{}
	for r, g := range glyphs {
		if g == (glyph{}) {
			if r != ' ' {
				t.Errorf("glyph %q is blank", r)
			}
			continue
		}
		if g == missingGlyph {
			t.Errorf("glyph %q looks like the missing-glyph box", r)
		}
		if other, dup := drawn[g]; dup {
			t.Errorf("glyphs %q and %q are the same", r, other)
		}
		drawn[g] = r
	}
	for _, bad := range []string{"####", "#...# #...# #...# #...# #...# #...# #...# #...# #...# #...#", "#..x#"} {
		if _, err := parseGlyph(bad); err == nil {
			t.Errorf("parseGlyph(%q) accepted a malformed glyph", bad)
		}
	}
	if got := textWidth("1M", 2); got != (2*advanceW-1)*2 {
		t.Errorf("textWidth = %d", got)
	}
}
