/*
 * cfi: evaluates DWARF call frame information (DWARF 5 §6.4; the .eh_frame
 * variant of the LSB, "Exception Frames") into hearth's compact rows.
 *
 * Input is untrusted (any file a sampled process maps): every read is bounds
 * checked through struct rd, and a rule hearth cannot evaluate in BPF becomes a
 * HEARTH_CFA_UNSUPPORTED row so the walker stops there instead of guessing.
 * Only what the walker needs is tracked: the CFA rule, the return address rule
 * (must be "at CFA-8") and the saved RBP. x86-64 register numbers below.
 */
#include "unwind.h"
#include "base/base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* x86-64 psABI DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

#define CFI_STACK_DEPTH 16 /* DW_CFA_remember_state nesting we keep */

/* A bounds-checked reader; err sticks once set. */
struct rd {
	const uint8_t *p, *end;
	int err;
};

static uint64_t rd_bytes(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (r->err || (size_t)(r->end - r->p) < n) {
		r->err = -EINVAL;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* LEB128 (DWARF 5 §7.6), base's reader; a truncated one sets r->err. */
static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;

	if (!r->err && base_uleb128_get(&r->p, r->end, &v))
		r->err = -EINVAL;
	return v;
}

static int64_t rd_sleb(struct rd *r)
{
	int64_t v = 0;

	if (!r->err && base_sleb128_get(&r->p, r->end, &v))
		r->err = -EINVAL;
	return v;
}

/* Reads a DW_EH_PE_* encoded pointer; field_vaddr is the address of the field
 * itself (for DW_EH_PE_pcrel). Indirect and data/text-relative: -EINVAL. */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t field_vaddr)
{
	uint64_t v;

	if (enc == 0xff)
		return 0; /* DW_EH_PE_omit */
	switch (enc & 0x0f) {
	case 0x00:
		v = rd_bytes(r, 8);
		break;
	case 0x01:
		v = rd_uleb(r);
		break;
	case 0x02:
		v = rd_bytes(r, 2);
		break;
	case 0x03:
		v = rd_bytes(r, 4);
		break;
	case 0x04:
		v = rd_bytes(r, 8);
		break;
	case 0x09:
		v = (uint64_t)rd_sleb(r);
		break;
	case 0x0a:
		v = (uint64_t)(int64_t)(int16_t)rd_bytes(r, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int64_t)(int32_t)rd_bytes(r, 4);
		break;
	case 0x0c:
		v = rd_bytes(r, 8);
		break;
	default:
		r->err = -EINVAL;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		v += field_vaddr;
		break;
	default:
		r->err = -EINVAL;
		return 0;
	}
	if (enc & 0x80)
		r->err = -EINVAL;
	return v;
}

/* ---- CIE / FDE headers ---- */

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z;
	bool signal; /* augmentation 'S': the FDE is a signal return trampoline */
	const uint8_t *insns, *insns_end;
};

/* What the walker needs of the register rules at one location. */
struct cfi_state {
	uint8_t cfa_kind;
	uint8_t rbp_kind;
	uint8_t ra_ok; /* RA is "offset(-8)" (or undefined -> outermost) */
	uint8_t ra_undef;
	uint16_t plt_thr;
	int64_t cfa_off;
	uint64_t cfa_reg;
	int64_t rbp_off;
};

static void skip_aug_data(struct rd *r, const char *aug, struct cie *c, uint64_t base,
			  const uint8_t *sec)
{
	for (const char *a = aug + 1; *a && !r->err; a++) {
		if (*a == 'L') {
			rd_bytes(r, 1);
		} else if (*a == 'R') {
			c->fde_enc = (uint8_t)rd_bytes(r, 1);
		} else if (*a == 'P') {
			uint8_t enc = (uint8_t)rd_bytes(r, 1);

			rd_ptr(r, enc & 0x7f, base + (uint64_t)(r->p - sec));
		} else if (*a == 'S') {
			c->signal = true;
		} else if (*a != 'B') {
			return; /* unknown: the 'z' length lets the caller skip the rest */
		}
	}
}

