/*
 * sym_batch: the engine of `hearth symbolize` — lines of addresses in, the output of
 * `addr2line -f -i -C` out, as fast as the lookups allow.
 *
 * Input lines: a hex ELF virtual address of the batch's object ("0x401136" or
 * "401136", as addr2line takes), or FILE+0xOFF — a file offset in FILE, what hearth
 * prints for a frame it could not name. Output per address: with `addresses` the
 * address, then per frame shown the function and "file:line", "??" and "??:0" when
 * unknown (enum sym_frames_shown says which frames).
 *
 * Throughput. Once the symbolizer's caches are warm, per-line stdio (getline, strtoull,
 * fputs of ~110 bytes per address) cost more than the lookups. So input is read in
 * large blocks, and the common line ("0x" and hex digits) is parsed in the same pass
 * that finds its end. The formatted answer of each (object, address), its address line
 * included, is kept in a text cache: a flat open-addressing table of 8-byte slots,
 * records (key, where the text is) in first-made order, and the texts back to back in
 * one region. A repeated address costs one probe and one record, and its text is never
 * copied by us: output is a list of pieces of that region (consecutive answers made in
 * the same order as before form one piece) written with writev(2) once a MiB is
 * pending, and before every read, so an interactive caller (a coprocess writing one
 * address and waiting) gets its answer at once. When the text cache is full, pending
 * output is written and the cache emptied to refill.
 *
 * The text cache is not a base_hmap: its 8-byte slots (a record number and 32 bits of
 * hash) in huge-page regions, prefetched LINE_AHEAD lines ahead, are what makes a warm
 * answer one cache miss; base_hmap's 16-byte malloc'd slots would double that.
 */
#include "symbolize/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/base.h"

/* Input block; a line longer than this is answered as unknown. */
#define SYMBOLIZE_IO_BUF   (1 << 20)
#define SYMBOLIZE_MAX_LINE SYMBOLIZE_IO_BUF
/* Output is written once this much is pending (and before every read). */
#define SYMBOLIZE_OUT_FLUSH (1 << 20)
#define TEXT_MIN_SLOTS	    4096
/* The unknown answer: function, then file:line. */
#define UNKNOWN_FRAME "??\n??:0\n"

/* Growable bytes (raw: not NUL-terminated, unlike base_sbuf, and filled without a
 * check per byte once room is reserved). */
struct sbuf {
	char *p; /* owned */
	size_t len, cap;
};

/*
 * One cached answer: its key, and where its text is. Records sit in their own region in
 * the order answers were first made, texts in another, back to back with nothing
 * between them: input that repeats earlier input finds its records one after another,
 * and its answers form long runs of text that are written with one writev piece each,
 * never copied by us. The slot table holds only a record's number and 32 bits of its
 * hash (8 bytes a slot).
 */
struct text_rec {
	uint64_t v;		      /* vaddr, or file offset when is_off */
	const struct sym_object *obj; /* borrowed from the symbolizer */
	uint32_t off, len;	      /* text_cache.text[off, off + len) */
	uint32_t is_off;
};

/* rec 0 = empty (record numbers start at 1). */
struct text_slot {
	uint32_t tag; /* the high half of the key's hash */
	uint32_t rec; /* number of the record in text_cache.recs */
};

struct text_cache {
	struct text_slot *slots; /* owned region; n_slots a power of two, at most half used */
	size_t n_slots;
	struct text_rec *recs; /* owned region of recs_cap bytes; recs[0] unused */
	size_t recs_cap, n_recs;
	char *text;	 /* owned region of text_cap bytes: every answer back to back */
	size_t text_cap; /* regions are reserved at the budget's size, touched as used */
	size_t text_len;
	size_t budget; /* bytes of slots + records + text in use */
	uint64_t hits, misses, resets;
};

/*
 * Output in order, as pieces: runs of the text cache's region (written from where they
 * are) and bytes in scratch (answers not cached). Written to fd with writev, or, for
 * --timing, copied into mem. A piece of scratch has iov_base NULL until written and its
 * offset in sc_off, as scratch may move while it grows.
 */
#define EMIT_IOV 512

struct emitter {
	int fd;		       /* -1: into mem */
	struct base_sbuf *mem; /* borrowed, when fd < 0 */
	struct sbuf scratch;
	struct iovec iov[EMIT_IOV];
	size_t sc_off[EMIT_IOV];
	size_t n, pending; /* pieces, bytes */
};

/* Blocks with fewer plain lines are answered in input order only (an interactive
 * caller's line or few: nothing to gain). */
#define AHEAD_MIN 256
/* At most this much text is made ahead per block; the lines past it are answered the
 * usual way (a block of 1 MiB of short lines, each answered with many inlined frames,
 * would otherwise hold hundreds of MB). */
