package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNoNVML keeps go-nvml (and the topo package that uses it) out of the
// shared library: its unresolved NVML symbols make dlopen with RTLD_NOW,
// as ctypes does, fail.
func TestNoNVML(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to list dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "go-nvml") || strings.HasSuffix(pkg, "/hiercoll/topo") {
			t.Errorf("the C ABI links %s; it must not (its NVML symbols break RTLD_NOW loads)", pkg)
		}
	}
}

// TestHeaderMatchesExports checks that hiercoll.h declares exactly the
// exported functions. (Their C types are checked by the compiler: the cgo
// preamble includes the header, so a prototype that disagrees with the Go
// signature fails the build.)
func TestHeaderMatchesExports(t *testing.T) {
	names := func(file string, re *regexp.Regexp) []string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	declared := names("hiercoll.h", regexp.MustCompile(`(?m)^int (hc_\w+)\(`))
	exported := names("exports.go", regexp.MustCompile(`(?m)^//export (hc_\w+)$`))
	if len(declared) == 0 || !slices.Equal(declared, exported) {
		t.Errorf("hiercoll.h declares %v\nexports.go exports %v", declared, exported)
	}
}