static int parse_cie(const uint8_t *sec, const uint8_t *p, const uint8_t *end, uint64_t base,
		     bool is_eh, struct cie *c)
{
	struct rd r = {p, end, 0};
	uint8_t version = (uint8_t)rd_bytes(&r, 1);
	const char *aug = (const char *)r.p;
	size_t auglen = strnlen(aug, (size_t)(end - r.p));

	if (r.err || auglen == (size_t)(end - r.p))
		return -EINVAL;
	r.p += auglen + 1;
	memset(c, 0, sizeof(*c));
	c->fde_enc = 0; /* absptr */
	if (strstr(aug, "eh"))
		rd_bytes(&r, 8);
	if (!is_eh && version >= 4)
		rd_bytes(&r, 2); /* address_size, segment_selector_size */
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_bytes(&r, 1) : rd_uleb(&r);
	if (aug[0] == 'z') {
		uint64_t n = rd_uleb(&r);
		const uint8_t *after;

		if (r.err || n > (uint64_t)(end - r.p))
			return -EINVAL;
		after = r.p + n;
		skip_aug_data(&r, aug, c, base, sec);
		r.p = after;
		c->has_z = true;
	} else if (aug[0]) {
		return -EINVAL; /* augmentation we cannot skip */
	}
	c->insns = r.p;
	c->insns_end = end;
	return r.err;
}

/* ---- rows ---- */

/* Rows grow by doubling up to CFI_ROWS_GROW_STEP rows (1 MiB), then by an
 * eighth: while a big table is built its capacity is at most 12.5% over its
 * rows (doubling left up to 2x: 8 MiB for a 330k-row table, the largest
 * transient of the agent under --memory-limit). Under the agent's memory policy
 * such a block is past malloc's mmap threshold, so growing it is an mremap,
 * not a copy. */
#define CFI_ROWS_GROW_STEP ((size_t)1 << 16)

int cfi_rows__push(struct cfi_rows *o, const struct hearth_unwind_row *row)
{
	int err;

	if (o->n == o->cap && o->cap >= CFI_ROWS_GROW_STEP) {
		size_t ncap = o->cap + o->cap / 8, bytes;
		struct hearth_unwind_row *n;

		if (__builtin_mul_overflow(ncap, sizeof(*o->rows), &bytes) || bytes > PTRDIFF_MAX)
			return -ENOMEM;
		n = realloc(o->rows, bytes); /* layers: base_grow only doubles */
		if (!n)
			return -ENOMEM;
		o->rows = n;
		o->cap = ncap;
	}
	err = base_grow((void **)&o->rows, &o->cap, o->n + 1, sizeof(*o->rows));
	if (err)
		return err;
	o->rows[o->n++] = *row;
	return 0;
}

/* The compact row of a rule state (what the BPF walker evaluates). */
static void state_to_row(const struct cfi_state *s, uint64_t pc, struct hearth_unwind_row *row)
{
	memset(row, 0, sizeof(*row));
	row->pc = (uint32_t)pc;
	row->cfa_kind = s->cfa_kind;
	row->rbp_kind = s->rbp_kind;
	row->plt_thr = s->plt_thr;
	row->cfa_off = (int32_t)s->cfa_off;
	row->rbp_off = (int32_t)s->rbp_off;
	if (s->ra_undef)
		row->cfa_kind = HEARTH_CFA_END;
	else if (!s->ra_ok || s->cfa_off != (int32_t)s->cfa_off ||
		 s->rbp_off != (int32_t)s->rbp_off)
		row->cfa_kind = HEARTH_CFA_UNSUPPORTED;
	if (row->cfa_kind != HEARTH_CFA_END && row->cfa_kind != HEARTH_CFA_UNSUPPORTED)
		return;
	row->rbp_kind = HEARTH_RBP_SAME;
	row->cfa_off = row->rbp_off = 0;
	row->plt_thr = 0;
}

struct interp {
	const struct cie *cie;
	struct cfi_state cur, init;
	struct cfi_state stack[CFI_STACK_DEPTH];
	int depth;
	uint64_t loc, end;
	bool emit;	  /* false while running the CIE's initial instructions */
	size_t fde_first; /* first row of this FDE in out */
	struct cfi_rows *out;
	uint64_t base; /* vaddr of the section (DW_CFA_set_loc) */
	const uint8_t *sec;
};

