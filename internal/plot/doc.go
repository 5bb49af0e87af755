// Package plot draws the line charts of hiercoll's benchmarks as PNG images,
// with nothing but the standard library: bus bandwidth against message size
// for hiercoll and NCCL side by side, one Series per implementation.
//
// A Chart is data, not state: fill in its Series (X and Y of equal length),
// set LogX for sizes that double from point to point, and call PNG. The
// layout is fixed and simple: the title on top, the plot area with a grid,
// ticks and numeric labels (binary sizes such as 1M, 32M, 2G on a LogX axis),
// the axis titles below and to the left, and a legend on the right naming
// each series beside its colour and marker. The Y axis starts at zero when
// no value is negative.
//
// Text is drawn from a small built-in 5×7 bitmap font (digits, ASCII
// letters, common punctuation and ×); a character it lacks shows as a box.
package plot
