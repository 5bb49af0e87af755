package model

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Floors are the rows of a `hiercoll floors` table: per-rank rates and
// per-operation latencies, by the name the row prints.
type Floors struct {
	Rates map[string]float64 // bytes per second per rank
	Lats  map[string]float64 // seconds per operation
	GPUs  int                // from the title line, when there is one (0 if not)
}

var (
	rankPrefix = regexp.MustCompile(`^\s*\[rank \d+\]`)
	rateRow    = regexp.MustCompile(`^\s*(.*\S)\s+([0-9.]+) us\s+([0-9.]+) GB/s per rank\s*$`)
	latRow     = regexp.MustCompile(`^\s*(.*\S)\s+([0-9.]+) us (?:each|\(host-timed)`)
	floorsHead = regexp.MustCompile(`hiercoll floors: \d+ node\(s\) x (\d+) (?:simulated )?GPU\(s\)`)
	pushRing   = regexp.MustCompile(`^SM peer write \(push\) to rank\+1, (\d+) SMs, ring$`)
	pushAll    = regexp.MustCompile(`^SM push to all \d+ peers at once, (\d+) SMs each$`)
	localCopy  = regexp.MustCompile(`^SM local copy, (\d+) SMs$`)
	reduceBW   = regexp.MustCompile(`^reduce kernel, \d+ blocks of .*, (\d+) SMs \(bytes read\+written\)$`)
	reduceLat  = regexp.MustCompile(`^reduce kernel, \d+ blocks of `)
)

// ParseFloors reads a floors table from a log: lines of other output around
// it, "[rank N]" prefixes and rows it does not know are passed over; where a
// log holds several tables, the first value of each row is kept.
func ParseFloors(r io.Reader) (Floors, error) {
	f := Floors{Rates: map[string]float64{}, Lats: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := rankPrefix.ReplaceAllString(sc.Text(), "")
		if m := floorsHead.FindStringSubmatch(line); m != nil && f.GPUs == 0 {
			f.GPUs, _ = strconv.Atoi(m[1])
			continue
		}
		if m := rateRow.FindStringSubmatch(line); m != nil {
			// Scaled in the decimal text, so that "351.7" GB/s is 351.7e9 exactly.
			if v, err := strconv.ParseFloat(m[3]+"e9", 64); err == nil && v > 0 {
				if _, seen := f.Rates[m[1]]; !seen {
					f.Rates[m[1]] = v
				}
			}
			continue
		}
		if m := latRow.FindStringSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(m[2]+"e-6", 64); err == nil && v > 0 {
				if _, seen := f.Lats[m[1]]; !seen {
					f.Lats[m[1]] = v
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Floors{}, fmt.Errorf("model: reading floors: %w", err)
	}
	if len(f.Rates) == 0 {
		return Floors{}, fmt.Errorf("model: %w: no floors rows (\"... us ... GB/s per rank\") in the input", hcerr.ErrInvalidArgument)
	}
	return f, nil
}

// bySMs returns the rates of rows matching re (whose first group is an SM
// count), keyed by that count.
func (f Floors) bySMs(rows map[string]float64, re *regexp.Regexp) map[int]float64 {
	out := map[int]float64{}
	for name, v := range rows {
		if m := re.FindStringSubmatch(name); m != nil {
			if sms, err := strconv.Atoi(m[1]); err == nil {
				out[sms] = v
			}
		}
	}
	return out
}

// pick is the value at want SMs, else at the most SMs there is.
func pick(bySMs map[int]float64, want int) (float64, int, bool) {
	if v, ok := bySMs[want]; ok {
		return v, want, true
	}
	var keys []int
	for k := range bySMs {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return 0, 0, false
	}
	sort.Ints(keys)
	k := keys[len(keys)-1]
	return bySMs[k], k, true
}

// Apply sets the intra-node terms of p that the floors measured, and says
// where each came from (and which it could not set):
//
//	Node.PushBW     SM push to rank+1 in a ring, 32 SMs (the push kernel's default)
//	Node.PushAllBW  SM push to all peers at once, 32 SMs each; where the
//	                table lacks it, the ring push rate (an upper bound)
//	Node.LocalBW    SM local copy, 32 SMs
//	Final.BW        reduce kernel on the most SMs; Final.Lat its small case
//	Ring.NVLinkBW   SM push in a ring on the most SMs (NVLink's ring ceiling)
//
// The node step's latencies and the network terms are not floors; they stay.
func (f Floors) Apply(p *Params) []string {
	var notes []string
	const pushSMs = 32
	push := f.bySMs(f.Rates, pushRing)
	if v, sms, ok := pick(push, pushSMs); ok {
		p.Node.PushBW = v
		notes = append(notes, fmt.Sprintf("node push to one peer %.1f GB/s (SM push ring, %d SMs)", v/1e9, sms))
	} else {
		notes = append(notes, "no SM push ring row: node push to one peer kept")
	}
	if v, sms, ok := pick(f.bySMs(f.Rates, pushAll), pushSMs); ok {
		p.Node.PushAllBW = v
		notes = append(notes, fmt.Sprintf("node push to all peers %.1f GB/s (SM push to all peers at once, %d SMs each)", v/1e9, sms))
	} else if v, sms, ok := pick(push, pushSMs); ok {
		p.Node.PushAllBW = v
		notes = append(notes, fmt.Sprintf("node push to all peers %.1f GB/s: no all-peers row, so the ring push rate (%d SMs), an upper bound", v/1e9, sms))
	}
	if v, sms, ok := pick(f.bySMs(f.Rates, localCopy), pushSMs); ok {
		p.Node.LocalBW = v
		notes = append(notes, fmt.Sprintf("local copy %.1f GB/s (%d SMs)", v/1e9, sms))
	}
	if v, sms, ok := pick(f.bySMs(f.Rates, reduceBW), 1<<30); ok {
		p.Final.BW = v
		notes = append(notes, fmt.Sprintf("final reduce %.1f GB/s read+written (%d SMs)", v/1e9, sms))
	}
	for name, v := range f.Lats {
		if reduceLat.MatchString(name) {
			p.Final.Lat = v
			notes = append(notes, fmt.Sprintf("final reduce launch %.2f µs (%s)", v*1e6, name))
			break
		}
	}
	if v, sms, ok := pick(push, 1<<30); ok {
		p.Ring.NVLinkBW = v
		notes = append(notes, fmt.Sprintf("ring NVLink ceiling %.1f GB/s (SM push ring, %d SMs)", v/1e9, sms))
	}
	return notes
}
