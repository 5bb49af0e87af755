package bootstrap

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// The environment a torchrun-style launcher gives each rank, and hiercoll's
// own additions.
const (
	EnvRank           = "RANK"
	EnvWorldSize      = "WORLD_SIZE"
	EnvLocalRank      = "LOCAL_RANK"
	EnvLocalWorldSize = "LOCAL_WORLD_SIZE"
	EnvMasterAddr     = "MASTER_ADDR"
	EnvMasterPort     = "MASTER_PORT"
	EnvRunID          = "TORCHELASTIC_RUN_ID" // optional; names the job's secret file and the insecure token

	EnvPort          = "HIERCOLL_PORT"           // rendezvous port; default MASTER_PORT+1
	EnvToken         = "HIERCOLL_TOKEN"          // per-job secret, the same on every rank (see EnvConfig)
	EnvInsecureToken = "HIERCOLL_INSECURE_TOKEN" // "1": accept a token derived from the job's public variables
	EnvTimeout       = "HIERCOLL_TIMEOUT"        // Go duration ("90s"); default DefaultTimeout
)

// EnvPresent reports whether this process was started by a torchrun-style
// launcher (RANK and WORLD_SIZE are set), so that a command can choose
// between a single-process world and FromEnv.
func EnvPresent() bool {
	return os.Getenv(EnvRank) != "" && os.Getenv(EnvWorldSize) != ""
}

// FromEnv joins the multi-process world described by the environment (see
// EnvConfig). With HIERCOLL_INSECURE_TOKEN=1 in force it says so on stderr.
func FromEnv(ctx context.Context) (Comm, error) {
	cfg, err := EnvConfig()
	if err != nil {
		return nil, err
	}
	if insecureToken(os.LookupEnv) {
		fmt.Fprintf(os.Stderr, "hiercoll: rank %d: %s=1: the rendezvous token is derived from the job's public variables; "+
			"any user who can see them can join this job as a rank (set %s to a random value to prevent it)\n", cfg.Rank, EnvInsecureToken, EnvToken)
	}
	return DialTCP(ctx, cfg)
}

// EnvConfig reads the TCPConfig of this rank from the environment. It only
// reads: the secret file it may name is written and read by DialTCP.
//
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
// are required. torchrun's agent and torch.distributed already listen on
// MASTER_PORT, so the rendezvous uses HIERCOLL_PORT, or MASTER_PORT+1 when it
// is unset.
//
// The job's secret is the first of these that applies:
//   - HIERCOLL_TOKEN (Token): the same value on every rank, hard to guess.
//     `hiercoll launch` sets a random one for each job.
//   - HIERCOLL_INSECURE_TOKEN=1 (Token): a hash of TORCHELASTIC_RUN_ID,
//     MASTER_ADDR, MASTER_PORT and WORLD_SIZE. It keeps two jobs apart but is
//     no secret: anyone who can see those values (any user of the host, in
//     /proc) can compute it and join as a rank. Only by explicit choice, for
//     setups that cannot do better; FromEnv warns.
//   - every rank on this host (WORLD_SIZE == LOCAL_WORLD_SIZE) (TokenFile):
//     rank 0 makes a fresh random secret and shares it through a file that
//     only this user can read, named from the job's public variables, in
//     $XDG_RUNTIME_DIR/hiercoll or else $TMPDIR/hiercoll-<uid> (see
//     TCPConfig.TokenFile). The ranks must run as one user and see the same
//     directory.
//   - otherwise an error naming HIERCOLL_TOKEN: ranks on several hosts share
//     no file, and a job whose secret anyone can compute is not started
//     silently. Under torchrun with torch.distributed, the store bootstrap
//     (DialStore) needs neither.
func EnvConfig() (TCPConfig, error) {
	return configFrom(os.LookupEnv)
}

// insecureToken reports whether the environment asks for the derived token
// (HIERCOLL_INSECURE_TOKEN=1 without HIERCOLL_TOKEN).
func insecureToken(lookup func(string) (string, bool)) bool {
	_, hasToken := lookup(EnvToken)
	v, _ := lookup(EnvInsecureToken)
	return !hasToken && v == "1"
}

// EnvPlace reads this process's place in the job from the torchrun
// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), and the
// timeout from HIERCOLL_TIMEOUT, into a config with nothing else set: for a
// rendezvous that learns the rest elsewhere (DialStore).
func EnvPlace() (TCPConfig, error) {
	cfg, _, err := placeFrom(os.LookupEnv)
	return cfg, err
}

// envGetters reads variables through lookup, with errors that name them.
type envGetters struct {
	get    func(name string) (string, error)
	getInt func(name string, lo, hi int) (int, error)
}

