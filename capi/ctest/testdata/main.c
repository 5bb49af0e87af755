/*
 * A C caller of libhiercoll: a 2 x 2 simulated world driven through the C ABI
 * from 4 threads, one per rank.
 *
 *   main            the correctness run (exit status 0 when every check passes)
 *   main bench N    world 1 x 1: host time per hc_rs2d_reduce_scatter over N
 *                   enqueue-only calls (prints "c_abi_ns_per_call <ns>")
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hiercoll.h"

#define NODES 2
#define GPUS 2
#define WORLD (NODES * GPUS)
#define ROWS_PER 3
#define N 5 /* odd on purpose */
#define MAX_M (2 * WORLD * ROWS_PER)
#define SYNC_MS 20000

static int64_t worlds[WORLD];
static pthread_barrier_t barrier;
static int failures;

static void fail(int rank, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(int rank, const char* fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d: FAIL: ", rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	__atomic_fetch_add(&failures, 1, __ATOMIC_SEQ_CST);
}

/* CALL runs an ABI call that must succeed; on failure it reports the code
 * and the thread's last error and ends the rank's thread. */
#define CALL(rank, expr)                                                                       \
	do {                                                                                       \
		int rc_ = (expr);                                                                      \
		if (rc_ != HC_OK) {                                                                    \
			char msg_[1024];                                                                   \
			hc_last_error(msg_, sizeof msg_);                                                  \
			fail(rank, "%s:%d: %s returned %d: %s", __FILE__, __LINE__, #expr, rc_, msg_);   \
			return NULL;                                                                       \
		}                                                                                      \
	} while (0)

/* EXPECT_ERR runs an ABI call that must fail with code want and a message
 * that contains text. */
#define EXPECT_ERR(rank, expr, want, text)                                                       \
	do {                                                                                         \
		int rc_ = (expr);                                                                        \
		char msg_[1024];                                                                         \
		int len_ = hc_last_error(msg_, sizeof msg_);                                             \
		if (rc_ != (want) || len_ <= 0 || strstr(msg_, (text)) == NULL) {                        \
			fail(rank, "%s:%d: %s returned %d (want %d), last error %d bytes \"%s\" (want \"%s\")", \
			     __FILE__, __LINE__, #expr, rc_, (want), len_, msg_, (text));                    \
		}                                                                                        \
	} while (0)

/* Mixed-sign inputs; 4 ranks' sums stay far from int32 overflow. */
static int32_t input_value(int rank, int call, int64_t i) {
	uint32_t x = (uint32_t)(rank * 7919 + call * 104729) ^ (uint32_t)((uint64_t)i * 2654435761u);
	return (int32_t)(x % 2000001u) - 1000000;
}

/* One reduce-scatter of m rows through the ABI, checked bit for bit against
 * the sum on the CPU. With signals, the rank first raises every
 * destination's GEMM signal in consumption order, as a producer would. */
static int run_call(int rank, int64_t ctx, uint64_t stream, uint64_t in, uint64_t out, int64_t m, int call,
                    int signals) {
	int64_t count = m * N, rows_per = m / WORLD;
	int32_t* host = malloc(count * sizeof(int32_t));
	int32_t* got = malloc(rows_per * N * sizeof(int32_t));
	int ok = 0;
	char msg[1024];
	int rc;
	for (int64_t i = 0; i < count; i++) host[i] = input_value(rank, call, i);
	if ((rc = hc_sim_copy_to_device(worlds[rank], in, host, count * sizeof(int32_t))) != HC_OK) goto out;
	if (signals) {
		int order[WORLD];
		if ((rc = hc_rs2d_consumption_order(ctx, order, WORLD)) != HC_OK) goto out;
		for (int i = 0; i < WORLD; i++)
			if ((rc = hc_rs2d_raise_signal(ctx, order[i], stream)) != HC_OK) goto out;
	}
	if ((rc = hc_rs2d_reduce_scatter(ctx, in, m, out, stream)) != HC_OK) goto out;
	if ((rc = hc_stream_synchronize(worlds[rank], stream, SYNC_MS)) != HC_OK) goto out;
	if ((rc = hc_sim_copy_to_host(worlds[rank], got, out, rows_per * N * sizeof(int32_t))) != HC_OK) goto out;
	ok = 1;
	for (int64_t j = 0; j < rows_per * N; j++) {
		int64_t want = 0;
		for (int r = 0; r < WORLD; r++) want += input_value(r, call, rank * rows_per * N + j);
		if (got[j] != (int32_t)want) {
			fail(rank, "call %d (M=%lld): element %lld is %d, want %lld", call, (long long)m, (long long)j, got[j],
			     (long long)want);
			ok = 0;
			break;
		}
	}
out:
	if (!ok && rc != HC_OK) {
		hc_last_error(msg, sizeof msg);
		fail(rank, "call %d (M=%lld): code %d: %s", call, (long long)m, rc, msg);
	}
	free(host);
	free(got);
	return ok;
}

static void* rank_main(void* arg) {
	int rank = (int)(intptr_t)arg;
	int64_t w = worlds[rank];
	int r, size, lr, ls, backend, ordinal;

	CALL(rank, hc_world_info(w, &r, &size, &lr, &ls));
	if (r != rank || size != WORLD || lr != rank % GPUS || ls != GPUS)
		fail(rank, "hc_world_info: rank %d size %d local %d/%d", r, size, lr, ls);
	CALL(rank, hc_world_device(w, &backend, &ordinal));
	if (backend != HC_BACKEND_SIM) fail(rank, "backend %d, want HC_BACKEND_SIM", backend);

	uint64_t stream, in, out;
	CALL(rank, hc_stream_create(w, &stream));
	CALL(rank, hc_sim_alloc(w, MAX_M * N * sizeof(int32_t), &in));
	CALL(rank, hc_sim_alloc(w, MAX_M / WORLD * N * sizeof(int32_t), &out));

	/* Arguments checked before anything collective starts. */
	int64_t ctx = 0;
	EXPECT_ERR(rank, hc_rs2d_create(w, MAX_M, N, 7, 0, 0, &ctx), HC_ERR_INVALID, "dtype 7");
	EXPECT_ERR(rank, hc_rs2d_create(w, MAX_M, N, HC_I32, 0, 0, NULL), HC_ERR_INVALID, "ctx must not be NULL");
	EXPECT_ERR(rank, hc_rs2d_create(123456789, MAX_M, N, HC_I32, 0, 0, &ctx), HC_ERR_INVALID,
	           "123456789 is not the handle of a live world");

	CALL(rank, hc_rs2d_create(w, MAX_M, N, HC_I32, 0, 0, &ctx));
	for (int call = 0; call < 4; call++) {
		int64_t m = call % 2 ? MAX_M : WORLD * ROWS_PER; /* M below and at MaxM */
		if (!run_call(rank, ctx, stream, in, out, m, call, 0)) return NULL;
	}
	/* The rank's default stream (0) works too. */
	if (!run_call(rank, ctx, 0, in, out, WORLD, 4, 0)) return NULL;

	/* Bad input: every rank makes the same bad call, so nobody waits. */
	EXPECT_ERR(rank, hc_rs2d_reduce_scatter(ctx, in, WORLD * ROWS_PER + 1, out, stream), HC_ERR_INVALID,
	           "is not divisible by world size 4");
	EXPECT_ERR(rank, hc_rs2d_reduce_scatter(ctx, in, 2 * MAX_M, out, stream), HC_ERR_INVALID, "exceeds MaxM");
	EXPECT_ERR(rank, hc_rs2d_reduce_scatter(ctx, in, WORLD, in, stream), HC_ERR_INVALID, "overlaps");
	EXPECT_ERR(rank, hc_rs2d_reduce_scatter(ctx, in, WORLD, out, 0x1234), HC_ERR_INVALID,
	           "was not made by hc_stream_create");
	EXPECT_ERR(rank, hc_rs2d_reduce_scatter(w, in, WORLD, out, stream), HC_ERR_INVALID,
	           "is not the handle of a live rs2d context");
	EXPECT_ERR(rank, hc_world_close(w), HC_ERR_INVALID, "destroy them before closing");

	/* The last error is per thread: every rank fails differently at once,
	 * then reads its own message. */
	char want[64], msg[256];
	snprintf(want, sizeof want, "signal for rank %d of 4", 100 + rank);
	pthread_barrier_wait(&barrier);
	uint64_t addr;
	if (hc_rs2d_signal_addr(ctx, 100 + rank, &addr) != HC_ERR_INVALID) fail(rank, "signal_addr(%d) succeeded", 100 + rank);
	pthread_barrier_wait(&barrier);
	int len = hc_last_error(msg, sizeof msg);
	if (strstr(msg, want) == NULL) fail(rank, "last error \"%s\", want \"%s\"", msg, want);
	/* Truncation: len-1 bytes and a NUL; the full length is returned. */
	char small[8];
	if (hc_last_error(small, sizeof small) != len || strlen(small) != sizeof small - 1 || hc_last_error(NULL, 0) != len)
		fail(rank, "hc_last_error truncation: \"%s\"", small);

	int order[WORLD], seen[WORLD] = {0};
	CALL(rank, hc_rs2d_consumption_order(ctx, order, WORLD));
	for (int i = 0; i < WORLD; i++)
		if (order[i] >= 0 && order[i] < WORLD) seen[order[i]]++;
	for (int i = 0; i < WORLD; i++)
		if (seen[i] != 1) fail(rank, "consumption order is not a permutation of the ranks");
	if (order[WORLD - 1] != rank) fail(rank, "consumption order ends with %d, want the own rank", order[WORLD - 1]);
	EXPECT_ERR(rank, hc_rs2d_consumption_order(ctx, order, WORLD - 1), HC_ERR_INVALID, "does not fit");
	CALL(rank, hc_rs2d_destroy(ctx));
	EXPECT_ERR(rank, hc_rs2d_destroy(ctx), HC_ERR_INVALID, "is not the handle of a live rs2d context");

	/* Overlap with a GEMM: each scatter waits for its destination's signal. */
	int64_t octx;
	CALL(rank, hc_rs2d_create(w, MAX_M, N, HC_I32, 1, 2, &octx));
	for (int call = 0; call < 3; call++) {
		uint32_t before, after;
		CALL(rank, hc_rs2d_signal_value(octx, &before));
		if (!run_call(rank, octx, stream, in, out, MAX_M, 10 + call, 1)) return NULL;
		CALL(rank, hc_rs2d_signal_value(octx, &after));
		if (after != before + 1) fail(rank, "signal value %u after a call, %u before", after, before);
		CALL(rank, hc_rs2d_signal_addr(octx, WORLD - 1, &addr));
		if (addr == 0) fail(rank, "signal address 0");
	}
	CALL(rank, hc_rs2d_destroy(octx));

	/* The pull engine with the plain buffer registered (ABI version 7):
	 * collective, read in place; refused by another engine (the copy
	 * engine of HC_OVERLAP_WITH_GEMM). */
	int64_t pctx;
	CALL(rank, hc_rs2d_create(w, MAX_M, N, HC_I32, HC_OVERLAP_WITH_GEMM, 0, &pctx));
	EXPECT_ERR(rank, hc_rs2d_register(pctx, in, MAX_M * N * sizeof(int32_t)), HC_ERR_NOT_SUPPORTED, "pull engine");
	CALL(rank, hc_rs2d_destroy(pctx));
	CALL(rank, hc_rs2d_create(w, MAX_M, N, HC_I32, HC_PULL, 0, &pctx));
	CALL(rank, hc_rs2d_register(pctx, in, MAX_M * N * sizeof(int32_t)));
	for (int call = 0; call < 3; call++)
		if (!run_call(rank, pctx, stream, in, out, call == 1 ? WORLD * ROWS_PER : MAX_M, 20 + call, 0)) return NULL;
	CALL(rank, hc_rs2d_deregister(pctx, in));
	EXPECT_ERR(rank, hc_rs2d_deregister(pctx, in), HC_ERR_INVALID, "not registered");
	if (!run_call(rank, pctx, stream, in, out, MAX_M, 23, 0)) return NULL; /* unregistered */
	CALL(rank, hc_rs2d_destroy(pctx));

	CALL(rank, hc_sim_free(w, in));
	EXPECT_ERR(rank, hc_sim_free(w, in), HC_ERR_INVALID, "was not allocated by hc_sim_alloc");
	CALL(rank, hc_stream_destroy(w, stream));
	/* out is left for hc_world_close to free. */
	CALL(rank, hc_world_close(w));
	EXPECT_ERR(rank, hc_world_info(w, &r, NULL, NULL, NULL), HC_ERR_INVALID, "is not the handle of a live world");
	return NULL;
}

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Host time per enqueue-only call on a 1 x 1 world, in batches that are
 * synchronised outside the timed part (so queues stay short). */
static int bench(int calls) {
	int64_t w, ctx;
	uint64_t s, in, out;
	const int batch = 50, n = 8;
	char msg[1024];
#define BCALL(expr)                                                     \
	do {                                                                \
		int rc_ = (expr);                                               \
		if (rc_ != HC_OK) {                                             \
			hc_last_error(msg, sizeof msg);                             \
			fprintf(stderr, "bench: %s: %d: %s\n", #expr, rc_, msg);    \
			return 1;                                                   \
		}                                                               \
	} while (0)
	BCALL(hc_init_sim(1, 1, &w));
	BCALL(hc_rs2d_create(w, 1, n, HC_I32, 0, 0, &ctx));
	BCALL(hc_stream_create(w, &s));
	BCALL(hc_sim_alloc(w, n * 4, &in));
	BCALL(hc_sim_alloc(w, n * 4, &out));
	double total = 0;
	int done = 0;
	for (int warm = 1; warm >= 0; warm--) {
		int todo = warm ? batch * 4 : calls;
		for (int i = 0; i < todo; i += batch) {
			double t0 = now_ns();
			for (int k = 0; k < batch; k++) BCALL(hc_rs2d_reduce_scatter(ctx, in, 1, out, s));
			double t1 = now_ns();
			BCALL(hc_stream_synchronize(w, s, SYNC_MS));
			if (!warm) {
				total += t1 - t0;
				done += batch;
			}
		}
	}
	printf("c_abi_ns_per_call %.0f\n", total / done);
	BCALL(hc_rs2d_destroy(ctx));
	BCALL(hc_world_close(w));
	return 0;
}

int main(int argc, char** argv) {
	if (hc_abi_version() != HC_ABI_VERSION) {
		fprintf(stderr, "FAIL: library ABI %d, header %d\n", hc_abi_version(), HC_ABI_VERSION);
		return 1;
	}
	if (argc == 3 && strcmp(argv[1], "bench") == 0) return bench(atoi(argv[2]));

	char msg[256];
	int64_t bad[1];
	if (hc_init_sim(0, 2, bad) != HC_ERR_INVALID || hc_last_error(msg, sizeof msg) == 0) {
		fprintf(stderr, "FAIL: hc_init_sim(0, 2) was accepted\n");
		return 1;
	}
	if (hc_init_sim(NODES, GPUS, worlds) != HC_OK) {
		hc_last_error(msg, sizeof msg);
		fprintf(stderr, "FAIL: hc_init_sim: %s\n", msg);
		return 1;
	}
	pthread_barrier_init(&barrier, NULL, WORLD);
	pthread_t threads[WORLD];
	for (int i = 0; i < WORLD; i++) pthread_create(&threads[i], NULL, rank_main, (void*)(intptr_t)i);
	for (int i = 0; i < WORLD; i++) pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&barrier);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok: %d ranks, reduce-scatters bit-exact, errors as expected\n", WORLD);
	return 0;
}
