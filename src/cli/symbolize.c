/*
 * hearth symbolize: addresses on stdin -> function, file:line (and inlined frames), in
 * the output format of `addr2line -f -i -C`. A tool in itself, and the entry point of
 * bench/symbolize.
 *
 * Input lines: a hex ELF virtual address of --obj ("0x401136" or "401136", as addr2line
 * takes), or FILE+0xOFF — a file offset in FILE, what hearth prints for a frame it could
 * not name. Output per address: with -a the address, then per frame (innermost first;
 * only the innermost without --inlines) the function and "file:line", "??" and "??:0"
 * when unknown. --no-inlines prints one frame too, named for the function the code is
 * physically in (the outermost frame) at the innermost file:line, as llvm-symbolizer
 * --no-inlines does; addr2line -f names the innermost, our default.
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
 * address and waiting) gets its answer at once.
 * The text cache takes a quarter of --symbol-cache-mb, the symbolizer the rest; when
 * the text cache is full, pending output is written and the cache emptied to refill.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "symbolize/symbolize.h"

/* Input block; a line longer than this is answered as unknown. */
#define SYMBOLIZE_IO_BUF   (1 << 20)
#define SYMBOLIZE_MAX_LINE SYMBOLIZE_IO_BUF
/* Output is written once this much is pending (and before every read). */
#define SYMBOLIZE_OUT_FLUSH (1 << 20)
#define TEXT_MIN_SLOTS	    4096
/* The unknown answer: function, then file:line. */
#define UNKNOWN_FRAME "??\n??:0\n"

/* Which frames an answer shows. */
enum frames_shown {
	FRAMES_INNERMOST, /* default: the innermost function (addr2line -f) */
	FRAMES_ALL,	  /* --inlines: every frame, innermost first (addr2line -f -i) */
	FRAMES_PHYSICAL,  /* --no-inlines: the outermost function, innermost file:line */
};

struct symbolize_args {
	const char *obj;
	enum frames_shown frames;
	bool addresses, stats;
	long passes; /* --timing N: in-process passes, timed on stderr */
	long cache_mb;
	double wait_s;
};

/* Growable bytes. */
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
	int fd;		  /* -1: into mem */
	struct sbuf *mem; /* borrowed, when fd < 0 */
	struct sbuf scratch;
	struct iovec iov[EMIT_IOV];
	size_t sc_off[EMIT_IOV];
	size_t n, pending; /* pieces, bytes */
};

struct symbolize_ctx {
	struct symbolizer *s;	/* owned by cmd_symbolize */
	struct sym_object *obj; /* borrowed: --obj, NULL when not given */
	enum frames_shown frames;
	bool addresses;
	struct text_cache tc;
	struct sbuf fmt; /* one answer being formatted */
	struct emitter em;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hearth symbolize [--obj FILE] [OPTIONS] < ADDRESSES\n"
	    "\n"
	    "Reads addresses on stdin, one per line: hex ELF virtual addresses of --obj\n"
	    "(0x401136), or FILE+0xOFF (a file offset in FILE). Prints what addr2line -f -C\n"
	    "prints: the function, then file:line; '?"
	    "?' and '?"
	    "?:0' when unknown.\n"
	    "\n"
	    "      --obj FILE          the object hex addresses belong to\n"
	    "  -i, --inlines           also the frames inlined at the address (innermost first)\n"
	    "      --no-inlines        one frame, named for the function the code is in (where\n"
	    "                          inlined code was inlined to, as llvm-symbolizer\n"
	    "                          --no-inlines), at the innermost file:line; without\n"
	    "                          either, the innermost function (as addr2line -f)\n"
	    "  -a, --addresses         print each address before its frames\n"
	    "      --symbol-cache-mb N byte budget of symbol tables, DWARF and the address\n"
	    "                          caches (a quarter of it for formatted answers),\n"
	    "                          1-65536 (default %d)\n"
	    "      --debuginfod-wait S with DEBUGINFOD_URLS set, wait up to S seconds for\n"
	    "                          debug info being fetched (default 30, 0 = don't)\n"
	    "      --stats             print cache counters on stderr at the end\n"
	    "      --timing N          read all input first, then symbolize it N times in this\n"
	    "                          process (output of the first pass only) and print each\n"
	    "                          pass's addresses/s on stderr (lookups and formatting into\n"
	    "                          memory; reading and writing excluded)\n"
	    "      --config FILE       settings file (default " CLI_CONFIG_DEFAULT ", if any;\n"
	    "                          flags override it; see docs/config.md)\n"
	    "      --print-config      print the effective settings and exit\n"
	    "  -h, --help              this help\n"
	    "\n"
	    "Exit status: 0 on success, 1 when an object cannot be read, 2 for a bad option.\n",
	    SYM_DEFAULT_CACHE_MB);
}
enum { OPT_OBJ = 256, OPT_NO_INLINES, OPT_CACHE, OPT_WAIT, OPT_STATS, OPT_TIMING };

