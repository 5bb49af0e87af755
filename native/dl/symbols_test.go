//go:build cgo

package dl

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	lib, err := Open("libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6 on this machine (%v)", err)
	}
	defer lib.Close()
	var strlen, memcpy, missing *[0]byte
	first, err := Resolve([]Symbol{
		{Lib: lib, Name: "hiercoll_no_such_symbol", Dst: &missing, Optional: true},
		{Lib: lib, Name: "strlen", Dst: &strlen},
		{Lib: lib, Name: "memcpy", Dst: &memcpy},
	})
	require.NoError(t, err)
	require.Nil(t, missing, "an optional symbol that is missing stays nil")
	require.NotNil(t, strlen)
	require.NotNil(t, memcpy)
	require.Equal(t, unsafe.Pointer(strlen), first, "first is the first symbol found")

	_, err = Resolve([]Symbol{
		{Lib: lib, Name: "strlen", Dst: &strlen},
		{Lib: lib, Name: "hiercoll_no_such_symbol", Dst: &missing},
	})
	require.ErrorContains(t, err, "hiercoll_no_such_symbol")
}

// DriverSymbols names every entry point of cuctx.h's hc_cuda, each with its
// own field.
func TestDriverSymbols(t *testing.T) {
	var table [7]unsafe.Pointer // hc_cuda: seven function pointers
	syms := DriverSymbols(nil, unsafe.Pointer(&table))
	require.Len(t, syms, len(table))
	seen := map[**[0]byte]bool{}
	for _, s := range syms {
		require.NotEmpty(t, s.Name)
		require.False(t, s.Optional, s.Name)
		require.False(t, seen[s.Dst], "%s shares a field", s.Name)
		seen[s.Dst] = true
	}
	require.Equal(t, "cuDevicePrimaryCtxRelease_v2", syms[3].Name)
}
