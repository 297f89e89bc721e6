/*
 * Syscall-heavy workload: reads /dev/zero in large chunks, so most CPU time is
 * spent in the kernel (copying zeroes) below user frames reads_zero -> main.
 * Usage: syscalls SECONDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

__attribute__((noinline)) void reads_zero(int fd)
{
	for (int i = 0; i < 64; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			exit(1);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	printf("%d\n", getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		reads_zero(fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
