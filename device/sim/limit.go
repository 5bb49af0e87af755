package sim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// EnvMemory caps the bytes that all simulated GPUs of a process hold at once
// (a size in bytes, with an optional K, M, G or T suffix, powers of 1024).
// Unset, the cap is half the machine's physical memory (MemTotal of
// /proc/meminfo; 8 GiB where that cannot be read): the simulated memory is
// the process's own heap, and the rest is left to everything else. An allocation larger
// than the cap is an invalid argument; one that fits the cap but not what is
// left of it is an out-of-memory error, as a full GPU's would be.
const EnvMemory = "HIERCOLL_SIM_MEMORY"

// fallbackMemory is the physical memory assumed where it cannot be read.
const fallbackMemory = 16 << 30

var memory struct {
	limit atomic.Int64 // set by SetMemoryLimit; 0: EnvMemory or the default
	used  atomic.Int64 // bytes of live regions
}

// SetMemoryLimit sets the cap on simulated device memory of the process
// (bytes; 0 goes back to EnvMemory or the default) and returns the one in
// effect before (0 if EnvMemory does not parse). For programs and tests;
// users set EnvMemory.
func SetMemoryLimit(bytes int64) int64 {
	limit, _ := memoryLimit()
	memory.limit.Store(max(bytes, 0))
	return limit
}

// MemoryInUse reports the bytes simulated GPUs of the process hold.
func MemoryInUse() int64 { return memory.used.Load() }

var halfPhysical = sync.OnceValue(func() int64 { return physicalMemory() / 2 })

func memoryLimit() (int64, error) {
	if l := memory.limit.Load(); l > 0 {
		return l, nil
	}
	if v := os.Getenv(EnvMemory); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return 0, fmt.Errorf("sim: %s=%s: %v: %w", EnvMemory, hcerr.Quote(v), err, device.ErrInvalidArgument)
		}
		return n, nil
	}
	return halfPhysical(), nil
}

// reserve takes size bytes of the process's cap for an allocation on d.
func reserve(d string, size int64) error {
	limit, err := memoryLimit()
	if err != nil {
		return err
	}
	if size > limit {
		return fmt.Errorf("sim: alloc of %d bytes on %s: more than all simulated device memory (%d bytes; %s sets it): %w",
			size, d, limit, EnvMemory, device.ErrInvalidArgument)
	}
	for {
		used := memory.used.Load()
		if used > limit-size {
			return fmt.Errorf("sim: out of memory: alloc of %d bytes on %s: simulated GPUs of this process hold %d of %d bytes (%s sets the cap)",
				size, d, used, limit, EnvMemory)
		}
		if memory.used.CompareAndSwap(used, used+size) {
			return nil
		}
	}
}

func unreserve(size int64) { memory.used.Add(-size) }

// physicalMemory is MemTotal of /proc/meminfo, or fallbackMemory.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallbackMemory
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return fallbackMemory
}

// parseBytes reads "512M", "8G", "1073741824".
func parseBytes(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	shift := 0
	for i, suffix := range []string{"K", "M", "G", "T"} {
		if strings.HasSuffix(s, suffix) {
			s, shift = strings.TrimSuffix(s, suffix), 10*(i+1)
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("want a positive size in bytes with an optional K, M, G or T suffix")
	}
	return n << shift, nil
}
