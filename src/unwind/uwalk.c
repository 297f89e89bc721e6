/*
 * unwind_walk_copy: the table walk of bpf/profile.bpf.c (unwind_step), in user
 * space, over a copy of a user stack. A new process's samples taken before its
 * view was published travel with their registers and HEARTH_RAW_STACK_BYTES of
 * stack (struct hearth_raw_sample); once the view exists they are walked here
 * with the same rows, so they come out as the BPF walker would have made them.
 *
 * Every memory read is checked against the copy: a read outside it ends the
 * walk (the sample is then marked incomplete, never given a made-up caller).
 * The steps and their checks are the BPF walker's; keep the two in step.
 */
#include "unwind.h"

#include <string.h>

/* Most one frame may span in mixed mode (as MIXED_MAX_FRAME in the BPF walker). */
#define UWALK_MAX_FRAME (8ull << 20)

struct uwalk {
	const struct hearth_unwind_proc *view;
	unwind_rows_fn rows_of;
	void *rows_ctx;
	const uint8_t *stack;
	uint64_t stack_addr; /* process address of stack[0] */
	size_t stack_len;
	uint64_t pc, sp, bp;
	bool bp_valid, exact_pc;
};

/* The 8 bytes at process address addr, from the copy. false when outside it. */
static bool rd64(const struct uwalk *w, uint64_t addr, uint64_t *out)
{
	if (addr < w->stack_addr || addr - w->stack_addr > w->stack_len ||
	    w->stack_len - (addr - w->stack_addr) < 8)
		return false;
	memcpy(out, w->stack + (addr - w->stack_addr), 8);
	return true;
}

static const struct hearth_unwind_mapping *find_mapping(const struct uwalk *w, uint64_t addr)
{
	for (uint32_t i = 0; i < w->view->n && i < HEARTH_UNWIND_MAX_MAPPINGS; i++)
		if (w->view->m[i].start <= addr && addr < w->view->m[i].end)
			return &w->view->m[i];
	return NULL;
}

/* The last row with row.pc <= vaddr among the mapping's rows, or NULL. */
static const struct hearth_unwind_row *
find_row(const struct uwalk *w, const struct hearth_unwind_mapping *m, uint64_t vaddr)
{
	const struct hearth_unwind_row *rows = w->rows_of(w->rows_ctx, m);
	size_t lo = 0, hi = m->row_count;

	if (vaddr >> 32 || !rows)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NULL : &rows[lo - 1];
}

/* Frame pointers: CFA = rbp + 16, RA = [rbp + 8], caller's rbp = [rbp]; rbp must
 * look like a frame above sp. 1 = stop. */
static int fp_step(struct uwalk *w)
{
	uint64_t ra, bp;

	if (!w->bp_valid || (w->bp & 7) || w->bp < w->sp || w->bp - w->sp > UWALK_MAX_FRAME)
		return 1;
	if (!rd64(w, w->bp, &bp) || !rd64(w, w->bp + 8, &ra))
		return 1;
	w->sp = w->bp + 16;
	w->bp = bp;
	w->pc = ra;
	return ra == 0;
}

/* A signal return trampoline: the interrupted registers are in the signal frame. */
static int signal_step(struct uwalk *w)
{
	uint64_t bp, sp, pc;

	if (!rd64(w, w->sp + HEARTH_SIGFRAME_RBP, &bp) ||
	    !rd64(w, w->sp + HEARTH_SIGFRAME_RSP, &sp) ||
	    !rd64(w, w->sp + HEARTH_SIGFRAME_RIP, &pc))
		return 1;
	w->bp = bp;
	w->bp_valid = true;
	w->sp = sp;
	w->pc = pc;
	w->exact_pc = true;
	return pc == 0;
}

/* One step with a CFI row: 1 = stop, 2 = stop at the outermost frame. */
static int cfi_step(struct uwalk *w, const struct hearth_unwind_row *r)
{
	uint64_t cfa, ra, bp;

	switch (r->cfa_kind) {
	case HEARTH_CFA_RSP:
		cfa = w->sp + (int64_t)r->cfa_off;
		break;
	case HEARTH_CFA_RBP:
		if (!w->bp_valid)
			return 1;
		cfa = w->bp + (int64_t)r->cfa_off;
		break;
	case HEARTH_CFA_PLT:
		cfa = w->sp + (int64_t)r->cfa_off + ((w->pc & 15) >= r->plt_thr ? 8 : 0);
		break;
	case HEARTH_CFA_END:
		return 2;
	default:
		return 1;
	}
	if (!rd64(w, cfa - 8, &ra))
		return 1;
	if (r->rbp_kind == HEARTH_RBP_OFFSET) {
		if (!rd64(w, cfa + (int64_t)r->rbp_off, &bp))
			return 1;
		w->bp = bp;
		w->bp_valid = true;
	} else if (r->rbp_kind != HEARTH_RBP_SAME) {
		w->bp_valid = false;
	}
	w->sp = cfa;
	w->pc = ra;
	return ra == 0;
}

size_t unwind_walk_copy(const struct hearth_unwind_proc *view, unwind_rows_fn rows_of,
			void *rows_ctx, uint64_t pc, uint64_t sp, uint64_t bp, const uint8_t *stack,
			size_t stack_len, uint64_t *frames, size_t max_frames, bool *complete)
{
	struct uwalk w = {view, rows_of, rows_ctx, stack, sp, stack_len, pc, sp, bp, true, false};
	size_t n = 0;
	int stop = 0;

	*complete = false;
	while (n < max_frames && !stop) {
		const struct hearth_unwind_mapping *m;
		const struct hearth_unwind_row *r;
		uint64_t addr = n && !w.exact_pc ? w.pc - 1 : w.pc;

		/* an interrupted caller's exact pc one byte on, as BPF records it
		 * (profile.bpf.c, unwind_step): the collector looks up frame - 1 */
		frames[n] = w.pc + (n && w.exact_pc);
		n++;
		w.exact_pc = false;
		m = find_mapping(&w, addr);
		if (!m || !m->row_count) {
			stop = fp_step(&w); /* JIT code, or an object without a table */
			continue;
		}
		r = find_row(&w, m, addr - m->bias);
		if (r && r->cfa_kind == HEARTH_CFA_SIGNAL) {
			if (n > 1)
				n--; /* the trampoline is no call site (as in the BPF walker) */
			stop = signal_step(&w);
		} else if (!r || r->cfa_kind == HEARTH_CFA_NONE) {
			stop = fp_step(&w);
		} else {
			stop = cfi_step(&w, r);
		}
	}
	*complete = stop == 2;
	return n;
}
