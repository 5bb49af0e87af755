package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/dtype"
)

// runMainEnv makes the test binary run the command line instead of the
// tests: the launcher's tests start it as their ranks.
const runMainEnv = "HIERCOLL_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

func TestGemmFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		rest []string
		gemm bool
	}{
		{args: nil, rest: nil, gemm: false},
		{args: []string{"--sizes", "1M"}, rest: []string{"--sizes", "1M"}, gemm: false},
		{args: []string{"--gemm"}, rest: nil, gemm: true},
		{args: []string{"-n", "8", "-gemm", "--split-first", "on"}, rest: []string{"-n", "8", "--split-first", "on"}, gemm: true},
		{args: []string{"--gemm=true", "--gemm=false"}, rest: nil, gemm: false},
		{args: []string{"--", "--gemm"}, rest: []string{"--", "--gemm"}, gemm: false},
	} {
		rest, gemm := gemmFlag(tc.args)
		require.Equal(t, tc.rest, rest, "args %q", tc.args)
		require.Equal(t, tc.gemm, gemm, "args %q", tc.args)
	}
}

// A --dtype a command does not take is a usage error naming the ones it
// does; fp8 (a GEMM input only) points to where it is measured.
func TestParseDType(t *testing.T) {
	d, err := parseDType("dtype", "bfloat16", dtype.BF16, dtype.F16)
	require.NoError(t, err)
	require.Equal(t, dtype.BF16, d)
	for _, c := range []struct{ in, want string }{
		{"fp8", "--dtype e4m3: this command takes bf16, fp16 (fp8 is a GEMM input only"},
		{"int32", "--dtype int32: this command takes bf16, fp16"},
		{"fp64", "unknown element type"},
	} {
		_, err := parseDType("dtype", c.in, dtype.BF16, dtype.F16)
		var ue usageError
		require.True(t, errors.As(err, &ue), "%q: %v", c.in, err)
		require.ErrorContains(t, err, c.want)
	}
}

// A command without flags says so in its help, not an empty "flags:".
func TestHelpOfACommandWithoutFlags(t *testing.T) {
	var out bytes.Buffer
	defer func(w io.Writer) { cmdOut = w }(cmdOut)
	cmdOut = &out
	fs := flag.NewFlagSet("quiet", flag.ContinueOnError)
	require.ErrorIs(t, parseFlags(fs, []string{"-h"}, false), errHelp)
	require.Equal(t, "usage: hiercoll quiet\n\nquiet takes no flags.\n", out.String())
}
