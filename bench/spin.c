/*
 * Fixed CPU-bound workload for bench/overhead: runs SECONDS of wall time on one
 * core and prints the number of work units it finished (its throughput).
 * The work is a mix of calls, arithmetic and memory so profilers see real stacks.
 * Usage: spin SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long table[4096];

__attribute__((noinline)) static unsigned long mix(unsigned long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdul;
	x ^= x >> 33;
	return x;
}

__attribute__((noinline)) static unsigned long unit_of_work(unsigned long seed)
{
	for (int i = 0; i < 2000; i++) {
		seed = mix(seed + (unsigned long)i);
		table[seed & 4095] += seed;
	}
	return seed;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;
	unsigned long units = 0, seed = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 64; i++, units++)
			seed = unit_of_work(seed);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%lu %lu\n", units, seed & 1);
	return 0;
}
