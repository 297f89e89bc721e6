/*
 * bench/symbolize's clock: runs one symbolizer as a coprocess, writes the address list
 * to its stdin twice (from a thread, through a pipe), reads its stdout through a pipe in
 * 1 MiB reads and stamps the moment the first address of the second pass is echoed
 * (cold = start..then, warm = then..EOF). The output is saved for drive.py to compare.
 * Written in C so the measuring side reads faster than any of the measured tools
 * writes: a Python reader (a fresh buffer, so fresh page faults, per read) capped the
 * fastest tool at about 7 M addresses/s.
 *
 * usage: timer ADDR_FILE OUT_FILE CMD ARGS...   prints "COLD_S WARM_S N" on stdout.
 * CMD must echo each address (a line starting "0x") before its frames, as -a does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NONE ((size_t)-1)

extern char **environ;

struct input {
	int fd;
	const char *data;
	size_t len;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *writer(void *arg)
{
	struct input *in = arg;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t off = 0; off < in->len;) {
			ssize_t w = write(in->fd, in->data + off, in->len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			off += (size_t)w;
		}
	}
out:
	close(in->fd);
	return NULL;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 1 << 20);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	size_t in_len, n = 0, seen = 0, len = 0, cap = 64 << 20, scan = 0, pending = 0;
	int to[2], from[2], status;
	posix_spawn_file_actions_t fa;
	struct input in;
	pthread_t th;
	double t0, t1 = 0, t2;
	char *data, *out;
	pid_t pid;
	FILE *f;

	if (argc < 4) {
		fprintf(stderr, "usage: %s ADDR_FILE OUT_FILE CMD ARGS...\n", argv[0]);
		return 2;
	}
	data = slurp(argv[1], &in_len);
	if (!data || !in_len || data[in_len - 1] != '\n') {
		fprintf(stderr, "timer: %s: unreadable, empty or without a final newline\n", argv[1]);
		return 2;
	}
	for (size_t i = 0; i < in_len; i++)
		n += data[i] == '\n';
	/* room for both passes' answers (~110 bytes per address per pass), touched before
	 * the clock starts: page faults of the reader are the clock's cost, not the tool's */
	if (cap < in_len * 200)
		cap = in_len * 200;
	out = malloc(cap);
	if (!out || pipe(to) || pipe(from)) {
		perror("timer");
		return 2;
	}
	memset(out, 0, cap);
	signal(SIGPIPE, SIG_IGN);
	/* posix_spawn, not fork: a fork copied the page tables of the buffer above, and the
	 * child's exec then spent ~10 ms of the measured tool's time tearing them down */
	if (posix_spawn_file_actions_init(&fa) || posix_spawn_file_actions_adddup2(&fa, to[0], 0) ||
	    posix_spawn_file_actions_adddup2(&fa, from[1], 1) ||
	    posix_spawn_file_actions_addclose(&fa, to[0]) ||
	    posix_spawn_file_actions_addclose(&fa, to[1]) ||
	    posix_spawn_file_actions_addclose(&fa, from[0]) ||
	    posix_spawn_file_actions_addclose(&fa, from[1])) {
		perror("timer: spawn actions");
		return 2;
	}
	t0 = now();
	if ((errno = posix_spawnp(&pid, argv[3], &fa, NULL, argv + 3, environ))) {
		fprintf(stderr, "timer: %s: %s\n", argv[3], strerror(errno));
		return 2;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(to[0]);
	close(from[1]);
	in = (struct input){ to[1], data, in_len };
	if (pthread_create(&th, NULL, writer, &in)) {
		perror("timer: thread");
		return 2;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < (1 << 20)) {
			char *nb = realloc(out, cap *= 2);

			if (!nb) {
				perror("timer");
				return 2;
			}
			out = nb;
		}
		r = read(from[0], out + len, 1 << 20);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		/* count lines starting "0x": a line's first two bytes may come with the next read */
		while (!t1) {
			char *p;

			if (pending != NONE) {
				if (pending + 2 > len)
					break;
				seen += out[pending] == '0' && out[pending + 1] == 'x';
				scan = pending;
				pending = NONE;
				if (seen > n) {
					t1 = now();
					break;
				}
			}
			p = memchr(out + scan, '\n', len - scan);
			if (!p) {
				scan = len;
				break;
			}
			pending = (size_t)(p - out) + 1;
		}
	}
	t2 = now();
	pthread_join(th, NULL);
	waitpid(pid, &status, 0);
	if (!t1)
		t1 = t2;
	f = fopen(argv[2], "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "timer: %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	printf("%.6f %.6f %zu\n", t1 - t0, t2 - t1, n);
	free(out);
	free(data);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
