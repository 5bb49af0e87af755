package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Addresses that cannot work are refused at once (ErrInvalidArgument), not
// dialled until the timeout: a port outside [1, 65535] to dial, outside
// [0, 65535] to listen on, a host longer than a DNS name. (The timeout only
// bounds how long a regression would take to fail.)
func TestAddressesThatCannotWorkAreRefusedAtOnce(t *testing.T) {
	checkGoroutines(t)
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:0", ":0", "127.0.0.1:-1", "127.0.0.1:http", "127.0.0.1"} {
		_, err := DialTCP(context.Background(), TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: addr, Token: testToken, Timeout: 2 * time.Second})
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, addr)
	}
	_, err := DialTCP(context.Background(), TCPConfig{Rank: 0, Size: 2, LocalRank: 0, LocalSize: 2, Addr: "127.0.0.1:99999", Token: testToken, Timeout: 2 * time.Second})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	_, err = Listen("127.0.0.1:65536")
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)

	// The store's address value likewise.
	store := newMemStore()
	secret := NewSecret()
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeySecret, []byte(secret)))
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:0"} {
		require.NoError(t, store.Set(context.Background(), "p/"+StoreKeyAddr, []byte(JobNonce(secret)+" "+addr)))
		_, err := DialStore(context.Background(), store, "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Timeout: 2 * time.Second})
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, addr)
	}
}

// Errors quote untrusted text cut short: a host name of 1 MiB, a store
// value of 64 MiB, an environment variable of 1 MiB each give an error of a
// line.
func TestErrorsQuoteUntrustedValuesShort(t *testing.T) {
	checkGoroutines(t)
	huge := strings.Repeat("h", 1<<20)
	_, err := Listen(huge + ":0")
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 512, "Listen")
	_, err = DialTCP(context.Background(), TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: huge + ":1234", Token: testToken, Timeout: 2 * time.Second})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 512, "DialTCP")
	_, err = DialTCP(context.Background(), TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: huge, Token: testToken, Timeout: 2 * time.Second})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 512, "DialTCP without a port")

	store := newMemStore()
	secret := NewSecret()
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeySecret, []byte(secret)))
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeyAddr, []byte(JobNonce(secret)+" "+strings.Repeat("a", 64<<20)+":1")))
	_, err = DialStore(context.Background(), store, "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Timeout: 2 * time.Second})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 1024, "a 64 MiB store value")

	for _, name := range []string{EnvRank, EnvTimeout, EnvInsecureToken} {
		env := map[string]string{EnvRank: "1", EnvWorldSize: "2", EnvLocalRank: "1", EnvLocalWorldSize: "2", EnvMasterAddr: "h", EnvMasterPort: "1000", EnvToken: "t"}
		env[name] = huge
		_, err := configFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, name)
		require.Less(t, len(err.Error()), 512, name)
	}
	env := map[string]string{EnvRank: "1", EnvWorldSize: "2", EnvLocalRank: "1", EnvLocalWorldSize: "2", EnvMasterAddr: huge, EnvMasterPort: "1000", EnvToken: "t"}
	cfg, err := configFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err, "checked when dialled")
	_, err = DialTCP(context.Background(), cfg)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 512, "MASTER_ADDR")
}

// EnvPlace, the store rendezvous's view of the environment, takes
// HIERCOLL_TIMEOUT as EnvConfig does.
func TestEnvPlaceTakesTheTimeout(t *testing.T) {
	for k, v := range map[string]string{EnvRank: "1", EnvWorldSize: "2", EnvLocalRank: "1", EnvLocalWorldSize: "2", EnvTimeout: "90s"} {
		t.Setenv(k, v)
	}
	cfg, err := EnvPlace()
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, cfg.Timeout)
	t.Setenv(EnvTimeout, "soon")
	_, err = EnvPlace()
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, EnvTimeout)
}
