/*
 * Tests of unwind/: CFI evaluation on hand-assembled .eh_frame bytes (every
 * rule kind the walker knows, the PLT expression, unsupported and malformed
 * input), a real table (this test binary, libc), and the manager over real BPF
 * maps: shared tables, kept idle when the last process goes and taken back by
 * the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/base.h"
#include "proc/proc.h"
#include "unit.h"
#include "unwind/unwind.h"

/* A CIE (augmentation "zR", FDE pointers pcrel|sdata4, RA = r16, data align -8)
 * with the x86-64 entry rule: CFA = rsp + 8, RA at CFA - 8. */
static const uint8_t cie[] = {
    0x14, 0,	0,   0, /* length 20 */
    0,	  0,	0,   0, /* CIE id */
    1,	  'z',	'R', 0, /* version, augmentation */
    1,	  0x78, 16,	/* code align 1, data align -8, RA register 16 */
    1,	  0x1b,		/* aug length, R = pcrel|sdata4 */
    0x0c, 7,	8,	/* def_cfa rsp+8 */
    0x90, 1,		/* offset r16 at cfa-8 */
    0,	  0,		/* padding */
};

/* Section = cie + one FDE for [0x1000, 0x1000 + range) with the given program.
 * The section is loaded at vaddr 0x2000; pc_begin is pc-relative. */
static size_t make_section(uint8_t *out, const uint8_t *prog, size_t n, uint32_t range)
{
	size_t off = sizeof(cie), body = 4 + 4 + 4 + 1 + n;
	uint32_t len = (uint32_t)((body + 3) & ~3u), cie_ptr = (uint32_t)off + 4;
	int32_t rel = (int32_t)(0x1000 - (0x2000 + (int64_t)off + 8));

	memcpy(out, cie, sizeof(cie));
	memset(out + off, 0, 4 + len + 4);
	memcpy(out + off, &len, 4);
	memcpy(out + off + 4, &cie_ptr, 4);
	memcpy(out + off + 8, &rel, 4);
	memcpy(out + off + 12, &range, 4);
	out[off + 16] = 0; /* augmentation data length */
	memcpy(out + off + 17, prog, n);
	return off + 4 + len + 4; /* + zero terminator */
}

static int parse(const uint8_t *prog, size_t n, struct cfi_rows *r)
{
	uint8_t sec[256];
	size_t len = make_section(sec, prog, n, 0x40);
	int err = cfi_parse(sec, len, 0x2000, true, r);

	cfi_rows__finish(r);
	return err;
}

/* The row in effect at pc. */
static const struct hearth_unwind_row *row_at(const struct cfi_rows *r, uint32_t pc)
{
	const struct hearth_unwind_row *best = NULL;

	for (size_t i = 0; i < r->n; i++)
		if (r->rows[i].pc <= pc)
			best = &r->rows[i];
	return best;
}

/* Rows out of address order (FDEs of a big object are) come out as a stable
 * sort by (pc, has a rule) gives them: compared with an insertion sort. */
TEST(cfi_finish_sorts_like_a_stable_sort)
{
	size_t n = 50000;
	struct cfi_rows r = {0}, ref = {0};
	uint32_t x = 12345;

	r.rows = calloc(n, sizeof(*r.rows));
	ref.rows = calloc(n, sizeof(*ref.rows));
	CHECK(r.rows && ref.rows);
	r.cap = n;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		/* few distinct pcs (ties), some above 2^31, the low byte marks the order */
		r.rows[i].pc = (x >> 8) % 4096 * 0x100001u;
		r.rows[i].cfa_kind = (x >> 3) & 1 ? HEARTH_CFA_RSP : HEARTH_CFA_NONE;
		r.rows[i].cfa_off = (int32_t)i;
	}
	r.n = n;
	/* the reference: stable by (pc, has a rule), then finish's own dedup */
	for (size_t i = 0; i < n; i++) {
		struct hearth_unwind_row v = r.rows[i];
		uint64_t k = (uint64_t)v.pc << 1 | (v.cfa_kind != HEARTH_CFA_NONE);
		size_t j = i;

		if (i > 4000)
			break; /* insertion sort: a prefix is enough for a reference */
		while (j > 0 && ((uint64_t)ref.rows[j - 1].pc << 1 |
				 (ref.rows[j - 1].cfa_kind != HEARTH_CFA_NONE)) > k) {
			ref.rows[j] = ref.rows[j - 1];
			j--;
		}
		ref.rows[j] = v;
		ref.n = i + 1;
	}
	r.n = ref.n;
	ref.cap = ref.n;
	cfi_rows__finish(&r);
	/* finish keeps the last row of each pc and merges equal rules: apply the
	 * same to the reference by hand */
	{
		size_t w = 0;

		for (size_t i = 0; i < ref.n; i++) {
			if (i + 1 < ref.n && ref.rows[i + 1].pc == ref.rows[i].pc)
				continue;
			ref.rows[w++] = ref.rows[i];
		}
		CHECKF(r.n == w, "%zu rows, %zu expected", r.n, w);
		for (size_t i = 0; i < w; i++)
			CHECKF(r.rows[i].pc == ref.rows[i].pc && r.rows[i].cfa_off == ref.rows[i].cfa_off,
			       "row %zu: pc %u off %d, expected pc %u off %d", i, r.rows[i].pc,
			       r.rows[i].cfa_off, ref.rows[i].pc, ref.rows[i].cfa_off);
	}
