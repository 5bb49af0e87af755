package symm

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internal/sizes"
)

// Align is the alignment of every region: enough for 16-byte vector loads and
// for the copy engine's best rate.
const Align = 256

// Region is a named byte range of a heap, at the same offset on every rank.
type Region struct {
	Name   string
	Off    int64
	Size   int64
	Zeroed bool // a signal pad: zeroed before the heap is shared
}

// Layout carves a heap into regions.
type Layout struct {
	regions []Region
	size    int64
	err     error // the first region that did not fit
}

// Add appends a data region of size bytes.
func (l *Layout) Add(name string, size int64) Region { return l.add(name, size, false) }

// AddPad appends a signal pad of words 32-bit words, zeroed at creation.
func (l *Layout) AddPad(name string, words int) Pad {
	size, ok := sizes.Product(int64(words), 4)
	if !ok {
		size = -1
	}
	return Pad{Region: l.add(name, size, true), Words: words}
}

// add appends a region. A negative size, or one that takes the heap past
// sizes.Max, is recorded as the layout's error (New refuses the layout)
// and the region is left empty.
func (l *Layout) add(name string, size int64, zeroed bool) Region {
	end, ok := sizes.Sum(l.size, alignUp(size))
	if size < 0 || !ok {
		if l.err == nil {
			l.err = fmt.Errorf("symm: region %s of %d bytes after %d bytes of regions does not fit (at most 2^50 bytes in all): %w",
				name, size, l.size, device.ErrInvalidArgument)
		}
		return Region{Name: name, Off: l.size}
	}
	r := Region{Name: name, Off: l.size, Size: size, Zeroed: zeroed}
	l.regions = append(l.regions, r)
	l.size = end
	return r
}

func alignUp(size int64) int64 {
	if size < 0 || size > sizes.Max {
		return -1
	}
	return (size + Align - 1) / Align * Align
}

// Err is the error of the first region that did not fit (nil if all did).
func (l *Layout) Err() error { return l.err }

// Size is the heap size the layout needs (at least Align).
func (l *Layout) Size() int64 { return max(l.size, Align) }

// Regions lists the regions in order.
func (l *Layout) Regions() []Region { return append([]Region(nil), l.regions...) }

// digest identifies the layout, so ranks can check they agree.
func (l *Layout) digest() []byte {
	h := sha256.New()
	for _, r := range l.regions {
		h.Write([]byte(r.Name))
		var b [17]byte
		binary.LittleEndian.PutUint64(b[:], uint64(r.Off))
		binary.LittleEndian.PutUint64(b[8:], uint64(r.Size))
		if r.Zeroed {
			b[16] = 1
		}
		h.Write(b[:])
	}
	return h.Sum(nil)
}

// Pad is a region of 32-bit signal words.
type Pad struct {
	Region
	Words int
}

// word returns the address of word i of the pad whose first word is at start.
func (p Pad) word(start device.Ptr, i int) device.Ptr {
	if i < 0 || i >= p.Words {
		panic(fmt.Sprintf("symm: word %d of pad %s with %d words", i, p.Name, p.Words))
	}
	return start.Add(int64(i) * 4)
}
