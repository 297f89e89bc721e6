/*
 * Workload for a library loaded late (dlopen) whose code is where the samples
 * land: built -O2 -fomit-frame-pointer, like the library, so only CFI unwinds
 * it. It computes in its own code for DELAY seconds (its view is read and
 * settles: libc mapped), reading the clock every 100 multiplies, so that a
 * tenth or so of its samples are in the vdso, outside every view: each asks for
 * a re-read that finds nothing new. Then it dlopens liblatelib.so and spends
 * RUN seconds in it: main -> late_phase -> late_entry -> late_mid -> late_leaf.
 * The view read first does not have the library: its samples' leaves are
 * outside it, and must not wait for the vdso's re-reads to be let through.
 * Usage: latedl DIR DELAY RUN   (DIR holds liblatelib.so; prints its pid, then
 *   "loaded" once the library is loaded)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline, noclone)) void early_phase(double until)
{
	while (now_s() < until)
		for (int i = 0; i < 100; i++)
			sink = sink * 6364136223846793005ul + 1;
}

__attribute__((noinline, noclone)) void late_phase(unsigned long (*entry)(unsigned long),
						    double until)
{
	while (now_s() < until)
		sink += entry(sink);
}

int main(int argc, char **argv)
{
	char path[4096];
	unsigned long (*entry)(unsigned long);
	void *h;

	if (argc != 4) {
		fprintf(stderr, "usage: latedl DIR DELAY RUN\n");
		return 2;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	early_phase(now_s() + atof(argv[2]));
	snprintf(path, sizeof(path), "%s/liblatelib.so", argv[1]);
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "latedl: %s\n", dlerror());
		return 2;
	}
	*(void **)&entry = dlsym(h, "late_entry");
	if (!entry) {
		fprintf(stderr, "latedl: %s\n", dlerror());
		return 2;
	}
	printf("loaded\n");
	fflush(stdout);
	late_phase(entry, now_s() + atof(argv[3]));
	return 0;
}
