/*
 * The library sees the C environment as it is when each entry point is
 * called: a variable set after the library was loaded, one unset after,
 * and HIERCOLL_TIMEOUT for hc_init_store.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hiercoll.h"

static int failures;

static void check(int line, int ok, const char* what) {
	if (!ok) {
		char msg[1024];
		hc_last_error(msg, sizeof msg);
		fprintf(stderr, "FAIL line %d: %s (last error: \"%s\")\n", line, what, msg);
		failures++;
	}
}
#define CHECK(cond, what) check(__LINE__, (cond), (what))

static int store_set(void* user, const char* key, const void* value, int64_t len) {
	(void)user, (void)key, (void)value, (void)len;
	return 1;
}

/* A store that is down: it records the timeout it was given and fails. */
static int64_t get_timeout_ms = -1;
static int store_get(void* user, const char* key, int64_t timeout_ms, void* buf, int64_t cap, int64_t* len) {
	(void)user, (void)key, (void)buf, (void)cap, (void)len;
	get_timeout_ms = timeout_ms;
	return 1;
}

/* Started with HIERCOLL_SIM_MEMORY=4K: unset, the cap is gone. */
static int unset_after_load(void) {
	int64_t w;
	if (hc_init_sim(1, 1, &w) != HC_OK) {
		fprintf(stderr, "FAIL: hc_init_sim\n");
		return 1;
	}
	uint64_t p = 0;
	CHECK(hc_sim_alloc(w, 65536, &p) == HC_ERR_INVALID, "HIERCOLL_SIM_MEMORY=4K from the start is in force");
	unsetenv("HIERCOLL_SIM_MEMORY");
	CHECK(hc_sim_alloc(w, 65536, &p) == HC_OK, "HIERCOLL_SIM_MEMORY unset after load is gone");
	if (p != 0) CHECK(hc_sim_free(w, p) == HC_OK, "hc_sim_free");
	CHECK(hc_world_close(w) == HC_OK, "hc_world_close");
	if (failures) return 1;
	printf("environ ok\n");
	return 0;
}

int main(int argc, char** argv) {
	if (argc == 2 && strcmp(argv[1], "unset") == 0) return unset_after_load();

	/* Set after load: a 4 KiB cap on simulated memory refuses 64 KiB. */
	setenv("HIERCOLL_SIM_MEMORY", "4K", 1);
	int64_t w;
	if (hc_init_sim(1, 1, &w) != HC_OK) {
		fprintf(stderr, "FAIL: hc_init_sim\n");
		return 1;
	}
	uint64_t p = 0;
	CHECK(hc_sim_alloc(w, 65536, &p) == HC_ERR_INVALID, "HIERCOLL_SIM_MEMORY=4K set after load is in force");
	/* Unset: the cap is the default again. */
	unsetenv("HIERCOLL_SIM_MEMORY");
	CHECK(hc_sim_alloc(w, 65536, &p) == HC_OK, "HIERCOLL_SIM_MEMORY unset after load is gone");
	if (p != 0) CHECK(hc_sim_free(w, p) == HC_OK, "hc_sim_free");
	CHECK(hc_world_close(w) == HC_OK, "hc_world_close");

	/* hc_init_store bounds its waits by HIERCOLL_TIMEOUT (2 s here, not the 60 s default). */
	setenv("RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	setenv("LOCAL_RANK", "1", 1);
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	setenv("HIERCOLL_TIMEOUT", "2s", 1);
	int64_t h = 0;
	CHECK(hc_init_store(store_set, store_get, NULL, "p/", "", &h) != HC_OK, "hc_init_store with a store that is down fails");
	CHECK(get_timeout_ms > 0 && get_timeout_ms <= 2000, "the store's get is bounded by HIERCOLL_TIMEOUT");
	if (get_timeout_ms > 2000) fprintf(stderr, "the store's get was given %lld ms\n", (long long)get_timeout_ms);

	if (failures) return 1;
	printf("environ ok\n");
	return 0;
}