/* Emits the current rule for [loc, ...); a later rule at the same loc wins. */
static int emit_row(struct interp *in, uint64_t loc, const struct cfi_state *s)
{
	struct hearth_unwind_row row;
	struct cfi_rows *o = in->out;

	if (!in->emit || loc >= in->end || loc > UINT32_MAX)
		return 0;
	state_to_row(s, loc, &row);
	if (in->cie->signal) {
		/* Its rules are DW_CFA expressions over the signal frame (glibc's
		 * __restore_rt); the walker reads that frame itself. */
		memset(&row, 0, sizeof(row));
		row.pc = (uint32_t)loc;
		row.cfa_kind = HEARTH_CFA_SIGNAL;
	}
	if (o->n > in->fde_first && o->rows[o->n - 1].pc == (uint32_t)loc) {
		o->rows[o->n - 1] = row;
		return 0;
	}
	return cfi_rows__push(o, &row);
}

static void set_cfa_reg(struct cfi_state *s, uint64_t reg)
{
	s->cfa_reg = reg;
	s->cfa_kind = reg == REG_RSP   ? HEARTH_CFA_RSP
		      : reg == REG_RBP ? HEARTH_CFA_RBP
				       : HEARTH_CFA_UNSUPPORTED;
}

/* DW_OP program of the x86-64 lazy-binding PLT (binutils):
 *   breg7 (rsp) N; breg16 (rip) 0; lit15; and; litT; ge; lit3; shl; plus
 * i.e. CFA = rsp + N + ((rip & 15) >= T ? 8 : 0). Anything else: unsupported. */
static void cfa_expression(struct cfi_state *s, const uint8_t *e, size_t n)
{
	static const uint8_t tail[] = {0x2a, 0x33, 0x24, 0x22};
	struct rd r = {e, e + n, 0};
	int64_t off;

	s->cfa_kind = HEARTH_CFA_UNSUPPORTED;
	if (rd_bytes(&r, 1) != 0x77)
		return;
	off = rd_sleb(&r);
	if (r.err || r.end - r.p != 9 || r.p[0] != 0x80 || r.p[1] != 0 || r.p[2] != 0x3f ||
	    r.p[3] != 0x1a || r.p[4] < 0x30 || r.p[4] > 0x4f || memcmp(r.p + 5, tail, 4))
		return;
	s->cfa_kind = HEARTH_CFA_PLT;
	s->cfa_off = off;
	s->plt_thr = (uint16_t)(r.p[4] - 0x30);
}

enum rule { RULE_OFFSET, RULE_UNDEF, RULE_SAME, RULE_OTHER, RULE_RESTORE };

/* A register rule: only RBP and the return address matter to the walker. */
static void set_reg_rule(struct interp *in, uint64_t reg, enum rule rule, int64_t off)
{
	struct cfi_state *s = &in->cur;

	if (reg == REG_RBP) {
		if (rule == RULE_RESTORE) {
			s->rbp_kind = in->init.rbp_kind;
			s->rbp_off = in->init.rbp_off;
			return;
		}
		s->rbp_kind = rule == RULE_OFFSET ? HEARTH_RBP_OFFSET
			      : rule == RULE_SAME ? HEARTH_RBP_SAME
						  : HEARTH_RBP_UNKNOWN;
		s->rbp_off = rule == RULE_OFFSET ? off : 0;
	} else if (reg == in->cie->ra_reg) {
		if (rule == RULE_RESTORE) {
			s->ra_ok = in->init.ra_ok;
			s->ra_undef = in->init.ra_undef;
			return;
		}
		s->ra_ok = rule == RULE_OFFSET && off == -8;
		s->ra_undef = rule == RULE_UNDEF;
	}
}

static int advance(struct interp *in, uint64_t delta)
{
	int err = emit_row(in, in->loc, &in->cur);

	in->loc += delta * in->cie->code_align;
	return err;
}

/*
 * factor * data_align as the two's complement product (wrapping): both come
 * from the file, and a product past int64 is undefined behaviour in C (the
 * fuzzer found one once UBSan reports were fatal). A wrapped offset only makes
 * a wrong unwind of that code, as any other bogus CFI does.
 */
static int64_t scaled(uint64_t factor, int64_t data_align)
{
	return (int64_t)(factor * (uint64_t)data_align);
}

