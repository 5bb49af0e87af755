package dl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenMissingLibrary(t *testing.T) {
	_, err := Open("libhiercoll-does-not-exist.so.7", "/nonexistent/libx.so")
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotFound))
	require.Contains(t, err.Error(), "libhiercoll-does-not-exist.so.7")
}

func TestOpenLibcAndSym(t *testing.T) {
	lib, err := Open("libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6 on this machine (%v)", err)
	}
	p, err := lib.Sym("strlen")
	require.NoError(t, err)
	require.NotNil(t, p)
	_, err = lib.Sym("hiercoll_no_such_symbol")
	require.ErrorContains(t, err, "hiercoll_no_such_symbol")
	require.NoError(t, lib.Close())
	_, err = lib.Sym("strlen")
	require.Error(t, err)
}
