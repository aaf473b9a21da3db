/* A smoke test of calib's C ABI from C: loads libcalib.so (argv[1]) with
 * dlopen, runs calib eval on a fixed 200 x 3 set of probabilities and
 * prints the JSON. scripts/python-wheels.sh compiles it for each wheel's
 * architecture and compares the outputs (the aarch64 one under
 * qemu-aarch64-static). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*run_fn)(int64_t, char *, void *, int, int64_t, int64_t, void *, int, double *, char **);
typedef void (*free_fn)(char *);

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: abi-smoke libcalib.so\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	run_fn run = (run_fn)dlsym(lib, "calib_run");
	free_fn cfree = (free_fn)dlsym(lib, "calib_free");
	if (!run || !cfree) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	enum { N = 200, K = 3 };
	static double p[N * K];
	static int64_t y[N];
	uint64_t s = 88172645463325252ull; /* xorshift64: the same rows on every machine */
	for (int i = 0; i < N; i++) {
		double a[K], sum = 0;
		for (int k = 0; k < K; k++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			a[k] = 0.05 + (double)(s >> 11) / 9007199254740992.0;
			sum += a[k];
		}
		for (int k = 0; k < K; k++) p[i * K + k] = a[k] / sum;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		y[i] = (int64_t)(s % K);
	}
	char *out = NULL;
	char req[] = "{\"command\":\"eval\",\"name\":\"probs\",\"options\":{\"metrics\":\"ece_kde,ece_bin,ks,brier,nll\",\"mode\":\"canonical,top_label\",\"workers\":1}}";
	int code = run(0, req, p, 0, N, K, y, 2, NULL, &out);
	printf("%d %s\n", code, out ? out : "");
	cfree(out);
	return code;
}
