/*
 * Workload with a known CPU split: 60% in split_hot_a, 30% in split_hot_b (both
 * here) and 10% in lib_hot_c (in libsplitlib.so). Every function runs the same
 * latency-bound multiply chain (splitlib.h), whose cost per iteration does not
 * depend on code alignment, so the split is the ratio of iterations: 6:3:1.
 * Usage: split SECONDS [PROGRAM ARGS...]
 *   prints its pid, runs for SECONDS of wall time, then execs PROGRAM if given
 *   (same pid, new image: a test of exec handling).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "splitlib.h"

__attribute__((noinline)) void split_hot_a(long n)
{
	SPLIT_SPIN(n);
}

__attribute__((noinline)) void split_hot_b(long n)
{
	SPLIT_SPIN(n);
}

__attribute__((noinline)) static void split_round(long unit)
{
	split_hot_a(6 * unit);
	split_hot_b(3 * unit);
	lib_hot_c(unit);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;

	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		split_round(200000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	if (argc > 2) {
		execv(argv[2], argv + 2);
		perror("execv");
		return 1;
	}
	return 0;
}