cleanup:
	cfi_rows__fini(&r);
	free(ref.rows);
}

static int row_ref_cmp(const void *a, const void *b)
{
	const struct hearth_unwind_row *x = a, *y = b;
	uint64_t kx = (uint64_t)x->pc << 1 | (x->cfa_kind != HEARTH_CFA_NONE);
	uint64_t ky = (uint64_t)y->pc << 1 | (y->cfa_kind != HEARTH_CFA_NONE);

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return (x->cfa_off > y->cfa_off) - (x->cfa_off < y->cfa_off); /* the push order */
}

/* Tables bigger than the sort's 64k-row scratch (its blocks are merged in
 * place): random rows with ties, and sorted runs out of order as a big
 * object's FDEs are; compared with qsort on (key, push order). */
TEST(cfi_finish_sorts_big_tables_stably)
{
	for (int pattern = 0; pattern < 2; pattern++) {
		size_t n = 300001, w = 0;
		struct cfi_rows r = {0};
		struct hearth_unwind_row *ref = calloc(n, sizeof(*ref));
		uint32_t x = 777 + (uint32_t)pattern;

		r.rows = calloc(n, sizeof(*r.rows));
		CHECK(r.rows && ref);
		r.cap = r.n = n;
		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			if (pattern == 0) /* random, many ties */
				r.rows[i].pc = (x >> 4) % 100000 * 7u;
			else /* runs of 1000 ascending rows, the runs in a scrambled order */
				r.rows[i].pc = (uint32_t)((i / 1000 * 7919 % 301) * 1000000 + i % 1000 * 16);
			r.rows[i].cfa_kind = (x >> 3) & 1 ? HEARTH_CFA_RSP : HEARTH_CFA_NONE;
			r.rows[i].cfa_off = (int32_t)i;
		}
		memcpy(ref, r.rows, n * sizeof(*ref));
		qsort(ref, n, sizeof(*ref), row_ref_cmp);
		for (size_t i = 0; i < n; i++) {
			if (i + 1 < n && ref[i + 1].pc == ref[i].pc)
				continue;
			ref[w++] = ref[i];
		}
		cfi_rows__finish(&r);
		CHECKF(r.n == w, "pattern %d: %zu rows, %zu expected", pattern, r.n, w);
		for (size_t i = 0; i < w; i++)
			CHECKF(r.rows[i].pc == ref[i].pc && r.rows[i].cfa_off == ref[i].cfa_off,
			       "pattern %d row %zu: pc %u off %d, expected pc %u off %d", pattern, i,
			       r.rows[i].pc, r.rows[i].cfa_off, ref[i].pc, ref[i].cfa_off);
	cleanup:
		cfi_rows__fini(&r);
		free(ref);
		if (*unit_failed)
			return;
	}
}

/* cfi_parse_mapped drops the pages it has parsed as it goes: the rows are
 * those of cfi_parse over a heap copy of the same section (a big .eh_frame,
 * several drop windows: node's or libLLVM's when installed). */
TEST(cfi_parse_mapped_same_rows)
{
	const char *paths[] = {"/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"};
	struct cfi_rows a = {0}, b = {0};
	uint8_t *copy = NULL;
	void *m = MAP_FAILED;
	size_t mlen = 0, delta = 0;
	Elf *elf = NULL;
	int fd = -1;
	GElf_Shdr sh = {0};

	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths) && fd < 0; i++)
		fd = open(paths[i], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("  (skipped: no node or libLLVM-14)\n");
		goto cleanup;
	}
	elf_version(EV_CURRENT);
	CHECK((elf = elf_begin(fd, ELF_C_READ, NULL)) != NULL);
	{
		size_t shstrndx;
		Elf_Scn *scn = NULL;
		bool found = false;

		CHECK(elf_getshdrstrndx(elf, &shstrndx) == 0);
		while (!found && (scn = elf_nextscn(elf, scn)))
			found = gelf_getshdr(scn, &sh) &&
				!strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".eh_frame");
		CHECK(found && sh.sh_size > (2u << 20));
	}
	CHECK((copy = malloc(sh.sh_size)) != NULL);
	CHECK(pread(fd, copy, sh.sh_size, (off_t)sh.sh_offset) == (ssize_t)sh.sh_size);
	delta = sh.sh_offset & 4095;
	mlen = sh.sh_size + delta;
	m = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, (off_t)(sh.sh_offset - delta));
	CHECK(m != MAP_FAILED);
	CHECK(cfi_parse(copy, sh.sh_size, sh.sh_addr, true, &a) == 0);
	CHECK(cfi_parse_mapped((uint8_t *)m + delta, sh.sh_size, sh.sh_addr, true, &b) == 0);
	CHECKF(a.n == b.n && a.n > 100000 && !memcmp(a.rows, b.rows, a.n * sizeof(*a.rows)) &&
		   a.fdes == b.fdes,
	       "%zu rows vs %zu", a.n, b.n);
	/* and the mapping still reads the same bytes after the drops */
	CHECK(!memcmp((uint8_t *)m + delta, copy, sh.sh_size));
	printf("  %zu rows, %zu FDEs from %llu KiB\n", a.n, a.fdes,
	       (unsigned long long)(sh.sh_size >> 10));
