package main

/*
#include <stdlib.h>
#include "hiercoll.h"

static int hc_call_store_set(hc_store_set_fn f, void* user, const char* key, const void* value, int64_t len) {
	return f(user, key, value, len);
}

static int hc_call_store_get(hc_store_get_fn f, void* user, const char* key, int64_t timeout_ms, void* buf,
                             int64_t cap, int64_t* len) {
	return f(user, key, timeout_ms, buf, cap, len);
}
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/seed12530e24/hiercoll/device"
)

// cStore is the caller's key-value store (hc_init_store) as a
// bootstrap.Store: its two C functions, called on the calling thread.
type cStore struct {
	set  C.hc_store_set_fn
	get  C.hc_store_get_fn
	user unsafe.Pointer
}

// maxStoreValue bounds a value read back (DialStore's are an address and a
// hex secret).
const maxStoreValue = 4096

func (s cStore) Set(_ context.Context, key string, value []byte) error {
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	cval := C.CBytes(value)
	defer C.free(cval)
	if rc := C.hc_call_store_set(s.set, s.user, ckey, cval, C.int64_t(len(value))); rc != 0 {
		return fmt.Errorf("hiercoll: the store's set of %s failed (%d)", key, int(rc))
	}
	return nil
}

func (s cStore) Get(ctx context.Context, key string) ([]byte, error) {
	timeout := time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Millisecond, time.Until(d))
	}
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	buf := C.malloc(maxStoreValue)
	defer C.free(buf)
	var n C.int64_t
	if rc := C.hc_call_store_get(s.get, s.user, ckey, C.int64_t(timeout.Milliseconds()), buf, maxStoreValue, &n); rc != 0 {
		return nil, fmt.Errorf("hiercoll: the store's get of %s failed within %v (%d): %w", key, timeout, int(rc), device.ErrTimeout)
	}
	if n < 0 || n > maxStoreValue {
		return nil, fmt.Errorf("hiercoll: the store's value of %s has %d bytes (at most %d): %w", key, int64(n), maxStoreValue, device.ErrInvalidArgument)
	}
	return C.GoBytes(buf, C.int(n)), nil
}
