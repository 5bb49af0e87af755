package bootstrap

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// secretBytes is the entropy of NewSecret.
const secretBytes = 32

// NewSecret returns a fresh per-job secret for TCPConfig.Token: 32 bytes
// from crypto/rand, hex-encoded (64 characters).
func NewSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b) // never fails (it aborts the program instead)
	return hex.EncodeToString(b)
}

// derivedToken is the token of HIERCOLL_INSECURE_TOKEN=1: a hash of the
// job's public variables, the same on every rank, and no secret.
func derivedToken(runID, masterAddr string, masterPort, size int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "hiercoll token v1\x00%s\x00%s\x00%d\x00%d", runID, masterAddr, masterPort, size))
	return hex.EncodeToString(sum[:])
}

// A secret file carries rank 0's fresh secret to the other ranks of a job
// that runs on one host. It lives in a directory of the user's own:
// $XDG_RUNTIME_DIR/hiercoll, else $TMPDIR/hiercoll-<uid> (/tmp when TMPDIR is
// unset), mode 0700, and has mode 0600. Its name is a hash of the job's
// public variables, so every rank finds it and two jobs do not meet. Before
// trusting a directory or a file, a rank checks that it is this user's and
// that nobody else can read or write it.

// maxSecretFile bounds what a rank reads from a secret file.
const maxSecretFile = 1024

// secretDir is the per-user directory of secret files.
func secretDir(lookup func(string) (string, bool)) string {
	if d, ok := lookup("XDG_RUNTIME_DIR"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, "hiercoll")
	}
	tmp, ok := lookup("TMPDIR")
	if !ok || !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "hiercoll-"+strconv.Itoa(os.Getuid()))
}

// secretFilePath names the secret file of a job from its public variables.
func secretFilePath(lookup func(string) (string, bool), runID, masterAddr string, masterPort, port, size int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "hiercoll secret file v1\x00%s\x00%s\x00%d\x00%d\x00%d", runID, masterAddr, masterPort, port, size))
	return filepath.Join(secretDir(lookup), "job-"+hex.EncodeToString(sum[:12])+".secret")
}

// checkPrivate checks that fi (from Lstat or an open file's Stat) is a
// directory (dir) or a regular file of this user that no one else may read
// or write.
func checkPrivate(path string, fi fs.FileInfo, dir bool, uid int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("bootstrap: %s %s; the job's secret must be private to this user: %w", path, fmt.Sprintf(format, args...), hcerr.ErrInvalidArgument)
	}
	switch {
	case dir && !fi.IsDir():
		return bad("is not a directory (%v)", fi.Mode().Type())
	case !dir && !fi.Mode().IsRegular():
		return bad("is not a regular file (%v)", fi.Mode().Type())
	}
	owner, ok := fileOwner(fi)
	switch {
	case !ok:
		return fmt.Errorf("bootstrap: cannot tell who owns %s on this system; set %s: %w", path, EnvToken, hcerr.ErrNotSupported)
	case owner != uid:
		return bad("belongs to uid %d, not to this user (uid %d)", owner, uid)
	case fi.Mode().Perm()&0o077 != 0:
		return bad("has mode %v: others may read or write it", fi.Mode().Perm())
	}
	return nil
}

// privateDir makes dir (mode 0700) unless it exists, and checks it.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("bootstrap: cannot make the directory of the job's secret: %w (%w)", err, hcerr.ErrInvalidArgument)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("bootstrap: %w (%w)", err, hcerr.ErrInvalidArgument)
	}
	return checkPrivate(dir, fi, true, os.Getuid())
}

// writeSecretFile puts secret in path, replacing a file a dead job may have
// left there. Rank 0 writes it before its server answers anyone.
func writeSecretFile(path, secret string) error {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".job-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("bootstrap: writing the job's secret: %w (%w)", err, hcerr.ErrInvalidArgument)
	}
	_, err = io.WriteString(f, secret+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("bootstrap: writing the job's secret: %w (%w)", err, hcerr.ErrInvalidArgument)
	}
	return nil
}

// readSecretFile reads the secret rank 0 wrote to path, after checking that
// the directory and the file are private to this user. A file not there
// (yet) is an error that matches fs.ErrNotExist.
func readSecretFile(path string) (string, error) {
	dir := filepath.Dir(path)
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if err := checkPrivate(dir, fi, true, os.Getuid()); err != nil {
		return "", err
	}
	f, err := openNoFollow(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", err
	}
	if err := checkPrivate(path, fi, false, os.Getuid()); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" || len(b) > maxSecretFile {
		return "", fmt.Errorf("bootstrap: %s does not hold a secret (%d bytes): %w", path, len(b), hcerr.ErrInvalidArgument)
	}
	return secret, nil
}
