/*
 * sym_map: read-only mappings of parts of an object file (its symbol table, its string
 * table), and the SIGBUS guard that makes reading them safe when the file shrinks
 * under us.
 *
 * Why a guard and not only validation: a file replaced the way package managers do it
 * (write a new file, rename it over the old one) is a new inode, and our mapping keeps
 * the old one alive: nothing to fear. But `cp new.so old.so`, or a truncation in place,
 * shrinks the very inode we map, and touching a page past its new end raises SIGBUS.
 * Checking st_size/mtime before mapping cannot see a truncation that comes after, and
 * the names of a table are read for as long as the table lives. So every read of
 * mapped bytes runs inside SYM_GUARD (sigsetjmp, no signal mask saved: no system call,
 * ~20 ns, docs/symbolize.md); the SIGBUS handler, installed once, jumps back to the
 * innermost guard of the faulting thread when there is one, and otherwise restores the previous
 * disposition and returns, so the fault happens again and is handled as it would have been without
 * us (inside a guard nothing but mapped bytes is read, so a SIGBUS there is always one of ours). A
 * mapping that faulted is marked broken and never read again: its table resolves nothing, and the
 * object is re-read from its file when its identity is checked next. What is handed to callers is
 * never mapped memory: a name is copied out (and demangled) under the guard on its first use.
 */
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Thread_local struct sym_guard *sym_guard_top;

static struct sigaction prev_bus;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;
static atomic_int bus_installed;
static atomic_ulong bus_faults;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	struct sym_guard *g = sym_guard_top;

	/* inside a guard only mapped bytes are read (into our own memory): the fault is
	 * one of ours */
	if (g) {
		atomic_fetch_add(&bus_faults, 1);
		g->faulted = true;
		siglongjmp(g->jb, 1);
	}
	/* not ours: as if we had never been here */
	if (prev_bus.sa_flags & SA_SIGINFO) {
		if (prev_bus.sa_sigaction) {
			prev_bus.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (prev_bus.sa_handler != SIG_DFL && prev_bus.sa_handler != SIG_IGN) {
		prev_bus.sa_handler(sig);
		return;
	}
	signal(SIGBUS, SIG_DFL); /* the faulting access runs again, and kills as it would */
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev_bus) == 0)
		atomic_store(&bus_installed, 1);
}

bool sym_map__guard_ready(void)
{
	pthread_once(&bus_once, install);
	return atomic_load(&bus_installed) != 0;
}

uint64_t sym_map__faults(void)
{
	return atomic_load(&bus_faults);
}

int sym_map__open(int fd, uint64_t file_size, uint64_t off, uint64_t len, int flags,
		  struct sym_map *m)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(uint64_t)(pg - 1);
	void *p;

	memset(m, 0, sizeof(*m));
	if (!sym_map__guard_ready())
		return -ENOTSUP;
	if (len == 0 || off > file_size || len > file_size - off)
		return -ENOEXEC;
	p = mmap(NULL, len + (off - start), PROT_READ, MAP_PRIVATE | flags, fd, (off_t)start);
	if (p == MAP_FAILED)
		return -errno;
	m->base = p;
	m->map_len = len + (off - start);
	m->p = (const char *)p + (off - start);
	m->len = len;
	return 0;
}

void sym_map__close(struct sym_map *m)
{
	if (m->base) {
		munmap(m->base, m->map_len);
	}
	memset(m, 0, sizeof(*m));
}

void sym_map__drop_pages(struct sym_map *m)
{
	if (m->base)
		madvise(m->base, m->map_len, MADV_DONTNEED);
}
