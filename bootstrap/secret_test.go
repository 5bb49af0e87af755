package bootstrap

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	require.Regexp(t, `^[0-9a-f]{64}$`, a)
	require.NotEqual(t, a, b)
}

// oneHostEnv is the torchrun environment of rank of a 4-rank job on one
// host, without HIERCOLL_TOKEN, whose secret directory lies under runtimeDir.
func oneHostEnv(rank int, port int, runtimeDir string) map[string]string {
	return map[string]string{
		EnvRank: strconv.Itoa(rank), EnvWorldSize: "4", EnvLocalRank: strconv.Itoa(rank), EnvLocalWorldSize: "4",
		EnvMasterAddr: "127.0.0.1", EnvMasterPort: strconv.Itoa(port - 1), EnvRunID: "job-19",
		"XDG_RUNTIME_DIR": runtimeDir,
	}
}

// TestEnvConfigSecretPolicy: without HIERCOLL_TOKEN, a job across nodes is
// refused unless it opts out explicitly; a job on one host shares a secret
// file; the token of public values is used only on request.
func TestEnvConfigSecretPolicy(t *testing.T) {
	// Across nodes, no token: refused, naming what to set.
	_, err := configFrom(lookupIn(torchrunEnv(5)))
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, "the job spans 2 nodes")
	require.ErrorContains(t, err, "HIERCOLL_TOKEN is not set")
	require.ErrorContains(t, err, "HIERCOLL_INSECURE_TOKEN=1")

	env := torchrunEnv(5)
	env[EnvInsecureToken] = "0"
	_, err = configFrom(lookupIn(env))
	require.ErrorContains(t, err, "HIERCOLL_TOKEN is not set", "0 is no opt-out")
	env[EnvInsecureToken] = "yes"
	_, err = configFrom(lookupIn(env))
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, `HIERCOLL_INSECURE_TOKEN="yes"`)
	env[EnvInsecureToken] = "1"
	cfg, err := configFrom(lookupIn(env))
	require.NoError(t, err)
	require.Equal(t, derivedToken("job-17", "node0", 29500, 8), cfg.Token)
	require.Empty(t, cfg.TokenFile)

	// A real token wins over the opt-out.
	env[EnvToken] = "s3cret"
	cfg, err = configFrom(lookupIn(env))
	require.NoError(t, err)
	require.Equal(t, "s3cret", cfg.Token)

	// One host, no token: a secret file in the user's runtime directory,
	// the same for every rank of the job, another for another job.
	runtimeDir := t.TempDir()
	cfg, err = configFrom(lookupIn(oneHostEnv(2, 7001, runtimeDir)))
	require.NoError(t, err)
	require.Empty(t, cfg.Token)
	require.Equal(t, filepath.Join(runtimeDir, "hiercoll"), filepath.Dir(cfg.TokenFile))
	other, err := configFrom(lookupIn(oneHostEnv(0, 7001, runtimeDir)))
	require.NoError(t, err)
	require.Equal(t, cfg.TokenFile, other.TokenFile)
	other, err = configFrom(lookupIn(oneHostEnv(0, 7003, runtimeDir)))
	require.NoError(t, err)
	require.NotEqual(t, cfg.TokenFile, other.TokenFile)

	// Without XDG_RUNTIME_DIR: $TMPDIR/hiercoll-<uid>.
	env = oneHostEnv(1, 7001, "")
	delete(env, "XDG_RUNTIME_DIR")
	env["TMPDIR"] = "/scratch"
	cfg, err = configFrom(lookupIn(env))
	require.NoError(t, err)
	require.Equal(t, "/scratch/hiercoll-"+strconv.Itoa(os.Getuid()), filepath.Dir(cfg.TokenFile))
}

