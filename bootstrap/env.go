package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	EnvRunID          = "TORCHELASTIC_RUN_ID" // optional; mixed into the derived token

	EnvPort    = "HIERCOLL_PORT"    // rendezvous port; default MASTER_PORT+1
	EnvToken   = "HIERCOLL_TOKEN"   // per-job secret; default derived from the job's variables
	EnvTimeout = "HIERCOLL_TIMEOUT" // Go duration ("90s"); default DefaultTimeout
)

// EnvPresent reports whether this process was started by a torchrun-style
// launcher (RANK and WORLD_SIZE are set), so that a command can choose
// between a single-process world and FromEnv.
func EnvPresent() bool {
	return os.Getenv(EnvRank) != "" && os.Getenv(EnvWorldSize) != ""
}

// FromEnv joins the multi-process world described by the environment (see
// EnvConfig).
func FromEnv(ctx context.Context) (Comm, error) {
	cfg, err := EnvConfig()
	if err != nil {
		return nil, err
	}
	return DialTCP(ctx, cfg)
}

// EnvConfig reads the TCPConfig of this rank from the environment.
//
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
// are required. torchrun's agent and torch.distributed already listen on
// MASTER_PORT, so the rendezvous uses HIERCOLL_PORT, or MASTER_PORT+1 when it
// is unset. The token is HIERCOLL_TOKEN, or when that is unset a hash of
// TORCHELASTIC_RUN_ID, MASTER_ADDR, MASTER_PORT and WORLD_SIZE: enough to
// keep two jobs from joining each other by mistake, but not a secret, since
// anyone who can read those values can compute it. Give a real secret
// through HIERCOLL_TOKEN where the network is shared.
func EnvConfig() (TCPConfig, error) {
	return configFrom(os.LookupEnv)
}

func configFrom(lookup func(string) (string, bool)) (TCPConfig, error) {
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
			return 0, fmt.Errorf("bootstrap: environment variable %s=%q is not an integer in [%d, %d]: %w", name, v, lo, hi, hcerr.ErrInvalidArgument)
		}
		return n, nil
	}
	var cfg TCPConfig
	var err error
	if cfg.Size, err = getInt(EnvWorldSize, 1, maxWorld); err != nil {
		return TCPConfig{}, err
	}
	if cfg.Rank, err = getInt(EnvRank, 0, cfg.Size-1); err != nil {
		return TCPConfig{}, err
	}
	if cfg.LocalSize, err = getInt(EnvLocalWorldSize, 1, cfg.Size); err != nil {
		return TCPConfig{}, err
	}
	if cfg.LocalRank, err = getInt(EnvLocalRank, 0, cfg.LocalSize-1); err != nil {
		return TCPConfig{}, err
	}
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

	if token, ok := lookup(EnvToken); ok {
		if token == "" {
			return TCPConfig{}, fmt.Errorf("bootstrap: environment variable %s is set but empty: %w", EnvToken, hcerr.ErrInvalidArgument)
		}
		cfg.Token = token
	} else {
		runID, _ := lookup(EnvRunID)
		sum := sha256.Sum256(fmt.Appendf(nil, "hiercoll token v1\x00%s\x00%s\x00%d\x00%d", runID, masterAddr, masterPort, cfg.Size))
		cfg.Token = hex.EncodeToString(sum[:])
	}

	if v, ok := lookup(EnvTimeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return TCPConfig{}, fmt.Errorf("bootstrap: environment variable %s=%q is not a positive duration such as 90s: %w", EnvTimeout, v, hcerr.ErrInvalidArgument)
		}
		cfg.Timeout = d
	}
	// Node-major numbering is the launcher's promise; check it here, where
	// the message can name the variables.
	if cfg.Size%cfg.LocalSize != 0 || cfg.LocalRank != cfg.Rank%cfg.LocalSize {
		return TCPConfig{}, fmt.Errorf("bootstrap: %s=%d, %s=%d, %s=%d, %s=%d are not node-major (local rank = rank mod local world size, which divides the world size): %w",
			EnvRank, cfg.Rank, EnvWorldSize, cfg.Size, EnvLocalRank, cfg.LocalRank, EnvLocalWorldSize, cfg.LocalSize, hcerr.ErrInvalidArgument)
	}
	return cfg, nil
}
