package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