/* Opcodes with a register rule (DWARF 5 §6.4.2.3). */
static void reg_op(struct interp *in, struct rd *r, uint8_t op)
{
	int64_t da = in->cie->data_align;
	uint64_t reg = rd_uleb(r), n;

	switch (op) {
	case 0x05:
		set_reg_rule(in, reg, RULE_OFFSET, scaled(rd_uleb(r), da));
		break;
	case 0x11:
		set_reg_rule(in, reg, RULE_OFFSET, scaled((uint64_t)rd_sleb(r), da));
		break;
	case 0x2f:
		set_reg_rule(in, reg, RULE_OFFSET, (int64_t)(0 - rd_uleb(r)));
		break;
	case 0x06:
		set_reg_rule(in, reg, RULE_RESTORE, 0);
		break;
	case 0x07:
		set_reg_rule(in, reg, RULE_UNDEF, 0);
		break;
	case 0x08:
		set_reg_rule(in, reg, RULE_SAME, 0);
		break;
	case 0x09:
		rd_uleb(r);
		set_reg_rule(in, reg, RULE_OTHER, 0);
		break;
	case 0x14:
		rd_uleb(r);
		set_reg_rule(in, reg, RULE_OTHER, 0);
		break;
	case 0x15:
		rd_sleb(r);
		set_reg_rule(in, reg, RULE_OTHER, 0);
		break;
	default: /* 0x10 expression, 0x16 val_expression: a block follows */
		n = rd_uleb(r);
		if (n > (uint64_t)(r->end - r->p))
			r->err = -EINVAL;
		else
			r->p += n;
		set_reg_rule(in, reg, RULE_OTHER, 0);
	}
}

/* Opcodes about the CFA and the state stack. */
static void cfa_op(struct interp *in, struct rd *r, uint8_t op)
{
	struct cfi_state *s = &in->cur;
	uint64_t n;

	switch (op) {
	case 0x0c:
		set_cfa_reg(s, rd_uleb(r));
		s->cfa_off = (int64_t)rd_uleb(r);
		break;
	case 0x12:
		set_cfa_reg(s, rd_uleb(r));
		s->cfa_off = scaled((uint64_t)rd_sleb(r), in->cie->data_align);
		break;
	case 0x0d:
		set_cfa_reg(s, rd_uleb(r));
		break;
	case 0x0e:
		s->cfa_off = (int64_t)rd_uleb(r);
		set_cfa_reg(s, s->cfa_reg);
		break;
	case 0x13:
		s->cfa_off = scaled((uint64_t)rd_sleb(r), in->cie->data_align);
		set_cfa_reg(s, s->cfa_reg);
		break;
	case 0x0f:
		n = rd_uleb(r);
		if (n > (uint64_t)(r->end - r->p)) {
			r->err = -EINVAL;
			return;
		}
		cfa_expression(s, r->p, (size_t)n);
		s->cfa_reg = ~0ull; /* an offset-only rule after this is meaningless */
		r->p += n;
		break;
	case 0x0a:
		if (in->depth < CFI_STACK_DEPTH)
			in->stack[in->depth] = *s;
		in->depth++;
		break;
	case 0x0b:
		if (in->depth == 0) {
			r->err = -EINVAL;
			return;
		}
		in->depth--;
		if (in->depth < CFI_STACK_DEPTH) {
			/* The CFA rule is saved too (GCC relies on it, as does the spec). */
			*s = in->stack[in->depth];
		} else {
			s->cfa_kind = HEARTH_CFA_UNSUPPORTED;
		}
		break;
	}
}

/* Runs one instruction stream (CIE initial instructions or an FDE's). */
/* Opcodes that move the location (DWARF 5 §6.4.2.1) and the no-ops. */
static int loc_op(struct interp *in, struct rd *r, uint8_t op)
{
	switch (op) {
	case 0x01: { /* set_loc */
		int err = emit_row(in, in->loc, &in->cur);

		in->loc = rd_ptr(r, in->cie->fde_enc, in->base + (uint64_t)(r->p - in->sec));
		return err;
	}
	case 0x02:
		return advance(in, rd_bytes(r, 1));
	case 0x03:
		return advance(in, rd_bytes(r, 2));
	case 0x04:
		return advance(in, rd_bytes(r, 4));
	case 0x2e: /* GNU_args_size: rsp adjustments are already in the CFA rule */
		rd_uleb(r);
		return 0;
	default: /* nop */
		return 0;
	}
}