cleanup:
	cfi_rows__fini(&a);
	cfi_rows__fini(&b);
	if (m != MAP_FAILED)
		munmap(m, mlen);
	free(copy);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

TEST(cfi_push_rbp_prologue)
{
	/* push rbp; mov rbp, rsp; ...; leave-like epilogue */
	static const uint8_t prog[] = {0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x50, 0x0c, 7, 8};
	struct cfi_rows r = {0};
	const struct hearth_unwind_row *w;

	CHECK(parse(prog, sizeof(prog), &r) == 0);
	CHECK(r.fdes == 1);
	w = row_at(&r, 0x1000);
	CHECK(w && w->cfa_kind == HEARTH_CFA_RSP && w->cfa_off == 8 &&
	      w->rbp_kind == HEARTH_RBP_SAME);
	w = row_at(&r, 0x1001);
	CHECK(w && w->cfa_kind == HEARTH_CFA_RSP && w->cfa_off == 16);
	CHECK(w->rbp_kind == HEARTH_RBP_OFFSET && w->rbp_off == -16);
	w = row_at(&r, 0x1004);
	CHECK(w && w->cfa_kind == HEARTH_CFA_RBP && w->cfa_off == 16);
	w = row_at(&r, 0x1014);
	CHECK(w && w->cfa_kind == HEARTH_CFA_RSP && w->cfa_off == 8);
	w = row_at(&r, 0x1040); /* past the FDE: no CFI */
	CHECK(w && w->cfa_kind == HEARTH_CFA_NONE);
cleanup:
	cfi_rows__fini(&r);
}

TEST(cfi_remember_restore_state)
{
	static const uint8_t prog[] = {0x41, 0x0e, 32, 0x0a, 0x42, 0x0e, 8, 0x41, 0x0b};
	struct cfi_rows r = {0};
	const struct hearth_unwind_row *w;

	CHECK(parse(prog, sizeof(prog), &r) == 0);
	w = row_at(&r, 0x1003);
	CHECK(w && w->cfa_off == 8);
	w = row_at(&r, 0x1004);
	CHECK(w && w->cfa_off == 32);
cleanup:
	cfi_rows__fini(&r);
}

