// Package plot draws the line charts of hiercoll's benchmarks as PNG images
// through gonum.org/v1/plot: bus bandwidth against message size, hiercoll
// and NCCL side by side, one Series per implementation.
//
// A Chart is data, not state: fill in its Series (X and Y of equal length),
// set LogX for sizes that double from point to point (ticks at powers of
// two, labelled as binary sizes such as 1M, 32M, 2G), and call PNG. The Y
// axis starts at zero when no value is negative; each series gets its line,
// markers and a legend entry in a colour of its own.
package plot