/* The config file's settings, then argv (cli.h has the return convention). */
static int parse_args(int argc, char **argv, struct symbolize_args *a)
{
	static const struct option opts[] = {
	    {"obj", required_argument, NULL, OPT_OBJ},
	    {"inlines", no_argument, NULL, 'i'},
	    {"no-inlines", no_argument, NULL, OPT_NO_INLINES},
	    {"addresses", no_argument, NULL, 'a'},
	    {"symbol-cache-mb", required_argument, NULL, OPT_CACHE},
	    {"debuginfod-wait", required_argument, NULL, OPT_WAIT},
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"timing", required_argument, NULL, OPT_TIMING},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c, ret = cli_config_args("symbolize", opts, &argc, &argv);

	*a = (struct symbolize_args){.cache_mb = SYM_DEFAULT_CACHE_MB, .wait_s = 30};
	opterr = 0;
	optind = 1;
	while (!ret && (c = cli_getopt(argc, argv, ":iah", opts)) != -1) {
		switch (c) {
		case OPT_OBJ:
			a->obj = optarg;
			break;
		case 'i':
			a->frames = FRAMES_ALL;
			break;
		case OPT_NO_INLINES:
			a->frames = FRAMES_PHYSICAL;
			break;
		case 'a':
			a->addresses = true;
			break;
		case OPT_STATS:
			a->stats = true;
			break;
		case OPT_TIMING:
			if (cli_parse_long(optarg, 1, 100, &a->passes) == 0)
				break;
			cli_error("symbolize",
				  "--timing '%s' is not a number of passes from 1 to 100", optarg);
			ret = -EINVAL;
			break;
		case 'h':
			usage(stdout);
			ret = CLI_DONE;
			break;
		case OPT_CACHE:
			if (cli_parse_long(optarg, 1, 65536, &a->cache_mb) == 0)
				break;
			cli_error("symbolize",
				  "--symbol-cache-mb '%s' is not a number of MiB from 1 to 65536",
				  optarg);
			ret = -EINVAL;
			break;
		case OPT_WAIT:
			if (!strcmp(optarg, "0") ||
			    cli_parse_seconds(optarg, 3600, &a->wait_s) == 0) {
				a->wait_s = strcmp(optarg, "0") ? a->wait_s : 0;
				break;
			}
			cli_error(
			    "symbolize",
			    "--debuginfod-wait '%s' is not a number of seconds from 0 to 3600",
			    optarg);
			ret = -EINVAL;
			break;
		default:
			cli_error("symbolize",
				  "unknown or incomplete option '%s' (see hearth symbolize --help)",
				  cli_bad_option(argc, argv, optind, optopt));
			ret = -EINVAL;
			break;
		}
	}
	if (!ret && optind < argc) {
		cli_error("symbolize", "unexpected argument '%s': addresses are read from stdin",
			  argv[optind]);
		ret = -EINVAL;
	}
	return cli_config_done("symbolize", opts, ":iah", argc, argv, ret);
}

/* ---- bytes ---- */