TEST(cfi_plt_expression)
{
	static const uint8_t prog[] = {0x0f, 11,   0x77, 8,    0x80, 0,	  0x3f,
				       0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
	struct cfi_rows r = {0};
	const struct hearth_unwind_row *w;

	CHECK(parse(prog, sizeof(prog), &r) == 0);
	w = row_at(&r, 0x1000);
	CHECK(w && w->cfa_kind == HEARTH_CFA_PLT && w->cfa_off == 8 && w->plt_thr == 11);
cleanup:
	cfi_rows__fini(&r);
}

TEST(cfi_unsupported_rules_stop_cleanly)
{
	/* CFA from an expression that is not the PLT one; then RA moved elsewhere;
	 * then an opcode hearth does not know (0x3f), after which nothing is trusted. */
	static const uint8_t prog[] = {0x0f, 2,	 0x77, 16,   0x41, 0x0c, 7,    16,
				       0x09, 16, 3,    0x41, 0x90, 1,	 0x41, 0x3f};
	struct cfi_rows r = {0};
	const struct hearth_unwind_row *w;

	CHECK(parse(prog, sizeof(prog), &r) == 0);
	w = row_at(&r, 0x1000);
	CHECK(w && w->cfa_kind == HEARTH_CFA_UNSUPPORTED);
	w = row_at(&r, 0x1001);
	CHECK(w && w->cfa_kind == HEARTH_CFA_UNSUPPORTED); /* RA in a register */
	w = row_at(&r, 0x1002);
	CHECK(w && w->cfa_kind == HEARTH_CFA_RSP && w->cfa_off == 16);
	w = row_at(&r, 0x1003);
	CHECK(w && w->cfa_kind == HEARTH_CFA_UNSUPPORTED);
cleanup:
	cfi_rows__fini(&r);
}

TEST(cfi_undefined_ra_is_outermost)
{
	static const uint8_t prog[] = {0x07, 16};
	struct cfi_rows r = {0};
	const struct hearth_unwind_row *w;

	CHECK(parse(prog, sizeof(prog), &r) == 0);
	w = row_at(&r, 0x1000);
	CHECK(w && w->cfa_kind == HEARTH_CFA_END);
cleanup:
	cfi_rows__fini(&r);
}

TEST(cfi_malformed_input)
{
	uint8_t sec[256];
	size_t len = make_section(sec, (const uint8_t[]){0x0c, 7, 8}, 3, 0x10);
	struct cfi_rows r = {0};

	/* Every truncation parses without reading past the end (ASan watches). */
	for (size_t n = 0; n < len; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		CHECK(copy);
		memcpy(copy, sec, n);
		cfi_parse(copy, n, 0x2000, true, &r);
		free(copy);
	}
	sec[sizeof(cie) + 4] = 0x7f; /* CIE pointer to nowhere */
	cfi_rows__fini(&r);
	CHECK(cfi_parse(sec, len, 0x2000, true, &r) == 0 && r.n == 0);
	sec[0] = 0xf0; /* CIE longer than the section */
	CHECK(cfi_parse(sec, len, 0x2000, true, &r) == -EINVAL);
cleanup:
	cfi_rows__fini(&r);
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

__attribute__((noinline)) static int probe_fn(int x)
{
	return x * 3 + 1;
}

TEST(table_of_this_binary)
{
	struct unwind_table *t = NULL;
	uintptr_t bias = 0;
	const struct hearth_unwind_row *w;
	uint64_t vaddr;

	CHECK(probe_fn(1) == 4);
	CHECK(unwind_table__build("/proc/self/exe", 0, 0, 0, &t) == 0);
	dl_iterate_phdr(first_object, &bias);
	vaddr = (uintptr_t)probe_fn - bias;
	w = row_at(&t->rows, (uint32_t)vaddr);
	CHECKF(w && w->cfa_kind == HEARTH_CFA_RSP && w->cfa_off == 8, "kind %d off %d",
	       w ? w->cfa_kind : -1, w ? w->cfa_off : 0);
	for (size_t i = 1; i < t->rows.n; i++)
		CHECK(t->rows.rows[i - 1].pc < t->rows.rows[i].pc);
cleanup:
	unwind_table__free(t);
}

TEST(table_of_libc)
{
	struct unwind_table *t = NULL, *none = NULL;
	size_t n_signal = 0;

	CHECK(unwind_table__build("/lib/x86_64-linux-gnu/libc.so.6", 0, 0, 0, &t) == 0);
	CHECKF(t->rows.n > 5000, "%zu rows", t->rows.n);
	CHECKF(strlen(t->obj->build_id) == 40, "build-id %s", t->obj->build_id);
	CHECKF(t->rows.unsupported * 100 < t->rows.n, "%zu of %zu unsupported", t->rows.unsupported,
	       t->rows.n);
	printf("  libc: %zu FDEs, %zu rows (%zu unsupported), %.1f ms\n", t->rows.fdes, t->rows.n,
	       t->rows.unsupported, t->build_ms);
	/* __restore_rt's FDE (augmentation "zRS") becomes SIGNAL rows, starting one
	 * byte before it (glibc's nop), where the walker looks a handler's return
	 * address up. */
	for (size_t i = 0; i < t->rows.n; i++)
		n_signal += t->rows.rows[i].cfa_kind == HEARTH_CFA_SIGNAL;
	CHECKF(n_signal >= 1, "%zu SIGNAL rows", n_signal);
	CHECK(unwind_table__build("/nonexistent", 0, 0, 0, &none) == -ENOENT && !none);
cleanup:
	unwind_table__free(t);
}

/* unwind_rows_fn over one array of rows indexed as unwind_rows is. */
static const struct hearth_unwind_row *rows_in(void *ctx, const struct hearth_unwind_mapping *m)
{
	return (const struct hearth_unwind_row *)ctx + m->row_start;
}

/* The user-space walk of a copied stack (a new process's first samples): a CFI
 * step, a signal frame, the outermost frame; a copy too short ends the walk
 * incomplete instead of reading past it. */
TEST(walk_copy)
{
	/* One object at [0x1000, 0x3000), bias 0: f at 0x1000 (CFA = rsp + 16),
	 * a signal trampoline at 0x1200 (its rule from 0x11ff), an outermost
	 * function at 0x1400. */
	static const struct hearth_unwind_row rows[] = {
	    {.pc = 0x1000, .cfa_kind = HEARTH_CFA_RSP, .cfa_off = 16},
	    {.pc = 0x11ff, .cfa_kind = HEARTH_CFA_SIGNAL},
	    {.pc = 0x1300, .cfa_kind = HEARTH_CFA_RSP, .cfa_off = 8},
	    {.pc = 0x1400, .cfa_kind = HEARTH_CFA_END},
	};
	struct hearth_unwind_proc *view = calloc(1, sizeof(*view));
	uint64_t stack[64] = {0}, frames[8];
	const uint64_t sp = 0x7000;
	bool complete = true;
	size_t n;

	CHECK(view);
	view->n = 1;
	view->m[0] = (struct hearth_unwind_mapping){0x1000, 0x3000, 0, 0, 4, 0, 0};
	/* f's return address at CFA - 8 = sp + 8: the trampoline's first byte, as
	 * a signal handler's. The signal frame's ucontext starts at the CFA. */
	stack[1] = 0x1200;
	stack[(16 + HEARTH_SIGFRAME_RIP) / 8] = 0x1310; /* interrupted in g */
	stack[(16 + HEARTH_SIGFRAME_RSP) / 8] = sp + 0x100;
	stack[(16 + HEARTH_SIGFRAME_RBP) / 8] = 0;
	stack[0x100 / 8] = 0x1401; /* g's return address: into the outermost one */
	n = unwind_walk_copy(view, rows_in, (void *)rows, 0x1010, sp, 0, (const uint8_t *)stack,
			     sizeof(stack), frames, 8, &complete);
	/* f, g (the trampoline's frame dropped; its exact interrupted pc recorded one
	 * byte on, as the collector looks a caller up at frame - 1), the outermost one */
	CHECKF(n == 3 && complete && frames[0] == 0x1010 && frames[1] == 0x1311 &&
		   frames[2] == 0x1401,
	       "%zu frames, complete %d, %#llx %#llx", n, complete, (unsigned long long)frames[0],
	       (unsigned long long)frames[1]);
	/* The same from a copy of 12 bytes: f's return address is read, nothing more. */
	n = unwind_walk_copy(view, rows_in, (void *)rows, 0x1010, sp, 0, (const uint8_t *)stack, 12,
			     frames, 8, &complete);
	CHECKF(n == 1 && !complete, "%zu frames, complete %d", n, complete);
cleanup:
	free(view);
}

/* Starts a manager test: the row map (chunks chunks, mmapable) and process map
 * shaped like bpf/profile.bpf.c's, and a manager over them. 0 or -1. */
static int mgr_test_begin(uint32_t chunks, int *rows_fd, int *procs_fd, struct unwind_mgr **m)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);

	*rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_rows", 4, sizeof(struct hearth_unwind_row),
				  chunks * HEARTH_UNWIND_CHUNK_ROWS, &mm);
	*procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "uw_procs", 4,
				   sizeof(struct hearth_unwind_proc), 64, NULL);
	if (*rows_fd < 0 || *procs_fd < 0)
		return -1;
	return unwind_mgr__new(*rows_fd, *procs_fd, chunks, m) ? -1 : 0;
}