// placeFrom reads the rank, world size, local rank and local world size.
func placeFrom(lookup func(string) (string, bool)) (TCPConfig, envGetters, error) {
	get := func(name string) (string, error) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("bootstrap: environment variable %s is not set (launch with torchrun or `hiercoll launch`): %w", name, hcerr.ErrInvalidArgument)
		}
		return v, nil
	}
	getInt := func(name string, lo, hi int) (int, error) {
		v, err := get(name)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("bootstrap: environment variable %s=%s is not an integer in [%d, %d]: %w", name, hcerr.Quote(v), lo, hi, hcerr.ErrInvalidArgument)
		}
		return n, nil
	}
	var cfg TCPConfig
	var err error
	if cfg.Size, err = getInt(EnvWorldSize, 1, maxWorld); err != nil {
		return TCPConfig{}, envGetters{}, err
	}
	if cfg.Rank, err = getInt(EnvRank, 0, cfg.Size-1); err != nil {
		return TCPConfig{}, envGetters{}, err
	}
	if cfg.LocalSize, err = getInt(EnvLocalWorldSize, 1, cfg.Size); err != nil {
		return TCPConfig{}, envGetters{}, err
	}
	if cfg.LocalRank, err = getInt(EnvLocalRank, 0, cfg.LocalSize-1); err != nil {
		return TCPConfig{}, envGetters{}, err
	}
	if v, ok := lookup(EnvTimeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return TCPConfig{}, envGetters{}, fmt.Errorf("bootstrap: environment variable %s=%s is not a positive duration such as 90s: %w", EnvTimeout, hcerr.Quote(v), hcerr.ErrInvalidArgument)
		}
		cfg.Timeout = d
	}
	return cfg, envGetters{get, getInt}, nil
}

func configFrom(lookup func(string) (string, bool)) (TCPConfig, error) {
	cfg, env, err := placeFrom(lookup)
	if err != nil {
		return TCPConfig{}, err
	}
	get, getInt := env.get, env.getInt
	masterAddr, err := get(EnvMasterAddr)
	if err != nil {
		return TCPConfig{}, err
	}
	masterPort, err := getInt(EnvMasterPort, 1, 65535)
	if err != nil {
		return TCPConfig{}, err
	}
	port := masterPort + 1
	if _, ok := lookup(EnvPort); ok {
		if port, err = getInt(EnvPort, 1, 65535); err != nil {
			return TCPConfig{}, err
		}
	} else if port > 65535 {
		return TCPConfig{}, fmt.Errorf("bootstrap: %s=%d leaves no port above it for the rendezvous; set %s: %w",
			EnvMasterPort, masterPort, EnvPort, hcerr.ErrInvalidArgument)
	}
	cfg.Addr = net.JoinHostPort(masterAddr, strconv.Itoa(port))

	token, hasToken := lookup(EnvToken)
	if hasToken && token == "" {
		return TCPConfig{}, fmt.Errorf("bootstrap: environment variable %s is set but empty: %w", EnvToken, hcerr.ErrInvalidArgument)
	}
	if v, ok := lookup(EnvInsecureToken); ok && v != "" && v != "0" && v != "1" {
		return TCPConfig{}, fmt.Errorf("bootstrap: environment variable %s=%s: set it to 1 to accept a guessable token, or leave it unset: %w",
			EnvInsecureToken, hcerr.Quote(v), hcerr.ErrInvalidArgument)
	}

	// Node-major numbering is the launcher's promise; check it here, where
	// the message can name the variables.
	if cfg.Size%cfg.LocalSize != 0 || cfg.LocalRank != cfg.Rank%cfg.LocalSize {
		return TCPConfig{}, fmt.Errorf("bootstrap: %s=%d, %s=%d, %s=%d, %s=%d are not node-major (local rank = rank mod local world size, which divides the world size): %w",
			EnvRank, cfg.Rank, EnvWorldSize, cfg.Size, EnvLocalRank, cfg.LocalRank, EnvLocalWorldSize, cfg.LocalSize, hcerr.ErrInvalidArgument)
	}

	runID, _ := lookup(EnvRunID)
	switch {
	case hasToken:
		cfg.Token = token
	case insecureToken(lookup):
		cfg.Token = derivedToken(runID, masterAddr, masterPort, cfg.Size)
	case cfg.Size == cfg.LocalSize:
		cfg.TokenFile = secretFilePath(lookup, runID, masterAddr, masterPort, port, cfg.Size)
	default:
		return TCPConfig{}, fmt.Errorf("bootstrap: the job spans %d nodes (%s=%d, %s=%d) and %s is not set: "+
			"set it to the same random value on every rank (`hiercoll launch` does; `openssl rand -hex 32` makes one), "+
			"or rendezvous through torch.distributed's store; %s=1 accepts a token derived from the job's public variables, "+
			"which any user who can see them can compute: %w",
			cfg.Size/cfg.LocalSize, EnvWorldSize, cfg.Size, EnvLocalWorldSize, cfg.LocalSize, EnvToken, EnvInsecureToken, hcerr.ErrInvalidArgument)
	}
	return cfg, nil
}
