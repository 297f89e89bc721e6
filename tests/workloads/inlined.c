/*
 * Workload for symbolization: at -O2, inl_mix (static inline) is inlined into
 * inl_hot (noinline), so samples land in code whose DWARF says "inl_mix, inlined
 * into inl_hot". Built unstripped (inlined), and stripped with its debug file
 * kept apart (inlined-stripped + inlined.debug, linked by .gnu_debuglink).
 * Usage: inlined SECONDS — prints its pid, spins for SECONDS of wall time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static inline uint64_t inl_mix(uint64_t x)
{
	x ^= x >> 31; /* INL_MIX_BODY */
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	return x ^ (x >> 33);
}

__attribute__((noinline)) uint64_t inl_hot(uint64_t seed, long n)
{
	for (long i = 0; i < n; i++)
		seed = inl_mix(seed + (uint64_t)i); /* INL_CALL_SITE */
	return seed;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;

	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink = inl_hot(sink, 1000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