/* One instruction with its opcode in the low 6 bits (0x00-0x3f). */
static int extended_op(struct interp *in, struct rd *r, uint8_t op)
{
	static const uint8_t kind[0x30] = {
	    /* 1: location / nop, 2: register rule, 3: CFA or state stack */
	    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x2e] = 1, [0x05] = 2,
	    [0x06] = 2, [0x07] = 2, [0x08] = 2, [0x09] = 2, [0x10] = 2, [0x11] = 2, [0x14] = 2,
	    [0x15] = 2, [0x16] = 2, [0x2f] = 2, [0x0a] = 3, [0x0b] = 3, [0x0c] = 3, [0x0d] = 3,
	    [0x0e] = 3, [0x0f] = 3, [0x12] = 3, [0x13] = 3,
	};

	switch (op < sizeof(kind) ? kind[op] : 0) {
	case 1:
		return loc_op(in, r, op);
	case 2:
		reg_op(in, r, op);
		return 0;
	case 3:
		cfa_op(in, r, op);
		return 0;
	default:
		r->err = -EINVAL; /* unknown opcode: its operands cannot be skipped */
		return 0;
	}
}

/* Runs one instruction stream (CIE initial instructions or an FDE's). */
static int run_insns(struct interp *in, const uint8_t *p, const uint8_t *end)
{
	struct rd r = {p, end, 0};
	int err = 0;

	while (r.p < r.end && !r.err && !err) {
		uint8_t op = (uint8_t)rd_bytes(&r, 1), lo = op & 0x3f;

		switch (op >> 6) {
		case 1: /* advance_loc */
			err = advance(in, lo);
			break;
		case 2: /* offset */
			set_reg_rule(in, lo, RULE_OFFSET, scaled(rd_uleb(&r), in->cie->data_align));
			break;
		case 3: /* restore */
			set_reg_rule(in, lo, RULE_RESTORE, 0);
			break;
		default:
			err = extended_op(in, &r, lo);
		}
	}
	return err ? err : r.err;
}

/* ---- entries ---- */

struct entry {
	const uint8_t *start, *body, *end; /* length field, after length, after entry */
	uint64_t id;			   /* CIE id / CIE pointer */
	const uint8_t *id_pos;
	bool is_cie;
};

/* Reads the entry header at p. Returns 0, 1 at a terminator, or -EINVAL. */
static int read_entry(const uint8_t *p, const uint8_t *end, bool is_eh, struct entry *e)
{
	struct rd r = {p, end, 0};
	uint64_t len = rd_bytes(&r, 4);
	bool dw64 = len == 0xffffffffu;

	if (dw64)
		len = rd_bytes(&r, 8);
	if (r.err)
		return -EINVAL;
	if (len == 0)
		return 1;
	if (len > (uint64_t)(end - r.p))
		return -EINVAL;
	e->start = p;
	e->body = r.p;
	e->end = r.p + len;
	r.end = e->end;
	e->id_pos = r.p;
	e->id = rd_bytes(&r, dw64 ? 8 : 4);
	if (r.err)
		return -EINVAL;
	e->is_cie = is_eh ? e->id == 0 : e->id == (dw64 ? ~0ull : 0xffffffffu);
	return 0;
}

/* The CIE an FDE points to (eh: relative to the pointer field; debug: section offset). */
static int fde_cie(const uint8_t *buf, size_t len, uint64_t base, bool is_eh,
		   const struct entry *fde, struct cie *cie)
{
	struct entry ce;
	const uint8_t *at;
	uint64_t pos = is_eh ? (uint64_t)(fde->id_pos - buf) - fde->id : fde->id;

	if (pos >= len || (is_eh && fde->id > (uint64_t)(fde->id_pos - buf)))
		return -EINVAL;
	at = buf + pos;
	if (read_entry(at, buf + len, is_eh, &ce) || !ce.is_cie)
		return -EINVAL;
	return parse_cie(buf, ce.id_pos + (ce.body - ce.start == 12 ? 8 : 4), ce.end, base, is_eh,
			 cie);
}

