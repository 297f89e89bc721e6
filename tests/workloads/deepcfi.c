/*
 * Workload for the table unwinder (issue 6): built -O2 -fomit-frame-pointer, so
 * only CFI can unwind it. Its hot path runs through a 220-frame recursion and
 * then through libc: qsort with a hot comparator callback, and bsearch.
 *   main -> work_round -> descend x DEEPCFI_DEPTH -> sort_phase -> qsort -> ... -> cmp_key
 *                                                -> search_phase -> bsearch -> cmp_key
 * Usage: deepcfi SECONDS   (prints its pid, then runs for SECONDS of wall time)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DEEPCFI_DEPTH 220
#define DEEPCFI_N     4096

static long keys[DEEPCFI_N];
static volatile long sink;
/* Through a pointer: glibc's <stdlib.h> would inline bsearch at -O2, and the
 * point is a libc frame between search_phase and the callback. */
static void *(*volatile libc_bsearch)(const void *, const void *, size_t, size_t,
				      int (*)(const void *, const void *)) = bsearch;

/* The hot callback: a few multiplies per compare so it dominates the profile. */
__attribute__((noinline, noclone)) int cmp_key(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	for (int i = 0; i < 8; i++) {
		x = x * 1103515245 + 12345;
		y = y * 1103515245 + 12345;
	}
	return (x > y) - (x < y);
}

__attribute__((noinline, noclone)) void sort_phase(unsigned seed)
{
	for (int i = 0; i < DEEPCFI_N; i++)
		keys[i] = (long)((seed + (unsigned)i) * 2654435761u);
	qsort(keys, DEEPCFI_N, sizeof(keys[0]), cmp_key);
	sink += keys[0]; /* not a tail call: sort_phase stays on the stack */
}

__attribute__((noinline, noclone)) void search_phase(void)
{
	long hits = 0;

	for (int i = 0; i < 4 * DEEPCFI_N; i++)
		hits += libc_bsearch(&keys[(i * 7) % DEEPCFI_N], keys, DEEPCFI_N, sizeof(keys[0]),
				     cmp_key) != NULL;
	sink += hits;
}

/* Not a tail call: the work after the call keeps every frame on the stack. */
__attribute__((noinline, noclone)) long descend(int depth, unsigned seed)
{
	long r;

	if (depth == 0) {
		sort_phase(seed);
		search_phase();
		return 1;
	}
	r = descend(depth - 1, seed + 1);
	sink += r;
	return r + depth;
}

__attribute__((noinline, noclone)) void work_round(unsigned seed)
{
	sink += descend(DEEPCFI_DEPTH, seed);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;
	unsigned seed = 1;

	printf("%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		work_round(seed++);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