#define AHEAD_TEXT_MAX ((size_t)32 << 20)
#define AHEAD_NONE     UINT32_MAX
/* The first AHEAD_SAMPLE plain lines are looked up in the text cache first: a block
 * whose first lines are more than a quarter there is answered in input order only. */
#define AHEAD_SAMPLE 64

/* A plain line of the block being answered, for the answers made ahead: its address
 * and its number among the block's plain lines. */
struct ahead_key {
	uint64_t v;
	uint64_t line;
};

/* Where the answer made ahead for one plain line is: ahead.text[off, off + len), or
 * off AHEAD_NONE (answered the usual way: from the text cache, else resolved then). */
struct ahead_ans {
	uint32_t off, len;
};

/* The block's answers made ahead, in address order (see answer_ahead). */
struct ahead {
	struct ahead_key *keys, *tmp; /* owned, keys_cap each */
	size_t keys_cap;
	struct ahead_ans *ans; /* owned, per plain line of the block */
	size_t ans_cap;
	/* the answers, in the order made: a region of AHEAD_TEXT_MAX reserved on first
	 * use, touched as used (never copied to grow, as a realloc'd buffer would be) */
	char *text;
	size_t text_cap, text_len;
	size_t n;	  /* plain lines planned; 0: no plan for this block */
	size_t next;	  /* number of the next plain line the answering loop reads */
};

struct sym_batch {
	struct symbolizer *s;	/* borrowed */
	struct sym_object *obj; /* borrowed: what hex lines are vaddrs of; NULL: none */
	enum sym_frames_shown frames;
	bool addresses;
	struct text_cache tc;
	struct sbuf fmt; /* one answer being formatted */
	struct emitter em;
	struct ahead ah;
};

/* ---- bytes ---- */

/* Room for n more bytes in b (geometric, overflow-checked). 0 or -ENOMEM. */
static int sbuf_reserve(struct sbuf *b, size_t n)
{
	size_t need;

	if (__builtin_add_overflow(b->len, n, &need))
		return -ENOMEM;
	return base_grow((void **)&b->p, &b->cap, need, 1);
}

