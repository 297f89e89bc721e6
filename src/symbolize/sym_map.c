/*
 * sym_map: read-only mappings of parts of an object file (its symbol table, its string
 * table), and why reading them is safe when the file shrinks under us.
 *
 * A file truncated in place (`cp new.so old.so`) under a mapping raises SIGBUS when a
 * page past its new end is touched, and the names of a table are read for as long as
 * the table lives: so every read of mapped bytes runs under base_guard (busguard.c says
 * why a guard and not only validation). A mapping that faulted is marked broken and
 * never read again: its table resolves nothing, and the object is re-read from its
 * file when its identity is checked next. What is handed to callers is never mapped
 * memory: a name is copied out (and demangled) under the guard on its first use.
 */
#include "symbolize/sym_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int sym_map__open(int fd, uint64_t file_size, uint64_t off, uint64_t len, int flags,
		  struct sym_map *m)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(uint64_t)(pg - 1);
	void *p;

	memset(m, 0, sizeof(*m));
	if (!base_guard_ready())
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
