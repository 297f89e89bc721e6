/*
 * sym_perfmap: JIT symbols from /tmp/perf-PID.map, the format Linux perf defined and
 * Node.js (--perf-basic-prof), Python 3.12 (-X perf), the JVM agents and others write:
 * one "START SIZE name" line per compiled function, START and SIZE in hex.
 *
 * Constraints: the file only grows while the process runs, so it is read incrementally
 * from where the last read stopped, whole lines only (a writer may be mid-line). A JIT
 * reuses addresses: when entries overlap, the newest covering an address wins, and an
 * entry names only [START, START + SIZE). Malformed lines are skipped and counted.
 */
#include "symbolize/sym_internal.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Entries and names one map may hold; a bigger map is not a real JIT's. */
#define SYM_PERFMAP_MAX_ENTRIES (4u << 20)
#define SYM_PERFMAP_MAX_LINE	4096

struct perfmap_entry {
	uint64_t start, end;
	uint32_t seq;  /* line number: newer wins */
	uint32_t name; /* offset in names */
};

struct sym_perfmap {
	char path[256];
	uint64_t read_off; /* file bytes consumed (whole lines) */
	struct perfmap_entry *ents;
	size_t n, cap, sorted; /* [0, sorted) is sorted by start */
	char *names;
	size_t len, names_cap;
	uint64_t bad;
	uint32_t seq;
};

struct sym_perfmap *sym_perfmap__new(const char *dir, uint32_t pid)
{
	struct sym_perfmap *m = calloc(1, sizeof(*m));

	if (m)
		snprintf(m->path, sizeof(m->path), "%s/perf-%" PRIu32 ".map", dir ? dir : "/tmp",
			 pid);
	return m;
}

void sym_perfmap__free(struct sym_perfmap *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->names);
	free(m);
}

static bool parse_hex(const char **p, uint64_t *v)
{
	char *end;

	if (!((**p >= '0' && **p <= '9') || ((**p | 32) >= 'a' && (**p | 32) <= 'f')))
		return false;
	errno = 0;
	*v = strtoull(*p, &end, 16);
	if (errno || (*end != ' ' && *end != '\t'))
		return false;
	*p = end + 1;
	return true;
}

/* One line without its newline. 0, -EINVAL (malformed: counted), -ENOMEM. */
static int add_line(struct sym_perfmap *m, const char *line, size_t n)
{
	char buf[SYM_PERFMAP_MAX_LINE];
	const char *p = buf;
	uint64_t start, size;
	struct perfmap_entry *e;
	char *names;
	size_t nlen;

	if (n == 0 || n >= sizeof(buf) || m->n >= SYM_PERFMAP_MAX_ENTRIES)
		return -EINVAL;
	memcpy(buf, line, n);
	buf[n] = '\0';
	if (strlen(buf) != n || !parse_hex(&p, &start) || !parse_hex(&p, &size) || !size ||
	    start > UINT64_MAX - size || !*p)
		return -EINVAL;
	nlen = strlen(p) + 1;
	if (base_grow((void **)&m->ents, &m->cap, m->n + 1, sizeof(*e)) ||
	    base_grow((void **)&m->names, &m->names_cap, m->len + nlen, 1))
		return -ENOMEM;
	e = m->ents;
	names = m->names;
	memcpy(names + m->len, p, nlen);
	e[m->n++] = (struct perfmap_entry){start, start + size, m->seq++, (uint32_t)m->len};
	m->len += nlen;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Consumes whole lines of buf[0, n); returns bytes consumed or -ENOMEM. */
static long add_lines(struct sym_perfmap *m, const char *buf, size_t n, bool eof_ok)
{
	size_t pos = 0;

	(void)eof_ok;
	while (pos < n) {
		const char *nl = memchr(buf + pos, '\n', n - pos);
		int err;

		if (!nl)
			break;
		err = add_line(m, buf + pos, (size_t)(nl - (buf + pos)));
		if (err == -ENOMEM)
			return err;
		if (err)
			m->bad++;
		pos = (size_t)(nl - buf) + 1;
	}
	if (pos == 0 && n == SYM_PERFMAP_MAX_LINE * 2) { /* a line longer than we take */
		m->bad++;
		return (long)n;
	}
	return (long)pos;
}

int sym_perfmap__refresh(struct sym_perfmap *m)
{
	char buf[SYM_PERFMAP_MAX_LINE * 2];
	int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), err = 0;
	ssize_t got;
	long used;

	if (fd < 0)
		return -errno;
	while ((got = pread(fd, buf, sizeof(buf), (off_t)m->read_off)) > 0) {
		used = add_lines(m, buf, (size_t)got, false);
		if (used < 0) {
			err = (int)used;
			break;
		}
		if (used == 0)
			break; /* an unfinished last line: read it next time */
		m->read_off += (uint64_t)used;
	}
	if (got < 0)
		err = -errno;
	close(fd);
	if (m->n && m->sorted != m->n) {
		qsort(m->ents, m->n, sizeof(*m->ents), ent_cmp);
		m->sorted = m->n;
	}
	return err;
}

/* How far back to look for an older, longer entry that still covers an address. */
#define SYM_PERFMAP_LOOKBACK 64

const char *sym_perfmap__find(const struct sym_perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->sorted;
	const struct perfmap_entry *best = NULL;

	while (lo < hi) { /* first entry with start > addr */
		size_t mid = lo + (hi - lo) / 2;

		if (m->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < SYM_PERFMAP_LOOKBACK; i--, k++) {
		const struct perfmap_entry *e = &m->ents[i - 1];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? m->names + best->name : NULL;
}

uint64_t sym_perfmap__bad_lines(const struct sym_perfmap *m)
{
	return m->bad;
}

size_t sym_perfmap__entries(const struct sym_perfmap *m)
{
	return m->n;
}

uint64_t sym_perfmap__bytes(const struct sym_perfmap *m)
{
	return sizeof(*m) + m->cap * sizeof(*m->ents) + m->names_cap;
}
