/*
 * proc_parse: the text formats of /proc/PID/maps and /proc/PID/stat.
 *
 * Constraint: this is outside input (and fuzzed, tests/fuzz/fuzz_maps.c). Every number
 * is checked for overflow, every separator is checked, and a line that does not match
 * the kernel's format exactly is rejected with -EINVAL rather than half-parsed.
 * The formats are those printed by fs/proc/task_mmu.c:show_map_vma() and
 * fs/proc/array.c:do_task_stat().
 */
#include "base/base.h"
#include "proc/proc.h"

#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Field 22 of /proc/PID/stat is starttime (proc(5)). */
#define PROC_STAT_STARTTIME_FIELD 22

static const char proc_deleted_suffix[] = " (deleted)";

/* Hex number at *s (no sign, no "0x"); advances *s. 0 or -EINVAL (empty, overflow). */
static int parse_hex(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int d;

	for (; (d = base_hex_digit(*p)) >= 0; p++) {
		if (v >> 60)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (p == *s)
		return -EINVAL;
	*s = p;
	*out = v;
	return 0;
}

/* Decimal number at *s; advances *s. 0 or -EINVAL (empty, overflow). */
static int parse_dec(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;

	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (p == *s)
		return -EINVAL;
	*s = p;
	*out = v;
	return 0;
}

static int expect(const char **s, char c)
{
	if (**s != c)
		return -EINVAL;
	(*s)++;
	return 0;
}

/* "rwxp": each position its letter or '-', the last 'p' (private) or 's' (shared). */
static int parse_perms(const char **s, bool *exec)
{
	const char *p = *s;

	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	*exec = p[2] == 'x';
	*s = p + 4;
	return 0;
}

/*
 * The rest of the line after the inode: nothing, or padding spaces then the path, which
 * runs to the end of the line (the kernel escapes '\n' inside names, so a newline can
 * only end the line).
 */
static int parse_path(const char *s, struct proc_mapping *out)
{
	size_t len, sfx = sizeof(proc_deleted_suffix) - 1;

	if (*s != '\0' && *s != '\n' && *s != ' ')
		return -EINVAL;
	s += strspn(s, " ");
	len = strcspn(s, "\n");
	if (s[len] == '\n' && s[len + 1] != '\0')
		return -EINVAL;
	if (len > sfx && memcmp(s + len - sfx, proc_deleted_suffix, sfx) == 0) {
		out->deleted = true;
		len -= sfx;
	}
	out->path = strndup(s, len);
	return out->path ? 0 : -ENOMEM;
}

int proc_parse_maps_line(const char *line, struct proc_mapping *out)
{
	const char *s = line;
	uint64_t major, minor;
	int err;

	memset(out, 0, sizeof(*out));
	if (parse_hex(&s, &out->start) || expect(&s, '-') || parse_hex(&s, &out->end) ||
	    expect(&s, ' ') || parse_perms(&s, &out->exec) || expect(&s, ' ') ||
	    parse_hex(&s, &out->pgoff) || expect(&s, ' ') || parse_hex(&s, &major) ||
	    expect(&s, ':') || parse_hex(&s, &minor) || expect(&s, ' ') ||
	    parse_dec(&s, &out->inode))
		goto invalid;
	if (out->start >= out->end || major > UINT32_MAX || minor > UINT32_MAX)
		goto invalid;
	out->dev_major = (uint32_t)major;
	out->dev_minor = (uint32_t)minor;
	err = parse_path(s, out);
	if (err == -EINVAL)
		goto invalid;
	return err;
invalid:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

void proc_mapping__fini(struct proc_mapping *m)
{
	free(m->path);
	m->path = NULL;
}

/* Copies the comm between '(' and the last ')'; returns what follows it, or NULL. */
static const char *stat_comm(const char *buf, char *comm, size_t comm_len)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	size_t n;

	if (!open || !close || close < open || comm_len == 0)
		return NULL;
	n = (size_t)(close - open - 1);
	if (n > comm_len - 1)
		n = comm_len - 1;
	memcpy(comm, open + 1, n);
	comm[n] = '\0';
	return close + 1;
}

int proc_parse_stat(const char *buf, char *comm, size_t comm_len, uint64_t *start_ticks)
{
	const char *s = stat_comm(buf, comm, comm_len);

	if (!s)
		return -EINVAL;
	/* After ')' come fields 3, 4, ... each preceded by one space. */
	for (int field = 3;; field++) {
		if (expect(&s, ' '))
			return -EINVAL;
		if (field == PROC_STAT_STARTTIME_FIELD)
			break;
		s += strcspn(s, " \n");
	}
	if (parse_dec(&s, start_ticks))
		return -EINVAL;
	if (*s != ' ' && *s != '\n' && *s != '\0')
		return -EINVAL;
	return 0;
}
