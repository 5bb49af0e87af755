package plot

import (
	"fmt"
	"image"
	"image/color"
	"strings"
)

// The font is a 5×7 pixel bitmap with two rows below the baseline for the
// descenders of g, j, p, q, y and the comma: a glyph is 5 columns by 9 rows,
// drawn 6 columns apart (one blank column between letters) and 10 rows apart
// line to line, each pixel a scale×scale square.
const (
	glyphW    = 5
	glyphRows = 9 // 7 above the baseline, 2 below
	advanceW  = glyphW + 1
	lineRows  = glyphRows + 1
)

// glyphSource spells each glyph as its rows, top to bottom, '#' for ink and
// '.' for paper; rows not given (the descender rows of most glyphs) are blank.
var glyphSource = map[rune]string{
	' ': ".....",

	'0': ".###. #...# #..## #.#.# ##..# #...# .###.",
	'1': "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
	'2': ".###. #...# ....# ...#. ..#.. .#... #####",
	'3': "##### ...#. ..#.. ...#. ....# #...# .###.",
	'4': "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
	'5': "##### #.... ####. ....# ....# #...# .###.",
	'6': "..##. .#... #.... ####. #...# #...# .###.",
	'7': "##### ....# ...#. ..#.. .#... .#... .#...",
	'8': ".###. #...# #...# .###. #...# #...# .###.",
	'9': ".###. #...# #...# .#### ....# ...#. .##..",

	'A': ".###. #...# #...# ##### #...# #...# #...#",
	'B': "####. #...# #...# ####. #...# #...# ####.",
	'C': ".###. #...# #.... #.... #.... #...# .###.",
	'D': "###.. #..#. #...# #...# #...# #..#. ###..",
	'E': "##### #.... #.... ####. #.... #.... #####",
	'F': "##### #.... #.... ####. #.... #.... #....",
	'G': ".###. #...# #.... #.### #...# #...# .####",
	'H': "#...# #...# #...# ##### #...# #...# #...#",
	'I': ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
	'J': "..### ...#. ...#. ...#. ...#. #..#. .##..",
	'K': "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
	'L': "#.... #.... #.... #.... #.... #.... #####",
	'M': "#...# ##.## #.#.# #.#.# #...# #...# #...#",
	'N': "#...# #...# ##..# #.#.# #..## #...# #...#",
	'O': ".###. #...# #...# #...# #...# #...# .###.",
	'P': "####. #...# #...# ####. #.... #.... #....",
	'Q': ".###. #...# #...# #...# #.#.# #..#. .##.#",
	'R': "####. #...# #...# ####. #.#.. #..#. #...#",
	'S': ".#### #.... #.... .###. ....# ....# ####.",
	'T': "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
	'U': "#...# #...# #...# #...# #...# #...# .###.",
	'V': "#...# #...# #...# #...# #...# .#.#. ..#..",
	'W': "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
	'X': "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
	'Y': "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
	'Z': "##### ....# ...#. ..#.. .#... #.... #####",

	'a': "..... ..... .###. ....# .#### #...# .####",
	'b': "#.... #.... #.##. ##..# #...# #...# ####.",
	'c': "..... ..... .###. #.... #.... #...# .###.",
	'd': "....# ....# .##.# #..## #...# #...# .####",
	'e': "..... ..... .###. #...# ##### #.... .###.",
	'f': "..##. .#..# .#... ###.. .#... .#... .#...",
	'g': "..... ..... .#### #...# #...# #...# .#### ....# .###.",
	'h': "#.... #.... #.##. ##..# #...# #...# #...#",
	'i': "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.",
	'j': "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##..",
	'k': "#.... #.... #..#. #.#.. ##... #.#.. #..#.",
	'l': ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
	'm': "..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#",
	'n': "..... ..... #.##. ##..# #...# #...# #...#",
	'o': "..... ..... .###. #...# #...# #...# .###.",
	'p': "..... ..... ####. #...# #...# #...# ####. #.... #....",
	'q': "..... ..... .#### #...# #...# #...# .#### ....# ....#",
	'r': "..... ..... #.##. ##..# #.... #.... #....",
	's': "..... ..... .###. #.... .###. ....# ####.",
	't': ".#... .#... ###.. .#... .#... .#..# ..##.",
	'u': "..... ..... #...# #...# #...# #..## .##.#",
	'v': "..... ..... #...# #...# #...# .#.#. ..#..",
	'w': "..... ..... #...# #...# #.#.# #.#.# .#.#.",
	'x': "..... ..... #...# .#.#. ..#.. .#.#. #...#",
	'y': "..... ..... #...# #...# #...# #...# .#### ....# .###.",
	'z': "..... ..... ##### ...#. ..#.. .#... #####",

	'.':  "..... ..... ..... ..... ..... .##.. .##..",
	',':  "..... ..... ..... ..... ..... .##.. .##.. ..#.. .#...",
	':':  "..... .##.. .##.. ..... .##.. .##.. .....",
	';':  "..... .##.. .##.. ..... .##.. .##.. ..#.. .#...",
	'-':  "..... ..... ..... .###. ..... ..... .....",
	'_':  "..... ..... ..... ..... ..... ..... #####",
	'(':  "...#. ..#.. .#... .#... .#... ..#.. ...#.",
	')':  ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
	'[':  ".###. .#... .#... .#... .#... .#... .###.",
	']':  ".###. ...#. ...#. ...#. ...#. ...#. .###.",
	'/':  "..... ....# ...#. ..#.. .#... #.... .....",
	'%':  "##... ##..# ...#. ..#.. .#... #..## ...##",
	'×':  "..... #...# .#.#. ..#.. .#.#. #...# .....",
	'+':  "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
	'=':  "..... ..... ##### ..... ##### ..... .....",
	'<':  "...#. ..#.. .#... #.... .#... ..#.. ...#.",
	'>':  ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
	'#':  ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
	'*':  "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
	'!':  "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
	'?':  ".###. #...# ....# ...#. ..#.. ..... ..#..",
	'\'': "..#.. ..#.. .#... ..... ..... ..... .....",
	'"':  ".#.#. .#.#. ..... ..... ..... ..... .....",
	'|':  "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
	'@':  ".###. #...# #.### #.#.# #.### #.... .###.",
	'&':  ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#",
	'^':  "..#.. .#.#. #...# ..... ..... ..... .....",
	'~':  "..... ..... .#... #.#.# ...#. ..... .....",
}

