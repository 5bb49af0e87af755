package world

import (
	"fmt"
	"regexp"
	"strings"
)

// RankErrors are the errors of the ranks of a Run that failed, by rank.
// Ranks that failed the same way are reported once ("ranks 0-7: ..."), as
// the ranks of a collective usually fail alike: with the same words, or
// with words that differ only in their numbers (each naming its own rank
// or device), which are reported in the lowest rank's words. errors.Is and
// errors.As see every rank's error.
type RankErrors struct {
	Ranks []int
	Errs  []error
}

func (e *RankErrors) Error() string {
	type group struct {
		text    string // the first rank's words
		ranks   []int
		numbers bool // some ranks' words differ from text in their numbers
	}
	var groups []*group
	byShape := map[string]*group{}
	for i, err := range e.Errs {
		text := err.Error()
		shape := digits.ReplaceAllString(text, "#")
		g, ok := byShape[shape]
		if !ok {
			g = &group{text: text}
			byShape[shape] = g
			groups = append(groups, g)
		}
		g.ranks = append(g.ranks, e.Ranks[i])
		g.numbers = g.numbers || text != g.text
	}
	lines := make([]string, len(groups))
	for i, g := range groups {
		lines[i] = rankSpan(g.ranks) + ": " + g.text
		if g.numbers {
			lines[i] += fmt.Sprintf(" (in rank %d's words; the others' differ only in numbers)", g.ranks[0])
		}
	}
	return strings.Join(lines, "\n")
}

// digits are the runs of digits two errors may differ in and still be one
// failure.
var digits = regexp.MustCompile(`[0-9]+`)

func (e *RankErrors) Unwrap() []error { return e.Errs }

// rankSpan names ranks in ascending order: "rank 3", "ranks 0-7",
// "ranks 0-2, 5".
func rankSpan(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, fmt.Sprint(ranks[i]))
		}
		i = j + 1
	}
	return "ranks " + strings.Join(parts, ", ")
}
