package world

import (
	"fmt"
	"strings"
)

// RankErrors are the errors of the ranks of a Run that failed, by rank.
// Ranks that failed the same way are reported once ("ranks 0-7: ..."), as
// the ranks of a collective usually fail alike; errors.Is and errors.As see
// every rank's error.
type RankErrors struct {
	Ranks []int
	Errs  []error
}

func (e *RankErrors) Error() string {
	var order []string
	byText := map[string][]int{}
	for i, err := range e.Errs {
		text := err.Error()
		if _, ok := byText[text]; !ok {
			order = append(order, text)
		}
		byText[text] = append(byText[text], e.Ranks[i])
	}
	lines := make([]string, len(order))
	for i, text := range order {
		lines[i] = rankSpan(byText[text]) + ": " + text
	}
	return strings.Join(lines, "\n")
}

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