/* Appends without checking: the caller reserved the room. */
static void sbuf_put(struct sbuf *b, const void *p, size_t n)
{
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* ---- formatting (what addr2line -f -i -C -a prints) ---- */

/* "0x" and 16 hex digits, newline. Needs 19 bytes reserved. */
static void put_address(struct sbuf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char *p = b->p + b->len;

	p[0] = '0';
	p[1] = 'x';
	for (int i = 0; i < 16; i++)
		p[2 + i] = digits[(v >> (60 - 4 * i)) & 15];
	p[18] = '\n';
	b->len += 19;
}

/* Decimal of v; needs 20 bytes reserved. */
static void put_dec(struct sbuf *b, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	sbuf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* "name\nfile:line\n" per frame shown ("??\n??:0\n" when none). 0 or -ENOMEM. */
static int put_frames(struct sbuf *b, const struct sym_result *r, enum sym_frames_shown shown)
{
	size_t n = shown == SYM_FRAMES_ALL ? r->n : (r->n ? 1 : 0), room = sizeof(UNKNOWN_FRAME);
	size_t name_len[SYM_MAX_FRAMES], file_len[SYM_MAX_FRAMES];
	struct sym_frame phys;
	const struct sym_frame *frames = r->frames;

	if (shown == SYM_FRAMES_PHYSICAL && r->n > 1) {
		/* the outermost function's name at the innermost frame's file:line */
		phys = r->frames[0];
		phys.name = r->frames[r->n - 1].name;
		phys.system_name = r->frames[r->n - 1].system_name;
		phys.inlined = false;
		frames = &phys;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sym_frame *f = &frames[i];

		name_len[i] = strlen(f->name);
		file_len[i] = f->file ? strlen(f->file) : 2;
		room += name_len[i] + file_len[i] + 24; /* 2 newlines, ':', 20 digits */
	}
	if (sbuf_reserve(b, room))
		return -ENOMEM;
	if (!n)
		sbuf_put(b, UNKNOWN_FRAME, sizeof(UNKNOWN_FRAME) - 1);
	for (size_t i = 0; i < n; i++) {
		const struct sym_frame *f = &frames[i];

		sbuf_put(b, f->name, name_len[i]);
		b->p[b->len++] = '\n';
		sbuf_put(b, f->file ? f->file : "??", file_len[i]);
		b->p[b->len++] = ':';
		put_dec(b, f->file && f->line > 0 ? (uint64_t)f->line : 0);
		b->p[b->len++] = '\n';
	}
	return 0;
}

/* ---- output pieces ---- */

/* Writes every pending piece (to fd, or into mem) and empties the emitter. 0 or
 * -errno (EPIPE when the reader left), -ENOMEM. */
static int emit_flush(struct emitter *em)
{
	struct iovec *iov = em->iov;
	size_t n = em->n;
	int err = 0;

	for (size_t i = 0; i < n; i++)
		if (!iov[i].iov_base)
			iov[i].iov_base = em->scratch.p + em->sc_off[i];
	for (size_t i = 0; em->fd < 0 && i < n; i++)
		base_sbuf__append(em->mem, iov[i].iov_base, iov[i].iov_len);
	if (em->fd < 0)
		err = em->mem->err;
	while (em->fd >= 0 && n) {
		ssize_t w = writev(em->fd, iov, n > IOV_MAX ? IOV_MAX : (int)n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = -errno;
			break;
		}
		for (; n && (size_t)w >= iov->iov_len; n--, iov++) /* done pieces */
			w -= (ssize_t)iov->iov_len;
		if (n) { /* a piece written in part */
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	em->n = em->pending = 0;
	em->scratch.len = 0;
	return err;
}

/* Writes what is pending once it is SYMBOLIZE_OUT_FLUSH bytes: the reader gets the
 * answers as they are made, not all at the end of a block. */
static int emit_done(struct emitter *em, size_t len)
{
	em->pending += len;
	return em->pending >= SYMBOLIZE_OUT_FLUSH ? emit_flush(em) : 0;
}

/* Appends [p, p + len) of the text cache's region (left untouched until flushed). */
static int emit_text(struct emitter *em, const char *p, size_t len)
{
	struct iovec *last = em->n ? &em->iov[em->n - 1] : NULL;
	int err;

	if (last && last->iov_base && (char *)last->iov_base + last->iov_len == p) {
		last->iov_len += len; /* the run goes on */
		return emit_done(em, len);
	}
	if (em->n == EMIT_IOV && (err = emit_flush(em)))
		return err;
	em->iov[em->n++] = (struct iovec){(void *)p, len};
	return emit_done(em, len);
}

/* Appends a copy of [p, p + len). 0 or -errno. */
static int emit_copy(struct emitter *em, const void *p, size_t len)
{
	struct iovec *last;
	int err;

	if ((em->n == EMIT_IOV && (err = emit_flush(em))) ||
	    (err = sbuf_reserve(&em->scratch, len)))
		return err;
	last = em->n ? &em->iov[em->n - 1] : NULL;
	if (!last || last->iov_base) { /* a new scratch piece */
		em->sc_off[em->n] = em->scratch.len;
		em->iov[em->n++] = (struct iovec){NULL, 0};
		last = &em->iov[em->n - 1];
	}
	sbuf_put(&em->scratch, p, len);
	last->iov_len += len;
	return emit_done(em, len);
}

/* ---- the text cache: (object, address) -> formatted answer ---- */

static uint64_t text_hash(const struct sym_object *o, uint64_t v, bool is_off)
{
	return base_hash_u64((uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ULL ^ is_off, v);
}

/* The slot of (o, v, is_off), whose text_hash is h, or the empty slot where it would go
 * (linear probing). */
static struct text_slot *text_probe(struct text_cache *tc, const struct sym_object *o, uint64_t v,
				    bool is_off, uint64_t h)
{
	size_t i = (size_t)h & (tc->n_slots - 1);

	for (;; i = (i + 1) & (tc->n_slots - 1)) { /* layers: slots prefetched by hash, tagged */
		struct text_slot *t = &tc->slots[i];
		const struct text_rec *r;

		if (!t->rec)
			return t;
		r = &tc->recs[t->rec];
		if (t->tag == (uint32_t)(h >> 32) && r->v == v && r->obj == o &&
		    r->is_off == is_off)
			return t;
	}
}

/*
 * The cache is read at random: with 4 KiB pages, nearly every warm answer also missed
 * the TLB. Large regions are therefore mapped 2 MiB aligned with MADV_HUGEPAGE (a hint;
 * the kernel may decline). Smaller ones (a small budget) use malloc. Both come zeroed.
 */
#define HUGE_PAGE ((size_t)2 << 20)

/* *len bytes rounded up to HUGE_PAGE (written back), mapped; NULL on failure. */
static void *huge_map(size_t *len)
{
	size_t n = (*len + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	char *p, *a;

	if (n < *len || n > SIZE_MAX - HUGE_PAGE)
		return NULL;
	p = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p) /* trim to the aligned n bytes */
		munmap(p, (size_t)(a - p));
	if (p + HUGE_PAGE > a)
		munmap(a + n, (size_t)(p + HUGE_PAGE - a));
	madvise(a, n, MADV_HUGEPAGE);
	*len = n;
	return a;
}

/* Zeroed room for bytes: mapped when at least a huge page, else calloc'd. */
static void *region_new(size_t *bytes)
{
	return *bytes >= HUGE_PAGE ? huge_map(bytes) : calloc(1, *bytes);
}

static void region_free(void *p, size_t bytes)
{
	if (p && bytes >= HUGE_PAGE)
		munmap(p, bytes);
	else
		free(p);
}

/* Gives the first used bytes of a region back (a mapped one to the kernel). */
static void region_clear(void *p, size_t cap, size_t used)
{
	if (!p || !used)
		return;
	if (cap >= HUGE_PAGE)
		madvise(p, used, MADV_DONTNEED);
	else
		memset(p, 0, used);
}

/* Slot memory now. */
static size_t slot_bytes(const struct text_cache *tc)
{
	return tc->n_slots * sizeof(*tc->slots);
}

/* Bytes accounted against the budget. */
static size_t text_bytes(const struct text_cache *tc)
{
	return slot_bytes(tc) + tc->n_recs * sizeof(*tc->recs) + tc->text_len;
}

/* Forgets every answer; the regions' pages go back to the kernel, the slots stay. The
 * caller flushed the output first: pending pieces may point into the text. */
static void text_reset(struct text_cache *tc)
{
	memset(tc->slots, 0, slot_bytes(tc));
	region_clear(tc->recs, tc->recs_cap, tc->n_recs * sizeof(*tc->recs));
	region_clear(tc->text, tc->text_cap, tc->text_len);
	tc->n_recs = 1;
	tc->text_len = 0;
	tc->resets++;
}

/* Twice the slots, or at least want (a power of two) when more. 0 or -ENOMEM; 1 when
 * that would not fit the budget. */
static int text_grow(struct text_cache *tc, size_t want)
{
	size_t old_n = tc->n_slots, old_bytes = slot_bytes(tc);
	size_t n = old_n ? old_n * 2 : TEXT_MIN_SLOTS, bytes;
	struct text_slot *old = tc->slots;

	if (n < want)
		n = want;
	bytes = n * sizeof(*tc->slots);
	if ((old_n || n > TEXT_MIN_SLOTS) && text_bytes(tc) - old_bytes + bytes > tc->budget)
		return 1;
	if (!(tc->slots = region_new(&bytes))) {
		tc->slots = old;
		return -ENOMEM;
	}
	tc->n_slots = bytes / sizeof(*tc->slots); /* a power of two still */
	for (size_t i = 0; i < old_n; i++) {
		const struct text_rec *r;

		if (!old[i].rec)
			continue;
		r = &tc->recs[old[i].rec];
		*text_probe(tc, r->obj, r->v, r->is_off, text_hash(r->obj, r->v, r->is_off)) =
		    old[i];
	}
	region_free(old, old_bytes);
	return 0;
}

/*
 * Slots for n more records at once (a block of n new addresses ahead), instead of
 * doubling five times on the way, each time rehashing every record made so far (50,000
 * addresses of node: ~5% of a cold run). Nothing when that would not fit the budget or
 * memory: the slots then grow as answers come, as before.
 */
static void text_presize(struct text_cache *tc, size_t n)
{
	size_t want = TEXT_MIN_SLOTS;

	if (n > SIZE_MAX / 4 - tc->n_recs)
		return;
	while (want <= (tc->n_recs + n) * 2)
		want *= 2;
	if (want > tc->n_slots)
		(void)text_grow(tc, want);
}

/*
 * Whether one more record with len bytes of text fits the budget and the regions (which
 * are reserved on first use, at the budget's size each: only what is used is touched).
 */
static bool text_fits(struct text_cache *tc, size_t len)
{
	if (!tc->recs) {
		tc->recs_cap = tc->budget;
		if (!(tc->recs = region_new(&tc->recs_cap)))
			return false;
	}
	if (!tc->text) {
		tc->text_cap = tc->budget;
		if (!(tc->text = region_new(&tc->text_cap)))
			return false;
	}
	return len <= UINT32_MAX - tc->text_len && tc->text_len + len <= tc->text_cap &&
	       (tc->n_recs + 1) * sizeof(*tc->recs) <= tc->recs_cap && tc->n_recs < UINT32_MAX &&
	       text_bytes(tc) + len + sizeof(*tc->recs) <= tc->budget;
}

/* One input line, parsed: what to answer. */
struct line_key {
	struct sym_object *o; /* borrowed; NULL: the line names no address (answer unknown) */
	uint64_t v;	      /* vaddr of --obj, or file offset in o when is_off */
	bool is_off;
	uint64_t h;	/* text_hash(o, v, is_off), computed once per line */
	size_t ahead; /* 1 + its number among the block's plain lines when the block has
		       * answers made ahead (c->ah.n), else 0 */
};

/* The answer to k (with -a, its address line too), resolved and formatted into
 * c->fmt. 0 or -ENOMEM. */
static int answer_format(struct sym_batch *c, const struct line_key *k)
{
	const struct sym_result *r;

	if (k->is_off)
		symbolizer__resolve(c->s, k->o, k->v, &r);
	else
		symbolizer__resolve_vaddr(c->s, k->o, k->v, &r);
	c->fmt.len = 0;
	if (c->addresses && !sbuf_reserve(&c->fmt, 19))
		put_address(&c->fmt, k->v);
	if ((c->addresses && !c->fmt.len) || put_frames(&c->fmt, r, c->frames))
		return -ENOMEM;
	return 0;
}

/*
 * Appends the answer to (o, v) (with -a, its address line too): from the cache, else
 * made ahead (answer_ahead) or resolved and formatted now, and cached. 0 or -errno.
 */
static int frames_of(struct sym_batch *c, const struct line_key *k)
{
	struct sym_object *o = k->o;
	uint64_t v = k->v;
	bool is_off = k->is_off;
	struct text_cache *tc = &c->tc;
	const char *ans;
	struct text_slot *t;
	struct text_rec *rec;
	size_t len;
	int err;

	if (tc->n_recs * 2 >= tc->n_slots && (err = text_grow(tc, 0)) != 0) {
		if (err < 0 || (err = emit_flush(&c->em)))
			return err;
		text_reset(tc); /* the slots alone would pass the budget */
	}
	t = text_probe(tc, o, v, is_off, k->h);
	if (t->rec) {
		rec = &tc->recs[t->rec];
		tc->hits++;
		return emit_text(&c->em, tc->text + rec->off, rec->len);
	}
	tc->misses++;
	if (k->ahead && c->ah.ans[k->ahead - 1].off != AHEAD_NONE) { /* made already */
		ans = c->ah.text + c->ah.ans[k->ahead - 1].off;
		len = c->ah.ans[k->ahead - 1].len;
	} else if ((err = answer_format(c, k))) {
		return err;
	} else {
		ans = c->fmt.p;
		len = c->fmt.len;
	}
	/* An object whose debug info is still on its way may answer better later. */
	if (!sym_object__settled(o))
		return emit_copy(&c->em, ans, len);
	if (!text_fits(tc, len)) { /* full: pending pieces still point into it */
		if ((err = emit_flush(&c->em)))
			return err;
		text_reset(tc);
		if (!text_fits(tc, len))
			return emit_copy(&c->em, ans, len);
		t = text_probe(tc, o, v, is_off, k->h);
	}
	t->tag = (uint32_t)(k->h >> 32);
	t->rec = (uint32_t)tc->n_recs;
	rec = &tc->recs[tc->n_recs++];
	*rec = (struct text_rec){.v = v,
				 .obj = o,
				 .off = (uint32_t)tc->text_len,
				 .len = (uint32_t)len,
				 .is_off = is_off};
	memcpy(tc->text + tc->text_len, ans, len);
	tc->text_len += len;
	return emit_text(&c->em, tc->text + rec->off, len);
}

/* ---- input lines ---- */

/* Strict hex of [p, end): optional 0x, then digits only, at most 64 bits of value. */
static bool parse_hex(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	int sig = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] | 0x20) == 'x')
		p += 2;
	if (p == end)
		return false;
	for (; p < end; p++) {
		unsigned d = base_hex_table[(unsigned char)*p];

		if (!d--)
			return false;
		if ((x || d) && ++sig > 16)
			return false;
		x = x << 4 | d;
	}
	*v = x;
	return true;
}

/*
 * Parses one input line, [line, line + len) (writable; left as found). Trailing CR and
 * blanks are ignored. FILE+0xOFF lines get FILE's object here.
 */
static void line_parse(struct sym_batch *c, char *line, size_t len, struct line_key *k)
{
	char *plus;

	*k = (struct line_key){0};
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	plus = len ? memrchr(line, '+', len) : NULL;
	if (plus && plus != line) {
		if (parse_hex(plus + 1, line + len, &k->v)) {
			*plus = '\0'; /* FILE, for as long as the call */
			k->o = symbolizer__object(c->s, line, line, 0, 0);
			*plus = '+';
			k->is_off = true;
		}
	} else if (c->obj && parse_hex(line, line + len, &k->v)) {
		k->o = c->obj;
	}
	if (k->o)
		k->h = text_hash(k->o, k->v, k->is_off);
	else
		k->v = 0;
}

/*
 * The common line, "0x" and 1 to 16 hex digits then '\n', parsed in the same pass that
 * finds its end. Returns the '\n', or NULL for any other line (line_parse's to read).
 */
static char *line_fast(const struct sym_batch *c, char *p, const char *end, struct line_key *k)
{
	const unsigned char *q = (const unsigned char *)p + 2, *digits = q;
	uint64_t x = 0;
	unsigned d;

	if (end - p < 4 || p[0] != '0' || p[1] != 'x')
		return NULL;
	for (; q < (const unsigned char *)end && (d = base_hex_table[*q]); q++)
		x = x << 4 | (d - 1);
	if (q == (const unsigned char *)end || *q != '\n' || q == digits || q - digits > 16)
		return NULL;
	*k = (struct line_key){.o = c->obj, .v = c->obj ? x : 0};
	if (c->obj)
		k->h = text_hash(c->obj, x, false);
	return (char *)q;
}

/* ---- answers made ahead, in address order ---- */

/*
 * ah->keys[0, n) sorted by v: a stable LSD radix sort, 11 bits a pass, skipping the
 * digits all addresses share (a big object's .text: 3 passes). Leaves the result in
 * ah->keys.
 */
#define AHEAD_RADIX_BITS 11
#define AHEAD_RADIX	 (1u << AHEAD_RADIX_BITS)

static void ahead_sort(struct ahead *ah, size_t n)
{
	uint64_t diff = 0;

	for (size_t i = 1; i < n; i++)
		diff |= ah->keys[i].v ^ ah->keys[0].v;
	for (unsigned shift = 0; shift < 64; shift += AHEAD_RADIX_BITS) {
		size_t count[AHEAD_RADIX] = {0}, pos = 0;
		struct ahead_key *swap;

		if (!((diff >> shift) & (AHEAD_RADIX - 1)))
			continue;
		for (size_t i = 0; i < n; i++)
			count[(ah->keys[i].v >> shift) & (AHEAD_RADIX - 1)]++;
		for (size_t d = 0; d < AHEAD_RADIX; d++) {
			size_t here = count[d];

			count[d] = pos;
			pos += here;
		}
		for (size_t i = 0; i < n; i++)
			ah->tmp[count[(ah->keys[i].v >> shift) & (AHEAD_RADIX - 1)]++] = ah->keys[i];
		swap = ah->keys;
		ah->keys = ah->tmp;
		ah->tmp = swap;
	}
}

/*
 * Answers the plain lines ("0x..." of --obj) of the whole lines in [p, end) ahead, in
 * address order, into c->ah (the answering loop then copies each into the text cache
 * in input order, so runs of repeated input stay runs). Why: a first sight of a big
 * object at random addresses reads its symbol entries, string table, copied-out names
 * and DWARF at random, each a cache or TLB miss; in address order they are read nearly
 * in sequence (50,000 addresses of node: ~20% less CPU in all). Addresses the text
 * cache already answers, and repeats, are made once or not at all. Nothing is made
 * ahead for a block of few lines, nor for an object whose debug info may still arrive.
 * 0 or -ENOMEM (then nothing is planned: the lines are answered the usual way).
 */
static int answer_ahead(struct sym_batch *c, char *p, const char *end)
{
	struct ahead *ah = &c->ah;
	size_t n = 0, cached = 0;
	bool full = false;

	ah->n = ah->next = 0;
	ah->text_len = 0;
	if (!c->obj || !sym_object__settled(c->obj))
		return 0;
	for (char *nl; p < end; p = nl + 1) {
		struct line_key k;

		if (!(nl = line_fast(c, p, end, &k))) { /* another kind of line: not planned */
			if (!(nl = memchr(p, '\n', (size_t)(end - p))))
				break;
			continue;
		}
		if (n == ah->keys_cap) {
			size_t cap = ah->keys_cap;

			if (base_grow((void **)&ah->keys, &ah->keys_cap, n + 1, sizeof(*ah->keys)) ||
			    base_grow((void **)&ah->tmp, &cap, n + 1, sizeof(*ah->tmp)))
				return -ENOMEM;
			ah->keys_cap = ah->keys_cap < cap ? ah->keys_cap : cap;
		}
		ah->keys[n] = (struct ahead_key){k.v, n};
		/* a block whose first lines are mostly answered already (repeated input):
		 * reading it all twice would cost more than its few misses gain */
		if (n < AHEAD_SAMPLE && c->tc.n_recs > 1 &&
		    text_probe(&c->tc, k.o, k.v, false, k.h)->rec && ++cached * 4 > AHEAD_SAMPLE)
			return 0;
		n++;
	}
	if (n < AHEAD_MIN)
		return 0;
	if (!ah->text) {
		ah->text_cap = AHEAD_TEXT_MAX;
		if (!(ah->text = region_new(&ah->text_cap)))
			return -ENOMEM;
	}
	if (base_grow((void **)&ah->ans, &ah->ans_cap, n, sizeof(*ah->ans)))
		return -ENOMEM;
	text_presize(&c->tc, n);
	ahead_sort(ah, n);
	for (size_t i = 0; i < n; i++) {
		const struct ahead_key *a = &ah->keys[i];
		struct line_key k = {.o = c->obj, .v = a->v, .h = text_hash(c->obj, a->v, false)};
		int err;

		ah->ans[a->line].off = AHEAD_NONE;
		if (i && a->v == a[-1].v) { /* a repeat: the same answer */
			ah->ans[a->line] = ah->ans[a[-1].line];
			continue;
		}
		if (full ||
		    (c->tc.n_recs > 1 && text_probe(&c->tc, c->obj, a->v, false, k.h)->rec))
			continue; /* answered the usual way, or from the cache */
		if ((err = answer_format(c, &k)))
			return err;
		if (c->fmt.len > ah->text_cap - ah->text_len) {
			full = true; /* this and the rest: the usual way */
			continue;
		}
		ah->ans[a->line] = (struct ahead_ans){(uint32_t)ah->text_len, (uint32_t)c->fmt.len};
		memcpy(ah->text + ah->text_len, c->fmt.p, c->fmt.len);
		ah->text_len += c->fmt.len;
	}
	ah->n = n;
	return 0;
}

/* The answer to one parsed line. 0 or -errno. */
static int line_answer(struct sym_batch *c, const struct line_key *k)
{
	if (k->o)
		return frames_of(c, k);
	c->fmt.len = 0;
	if (sbuf_reserve(&c->fmt, 19 + sizeof(UNKNOWN_FRAME)))
		return -ENOMEM;
	if (c->addresses)
		put_address(&c->fmt, k->v);
	sbuf_put(&c->fmt, UNKNOWN_FRAME, sizeof(UNKNOWN_FRAME) - 1);
	return emit_copy(&c->em, c->fmt.p, c->fmt.len);
}

static int symbolize_line(struct sym_batch *c, char *line, size_t len)
{
	struct line_key k;

	line_parse(c, line, len, &k);
	return line_answer(c, &k);
}

/*
 * Warm answers cost memory misses (the slot, then its record), not computation. Lines
 * are parsed LINE_AHEAD ahead of being answered: a parsed line's slot is prefetched, and
 * halfway along, its record; by its turn both are in cache. (The text is not read here:
 * writev copies it, in long runs.)
 */
#define LINE_AHEAD 32

/*
 * always_inline: as plain static functions, GCC 12's IPA mod-ref analysis found them
 * without effect (a prefetch writes nothing) and dropped the calls, prefetches and all.
 */
#define PREFETCH_FN static inline __attribute__((always_inline)) void

PREFETCH_FN prefetch_slot(const struct text_cache *tc, const struct line_key *k)
{
	if (k->o && tc->n_slots)
		__builtin_prefetch(&tc->slots[k->h & (tc->n_slots - 1)]);
}

PREFETCH_FN prefetch_rec(const struct text_cache *tc, const struct line_key *k)
{
	const struct text_slot *t;

	if (!k->o || !tc->n_slots)
		return;
	/* the record of the home slot: nearly always the one (no probe: it would wait) */
	t = &tc->slots[k->h & (tc->n_slots - 1)];
	if (t->rec) /* a prefetch never faults, even past the region */
		__builtin_prefetch(&tc->recs[t->rec]);
}

/*
 * Every whole line in in[*pos, len): answered (onto c->em, which writes as it fills).
 * *pos moves past them; what is left is a line still being read. 0 or -errno.
 */
static int symbolize_block(struct sym_batch *c, char *in, size_t len, size_t *pos)
{
	struct line_key ring[LINE_AHEAD];
	char *p = in + *pos, *end = in + len, *nl;
	size_t head = 0, n = 0;
	bool more = true; /* whole lines may be left to parse */
	int err = answer_ahead(c, p, end);

	if (err == -ENOMEM) /* nothing planned: answered the usual way */
		c->ah.n = 0, err = 0;
	while (!err) {
		if (more && n < LINE_AHEAD) { /* parse one more */
			struct line_key *k = &ring[(head + n) % LINE_AHEAD];

			nl = p < end ? line_fast(c, p, end, k) : NULL;
			if (nl && c->ah.n && c->ah.next < c->ah.n) { /* a plain line: as planned */
				const struct ahead_ans *a = &c->ah.ans[c->ah.next];

				k->ahead = ++c->ah.next;
				if (a->off != AHEAD_NONE) { /* its answer is read at its turn */
					__builtin_prefetch(c->ah.text + a->off);
					__builtin_prefetch(c->ah.text + a->off + a->len - 1);
				}
			}
			if (!nl && p < end && (nl = memchr(p, '\n', (size_t)(end - p))))
				line_parse(c, p, (size_t)(nl - p), k);
			if (nl) {
				n++;
				prefetch_slot(&c->tc, k);
				p = nl + 1;
				continue;
			}
			more = false; /* only a partial line left, if anything */
		}
		if (!n)
			break;
		if (n > LINE_AHEAD / 2)
			prefetch_rec(&c->tc, &ring[(head + LINE_AHEAD / 2) % LINE_AHEAD]);
		err = line_answer(c, &ring[head]);
		head = (head + 1) % LINE_AHEAD;
		n--;
	}
	*pos = (size_t)(p - in);
	if (c->ah.n) { /* the plan was for this block only: its text's pages go back (whole
			* huge pages: a part would split one and leave the rest resident) */
		region_clear(c->ah.text, c->ah.text_cap,
			     (c->ah.text_len + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
		c->ah.n = c->ah.text_len = 0;
	}
	return err;
}

/* ---- driving ---- */

/* Block by block; pending output is written before each read. */
int sym_batch__stream(struct sym_batch *c, int in_fd, int out_fd, const char **what)
{
	struct sbuf in = {0};
	bool skipping = false; /* in the rest of a line too long: already answered */
	size_t pos;
	ssize_t n;
	int err = sbuf_reserve(&in, SYMBOLIZE_MAX_LINE);

	c->em.fd = out_fd;
	while (!err) {
		*what = "write";
		if ((err = emit_flush(&c->em)))
			break;
		*what = "read";
		n = read(in_fd, in.p + in.len, SYMBOLIZE_MAX_LINE - in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			if (!err && in.len && !skipping) { /* a last line without newline */
				*what = "write";
				err = symbolize_line(c, in.p, in.len);
			}
			break;
		}
		pos = in.len;
		in.len += (size_t)n;
		if (skipping) {
			char *nl = memchr(in.p + pos, '\n', in.len - pos);

			skipping = !nl;
			pos = nl ? (size_t)(nl + 1 - in.p) : in.len;
		} else {
			pos = 0;
		}
		*what = "write";
		if (!skipping)
			err = symbolize_block(c, in.p, in.len, &pos);
		memmove(in.p, in.p + pos, in.len - pos);
		in.len -= pos;
		if (!err && in.len == SYMBOLIZE_MAX_LINE) { /* no newline in a full buffer */
			err = symbolize_line(c, in.p, 0);
			in.len = 0;
			skipping = true;
		}
	}
	if (!err) {
		*what = "write";
		err = emit_flush(&c->em);
	}
	free(in.p);
	return err;
}

int sym_batch__text(struct sym_batch *c, char *in, size_t len, struct base_sbuf *out)
{
	size_t pos = 0;
	int err;

	c->em.fd = -1;
	c->em.mem = out;
	err = symbolize_block(c, in, len, &pos);
	if (!err && pos < len)
		err = symbolize_line(c, in + pos, len - pos); /* a last line without newline */
	if (!err)
		err = emit_flush(&c->em);
	c->em.mem = NULL;
	return err;
}

int sym_batch__new(struct symbolizer *s, const struct sym_batch_opts *o, struct sym_batch **out)
{
	struct sym_batch *c;

	*out = NULL;
	if (!s)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->s = s;
	c->obj = o->obj;
	c->frames = o->frames;
	c->addresses = o->addresses;
	c->tc.budget = o->text_bytes;
	c->tc.n_recs = 1;
	*out = c;
	return 0;
}

void sym_batch__stats(const struct sym_batch *c, struct sym_batch_stats *out)
{
	*out = (struct sym_batch_stats){.hits = c->tc.hits,
					.misses = c->tc.misses,
					.resets = c->tc.resets,
					.bytes = text_bytes(&c->tc),
					.budget = c->tc.budget};
}

void sym_batch__free(struct sym_batch *c)
{
	if (!c)
		return;
	region_free(c->tc.slots, slot_bytes(&c->tc));
	region_free(c->tc.recs, c->tc.recs_cap);
	region_free(c->tc.text, c->tc.text_cap);
	free(c->ah.keys);
	free(c->ah.tmp);
	free(c->ah.ans);
	region_free(c->ah.text, c->ah.text_cap);
	free(c->fmt.p);
	free(c->em.scratch.p);
	free(c);
}
