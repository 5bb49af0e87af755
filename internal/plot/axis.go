package plot

import (
	"math"
	"strconv"
)

// axis maps data values to pixels along one direction of the plot area and
// knows its ticks.
type axis struct {
	log2     bool    // positions are log2 of the value
	min, max float64 // the range shown, in position units (log2 for log2 axes)
	ticks    []tick  // labelled ticks, with a grid line each
	minor    []float64
}

// tick is a labelled position.
type tick struct {
	pos   float64 // in position units
	label string
}

// position turns a data value into position units.
func (a *axis) position(v float64) float64 {
	if a.log2 {
		return math.Log2(v)
	}
	return v
}

// frac is where v lies along the axis, 0 at min and 1 at max.
func (a *axis) frac(v float64) float64 {
	return (a.position(v) - a.min) / (a.max - a.min)
}

// niceStep returns the step of 1, 2 or 5 × 10^k nearest to span/target.
func niceStep(span float64, target int) float64 {
	raw := span / float64(max(target, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f < 1.5:
		return mag
	case f < 3:
		return 2 * mag
	case f < 7:
		return 5 * mag
	}
	return 10 * mag
}

// linearAxis covers [lo, hi] with about target ticks at multiples of a nice
// step, widened so that the first and last ticks are the ends of the axis.
func linearAxis(lo, hi float64, target int) axis {
	if hi == lo {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
	}
	step := niceStep(hi-lo, target)
	first := math.Floor(lo/step+1e-9) * step
	last := math.Ceil(hi/step-1e-9) * step
	a := axis{min: first, max: last}
	biggest := math.Max(math.Abs(first), math.Abs(last))
	n := int(math.Round((last - first) / step))
	for k := 0; k <= n; k++ {
		v := first + float64(k)*step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		a.ticks = append(a.ticks, tick{pos: v, label: formatLinear(v, step, biggest)})
	}
	return a
}

// formatLinear labels a tick of a linear axis with as many decimals as the
// step needs; values of a million and more get a decimal suffix (k, M, G, T).
func formatLinear(v, step, biggest float64) string {
	if v == 0 {
		return "0"
	}
	if biggest >= 1e6 {
		unit, suffix := 1.0, ""
		for _, u := range []struct {
			scale  float64
			suffix string
		}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
			if biggest >= u.scale {
				unit, suffix = u.scale, u.suffix
				break
			}
		}
		return strconv.FormatFloat(v/unit, 'f', decimals(step/unit), 64) + suffix
	}
	if biggest < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', decimals(step), 64)
}

// decimals is how many decimal places show multiples of step exactly.
func decimals(step float64) int {
	if step >= 1 {
		return 0
	}
	d := int(math.Ceil(-math.Log10(step) - 1e-9))
	// a step of 0.25 or 0.05 needs one more digit than its magnitude.
	if math.Abs(step*math.Pow(10, float64(d))-math.Round(step*math.Pow(10, float64(d)))) > 1e-6 {
		d++
	}
	return min(d, 12)
}

// log2Axis covers [lo, hi] (both > 0) from the power of two at or below lo
// to the one at or above hi. Every power of two is a minor tick; every
// stride-th one (stride a power of two when it can be) is labelled with a
// binary size: 1K, 32M, 2G.
func log2Axis(lo, hi float64, stride int) axis {
	first := math.Floor(math.Log2(lo))
	last := math.Ceil(math.Log2(hi))
	if last == first {
		first, last = first-1, last+1
	}
	a := axis{log2: true, min: first, max: last}
	stride = max(stride, 1)
	for e := int(first); e <= int(last); e++ {
		a.minor = append(a.minor, float64(e))
		if ((e%stride)+stride)%stride == 0 {
			a.ticks = append(a.ticks, tick{pos: float64(e), label: formatPow2(e)})
		}
	}
	return a
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

// widestLabel is the width in pixels of the axis's longest tick label.
func (a *axis) widestLabel(scale int) int {
	w := 0
	for _, t := range a.ticks {
		w = max(w, textWidth(t.label, scale))
	}
	return w
}
