/*
 * The cost of the SIGBUS guard around a read of mapped bytes (src/symbolize/sym_map.c)
 * against an fstat(2), the check a validate-before-reading design would need:
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/bench-symbolize/guard \
 *       bench/symbolize_gen/guard.c build/obj/src/symbolize/sym_map.o -lpthread
 *   build/bench-symbolize/guard [FILE, default /usr/bin/node]
 */
#include "symbolize/sym_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const int n = 10000000;
	volatile int sink = 0;
	struct stat st;
	int fd = open(argc > 1 ? argv[1] : "/usr/bin/node", O_RDONLY);
	double t0, t1, t2;

	if (fd < 0 || !sym_map__guard_ready())
		return 1;
	t0 = now();
	for (int i = 0; i < n; i++) {
		struct sym_guard g;

		sym_guard_push(&g);
		if (sigsetjmp(g.jb, 0) == 0)
			sink++;
		sym_guard_pop(&g);
	}
	t1 = now();
	for (int i = 0; i < n / 10; i++) {
		fstat(fd, &st);
		sink += (int)(st.st_size & 1);
	}
	t2 = now();
	printf("guard (push + sigsetjmp + pop): %.1f ns; fstat: %.1f ns\n", (t1 - t0) / n * 1e9,
	       (t2 - t1) / (n / 10) * 1e9);
	return 0;
}
