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

// near counts the pixels inside r within a small distance of colour want
// (lines are drawn anti-aliased).
func near(img image.Image, r image.Rectangle, want color.RGBA) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			d := math.Abs(float64(cr>>8)-float64(want.R)) + math.Abs(float64(cg>>8)-float64(want.G)) + math.Abs(float64(cb>>8)-float64(want.B))
			if d < 24 {
				n++
			}
		}
	}
	return n
}

// dark counts the pixels inside r darker than mid-grey: text.
func dark(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if (cr>>8)+(cg>>8)+(cb>>8) < 3*110 {
				n++
			}
		}
	}
	return n
}

// The chart decodes at its size; every series shows in its colour (line,
// markers and legend swatch); the title and labels put dark pixels in the
// top band and along the left and bottom edges.
func TestPNGDrawsEverySeries(t *testing.T) {
	c := bandwidthChart()
	img := decode(t, c)
	if got := img.Bounds(); got != image.Rect(0, 0, 900, 560) {
		t.Fatalf("image is %v, want 900×560", got)
	}
	for i, s := range c.Series {
		if n := near(img, img.Bounds(), SeriesColor(i)); n < 300 {
			t.Errorf("series %d (%s): %d pixels of %v, want its line and markers", i, s.Name, n, SeriesColor(i))
		}
	}
	for _, band := range []struct {
		name string
		r    image.Rectangle
	}{
		{"title", image.Rect(0, 0, 900, 30)},
		{"Y label and ticks", image.Rect(0, 30, 70, 520)},
		{"X label and ticks", image.Rect(70, 520, 900, 560)},
	} {
		if n := dark(img, band.r); n < 40 {
			t.Errorf("%s: %d dark pixels in %v, want text", band.name, n, band.r)
		}
	}
	if os.Getenv("PLOT_KEEP") != "" {
		var buf bytes.Buffer
		_ = c.PNG(&buf)
		_ = os.WriteFile(os.Getenv("PLOT_KEEP"), buf.Bytes(), 0o644)
	}
}

func TestPNGDefaultSize(t *testing.T) {
	c := Chart{Series: []Series{{Name: "a", X: []float64{1, 2, 3}, Y: []float64{3, 1, 2}}}}
	img := decode(t, c)
	if got := img.Bounds(); got != image.Rect(0, 0, DefaultWidth, DefaultHeight) {
		t.Fatalf("image is %v, want the default %d×%d", got, DefaultWidth, DefaultHeight)
	}
	if n := near(img, img.Bounds(), SeriesColor(0)); n < 100 {
		t.Errorf("%d pixels of the series colour, want its line", n)
	}
}

// One point, and values below zero, still make a chart.
func TestPNGEdgeCases(t *testing.T) {
	for _, c := range []Chart{
		{LogX: true, Series: []Series{{Name: "one", X: []float64{1 << 20}, Y: []float64{5}}}},
		{Series: []Series{{Name: "below zero", X: []float64{0, 1, 2}, Y: []float64{-3, 2, -1}}}},
		{Width: MinWidth, Height: MinHeight, Series: []Series{{Name: "small", X: []float64{1, 2}, Y: []float64{1, 2}}}},
	} {
		if got := decode(t, c).Bounds().Size(); got.X != c.size0().X || got.Y != c.size0().Y {
			t.Errorf("%q: image is %v", c.Series[0].Name, got)
		}
	}
}

func (c Chart) size0() image.Point { w, h := c.size(); return image.Pt(w, h) }

// A LogX axis is marked at powers of two, labelled as binary sizes, about
// eight labels however wide the range.
func TestPow2Ticks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (pow2Ticks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got := strings.Join(labels(1<<20, 1<<23), " "); got != "1M 2M 4M 8M" {
		t.Errorf("1M..8M: labels %q", got)
	}
	got := labels(1, 1<<40)
	if len(got) < 6 || len(got) > 11 || got[0] != "1" || got[len(got)-1] != "1T" {
		t.Errorf("1..1T: labels %q, want about eight from 1 to 1T", got)
	}
	if n := len((pow2Ticks{}).Ticks(1, 1<<40)); n != 41 {
		t.Errorf("1..1T: %d ticks, want one per power of two", n)
	}
	for e, want := range map[int]string{-1: "0.5", 0: "1", 9: "512", 10: "1K", 25: "32M", 31: "2G", 42: "4T", 70: "2^70"} {
		if got := formatPow2(e); got != want {
			t.Errorf("formatPow2(%d) = %q, want %q", e, got, want)
		}
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
	seen := map[color.RGBA]int{{255, 255, 255, 255}: -1, {0, 0, 0, 255}: -1}
	for i := range 40 {
		c := SeriesColor(i)
		if j, dup := seen[c]; dup {
			t.Errorf("series %d has colour %v, already used by %d", i, c, j)
		}
		seen[c] = i
	}
}