/* Ends a manager test: its child killed and reaped, the manager and maps freed. */
static void mgr_test_end(struct unwind_mgr *m, int rows_fd, int procs_fd, pid_t child)
{
	int status;

	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	unwind_mgr__free(m);
	if (rows_fd >= 0)
		close(rows_fd);
	if (procs_fd >= 0)
		close(procs_fd);
}

/* The manager over real maps shaped like bpf/profile.bpf.c's (needs root). */
TEST(mgr_shares_and_drops_tables)
{
	struct hearth_unwind_proc *val = calloc(1, sizeof(*val));
	struct unwind_mgr *m = NULL;
	struct unwind_mgr_stats st, st2, st3;
	int rows_fd = -1, procs_fd = -1;
	uint32_t self = (uint32_t)getpid(), child;
	pid_t pid = -1;
	bool covered = false;

	CHECK(val);
	if (geteuid() != 0) {
		printf("  (skipped: needs root for BPF maps)\n");
		goto cleanup;
	}
	CHECK(mgr_test_begin(HEARTH_UNWIND_DEFAULT_CHUNKS, &rows_fd, &procs_fd, &m) == 0);
	unwind_mgr__note(m, self, 1);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	unwind_mgr__stats(m, &st);
	CHECKF(st.procs == 1 && st.tables >= 2 && st.chunks_used >= 2, "%llu procs %llu tables",
	       (unsigned long long)st.procs, (unsigned long long)st.tables);
	CHECK(bpf_map_lookup_elem(procs_fd, &self, val) == 0 && val->n > 0 && val->pstart == 1);
	for (uint32_t i = 0; i < val->n; i++)
		covered |= val->m[i].start <= (uintptr_t)probe_fn &&
			   (uintptr_t)probe_fn < val->m[i].end && val->m[i].row_count > 0;
	CHECK(covered);
	/* A child maps the same objects: no new table. */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	child = (uint32_t)pid;
	unwind_mgr__note(m, child, 2);
	unwind_mgr__work(m, 1000);
	unwind_mgr__stats(m, &st2);
	CHECK(st2.procs == 2 && st2.tables == st.tables && st2.chunks_used == st.chunks_used);
	unwind_mgr__exit(m, self);
	unwind_mgr__stats(m, &st2);
	CHECK(st2.procs == 1 && st2.tables == st.tables);
	unwind_mgr__exit(m, child);
	unwind_mgr__stats(m, &st2);
	/* The last process gone: its tables stay loaded, idle, for the next one. */
	CHECKF(st2.procs == 0 && st2.tables == 0 && st2.idle_tables == st.tables &&
		   st2.chunks_used == st.chunks_used,
	       "%llu tables %llu idle %llu chunks", (unsigned long long)st2.tables,
	       (unsigned long long)st2.idle_tables, (unsigned long long)st2.chunks_used);
	CHECK(bpf_map_lookup_elem(procs_fd, &self, val) < 0);
	/* A new process of the same objects takes them back without a rebuild. */
	unwind_mgr__note(m, self, 3);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	unwind_mgr__stats(m, &st2);
	CHECKF(st2.procs == 1 && st2.tables == st.tables && st2.idle_tables == 0 &&
		   st2.reused == st.tables && st2.chunks_used == st.chunks_used &&
		   st2.build_ms == st.build_ms,
	       "%llu tables %llu reused", (unsigned long long)st2.tables,
	       (unsigned long long)st2.reused);
	CHECK(bpf_map_lookup_elem(procs_fd, &self, val) == 0 && val->pstart == 3);
	/* Idle again, and our executable rewritten in place (a new mtime, the same inode):
	 * its table is built anew, every other one taken back. */
	unwind_mgr__exit(m, self);
	CHECK(utimensat(AT_FDCWD, "/proc/self/exe", NULL, 0) == 0);
	unwind_mgr__note(m, self, 4);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	unwind_mgr__stats(m, &st3);
	CHECKF(st3.tables == st.tables && st3.reused == st2.reused + st.tables - 1 &&
		   st3.build_failed == st2.build_failed && st3.build_ms > st2.build_ms,
	       "%llu tables %llu reused", (unsigned long long)st3.tables,
	       (unsigned long long)st3.reused);
cleanup:
	mgr_test_end(m, rows_fd, procs_fd, pid);
	free(val);
}

