package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzStoreValues feeds a rank the store values of a rendezvous: any
// address value and secret. Nothing may panic; an error quotes what it read
// cut short; values are taken only when the address is this library's
// (a nonce, a space, a host:port that can be dialled) and its nonce is the
// secret's. (Values of another rendezvous are read again until a short
// deadline.) Its seeds run in every `go test`.
func FuzzStoreValues(f *testing.F) {
	secret := NewSecret()
	nonce := JobNonce(secret)
	for _, seed := range []struct{ addr, secret string }{
		{nonce + " 127.0.0.1:4242", secret},
		{nonce + " [::1]:4242", secret},
		{nonce + " closed", secret},
		{JobNonce("another") + " 127.0.0.1:4242", secret},
		{"127.0.0.1:4242", secret},
		{nonce + " 127.0.0.1:99999", secret},
		{nonce + " 127.0.0.1:0", secret},
		{nonce + " :", secret},
		{nonce + " " + strings.Repeat("h", 300) + ":1", secret},
		{nonce + "  127.0.0.1:1", secret},
		{nonce + " 127.0.0.1:1", ""},
		{"", ""},
		{strings.Repeat("\xff", 100), strings.Repeat("s", 2000)},
	} {
		f.Add(seed.addr, seed.secret)
	}
	f.Fuzz(func(t *testing.T, addrValue, secretValue string) {
		store := newMemStore()
		ctx := context.Background()
		if err := store.Set(ctx, "p/"+StoreKeyAddr, []byte(addrValue)); err != nil {
			t.Fatal(err)
		}
		if err := store.Set(ctx, "p/"+StoreKeySecret, []byte(secretValue)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		addr, got, err := readStore(ctx, store, 1, "p/"+StoreKeyAddr, "p/"+StoreKeySecret, 20*time.Millisecond)
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("an error of %d bytes for values of %d and %d bytes", n, len(addrValue), len(secretValue))
			}
			return
		}
		if got != secretValue || JobNonce(got) != addrValue[:16] || addrValue[17:] != addr {
			t.Fatalf("took address %q and secret %q from %q and %q", addr, got, addrValue, secretValue)
		}
		if err := checkAddr(addr, false); err != nil {
			t.Fatalf("took address %q: %v", addr, err)
		}
	})
}
