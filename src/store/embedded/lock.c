/*
 * One owner per data directory (store__open, store__salvage): an exclusive
 * flock(2) on DIR/hearth.lock, taken before the database is opened and held
 * until the store is closed. SQLite alone would let a second process open the
 * same database and write beside the first, but the embedded store keeps its
 * intern tables in memory and gives ids from there: two writers would hand
 * the same id to two keys. The kernel drops a flock when its holder exits,
 * however it exits (kill -9 included), so a crashed owner never blocks the
 * next one.
 *
 * The holder writes its pid and command line into the file, so that the one
 * refused can name it. Readers open the store through store__open as well
 * (it may write: schema, size budget, WAL checkpoint), so they take the same
 * lock; see docs/storage.md, "One owner per data directory".
 */
#include "store_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Longest command line written into the lock file (longer ones are cut). */
#define STORE_LOCK_CMDLINE_MAX 512

/* This process's command line, arguments joined by spaces, into buf. */
static void own_cmdline(char *buf, size_t len)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
}

/* Writes "pid\ncmdline\n" over the lock file's content. */
static void write_owner(int fd)
{
	char cmd[STORE_LOCK_CMDLINE_MAX], line[STORE_LOCK_CMDLINE_MAX + 32];
	int n;

	own_cmdline(cmd, sizeof(cmd));
	n = snprintf(line, sizeof(line), "%ld\n%s\n", (long)getpid(), cmd);
	if (ftruncate(fd, 0) || pwrite(fd, line, (size_t)n, 0) != n) {
		/* the lock holds all the same; a refused opener names no process */
	}
}

/* The holder named in the lock file, as "pid N (CMDLINE)", into buf. */
static void read_owner(int fd, char *buf, size_t len)
{
	char text[STORE_LOCK_CMDLINE_MAX + 32], *nl;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	long pid;

	text[n > 0 ? n : 0] = 0;
	nl = strchr(text, '\n');
	if (!nl || sscanf(text, "%ld", &pid) != 1 || pid <= 0) {
		/* it has the lock but has not written its name yet */
		snprintf(buf, len, "another process");
		return;
	}
	*nl++ = 0;
	nl[strcspn(nl, "\n")] = 0;
	snprintf(buf, len, "pid %ld (%s)", pid, nl);
}

int store_dir_lock(const char *dir, int *fd_out, char *err, size_t errlen)
{
	char path[4096], owner[STORE_LOCK_CMDLINE_MAX + 64];
	int fd, e;

	*fd_out = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/hearth.lock", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = -errno;
		store_set_err(err, errlen, "cannot open the lock file %s: %s", path, strerror(-e));
		return e;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EINTR)
			continue;
		e = -errno;
		if (e == -EWOULDBLOCK) {
			read_owner(fd, owner, sizeof(owner));
			store_set_err(err, errlen,
				      "%s is in use by %s: a data directory has one owner (%s); "
				      "stop that process first, or query it through its server "
				      "(hearth query --server URL)",
				      dir, owner, path);
			e = -EBUSY;
		} else {
			store_set_err(err, errlen, "cannot lock %s: %s", path, strerror(-e));
		}
		close(fd);
		return e;
	}
	write_owner(fd);
	*fd_out = fd;
	return 0;
}

void store_dir_unlock(int fd)
{
	if (fd < 0)
		return;
	/* still held: no opener reads a name that is about to be stale */
	if (ftruncate(fd, 0)) {
		/* a later holder writes over it */
	}
	close(fd); /* the lock goes with the last descriptor of the open file */
}