/* Whether pid's maps show a mapping whose path contains s. */
static bool maps_have(pid_t pid, const char *s)
{
	struct proc_mapping *maps = NULL;
	size_t n = 0;
	bool found = false;

	if (proc_read_maps((uint32_t)pid, &maps, &n))
		return false;
	for (size_t i = 0; i < n && !found; i++)
		found = strstr(maps[i].path, s) != NULL;
	proc_maps_free(maps, n);
	return found;
}

/* Checks that every executable file mapping of pid's view whose table needs at
 * most max_chunks chunks has rows; returns how many mappings were checked. */
static int fitting_mappings_have_rows(int procs_fd, pid_t pid, uint32_t max_chunks)
{
	struct hearth_unwind_proc *val = calloc(1, sizeof(*val));
	struct proc_mapping *maps = NULL;
	size_t n = 0;
	int checked = -1;
	uint32_t key = (uint32_t)pid;

	if (!val || bpf_map_lookup_elem(procs_fd, &key, val) || proc_read_maps(key, &maps, &n))
		goto cleanup;
	checked = 0;
	for (uint32_t i = 0; i < val->n; i++) {
		struct unwind_table *t = NULL;
		char path[96];
		size_t need;

		if (val->m[i].row_count)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)val->m[i].start, (unsigned long long)val->m[i].end);
		if (unwind_table__build(path, 0, 0, 0, &t))
			continue; /* no table to have */
		need = (t->rows.n + HEARTH_UNWIND_CHUNK_ROWS - 1) / HEARTH_UNWIND_CHUNK_ROWS;
		unwind_table__free(t);
		if (need <= max_chunks) {
			printf("  mapping %#llx without rows (%zu chunks)\n",
			       (unsigned long long)val->m[i].start, need);
			checked = -1;
			goto cleanup;
		}
	}
	checked = (int)val->n;
cleanup:
	proc_maps_free(maps, n);
	free(val);
	return checked;
}

/* Objects that found no room in a full row map are built once, not once per
 * process or re-read of the maps (issue 29: 73% of hearth's CPU on a busy host
 * was sorting such tables again), and again once room appears. */
