/*
 * busguard: the SIGBUS guard that makes reading a mapped file safe when the file
 * shrinks under us (base.h, "mapped files").
 *
 * Why a guard and not only validation: a file replaced the way package managers do it
 * (write a new file, rename it over the old one) is a new inode, and our mapping keeps
 * the old one alive: nothing to fear. But `cp new.so old.so`, or a truncation in place,
 * shrinks the very inode we map, and touching a page past its new end raises SIGBUS.
 * Checking st_size before mapping cannot see a truncation that comes after, and some
 * mappings are read for as long as their table lives (the symbolizer's names, the
 * unwinder's partial tables). So every read of mapped bytes runs inside a guard
 * (sigsetjmp, no signal mask saved: no system call, ~20 ns, docs/symbolize.md); the
 * SIGBUS handler, installed once, jumps back to the innermost guard of the faulting
 * thread when there is one, and otherwise restores the previous disposition and
 * returns, so the fault happens again and is handled as it would have been without us
 * (inside a guard nothing but mapped bytes is read, so a SIGBUS there is always one
 * of ours).
 */
#include "base/base.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

_Thread_local struct base_guard *base_guard_top;

static struct sigaction prev_bus;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;
static atomic_int bus_installed;
static atomic_ulong bus_faults;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	struct base_guard *g = base_guard_top;

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

bool base_guard_ready(void)
{
	pthread_once(&bus_once, install);
	return atomic_load(&bus_installed) != 0;
}

uint64_t base_guard_faults(void)
{
	return atomic_load(&bus_faults);
}
