// A fake libnvrtc.so.13 for testing device/cuda without the CUDA toolkit. A
// "CUBIN" is "\x7fELF", the architecture and the source, NUL-terminated;
// sources mentioning undefined_thing fail with a log, as NVRTC would. It
// checks that the options hiercoll always passes arrive intact.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvrtcResult;
typedef struct prog {
	char *src, *name, *log, *cubin;
	size_t cubin_size;
} prog_t;

EXPORT nvrtcResult nvrtcVersion(int *major, int *minor) {
	*major = 13;
	*minor = 0;
	return 0;
}

EXPORT const char *nvrtcGetErrorString(nvrtcResult r) {
	switch (r) {
	case 0: return "NVRTC_SUCCESS";
	case 3: return "NVRTC_ERROR_INVALID_INPUT";
	case 5: return "NVRTC_ERROR_INVALID_OPTION";
	case 6: return "NVRTC_ERROR_COMPILATION";
	}
	return "NVRTC_ERROR_INTERNAL_ERROR";
}

EXPORT nvrtcResult nvrtcCreateProgram(prog_t **p, const char *src, const char *name, int nh, const char *const *h,
		const char *const *inc) {
	if (!p || !src || nh != 0 || h || inc) return 3;
	prog_t *pr = calloc(1, sizeof *pr);
	pr->src = strdup(src);
	pr->name = strdup(name ? name : "default_program");
	pr->log = strdup("");
	*p = pr;
	return 0;
}

static int has(int n, const char *const *opts, const char *want, int prefix) {
	for (int i = 0; i < n; i++) {
		if (prefix ? strncmp(opts[i], want, strlen(want)) == 0 : strcmp(opts[i], want) == 0) return i;
	}
	return -1;
}

EXPORT nvrtcResult nvrtcCompileProgram(prog_t *p, int n, const char *const *opts) {
	char buf[512];
	int arch = has(n, opts, "--gpu-architecture=sm_", 1);
	if (arch < 0 || has(n, opts, "-default-device", 0) < 0 || has(n, opts, "--std=c++17", 0) < 0 ||
			has(n, opts, "-lineinfo", 0) < 0) {
		free(p->log);
		p->log = strdup("fake nvrtc: missing one of the expected options\n");
		return 5;
	}
	const char *bad = strstr(p->src, "undefined_thing");
	if (bad) {
		int line = 1;
		for (const char *c = p->src; c < bad; c++) line += *c == '\n';
		snprintf(buf, sizeof buf, "%s(%d): error: identifier \"undefined_thing\" is undefined\n\n1 error detected in the compilation of \"%s\".\n",
			p->name, line, p->name);
		free(p->log);
		p->log = strdup(buf);
		return 6;
	}
	const char *a = opts[arch] + strlen("--gpu-architecture=");
	size_t n1 = strlen(a), n2 = strlen(p->src);
	p->cubin_size = 4 + n1 + 1 + n2 + 1;
	p->cubin = malloc(p->cubin_size);
	memcpy(p->cubin, "\x7f" "ELF", 4);
	memcpy(p->cubin + 4, a, n1);
	p->cubin[4 + n1] = '\n';
	memcpy(p->cubin + 5 + n1, p->src, n2 + 1);
	return 0;
}

EXPORT nvrtcResult nvrtcGetProgramLogSize(prog_t *p, size_t *n) {
	*n = strlen(p->log) + 1;
	return 0;
}

EXPORT nvrtcResult nvrtcGetProgramLog(prog_t *p, char *out) {
	memcpy(out, p->log, strlen(p->log) + 1);
	return 0;
}

EXPORT nvrtcResult nvrtcGetCUBINSize(prog_t *p, size_t *n) {
	if (!p->cubin) return 3;
	*n = p->cubin_size;
	return 0;
}

EXPORT nvrtcResult nvrtcGetCUBIN(prog_t *p, char *out) {
	if (!p->cubin) return 3;
	memcpy(out, p->cubin, p->cubin_size);
	return 0;
}

EXPORT nvrtcResult nvrtcDestroyProgram(prog_t **p) {
	if (!p || !*p) return 3;
	free((*p)->src);
	free((*p)->name);
	free((*p)->log);
	free((*p)->cubin);
	free(*p);
	*p = NULL;
	return 0;
}
