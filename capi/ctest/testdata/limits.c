/*
 * Sizes and addresses at the C ABI's limits on a 1 x 1 simulated world, run
 * with HIERCOLL_SIM_MEMORY=64M: each call fails with a clear code and
 * message (no crash, no Go stack trace), and the world still closes.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hiercoll.h"

static int failures;

static void expect(int line, const char* what, int rc, int want, const char* text) {
	char msg[2048];
	hc_last_error(msg, sizeof msg);
	if (rc != want || strstr(msg, text) == NULL || strstr(msg, "goroutine") != NULL) {
		fprintf(stderr, "FAIL line %d: %s returned %d (want %d): \"%s\" (want \"%s\", no stack trace)\n", line, what, rc,
		        want, msg, text);
		failures++;
	}
}
#define EXPECT(expr, want, text) expect(__LINE__, #expr, (expr), (want), (text))

int main(void) {
	int64_t w;
	if (hc_init_sim(1, 1, &w) != HC_OK) {
		fprintf(stderr, "FAIL: hc_init_sim\n");
		return 1;
	}
	int64_t ctx = 0;
	/* Each dimension in range, the product not. */
	EXPECT(hc_rs2d_create(w, (int64_t)1 << 31, (int64_t)1 << 31, HC_F32, 0, 0, &ctx), HC_ERR_INVALID, "exceeds 2^50");
	EXPECT(hc_rs2d_create(w, (int64_t)1 << 40, (int64_t)1 << 22, HC_F32, 0, 0, &ctx), HC_ERR_INVALID, "exceeds 2^50");
	EXPECT(hc_rs2d_create(w, (int64_t)1 << 39, (int64_t)1 << 23, HC_BF16, 0, 0, &ctx), HC_ERR_INVALID, "exceeds 2^50");

	uint64_t p = 0, q = 0;
	EXPECT(hc_sim_alloc(w, (int64_t)1 << 36, &p), HC_ERR_INVALID, "HIERCOLL_SIM_MEMORY");
	EXPECT(hc_sim_alloc(w, INT64_MAX, &p), HC_ERR_INVALID, "HIERCOLL_SIM_MEMORY");
	EXPECT(hc_sim_alloc(w, -1, &p), HC_ERR_INVALID, "-1 bytes");
	if (hc_sim_alloc(w, 48 << 20, &p) != HC_OK) {
		fprintf(stderr, "FAIL: hc_sim_alloc of 48 MiB\n");
		return 1;
	}
	EXPECT(hc_sim_alloc(w, 32 << 20, &q), HC_ERR_OTHER, "out of memory");

	char buf[64] = {0};
	EXPECT(hc_sim_copy_to_device(w, p - 8, buf, sizeof buf), HC_ERR_INVALID, "not device memory");
	EXPECT(hc_sim_copy_to_device(w, p + ((uint64_t)1 << 63), buf, sizeof buf), HC_ERR_INVALID, "runs past the end");
	EXPECT(hc_sim_copy_to_host(w, buf, p + ((uint64_t)1 << 63) + 16, sizeof buf), HC_ERR_INVALID, "runs past the end");
	EXPECT(hc_sim_copy_to_device(w, p, buf, -5), HC_ERR_INVALID, "copy of -5 bytes");

	if (hc_sim_free(w, p) != HC_OK || hc_sim_alloc(w, 32 << 20, &q) != HC_OK || hc_sim_free(w, q) != HC_OK) {
		fprintf(stderr, "FAIL: freeing gives the memory back\n");
		failures++;
	}
	if (hc_world_close(w) != HC_OK) {
		fprintf(stderr, "FAIL: hc_world_close\n");
		failures++;
	}
	if (failures) return 1;
	printf("ok: limits refused with clear errors\n");
	return 0;
}