static int parse_fde(const uint8_t *buf, size_t len, uint64_t base, bool is_eh,
		     const struct entry *e, struct cfi_rows *out)
{
	struct interp in = {.out = out, .base = base, .sec = buf};
	struct cie cie;
	struct rd r = {e->id_pos + (e->body - e->start == 12 ? 8 : 4), e->end, 0};
	uint64_t begin, range;
	int err = fde_cie(buf, len, base, is_eh, e, &cie);

	if (err)
		return err;
	in.cie = &cie;
	begin = rd_ptr(&r, cie.fde_enc, base + (uint64_t)(r.p - buf));
	range = rd_ptr(&r, cie.fde_enc & 0x0f, 0);
	if (cie.has_z) {
		uint64_t n = rd_uleb(&r);

		if (n > (uint64_t)(r.end - r.p))
			return -EINVAL;
		r.p += n;
	}
	if (r.err)
		return r.err;
	if (begin == 0 || range == 0 || begin + range < begin)
		return 0; /* discarded or empty: nothing to describe */
	in.cur.cfa_kind = HEARTH_CFA_UNSUPPORTED;
	in.loc = begin;
	in.end = begin + range;
	if (run_insns(&in, cie.insns, cie.insns_end) == -ENOMEM)
		return -ENOMEM;
	in.init = in.cur;
	in.depth = 0;
	in.emit = true;
	in.fde_first = out->n;
	err = run_insns(&in, r.p, r.end);
	if (err == -ENOMEM)
		return err;
	if (err)
		in.cur.cfa_kind = HEARTH_CFA_UNSUPPORTED; /* stop where we lost track */
	err = emit_row(&in, in.loc, &in.cur);
	if (!err && in.end <= UINT32_MAX) {
		struct hearth_unwind_row gap = {.pc = (uint32_t)in.end,
						.cfa_kind = HEARTH_CFA_NONE};

		err = cfi_rows__push(out, &gap);
	}
	out->fdes++;
	return err;
}

/* A mapped section's pages already parsed leave the page tables every
 * CFI_DROP_BYTES (a file's pages, read only: what faults back in, a CIE
 * behind, is the same bytes). */
#define CFI_DROP_BYTES ((size_t)256 << 10)

static int parse_all(const uint8_t *buf, size_t len, uint64_t sec_vaddr, bool is_eh, bool drop,
		     struct cfi_rows *out)
{
	const uint8_t *p = buf, *end = buf + len;
	uintptr_t dropped = ((uintptr_t)buf + 4095) & ~(uintptr_t)4095; /* below: not ours */
	struct entry e;
	int ret;

	while (p < end) {
		ret = read_entry(p, end, is_eh, &e);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			if (is_eh)
				return 0; /* zero terminator ends .eh_frame */
			p += 4;
			continue;
		}
		if (!e.is_cie) {
			ret = parse_fde(buf, len, sec_vaddr, is_eh, &e, out);
			if (ret == -ENOMEM)
				return ret;
		}
		p = e.end;
		if (drop && (uintptr_t)p >= dropped + 2 * CFI_DROP_BYTES) {
			/* whole pages only, one window behind what is being read */
			uintptr_t to = ((uintptr_t)p - CFI_DROP_BYTES) & ~(uintptr_t)4095;

			madvise((void *)dropped, to - dropped, MADV_DONTNEED);
			dropped = to;
		}
	}
	return 0;
}

int cfi_parse(const uint8_t *buf, size_t len, uint64_t sec_vaddr, bool is_eh, struct cfi_rows *out)
{
	return parse_all(buf, len, sec_vaddr, is_eh, false, out);
}

int cfi_parse_mapped(const uint8_t *buf, size_t len, uint64_t sec_vaddr, bool is_eh,
		     struct cfi_rows *out)
{
	return parse_all(buf, len, sec_vaddr, is_eh, true, out);
}

int cfi_parse_fde_at(const uint8_t *buf, size_t len, uint64_t sec_vaddr, size_t off,
		     struct cfi_rows *out)
{
	struct entry e;
	int ret;

	if (off >= len || len - off < 8)
		return -EINVAL;
	ret = read_entry(buf + off, buf + len, true, &e);
	if (ret)
		return -EINVAL; /* a terminator is no FDE */
	if (e.is_cie)
		return -EINVAL;
	return parse_fde(buf, len, sec_vaddr, true, &e, out);
}

