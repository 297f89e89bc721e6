/*
 * Tests of partial unwind tables (src/unwind/partial.c): the rows of the FDEs
 * asked for, found through .eh_frame_hdr and parsed one at a time, give every
 * pc asked for the rule the whole table gives it; a pc of an FDE not asked for
 * falls in a gap (a HEARTH_CFA_NONE row, which makes the BPF walker ask); the
 * table stays under its cap, charged to MEM_UNWIND; a file without
 * .eh_frame_hdr gets none; a file truncated in place under a partial table's
 * mapping stops it, counted, instead of killing the agent with SIGBUS. Over
 * libc (any 64-bit ELF with .eh_frame_hdr).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "unit.h"
#include "unwind/unwind.h"

static const char *libc_path(void)
{
	static const char *const c[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6",
					"/lib/x86_64-linux-gnu/libc.so.6", "/proc/self/exe"};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++)
		if (access(c[i], R_OK) == 0)
			return c[i];
	return "/proc/self/exe";
}

/* The row covering pc (the last with row.pc <= pc), or NULL. */
static const struct hearth_unwind_row *lookup(const struct cfi_rows *r, uint64_t pc)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &r->rows[lo - 1] : NULL;
}

static bool same_rule(const struct hearth_unwind_row *x, const struct hearth_unwind_row *y)
{
	return x && y && x->cfa_kind == y->cfa_kind && x->rbp_kind == y->rbp_kind &&
	       x->cfa_off == y->cfa_off && x->rbp_off == y->rbp_off && x->plt_thr == y->plt_thr;
}

TEST(partial_rows_match_the_whole_table)
{
	const char *path = libc_path();
	struct unwind_table *full = NULL, *part = NULL;
	struct cfi_rows out = {0};
	struct unwind_partial_stats ps;
	uint64_t pcs[200];
	size_t n_pcs = 0, bad = 0, gaps = 0, asked_gap = 0;

	CHECK(unwind_table__build(path, 0, 0, 0, &full) == 0);
	CHECK(unwind_table__build_partial(path, 0, 0, &part) == 0);
	CHECK(part->partial && part->rows.n == 1 && part->rows.rows[0].cfa_kind == HEARTH_CFA_NONE);
	CHECK(full->rows.n > 1000);
	/* 200 pcs spread over the object, each in the middle of a row with a rule */
	for (size_t i = 0; i + 1 < full->rows.n && n_pcs < 200; i += full->rows.n / 200 + 1) {
		const struct hearth_unwind_row *r = &full->rows.rows[i];

		if (r->cfa_kind == HEARTH_CFA_NONE)
			continue;
		pcs[n_pcs++] = r->pc + (full->rows.rows[i + 1].pc - r->pc) / 2;
	}
	for (size_t k = 0; k < n_pcs; k++)
		unwind_partial__want(part->partial, pcs[k]);
	CHECK(unwind_partial__pending(part->partial));
	CHECK(unwind_partial__resolve(part->partial, 1, &out) == 1);
	CHECK(!unwind_partial__pending(part->partial));
	for (size_t k = 0; k < n_pcs; k++)
		bad += !same_rule(lookup(&out, pcs[k]), lookup(&full->rows, pcs[k]));
	CHECKF(bad == 0, "%zu of %zu pcs asked for get another rule than the whole table's", bad,
	       n_pcs);
	/* pcs of rows not asked for: in a gap (NONE), or in an FDE loaded anyway */
	for (size_t i = 1; i + 1 < full->rows.n; i += 7) {
		const struct hearth_unwind_row *p = lookup(&out, full->rows.rows[i].pc);

		if (full->rows.rows[i].cfa_kind == HEARTH_CFA_NONE)
			continue;
		if (p && p->cfa_kind == HEARTH_CFA_NONE)
			gaps++;
		else if (!same_rule(p, &full->rows.rows[i]))
			asked_gap++;
	}
	CHECKF(gaps > 0 && asked_gap == 0, "%zu in gaps, %zu with another rule", gaps, asked_gap);
	unwind_partial__stats(part->partial, &ps);
	CHECK(ps.fdes > 0 && ps.fdes <= n_pcs && ps.not_covered == 0);
	CHECK(mem_budget__used(MEM_UNWIND) >= ps.rows * sizeof(struct hearth_unwind_row));
	printf("  %s: %zu pcs -> %llu FDEs, %zu rows (whole table: %zu rows); %zu of the "
	       "others in gaps\n",
	       path, n_pcs, (unsigned long long)ps.fdes, out.n, full->rows.n, gaps);
	/* asked again: nothing changes */
	unwind_partial__want(part->partial, pcs[0]);
	cfi_rows__fini(&out);
	CHECK(unwind_partial__resolve(part->partial, 2, &out) == 0);
cleanup:
	cfi_rows__fini(&out);
	unwind_table__free(full);
	unwind_table__free(part);
	CHECK(mem_budget__used(MEM_UNWIND) == 0);
}