TEST(mgr_no_room_built_once)
{
	const uint32_t chunks = 4; /* one object may take one chunk */
	struct unwind_mgr *m = NULL;
	struct unwind_mgr_stats st, st2, st3;
	int rows_fd = -1, procs_fd = -1, status;
	uint32_t self = (uint32_t)getpid();
	pid_t kids[3] = {-1, -1, -1};

	if (geteuid() != 0) {
		printf("  (skipped: needs root for BPF maps)\n");
		goto cleanup;
	}
	CHECK(mgr_test_begin(chunks, &rows_fd, &procs_fd, &m) == 0);
	/* This binary maps some 50 objects: four chunks hold a few of them. */
	unwind_mgr__note(m, self, 1);
	CHECK(unwind_mgr__work(m, 5000) == 1);
	unwind_mgr__stats(m, &st);
	CHECKF(st.no_room > 0 && st.chunks_used == chunks, "%llu without room, %llu chunks",
	       (unsigned long long)st.no_room, (unsigned long long)st.chunks_used);
	/* Re-reads of its maps and two more processes of the same objects. */
	for (int i = 0; i < 3; i++) {
		unwind_mgr__remap(m, self, 1, HEARTH_REMAP_FILE);
		CHECK(unwind_mgr__work(m, 5000) == 1);
	}
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
		unwind_mgr__note(m, (uint32_t)kids[i], 10 + (uint64_t)i);
		CHECK(unwind_mgr__work(m, 5000) == 1);
	}
	unwind_mgr__stats(m, &st2);
	CHECKF(st2.builds == st.builds && st2.procs == 3,
	       "%llu builds after 5 more views of the same objects, %llu at first (%llu without "
	       "room)",
	       (unsigned long long)st2.builds, (unsigned long long)st.builds,
	       (unsigned long long)st.no_room);
	/* Room appears: every view gone, every table idle. A process of a few of
	 * the same objects (sleep, libc, ld.so) gets each table that can fit. */
	unwind_mgr__exit(m, self);
	unwind_mgr__exit(m, (uint32_t)kids[0]);
	unwind_mgr__exit(m, (uint32_t)kids[1]);
	kids[2] = fork();
	CHECK(kids[2] >= 0);
	if (kids[2] == 0) {
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	/* exec'ed (the fork maps libc too) and ld.so done: sleep's libc mapped */
	for (int i = 0; i < 200 && !(maps_have(kids[2], "/sleep") && maps_have(kids[2], "libc."));
	     i++)
		usleep(10000);
	unwind_mgr__note(m, (uint32_t)kids[2], 20);
	CHECK(unwind_mgr__work(m, 5000) == 1);
	unwind_mgr__stats(m, &st3);
	printf("  %llu builds, %llu without room; 5 more views: %llu builds; sleep: %llu builds "
	       "(%llu of objects without room), %llu remembered\n",
	       (unsigned long long)st.builds, (unsigned long long)st.no_room,
	       (unsigned long long)(st2.builds - st.builds),
	       (unsigned long long)(st3.builds - st2.builds),
	       (unsigned long long)(st3.rebuilds - st2.rebuilds),
	       (unsigned long long)st3.no_room_objects);
	CHECKF(fitting_mappings_have_rows(procs_fd, kids[2], chunks / 4) > 0 &&
		   st3.builds - st2.builds <= 3,
	       "%llu builds for sleep's objects", (unsigned long long)(st3.builds - st2.builds));
cleanup:
	for (int i = 0; i < 3; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], &status, 0);
		}
	}
	unwind_mgr__free(m);
	if (rows_fd >= 0)
		close(rows_fd);
	if (procs_fd >= 0)
		close(procs_fd);
}

static void count_read(void *ctx, uint32_t pid, uint64_t pstart, bool remap)
{
	(void)pid;
	(void)pstart;
	(void)remap;
	(*(int *)ctx)++;
}

/* A process caught inside exec (its executable and ld.so mapped, no library
 * yet) keeps its maps re-read until ld.so has mapped libc, even when a walk asks
 * for a re-read (REMAP) meanwhile and that re-read finds nothing new: the
 * request used to replace the queued re-reads, so libc stayed out of the view
 * (its frames unwound from no table) until the next REMAP, a second later. */