/* By pc; at equal pcs the end-of-FDE gap rows sort first, so a real row wins. */
static int row_cmp(const void *a, const void *b)
{
	const struct hearth_unwind_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return (x->cfa_kind != HEARTH_CFA_NONE) - (y->cfa_kind != HEARTH_CFA_NONE);
}

static bool same_rule(const struct hearth_unwind_row *x, const struct hearth_unwind_row *y)
{
	return x->cfa_kind == y->cfa_kind && x->rbp_kind == y->rbp_kind &&
	       x->plt_thr == y->plt_thr && x->cfa_off == y->cfa_off && x->rbp_off == y->rbp_off;
}

/* Sorts rows as row_cmp does, stably (as glibc's merge sort did), with a
 * scratch of at most ROW_SORT_BLOCK rows (1 MiB) whatever the table's size: an
 * n-row scratch copy (7.8 MiB for a 500k-row table) was the largest transient
 * of the agent under --memory-limit (docs/memory.md, "The floor"). Blocks of
 * ROW_SORT_BLOCK rows are sorted by an LSD radix sort on (pc << 1 | has a
 * rule), 3 passes of 11 bits (glibc's qsort took ~100 ms of the agent's CPU
 * per build of cc1's 478k rows on a busy host); sorted blocks are merged in
 * place, through the scratch when one side fits in it, else by splitting and
 * rotating (libstdc++'s merge with a short buffer). .eh_frame is mostly in
 * address order, so most merges find their two runs already in order. */
#define ROW_RADIX_BITS 11
#define ROW_RADIX_PASSES 3
#define ROW_SORT_BLOCK ((size_t)1 << 16)
_Static_assert(ROW_RADIX_BITS * ROW_RADIX_PASSES >= 33, "the passes cover pc and the flag");
static uint64_t row_key(const struct hearth_unwind_row *r)
{
	return (uint64_t)r->pc << 1 | (r->cfa_kind != HEARTH_CFA_NONE);
}

/* n <= the scratch's rows; count: ROW_RADIX_PASSES x 2^ROW_RADIX_BITS. */
static void rows_radix_block(struct hearth_unwind_row *rows, size_t n,
			     struct hearth_unwind_row *tmp, size_t (*count)[1u << ROW_RADIX_BITS])
{
	struct hearth_unwind_row *src = rows, *dst = tmp, *t;
	const uint64_t mask = (1u << ROW_RADIX_BITS) - 1;

	memset(count, 0, ROW_RADIX_PASSES * sizeof(*count));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = row_key(&rows[i]);

		for (int p = 0; p < ROW_RADIX_PASSES; p++)
			count[p][(k >> (p * ROW_RADIX_BITS)) & mask]++;
	}
	for (int p = 0; p < ROW_RADIX_PASSES; p++) {
		size_t sum = 0;

		for (size_t d = 0; d <= mask; d++) {
			size_t c = count[p][d];

			count[p][d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[p][(row_key(&src[i]) >> (p * ROW_RADIX_BITS)) & mask]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != rows)
		memcpy(rows, src, n * sizeof(*rows));
}

static void rows_reverse(struct hearth_unwind_row *a, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
		struct hearth_unwind_row t = a[i];

		a[i] = a[j - 1];
		a[j - 1] = t;
	}
}

/* [a, a + n1) and [a + n1, a + n1 + n2) become [the second, the first]. */
static void rows_rotate(struct hearth_unwind_row *a, size_t n1, size_t n2)
{
	if (!n1 || !n2)
		return;
	rows_reverse(a, n1);
	rows_reverse(a + n1, n2);
	rows_reverse(a, n1 + n2);
}

/* The first index in [a, a + n) whose key is >= k (upper: > k). */
static size_t rows_bound(const struct hearth_unwind_row *a, size_t n, uint64_t k, bool upper)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t m = row_key(&a[mid]);

		if (m < k || (upper && m == k))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Merges the sorted runs [a, a + n1) and [a + n1, a + n1 + n2) stably, with a
 * scratch of buf_n rows. */
