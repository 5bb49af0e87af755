package dl

import (
	"os"
	"path/filepath"
	"strings"
)

// sitePackagesGlobs are the usual places Python keeps installed packages
// (where the PyTorch wheels put NCCL, NVSHMEM and cuBLAS); $VAR entries are
// expanded and skipped when the variable is empty.
var sitePackagesGlobs = []string{
	"$VIRTUAL_ENV/lib/python3*/site-packages",
	"$CONDA_PREFIX/lib/python3*/site-packages",
	"$HOME/.local/lib/python3*/site-packages",
	"/usr/local/lib/python3*/site-packages",
	"/usr/local/lib/python3*/dist-packages",
	"/usr/local/lib64/python3*/site-packages",
	"/usr/lib/python3*/site-packages",
	"/usr/lib/python3*/dist-packages",
	"/usr/lib/python3/dist-packages",
	"/usr/lib64/python3*/site-packages",
	"/opt/conda/lib/python3*/site-packages",
	"/opt/*/.venv/lib/python3*/site-packages",
	"/opt/*/venv/lib/python3*/site-packages",
	"/opt/*/lib/python3*/site-packages",
}

// SitePackages returns the Python package directories found on this machine
// by globbing the usual prefixes (no Python is run): the entries of
// $PYTHONPATH, then the active virtual or conda environment, the user's and
// the system's site-packages and dist-packages, and virtual environments
// under /opt. Each directory appears once, in that order.
func SitePackages() []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		d = filepath.Clean(d)
		if seen[d] {
			return
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return
		}
		seen[d] = true
		dirs = append(dirs, d)
	}
	for _, d := range filepath.SplitList(os.Getenv("PYTHONPATH")) {
		if d != "" {
			add(d)
		}
	}
	for _, pattern := range sitePackagesGlobs {
		if strings.HasPrefix(pattern, "$") {
			name, rest, _ := strings.Cut(pattern[1:], "/")
			v := os.Getenv(name)
			if v == "" {
				continue
			}
			pattern = filepath.Join(v, rest)
		}
		matches, _ := filepath.Glob(pattern) // only ErrBadPattern, impossible here
		for _, m := range matches {
			add(m)
		}
	}
	return dirs
}

// Candidates lists the files to try for a library, in order: the path in
// the environment variable env if set, the soname on the loader's path, and
// wheel (a path relative to site-packages, like nvidia/nccl/lib/libnccl.so.2)
// in every site-packages directory where it exists. It also returns the
// directories searched, for error messages.
func Candidates(env, soname, wheel string) (libs, searched []string) {
	if p := os.Getenv(env); p != "" {
		libs = append(libs, p)
	}
	libs = append(libs, soname)
	searched = SitePackages()
	for _, dir := range searched {
		p := filepath.Join(dir, wheel)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			libs = append(libs, p)
		}
	}
	return libs, searched
}