TEST(mgr_remap_keeps_exec_rechecks)
{
	struct hearth_unwind_proc *val = calloc(1, sizeof(*val));
	struct unwind_mgr *m = NULL;
	int rows_fd = -1, procs_fd = -1, remap_fd = -1, status;
	struct hearth_remap_key rk;
	uint64_t hold;
	uint32_t n_at_exec = 0;
	bool has_libc = false;
	int reads = 0;
	pid_t pid = -1;

	CHECK(val);
	if (geteuid() != 0) {
		printf("  (skipped: needs root for BPF maps)\n");
		goto cleanup;
	}
	CHECK(mgr_test_begin(HEARTH_UNWIND_DEFAULT_CHUNKS, &rows_fd, &procs_fd, &m) == 0);
	/* Stopped by ptrace right after exec: ld.so has not run yet. */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
			execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status));
	CHECK(!maps_have(pid, "libc."));
	unwind_mgr__set_on_read(m, count_read, &reads);
	remap_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "uw_remap", sizeof(rk), sizeof(hold), 64,
				  NULL);
	CHECK(remap_fd >= 0);
	unwind_mgr__set_remap(m, remap_fd);
	unwind_mgr__note(m, (uint32_t)pid, 1);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	CHECK(bpf_map_lookup_elem(procs_fd, &(uint32_t){(uint32_t)pid}, val) == 0);
	n_at_exec = val->n;
	CHECKF(reads == 1, "%d maps reads told after the first view", reads); /* the process table's cue */
	/* A walk's REMAP finds the maps as they were. */
	unwind_mgr__remap(m, (uint32_t)pid, 1, HEARTH_REMAP_OTHER);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	rk = (struct hearth_remap_key){(uint32_t)pid, HEARTH_REMAP_OTHER};
	CHECKF(bpf_map_lookup_elem(remap_fd, &rk, &hold) != 0, "a new process's re-reads held back");
	/* ld.so maps libc; the queued re-reads see it within their 100/500/2000 ms. */
	CHECK(ptrace(PTRACE_DETACH, pid, NULL, NULL) == 0);
	for (int i = 0; i < 200 && !maps_have(pid, "libc."); i++)
		usleep(10000);
	CHECK(maps_have(pid, "libc."));
	for (int i = 0; i < 60 && !has_libc; i++) {
		usleep(50000);
		unwind_mgr__work(m, 1000);
		has_libc = bpf_map_lookup_elem(procs_fd, &(uint32_t){(uint32_t)pid}, val) == 0 &&
			   val->n > n_at_exec;
	}
	CHECKF(has_libc, "view of %u executable mappings at exec, %u 3 s after libc was mapped",
	       n_at_exec, val->n);
	CHECK(reads >= 2);
cleanup:
	mgr_test_end(m, rows_fd, procs_fd, pid);
	free(val);
}

/* A REMAP re-read that finds the view unchanged holds back the next REMAP of
 * its pc's kind only: the vdso's or a JIT's pcs (OTHER) must not keep a library
 * dlopened meanwhile (FILE) out of the view for seconds. */
TEST(mgr_remap_holds_by_kind)
{
	uint32_t self = (uint32_t)getpid();
	struct unwind_mgr *m = NULL;
	int rows_fd = -1, procs_fd = -1, remap_fd = -1;
	struct hearth_remap_key other = {self, HEARTH_REMAP_OTHER}, file = {self, HEARTH_REMAP_FILE};
	uint64_t hold = 0, first = 0, now;

	if (geteuid() != 0) {
		printf("  (skipped: needs root for BPF maps)\n");
		goto cleanup;
	}
	CHECK(mgr_test_begin(HEARTH_UNWIND_DEFAULT_CHUNKS, &rows_fd, &procs_fd, &m) == 0);
	remap_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "uw_remap", sizeof(other), sizeof(hold),
				  64, NULL);
	CHECK(remap_fd >= 0);
	unwind_mgr__set_remap(m, remap_fd);
	unwind_mgr__note(m, self, 1);
	CHECK(unwind_mgr__work(m, 1000) == 1); /* settled: libraries mapped, no re-reads */
	now = base_clock_ns(CLOCK_MONOTONIC);
	unwind_mgr__remap(m, self, 1, HEARTH_REMAP_OTHER);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	CHECK(bpf_map_lookup_elem(remap_fd, &other, &first) == 0);
	CHECKF(first >= now + 900000000ull, "held %lld ms", (long long)(first - now) / 1000000);
	CHECKF(bpf_map_lookup_elem(remap_fd, &file, &hold) != 0,
	       "a pc in a file mapping held back by another kind's re-read");
	/* A second in a row doubles its own kind's hold; a FILE one earns its own. */
	unwind_mgr__remap(m, self, 1, HEARTH_REMAP_OTHER);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	CHECK(bpf_map_lookup_elem(remap_fd, &other, &hold) == 0);
	CHECKF(hold >= now + 1900000000ull, "held %lld ms", (long long)(hold - now) / 1000000);
	unwind_mgr__remap(m, self, 1, HEARTH_REMAP_FILE);
	CHECK(unwind_mgr__work(m, 1000) == 1);
	CHECK(bpf_map_lookup_elem(remap_fd, &file, &hold) == 0);
	now = base_clock_ns(CLOCK_MONOTONIC);
	CHECKF(hold < now + 1100000000ull, "a first FILE hold of %lld ms",
	       (long long)(hold - now) / 1000000);
cleanup:
	mgr_test_end(m, rows_fd, procs_fd, -1);
	if (remap_fd >= 0)
		close(remap_fd);
}
