package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The kernel cache keeps compiled CUBINs on disk so that a process finds the
// modules an earlier one compiled. One file per (source, arch, NVRTC
// version, options), written to a temporary file and renamed into place, so
// concurrent processes (every rank of a node starts at once) never see a
// partial file; the last writer wins with identical content. Each file
// carries a checksum of its payload: a truncated or corrupt entry is a miss,
// recompiled and rewritten.

// cacheMagic starts every cache file; bump the version when the layout changes.
const cacheMagic = "hiercoll-cubin-1\n"

// compileOptions are the NVRTC options for arch ("sm_90").
func compileOptions(arch string) []string {
	return []string{"--gpu-architecture=" + arch, "-default-device", "--std=c++17", "-lineinfo"}
}

// cacheKey is the hex sha256 of everything the CUBIN depends on.
func cacheKey(source, arch, nvrtcVersion string, options []string) string {
	h := sha256.New()
	for _, part := range []string{cacheMagic, source, arch, nvrtcVersion, strings.Join(options, "\x00")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diskCache is a directory of CUBINs; the zero value caches nothing.
type diskCache struct{ dir string }

// path of the entry for module name and key: the name is only there for
// people looking at the directory.
func (c diskCache) path(name, key string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
	if len(clean) > 48 {
		clean = clean[:48]
	}
	return filepath.Join(c.dir, fmt.Sprintf("%s-%s.cubin", clean, key[:32]))
}

// load returns the cached CUBIN, or false when there is none or it is damaged.
func (c diskCache) load(name, key string) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	b, err := os.ReadFile(c.path(name, key))
	if err != nil {
		return nil, false
	}
	return decodeCacheEntry(b)
}

// store writes a CUBIN atomically. Failures are returned for callers that
// care; a cache that cannot be written only costs a recompile later.
func (c diskCache) store(name, key string, cubin []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, ".tmp-*.cubin")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(encodeCacheEntry(cubin))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, c.path(name, key)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func encodeCacheEntry(cubin []byte) []byte {
	sum := sha256.Sum256(cubin)
	out := make([]byte, 0, len(cacheMagic)+len(sum)+len(cubin))
	out = append(out, cacheMagic...)
	out = append(out, sum[:]...)
	return append(out, cubin...)
}

func decodeCacheEntry(b []byte) ([]byte, bool) {
	head := len(cacheMagic) + sha256.Size
	if len(b) <= head || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, false
	}
	payload := b[head:]
	sum := sha256.Sum256(payload)
	if !bytes.Equal(sum[:], b[len(cacheMagic):head]) {
		return nil, false
	}
	return payload, true
}

// defaultCacheDir is $HIERCOLL_CACHE_DIR, else $XDG_CACHE_HOME/hiercoll, else
// ~/.cache/hiercoll; "" (no disk cache) when none can be determined.
func defaultCacheDir() string {
	if dir := os.Getenv("HIERCOLL_CACHE_DIR"); dir != "" {
		return dir
	}
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" {
		return filepath.Join(dir, "hiercoll")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".cache", "hiercoll")
	}
	return ""
}