/* Room for n more bytes in b (geometric, overflow-checked). 0 or -ENOMEM. */
static int sbuf_reserve(struct sbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (n <= b->cap - b->len)
		return 0;
	if (n > SIZE_MAX - b->len)
		return -ENOMEM;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (!(p = realloc(b->p, cap)))
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* Appends without checking: the caller reserved the room. */
static void sbuf_put(struct sbuf *b, const void *p, size_t n)
{
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Writes all of b to fd and empties it. 0 or -errno (EPIPE when the reader left). */
static int sbuf_write(struct sbuf *b, int fd)
{
	size_t done = 0;

	while (done < b->len) {
		ssize_t n = write(fd, b->p + done, b->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	b->len = 0;
	return 0;
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
static int put_frames(struct sbuf *b, const struct sym_result *r, enum frames_shown shown)
{
	size_t n = shown == FRAMES_ALL ? r->n : (r->n ? 1 : 0), room = sizeof(UNKNOWN_FRAME);
	size_t name_len[SYM_MAX_FRAMES], file_len[SYM_MAX_FRAMES];
	struct sym_frame phys;
	const struct sym_frame *frames = r->frames;

	if (shown == FRAMES_PHYSICAL && r->n > 1) {
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
	if (em->fd < 0 && sbuf_reserve(em->mem, em->pending) == 0) {
		for (size_t i = 0; i < n; i++)
			sbuf_put(em->mem, iov[i].iov_base, iov[i].iov_len);
	} else if (em->fd < 0) {
		err = -ENOMEM;
	}
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
	return sym_mix64(v ^ ((uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ULL) ^ is_off);
}

/* The slot of (o, v, is_off), or the empty slot where it would go (linear probing). */
static struct text_slot *text_probe(struct text_cache *tc, const struct sym_object *o, uint64_t v,
				    bool is_off)
{
	uint64_t h = text_hash(o, v, is_off);
	size_t i = (size_t)h & (tc->n_slots - 1);

	for (;; i = (i + 1) & (tc->n_slots - 1)) {
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

/* Twice the slots. 0 or -ENOMEM; 1 when that would not fit the budget. */
static int text_grow(struct text_cache *tc)
{
	size_t old_n = tc->n_slots, old_bytes = slot_bytes(tc);
	size_t n = old_n ? old_n * 2 : TEXT_MIN_SLOTS, bytes = n * sizeof(*tc->slots);
	struct text_slot *old = tc->slots;

	if (old_n && text_bytes(tc) - old_bytes + bytes > tc->budget)
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
		*text_probe(tc, r->obj, r->v, r->is_off) = old[i];
	}
	region_free(old, old_bytes);
	return 0;
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

/*
 * Appends the answer to (o, v) (with -a, its address line too): from the cache, else
 * resolved, formatted and cached. 0 or -errno.
 */
static int frames_of(struct symbolize_ctx *c, struct sym_object *o, uint64_t v, bool is_off)
{
	struct text_cache *tc = &c->tc;
	const struct sym_result *r;
	struct text_slot *t;
	struct text_rec *rec;
	size_t len;
	int err;

	if (tc->n_recs * 2 >= tc->n_slots && (err = text_grow(tc)) != 0) {
		if (err < 0 || (err = emit_flush(&c->em)))
			return err;
		text_reset(tc); /* the slots alone would pass the budget */
	}
	t = text_probe(tc, o, v, is_off);
	if (t->rec) {
		rec = &tc->recs[t->rec];
		tc->hits++;
		return emit_text(&c->em, tc->text + rec->off, rec->len);
	}
	tc->misses++;
	if (is_off)
		symbolizer__resolve(c->s, o, v, &r);
	else
		symbolizer__resolve_vaddr(c->s, o, v, &r);
	c->fmt.len = 0;
	if (c->addresses && !sbuf_reserve(&c->fmt, 19))
		put_address(&c->fmt, v);
	if ((c->addresses && !c->fmt.len) || put_frames(&c->fmt, r, c->frames))
		return -ENOMEM;
	len = c->fmt.len;
	/* An object whose debug info is still on its way may answer better later. */
	if (!sym_object__settled(o))
		return emit_copy(&c->em, c->fmt.p, len);
	if (!text_fits(tc, len)) { /* full: pending pieces still point into it */
		if ((err = emit_flush(&c->em)))
			return err;
		text_reset(tc);
		if (!text_fits(tc, len))
			return emit_copy(&c->em, c->fmt.p, len);
		t = text_probe(tc, o, v, is_off);
	}
	t->tag = (uint32_t)(text_hash(o, v, is_off) >> 32);
	t->rec = (uint32_t)tc->n_recs;
	rec = &tc->recs[tc->n_recs++];
	*rec = (struct text_rec){.v = v,
				 .obj = o,
				 .off = (uint32_t)tc->text_len,
				 .len = (uint32_t)len,
				 .is_off = is_off};
	memcpy(tc->text + tc->text_len, c->fmt.p, len);
	tc->text_len += len;
	return emit_text(&c->em, tc->text + rec->off, len);
}

/* ---- input lines ---- */

/* Hex digit values plus one; 0 for any other byte. */
static const unsigned char hex_value[256] = {
    ['0'] = 1,	['1'] = 2,  ['2'] = 3,	['3'] = 4,  ['4'] = 5,	['5'] = 6,  ['6'] = 7,	['7'] = 8,
    ['8'] = 9,	['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

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
		unsigned d = hex_value[(unsigned char)*p];

		if (!d--)
			return false;
		if ((x || d) && ++sig > 16)
			return false;
		x = x << 4 | d;
	}
	*v = x;
	return true;
}

/* One input line, parsed: what to answer. */
struct line_key {
	struct sym_object *o; /* borrowed; NULL: the line names no address (answer unknown) */
	uint64_t v;	      /* vaddr of --obj, or file offset in o when is_off */
	bool is_off;
};

/*
 * Parses one input line, [line, line + len) (writable; left as found). Trailing CR and
 * blanks are ignored. FILE+0xOFF lines get FILE's object here.
 */
static void line_parse(struct symbolize_ctx *c, char *line, size_t len, struct line_key *k)
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
	if (!k->o)
		k->v = 0;
}

/*
 * The common line, "0x" and 1 to 16 hex digits then '\n', parsed in the same pass that
 * finds its end. Returns the '\n', or NULL for any other line (line_parse's to read).
 */
static char *line_fast(const struct symbolize_ctx *c, char *p, const char *end, struct line_key *k)
{
	const unsigned char *q = (const unsigned char *)p + 2, *digits = q;
	uint64_t x = 0;
	unsigned d;

	if (end - p < 4 || p[0] != '0' || p[1] != 'x')
		return NULL;
	for (; q < (const unsigned char *)end && (d = hex_value[*q]); q++)
		x = x << 4 | (d - 1);
	if (q == (const unsigned char *)end || *q != '\n' || q == digits || q - digits > 16)
		return NULL;
	*k = (struct line_key){.o = c->obj, .v = c->obj ? x : 0};
	return (char *)q;
}

/* The answer to one parsed line. 0 or -errno. */
static int line_answer(struct symbolize_ctx *c, const struct line_key *k)
{
	if (k->o)
		return frames_of(c, k->o, k->v, k->is_off);
	c->fmt.len = 0;
	if (sbuf_reserve(&c->fmt, 19 + sizeof(UNKNOWN_FRAME)))
		return -ENOMEM;
	if (c->addresses)
		put_address(&c->fmt, k->v);
	sbuf_put(&c->fmt, UNKNOWN_FRAME, sizeof(UNKNOWN_FRAME) - 1);
	return emit_copy(&c->em, c->fmt.p, c->fmt.len);
}

static int symbolize_line(struct symbolize_ctx *c, char *line, size_t len)
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
		__builtin_prefetch(
		    &tc->slots[text_hash(k->o, k->v, k->is_off) & (tc->n_slots - 1)]);
}

PREFETCH_FN prefetch_rec(const struct text_cache *tc, const struct line_key *k)
{
	const struct text_slot *t;

	if (!k->o || !tc->n_slots)
		return;
	/* the record of the home slot: nearly always the one (no probe: it would wait) */
	t = &tc->slots[text_hash(k->o, k->v, k->is_off) & (tc->n_slots - 1)];
	if (t->rec) /* a prefetch never faults, even past the region */
		__builtin_prefetch(&tc->recs[t->rec]);
}

/*
 * Every whole line in in[*pos, len): answered (onto c->em, which writes as it fills).
 * *pos moves past them; what is left is a line still being read. 0 or -errno.
 */
static int symbolize_block(struct symbolize_ctx *c, char *in, size_t len, size_t *pos)
{
	struct line_key ring[LINE_AHEAD];
	char *p = in + *pos, *end = in + len, *nl;
	size_t head = 0, n = 0;
	bool more = true; /* whole lines may be left to parse */
	int err = 0;

	while (!err) {
		if (more && n < LINE_AHEAD) { /* parse one more */
			struct line_key *k = &ring[(head + n) % LINE_AHEAD];

			nl = p < end ? line_fast(c, p, end, k) : NULL;
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
	return err;
}

/* ---- driving ---- */

/*
 * stdin to stdout, block by block; pending output is written before each read. A line
 * longer than SYMBOLIZE_MAX_LINE is answered as unknown and the rest of it dropped.
 * 0, -ENOMEM, or -errno of a read or write (*what says which).
 */
static int symbolize_stream(struct symbolize_ctx *c, const char **what)
{
	struct sbuf in = {0};
	bool skipping = false; /* in the rest of a line too long: already answered */
	size_t pos;
	ssize_t n;
	int err = sbuf_reserve(&in, SYMBOLIZE_MAX_LINE);

	c->em.fd = STDOUT_FILENO;
	while (!err) {
		*what = "write";
		if ((err = emit_flush(&c->em)))
			break;
		*what = "read";
		n = read(STDIN_FILENO, in.p + in.len, SYMBOLIZE_MAX_LINE - in.len);
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

/*
 * Through pipes, every 64 KiB (the default pipe size) costs a hand-over between us and
 * the other end, which on a busy machine waits for a time slice: answers are ~12 times
 * the size of their questions, so 11 MB out made ~170 of them. Our ends of the pipes get
 * SYMBOLIZE_IO_BUF instead (best effort: not a pipe, or over fs.pipe-max-size, leaves
 * them as they are).
 */
static void widen_pipes(void)
{
	fcntl(STDIN_FILENO, F_SETPIPE_SZ, SYMBOLIZE_IO_BUF);
	fcntl(STDOUT_FILENO, F_SETPIPE_SZ, SYMBOLIZE_IO_BUF);
}

/* All of stdin into in. 0 or -errno. */
static int read_all(struct sbuf *in)
{
	ssize_t n;

	do {
		if (sbuf_reserve(in, SYMBOLIZE_IO_BUF))
			return -ENOMEM;
		n = read(STDIN_FILENO, in->p + in->len, in->cap - in->len);
		if (n < 0 && errno != EINTR)
			return -errno;
		in->len += n > 0 ? (size_t)n : 0;
	} while (n != 0);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * --timing: all input is read first; each pass answers every line into memory, timed;
 * the first pass's answers go to stdout. Pass 1 is cold (nothing cached), later ones
 * warm. 0 or -errno (*what says of what).
 */
static int timed_passes(struct symbolize_ctx *c, long passes, const char **what)
{
	struct sbuf in = {0}, out = {0};
	long lines = 0;
	int err;

	c->em.fd = -1;
	c->em.mem = &out;
	*what = "read";
	err = read_all(&in);
	for (size_t i = 0; i < in.len; i++)
		lines += in.p[i] == '\n' || (i + 1 == in.len);
	for (long p = 0; p < passes && !err; p++) {
		double t0 = now_s(), dt;
		size_t pos = 0;

		out.len = 0;
		err = symbolize_block(c, in.p, in.len, &pos);
		if (!err && pos < in.len)
			err = symbolize_line(c, in.p + pos, in.len - pos);
		if (!err)
			err = emit_flush(&c->em);
		dt = now_s() - t0;
		fprintf(stderr, "pass %ld: %ld addresses in %.3f s, %.0f addresses/s\n", p + 1,
			lines, dt, dt > 0 ? (double)lines / dt : 0.0);
		*what = "write";
		if (!err && p == 0)
			err = sbuf_write(&out, STDOUT_FILENO);
	}
	free(in.p);
	free(out.p);
	return err;
}

static void print_stats(const struct symbolize_ctx *c)
{
	struct sym_stats st;
	const struct text_cache *tc = &c->tc;

	symbolizer__stats(c->s, &st);
	fprintf(stderr,
		"cache_hits %" PRIu64 "\ncache_misses %" PRIu64 "\ncache_evictions %" PRIu64
		"\nobject_evictions %" PRIu64 "\ncache_bytes %" PRIu64 "\ncache_budget %" PRIu64
		"\nobjects %" PRIu64 "\ndwarf_failures %" PRIu64 "\ndebug_files %" PRIu64
		"\ndebuginfod_files %" PRIu64 "\n",
		st.cache_hits, st.cache_misses, st.cache_evictions, st.object_evictions,
		st.cache_bytes, st.cache_budget, st.objects, st.dwarf_failures, st.debug_files,
		st.debuginfod_files);
	fprintf(stderr,
		"text_cache_hits %" PRIu64 "\ntext_cache_misses %" PRIu64
		"\ntext_cache_resets %" PRIu64 "\ntext_cache_bytes %zu\ntext_cache_budget %zu\n",
		tc->hits, tc->misses, tc->resets, text_bytes(tc), tc->budget);
}

int cmd_symbolize(int argc, char **argv)
{
	struct symbolize_args a;
	struct symbolize_ctx c = {0};
	const char *what = "read";
	uint64_t budget;
	int err = parse_args(argc, argv, &a);

	if (err)
		return err > 0 ? 0 : EXIT_USAGE;
	if (a.obj && access(a.obj, R_OK) != 0) {
		cli_error("symbolize", "cannot read --obj '%s': %s", a.obj, strerror(errno));
		return 1;
	}
	budget = (uint64_t)a.cache_mb << 20;
	c.frames = a.frames;
	c.addresses = a.addresses;
	c.tc.budget = (size_t)(budget / 4);
	c.tc.n_recs = 1;
	/* the text cache keeps every answer: the symbolizer's address cache would be a copy */
	c.s = symbolizer__new(
	    &(struct sym_opts){.cache_bytes = budget - c.tc.budget, .no_address_cache = true});
	if (!c.s || (a.obj && !(c.obj = symbolizer__object(c.s, a.obj, a.obj, 0, 0)))) {
		cli_error("symbolize", "out of memory");
		symbolizer__free(c.s);
		return 1;
	}
	if (a.wait_s > 0)
		symbolizer__wait_debuginfo(c.s, (int)(a.wait_s * 1000));
	widen_pipes();
	err = a.passes ? timed_passes(&c, a.passes, &what) : symbolize_stream(&c, &what);
	if (err == -ENOMEM)
		cli_error("symbolize", "out of memory");
	else if (err)
		cli_error("symbolize", "cannot %s %s: %s", what,
			  strcmp(what, "read") ? "stdout" : "stdin", strerror(-err));
	/* the reader sees EOF now, not after the caches are torn down below */
	if (close(STDOUT_FILENO) != 0 && !err) {
		err = -errno;
		cli_error("symbolize", "cannot write stdout: %s", strerror(-err));
	}
	if (a.stats)
		print_stats(&c);
	region_free(c.tc.slots, slot_bytes(&c.tc));
	region_free(c.tc.recs, c.tc.recs_cap);
	region_free(c.tc.text, c.tc.text_cap);
	free(c.fmt.p);
	free(c.em.scratch.p);
	symbolizer__free(c.s);
	return err ? 1 : 0;
}