// glyph is one character: bit 4 of a row is its leftmost column.
type glyph [glyphRows]uint8

// missingGlyph stands in for a character the font lacks: an empty box.
var missingGlyph = glyph{0x1f, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1f}

var glyphs = parseGlyphs(glyphSource)

func parseGlyphs(src map[rune]string) map[rune]glyph {
	out := make(map[rune]glyph, len(src))
	for r, s := range src {
		g, err := parseGlyph(s)
		if err != nil {
			panic(fmt.Sprintf("plot: glyph %q: %v", r, err))
		}
		out[r] = g
	}
	return out
}

func parseGlyph(s string) (glyph, error) {
	var g glyph
	rows := strings.Fields(s)
	if len(rows) > glyphRows {
		return g, fmt.Errorf("%d rows, at most %d", len(rows), glyphRows)
	}
	for y, row := range rows {
		if len(row) != glyphW {
			return g, fmt.Errorf("row %d is %q, not %d columns", y, row, glyphW)
		}
		for x, c := range row {
			switch c {
			case '#':
				g[y] |= 1 << (glyphW - 1 - x)
			case '.':
			default:
				return g, fmt.Errorf("row %d has %q", y, c)
			}
		}
	}
	return g, nil
}

func glyphFor(r rune) glyph {
	if g, ok := glyphs[r]; ok {
		return g
	}
	return missingGlyph
}

// textWidth is the width in pixels of s drawn at scale (no trailing gap).
func textWidth(s string, scale int) int {
	n := len([]rune(s))
	if n == 0 {
		return 0
	}
	return (n*advanceW - 1) * scale
}

// textHeight is the height of a line of text, descenders included.
func textHeight(scale int) int { return glyphRows * scale }

// drawText draws s with its top-left corner at (x, y).
func drawText(img *image.RGBA, x, y int, s string, scale int, c color.RGBA) {
	for _, r := range s {
		g := glyphFor(r)
		for gy, row := range g {
			for gx := range glyphW {
				if row&(1<<(glyphW-1-gx)) != 0 {
					fillRect(img, x+gx*scale, y+gy*scale, scale, scale, c)
				}
			}
		}
		x += advanceW * scale
	}
}

// drawTextUp draws s rotated a quarter turn anticlockwise, reading bottom to
// top, with the bottom-left corner of its first glyph at (x, y) (the left
// edge of the rotated line is x).
func drawTextUp(img *image.RGBA, x, y int, s string, scale int, c color.RGBA) {
	for _, r := range s {
		g := glyphFor(r)
		for gy, row := range g {
			for gx := range glyphW {
				if row&(1<<(glyphW-1-gx)) != 0 {
					// glyph column gx runs up the image, glyph row gy runs right.
					fillRect(img, x+gy*scale, y-(gx+1)*scale, scale, scale, c)
				}
			}
		}
		y -= advanceW * scale
	}
}
