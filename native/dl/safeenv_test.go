package dl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

func TestSafeEnvEnsure(t *testing.T) {
	e := SafeEnv{Pkg: "lib", Lib: "LIB", Name: "LIB_MULTICAST", Off: "0", Safe: func(v string) bool { return v == "0" || v == "no" }}
	for _, tc := range []struct {
		name    string
		value   *string
		wantErr bool
		wantSet bool
	}{
		{"unset is set to Off", nil, false, true},
		{"Off is kept", ptr("0"), false, false},
		{"another safe value is kept", ptr("no"), false, false},
		{"an unsafe value is refused", ptr("1"), true, false},
		{"empty is refused where Safe says so", ptr(""), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set map[string]string
			lookup := func(k string) (string, bool) {
				if k != e.Name || tc.value == nil {
					return "", false
				}
				return *tc.value, true
			}
			setenv := func(k, v string) error {
				if set == nil {
					set = map[string]string{}
				}
				set[k] = v
				return nil
			}
			err := e.Ensure(lookup, setenv)
			if tc.wantErr {
				require.ErrorIs(t, err, hcerr.ErrNotSupported)
				require.ErrorContains(t, err, e.Name)
				require.ErrorContains(t, err, "lib: ")
			} else {
				require.NoError(t, err)
			}
			if tc.wantSet {
				require.Equal(t, map[string]string{e.Name: "0"}, set)
			} else {
				require.Nil(t, set)
			}
		})
	}
	// A variable that cannot be set is an error, not a silent default.
	boom := errors.New("boom")
	err := e.Ensure(func(string) (string, bool) { return "", false }, func(k, v string) error { return boom })
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "setting LIB_MULTICAST=0")
}

func ptr(s string) *string { return &s }