static void rows_merge(struct hearth_unwind_row *a, size_t n1, size_t n2,
		       struct hearth_unwind_row *buf, size_t buf_n)
{
	while (n1 && n2 && row_key(&a[n1 - 1]) > row_key(&a[n1])) {
		size_t c1, c2;

		if (n1 <= buf_n) { /* the first run into the scratch, merged forward */
			struct hearth_unwind_row *x = buf, *xe = buf + n1, *y = a + n1,
						 *ye = a + n1 + n2, *o = a;

			memcpy(buf, a, n1 * sizeof(*a));
			while (x < xe && y < ye)
				*o++ = row_key(y) < row_key(x) ? *y++ : *x++;
			memcpy(o, x, (size_t)(xe - x) * sizeof(*a));
			return;
		}
		if (n2 <= buf_n) { /* the second into the scratch, merged backward */
			struct hearth_unwind_row *x = a + n1, *y = buf + n2, *o = a + n1 + n2;

			memcpy(buf, a + n1, n2 * sizeof(*a));
			while (x > a && y > buf)
				*--o = row_key(&y[-1]) < row_key(&x[-1]) ? *--x : *--y;
			memcpy(a, buf, (size_t)(y - buf) * sizeof(*a));
			return;
		}
		if (n1 > n2) {
			c1 = n1 / 2;
			c2 = rows_bound(a + n1, n2, row_key(&a[c1]), false);
		} else {
			c2 = n2 / 2;
			c1 = rows_bound(a, n1, row_key(&a[n1 + c2]), true);
		}
		rows_rotate(a + c1, n1 - c1, c2);
		/* the smaller half by recursion, the other by the loop */
		if (c1 + c2 < (n1 - c1) + (n2 - c2)) {
			rows_merge(a, c1, c2, buf, buf_n);
			a += c1 + c2;
			n1 -= c1;
			n2 -= c2;
		} else {
			rows_merge(a + c1 + c2, n1 - c1, n2 - c2, buf, buf_n);
			n1 = c1;
			n2 = c2;
		}
	}
}

static int rows_sort(struct hearth_unwind_row *rows, size_t n)
{
	size_t blk = n < ROW_SORT_BLOCK ? n : ROW_SORT_BLOCK;
	struct hearth_unwind_row *tmp = malloc(blk * sizeof(*rows));
	size_t (*count)[1u << ROW_RADIX_BITS] =
	    malloc(ROW_RADIX_PASSES * sizeof(*count)); /* per pass: then each digit's first index */

	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	for (size_t lo = 0; lo < n; lo += blk)
		rows_radix_block(rows + lo, n - lo < blk ? n - lo : blk, tmp, count);
	for (size_t w = blk; w < n; w *= 2)
		for (size_t lo = 0; lo + w < n; lo += 2 * w)
			rows_merge(rows + lo, w, n - lo - w < w ? n - lo - w : w, tmp, blk);
	free(tmp);
	free(count);
	return 0;
}

void cfi_rows__finish(struct cfi_rows *r)
{
	size_t w = 0;

	bool sorted = true;

	if (!r->n)
		return;
	/* .eh_frame is mostly in address order (a compiler's and a linker's): then
	 * no sort at all. */
	for (size_t i = 1; i < r->n && sorted; i++)
		sorted = row_cmp(&r->rows[i - 1], &r->rows[i]) <= 0;
	if (!sorted && rows_sort(r->rows, r->n))
		qsort(r->rows, r->n, sizeof(*r->rows), row_cmp);
	for (size_t i = 0; i < r->n; i++) {
		if (i + 1 < r->n && r->rows[i + 1].pc == r->rows[i].pc)
			continue; /* shadowed by the last row at this pc */
		if (w && same_rule(&r->rows[w - 1], &r->rows[i]))
			continue;
		r->rows[w++] = r->rows[i];
	}
	r->n = w;
	r->unsupported = 0;
	for (size_t i = 0; i < r->n; i++)
		r->unsupported += r->rows[i].cfa_kind == HEARTH_CFA_UNSUPPORTED;
	/* Capacity grew while rows were pushed: give the rest back (up to an
	 * eighth of a big table, until it is loaded or parked). */
	if (r->cap > r->n) {
		struct hearth_unwind_row *shrunk = realloc(r->rows, r->n * sizeof(*r->rows)); /* layers: a shrink, base_grow only grows */

		if (shrunk) {
			r->rows = shrunk;
			r->cap = r->n;
		}
	}
}

void cfi_rows__fini(struct cfi_rows *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