// TestGuessedTokenIsRefusedOnOneHost is issue 19's first report: without
// HIERCOLL_TOKEN the token was a hash of values any local user can read; a
// process computed it, joined as rank 3 before the real one, and the real
// rank 3 was refused. Now the stranger is refused and the job runs.
func TestGuessedTokenIsRefusedOnOneHost(t *testing.T) {
	checkGoroutines(t)
	const size = 4
	ln := listen(t)
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	runtimeDir := t.TempDir()
	configs := make([]TCPConfig, size)
	for r := range configs {
		var err error
		configs[r], err = configFrom(lookupIn(oneHostEnv(r, port, runtimeDir)))
		require.NoError(t, err)
		configs[r].Addr = addr // MASTER_ADDR is 127.0.0.1 already; the port is the listener's
		configs[r].Timeout = 30 * time.Second
	}
	comms := make([]*tcpComm, size)
	defer func() { closeWorld(t, comms) }()
	joined := make(chan []error)
	go func() {
		joined <- onRanks([]int{0, 1, 2}, func(r int) error {
			var l net.Listener
			if r == 0 {
				l = ln
			}
			var err error
			comms[r], err = dialTCP(context.Background(), configs[r], l)
			return err
		})
	}()

	guessed := derivedToken("job-19", "127.0.0.1", port-1, size)
	typ, rep := foreignHello(t, addr, guessed, hello{rank: 3, size: size, localRank: 3, localSize: size})
	require.Equal(t, frameReject, typ)
	require.Equal(t, "wrong token", rep.reason)

	var err error
	comms[3], err = dialTCP(context.Background(), configs[3], nil)
	require.NoError(t, err, "the real rank 3 joins")
	for r, err := range <-joined {
		require.NoError(t, err, "rank %d", r)
	}
	errs := onRanks(allRanks(size), func(r int) error {
		_, err := comms[r].AllGather(context.Background(), []byte{byte(r)})
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	_, err = os.Stat(configs[0].TokenFile)
	require.ErrorIs(t, err, os.ErrNotExist, "the secret file is removed once every rank has joined")
}

// tokenFileWorld joins size ranks sharing a secret through a file.
func tokenFileWorld(t *testing.T, size int, path string, rank0Delay time.Duration) ([]*tcpComm, []error) {
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, size)
	errs := onRanks(allRanks(size), func(r int) error {
		cfg := TCPConfig{Rank: r, Size: size, LocalRank: r, LocalSize: size, Addr: addr, TokenFile: path, Timeout: 20 * time.Second}
		var l net.Listener
		if r == 0 {
			l = ln
			time.Sleep(rank0Delay)
		}
		var err error
		comms[r], err = dialTCP(context.Background(), cfg, l)
		return err
	})
	return comms, errs
}

// TestTokenFileStaleFileAndLateRankZero: a file a dead job left behind holds
// a secret nobody knows any more; ranks that start before rank 0 wait, rank 0
// replaces the file before its server answers, and the job runs.
func TestTokenFileStaleFileAndLateRankZero(t *testing.T) {
	checkGoroutines(t)
	path := filepath.Join(t.TempDir(), "hiercoll", "job-x.secret")
	require.NoError(t, writeSecretFile(path, "stale-secret-of-a-dead-job"))
	comms, errs := tokenFileWorld(t, 3, path, 300*time.Millisecond)
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	errs = onRanks(allRanks(3), func(r int) error { return comms[r].Barrier(context.Background()) })
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	closeWorld(t, comms)
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestTokenFileNeverAppears: a rank whose server answers but whose secret
// file never appears (rank 0 is on another host, or is not rank 0) times out
// with an error that says so.
func TestTokenFileNeverAppears(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	stop := squat(t, ln, func(net.Conn) {})
	defer stop()
	path := filepath.Join(t.TempDir(), "hiercoll", "job-y.secret")
	require.NoError(t, os.Mkdir(filepath.Dir(path), 0o700))
	_, err := DialTCP(context.Background(), TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Addr: addr, TokenFile: path, Timeout: 500 * time.Millisecond})
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "secret file "+path+" did not appear")
	require.ErrorContains(t, err, "HIERCOLL_TOKEN")
}

func TestSecretFileIsPrivate(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "hiercoll", "job.secret")
	require.NoError(t, writeSecretFile(path, "abc123"))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	got, err := readSecretFile(path)
	require.NoError(t, err)
	require.Equal(t, "abc123", got)

	// A file others may read is not trusted.
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = readSecretFile(path)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, "others may read or write it")
	require.NoError(t, os.Chmod(path, 0o600))

	// Nor one in a directory others may write to, for reading or writing.
	require.NoError(t, os.Chmod(filepath.Dir(path), 0o755))
	_, err = readSecretFile(path)
	require.ErrorContains(t, err, "others may read or write it")
	require.ErrorIs(t, writeSecretFile(path, "x"), hcerr.ErrInvalidArgument)
	require.NoError(t, os.Chmod(filepath.Dir(path), 0o700))

	// Nor a symbolic link, nor a directory where the file should be.
	link := filepath.Join(filepath.Dir(path), "link.secret")
	require.NoError(t, os.Symlink(path, link))
	_, err = readSecretFile(link)
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrNotExist)
	sub := filepath.Join(filepath.Dir(path), "sub.secret")
	require.NoError(t, os.Mkdir(sub, 0o700))
	_, err = readSecretFile(sub)
	require.ErrorContains(t, err, "is not a regular file")

	// Nor a directory of someone else (the owner check, with another uid).
	fi, err = os.Lstat(filepath.Dir(path))
	require.NoError(t, err)
	err = checkPrivate(filepath.Dir(path), fi, true, os.Getuid()+1)
	require.ErrorContains(t, err, "not to this user")

	// A file not there yet is ErrNotExist, which a rank waits out.
	_, err = readSecretFile(filepath.Join(filepath.Dir(path), "absent.secret"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