TEST(partial_stays_under_its_cap)
{
	const char *path = libc_path();
	struct unwind_table *full = NULL, *part = NULL;
	struct cfi_rows out = {0};
	struct unwind_partial_stats ps;
	uint64_t now = 1;

	CHECK(unwind_table__build(path, 0, 0, 0, &full) == 0);
	CHECK(unwind_table__build_partial(path, 0, 0, &part) == 0);
	/* every row's pc, batch after batch: more than the cap when the object is big */
	for (size_t i = 0; i < full->rows.n; i++) {
		if (full->rows.rows[i].cfa_kind == HEARTH_CFA_NONE)
			continue;
		if (!unwind_partial__want(part->partial, full->rows.rows[i].pc) &&
		    unwind_partial__pending(part->partial)) {
			cfi_rows__fini(&out);
			CHECK(unwind_partial__resolve(part->partial, ++now, &out) >= 0);
			unwind_partial__want(part->partial, full->rows.rows[i].pc);
		}
	}
	cfi_rows__fini(&out);
	CHECK(unwind_partial__resolve(part->partial, ++now, &out) >= 0);
	unwind_partial__stats(part->partial, &ps);
	CHECKF(ps.rows + 1 <= UNWIND_PARTIAL_MAX_ROWS, "%llu rows", (unsigned long long)ps.rows);
	CHECK(full->rows.n < UNWIND_PARTIAL_MAX_ROWS || ps.fdes_dropped > 0);
	printf("  %llu FDEs added, %llu dropped for the cap, %llu loaded (%llu rows)\n",
	       (unsigned long long)ps.fdes_added, (unsigned long long)ps.fdes_dropped,
	       (unsigned long long)ps.fdes, (unsigned long long)ps.rows);
cleanup:
	cfi_rows__fini(&out);
	unwind_table__free(full);
	unwind_table__free(part);
	CHECK(mem_budget__used(MEM_UNWIND) == 0);
}

TEST(partial_needs_an_eh_frame_hdr)
{
	struct unwind_table *t = NULL;
	int err = unwind_table__build_partial("/etc/hostname", 0, 0, &t);

	CHECK(err < 0 && !t);
	err = unwind_table__build_partial("/nonexistent/libx.so", 0, 0, &t);
	CHECK(err == -ENOENT && !t);
cleanup:
	unwind_table__free(t);
}

/* Copies src to dst. 0 or -errno. */
static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600), err = 0;
	ssize_t n;

	if (in < 0 || out < 0)
		err = -errno;
	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			err = -EIO;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		err = err ? err : -errno;
	return err;
}

/*
 * `cp new.so old.so` over a library whose partial table lives: the same inode
 * shrinks under the table's mapping of .eh_frame_hdr and .eh_frame, and reading
 * them raises SIGBUS. The next resolve must fail with -EIO, count the fault and
 * never read again; before the guard this test died of SIGBUS.
 */
TEST(partial_file_truncated_under_it)
{
	char dir[] = "/tmp/hearth-partial-XXXXXX", path[64];
	struct unwind_table *full = NULL, *part = NULL;
	struct cfi_rows out = {0};
	struct unwind_partial_stats ps;
	size_t asked = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/libcopy.so", dir);
	CHECK(copy_file(libc_path(), path) == 0);
	CHECK(unwind_table__build(path, 0, 0, 0, &full) == 0);
	CHECK(unwind_table__build_partial(path, 0, 0, &part) == 0);
	for (size_t i = 0; i + 1 < full->rows.n && asked < 50; i += full->rows.n / 50 + 1)
		if (full->rows.rows[i].cfa_kind != HEARTH_CFA_NONE)
			asked += unwind_partial__want(part->partial, full->rows.rows[i].pc);
	CHECK(asked > 0);
	CHECK(truncate(path, 0) == 0); /* the same inode, now empty */
	CHECK(unwind_partial__resolve(part->partial, 1, &out) == -EIO);
	unwind_partial__stats(part->partial, &ps);
	CHECKF(ps.bus_faults == 1 && ps.fdes == 0, "%llu faults, %llu FDEs",
	       (unsigned long long)ps.bus_faults, (unsigned long long)ps.fdes);
	/* never read again: nothing is asked for, nothing resolved */
	CHECK(!unwind_partial__want(part->partial, full->rows.rows[1].pc));
	CHECK(!unwind_partial__pending(part->partial));
	CHECK(unwind_partial__resolve(part->partial, 2, &out) == -EIO);
	/* a table built from the truncated file fails cleanly */
	unwind_table__free(full);
	full = NULL;
	CHECK(unwind_table__build(path, 0, 0, 0, &full) < 0 && !full);
	CHECK(base_guard_faults() >= 1);
cleanup:
	cfi_rows__fini(&out);
	unwind_table__free(full);
	unwind_table__free(part);
	unlink(path);
	rmdir(dir);
	CHECK(mem_budget__used(MEM_UNWIND) == 0);
}
