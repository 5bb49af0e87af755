package bootstrap_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/bootstrap"
)

// kvStore stands for the job's key-value store, torch.distributed's say.
type kvStore interface {
	Set(ctx context.Context, key string, value []byte) error
	Get(ctx context.Context, key string) ([]byte, error) // blocks until key is set
}

// A job that shares a key-value store rendezvouses through it: rank 0 listens
// on a port the kernel picks and publishes it with a fresh secret.
func ExampleDialStore() {
	var store kvStore // the job's store
	rank, size := 0, 4
	comm, err := bootstrap.DialStore(context.Background(), store, "hiercoll/1/", bootstrap.TCPConfig{
		Rank: rank, Size: size, LocalRank: rank % 4, LocalSize: 4,
		Addr: "10.1.2.3:0", // rank 0 only: this host as the others reach it; port 0
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer comm.Close()
}

// The same steps, for a caller whose store lives in another language (the
// Python package over the C ABI): rank 0 makes the secret and the listener
// and publishes both; the others read them and connect.
func ExampleListen() {
	ctx := context.Background()
	publish := func(key, value string) {} // store.set(key, value)
	lookup := func(key string) string { return "" }
	rank, size := 0, 4
	cfg := bootstrap.TCPConfig{Rank: rank, Size: size, LocalRank: rank, LocalSize: size}
	if rank == 0 {
		ln, err := bootstrap.Listen("10.1.2.3:0")
		if err != nil {
			fmt.Println(err)
			return
		}
		cfg.Token, cfg.Listener = bootstrap.NewSecret(), ln
		publish("hiercoll/1/secret", cfg.Token)
		publish("hiercoll/1/addr", bootstrap.JobNonce(cfg.Token)+" "+ln.Addr())
	} else {
		// An address whose nonce is not the secret's belongs to another
		// rendezvous: read both again until they agree.
		nonce, addr, _ := strings.Cut(lookup("hiercoll/1/addr"), " ")
		cfg.Addr, cfg.Token = addr, lookup("hiercoll/1/secret")
		if nonce != bootstrap.JobNonce(cfg.Token) {
			fmt.Println("values of another rendezvous")
			return
		}
	}
	comm, err := bootstrap.DialTCP(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer comm.Close()
}
