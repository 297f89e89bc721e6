/*
 * Tests for src/java's parsers on synthetic inputs: the VMStructs tables laid out
 * in a buffer standing for a JVM's memory (every value the walk needs, then
 * malformed variants), the compressed line number table and the scope
 * descriptors of an nmethod. The live JVM is tests/integration/test_java.sh's.
 */
#include "java/java_impl.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>

#define BASE 0x100000ull
#define IMG  65536

struct img {
	uint8_t b[IMG];
	size_t top; /* next free byte */
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *im = ctx;

	if (addr < BASE || addr - BASE > IMG || len > IMG - (addr - BASE))
		return -EIO;
	memcpy(buf, im->b + (addr - BASE), len);
	return 0;
}

static uint64_t put(struct img *im, const void *p, size_t len)
{
	uint64_t at = BASE + im->top;

	memcpy(im->b + im->top, p, len);
	im->top += (len + 7) & ~7ul;
	return at;
}

static uint64_t str(struct img *im, const char *s)
{
	return put(im, s, strlen(s) + 1);
}

static void set64(struct img *im, uint64_t addr, uint64_t v)
{
	memcpy(im->b + (addr - BASE), &v, 8);
}

struct sf {
	const char *type, *field;
	int is_static;
	uint64_t val; /* offset, or address for statics */
};

static const struct sf fields[] = {
    {"CodeCache", "_heaps", 1, 0x7000},
    {"CodeCache", "_low_bound", 1, 0x7008},
    {"CodeCache", "_high_bound", 1, 0x7010},
    {"AbstractInterpreter", "_code", 1, 0x7018},
    {"CodeHeap", "_memory", 0, 8},
    {"CodeHeap", "_segmap", 0, 120},
    {"CodeHeap", "_log2_segment_size", 0, 256},
    {"VirtualSpace", "_low_boundary", 0, 0},
    {"VirtualSpace", "_high_boundary", 0, 8},
    {"GrowableArrayBase", "_len", 0, 0},
    {"GrowableArray<int>", "_data", 0, 8},
    {"CodeBlob", "_name", 0, 96},
    {"CodeBlob", "_size", 0, 12},
    {"CodeBlob", "_frame_size", 0, 28},
    {"CodeBlob", "_frame_complete_offset", 0, 20},
    {"CodeBlob", "_code_begin", 0, 32},
    {"CompiledMethod", "_method", 0, 112},
    {"CompiledMethod", "_scopes_data_begin", 0, 120},
    {"nmethod", "_compile_id", 0, 304},
    {"nmethod", "_metadata_offset", 0, 260},
    {"nmethod", "_scopes_pcs_offset", 0, 268},
    {"nmethod", "_dependencies_offset", 0, 272},
    {"PcDesc", "_pc_offset", 0, 0},
    {"PcDesc", "_scope_decode_offset", 0, 4},
    {"Method", "_constMethod", 0, 8},
    {"ConstMethod", "_constants", 0, 8},
    {"ConstMethod", "_name_index", 0, 34},
    {"ConstMethod", "_signature_index", 0, 36},
    {"ConstMethod", "_code_size", 0, 32},
    {"ConstMethod", "_flags", 0, 28},
    {"ConstantPool", "_pool_holder", 0, 24},
    {"Klass", "_name", 0, 24},
    {"Symbol", "_length", 0, 4},
    {"Symbol", "_body", 0, 6},
    {"StubQueue", "_stub_buffer", 0, 8},
    {"StubQueue", "_buffer_limit", 0, 20},
    {"Unrelated", "_field", 0, 4},
};
static const struct {
	const char *name;
	uint64_t size;
} types[] = {{"HeapBlock", 16}, {"ConstMethod", 48}, {"ConstantPool", 72},
	     {"nmethod", 352},	{"PcDesc", 16},	     {"Other", 1}};
static const struct {
	const char *name;
	int32_t val;
} ints[] = {{"frame::interpreter_frame_sender_sp_offset", -1},
	    {"frame::interpreter_frame_last_sp_offset", -2},
	    {"ConstMethod::_has_linenumber_table", 1},
	    {"oopSize", 8}};

/* Lays the three tables out as libjvm.so does; skip: a field entry left out. */
static void build(struct img *im, uint64_t syms[JS_MAX], const char *skip, uint64_t stride)
{
	uint64_t e[7], ents, t[2], te, c[2], ce;
	size_t nf = sizeof(fields) / sizeof(fields[0]);

	memset(im, 0, sizeof(*im));
	im->top = 0;
	for (int i = 0; i < JS_MAX; i++)
		syms[i] = put(im, (uint64_t[]){0}, 8);
	/* struct entries: type 0, field 8, type string 16, static 24, offset 32, address 40 */
	ents = BASE + im->top;
	for (size_t i = 0; i <= nf; i++) {
		memset(e, 0, sizeof(e));
		if (i < nf && !(skip && !strcmp(skip, fields[i].field))) {
			e[0] = 0; /* filled below: strings go after the array */
		}
		im->top += stride;
	}
	for (size_t i = 0, k = 0; i < nf; i++) {
		uint64_t at = ents + k * stride;

		if (skip && !strcmp(skip, fields[i].field))
			continue;
		set64(im, at + 0, str(im, fields[i].type));
		set64(im, at + 8, str(im, fields[i].field));
		set64(im, at + 16, str(im, "int"));
		set64(im, at + 24, (uint64_t)fields[i].is_static);
		set64(im, at + (fields[i].is_static ? 40 : 32), fields[i].val);
		k++;
	}
	set64(im, syms[JS_STRUCTS], ents);
	set64(im, syms[JS_S_TYPE_NAME], 0);
	set64(im, syms[JS_S_FIELD_NAME], 8);
	set64(im, syms[JS_S_IS_STATIC], 24);
	set64(im, syms[JS_S_OFFSET], 32);
	set64(im, syms[JS_S_ADDRESS], 40);
	set64(im, syms[JS_S_STRIDE], stride);
	/* types: name 0, size 8, stride 16 */
	te = BASE + im->top;
	im->top += 16 * (sizeof(types) / sizeof(types[0]) + 1);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		t[0] = str(im, types[i].name);
		t[1] = types[i].size;
		memcpy(im->b + (te - BASE) + 16 * i, t, 16);
	}
	set64(im, syms[JS_TYPES], te);
	set64(im, syms[JS_T_TYPE_NAME], 0);
	set64(im, syms[JS_T_SIZE], 8);
	set64(im, syms[JS_T_STRIDE], 16);
	/* int constants: name 0, value 8, stride 16 */
	ce = BASE + im->top;
	im->top += 16 * (sizeof(ints) / sizeof(ints[0]) + 1);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		c[0] = str(im, ints[i].name);
		c[1] = (uint64_t)(uint32_t)ints[i].val;
		memcpy(im->b + (ce - BASE) + 16 * i, c, 16);
	}
	set64(im, syms[JS_INTS], ce);
	set64(im, syms[JS_I_NAME], 0);
	set64(im, syms[JS_I_VALUE], 8);
	set64(im, syms[JS_I_STRIDE], 16);
}

TEST(java_vmstructs_parsed)
{
	struct img *im = calloc(1, sizeof(*im));
	uint64_t syms[JS_MAX];
	struct jvm_reader r = {img_read, im};
	struct jvm_layout L;
	int err;

	CHECK(im);
	build(im, syms, NULL, 56);
	/* JAVA_SEED_OUT=FILE: the image seeds tests/fuzz/corpus/fuzz_vmstructs */
	if (getenv("JAVA_SEED_OUT")) {
		FILE *f = fopen(getenv("JAVA_SEED_OUT"), "wb");

		if (f) {
			fwrite(im->b, 1, im->top, f);
			fclose(f);
		}
	}
	err = jvm_parse_vmstructs(&r, syms, &L);
	CHECKF(err == 0, "err %d, missing %#llx", err, (unsigned long long)L.missing);
	CHECK(L.codecache_heaps == 0x7000 && L.interp_code == 0x7018);
	CHECK(L.heap_segmap == 120 && L.heap_log2_seg == 256 && L.vs_high == 8);
	CHECK(L.blob_frame_size == 28 && L.blob_size == 12 && L.nm_method == 112);
	CHECK(L.size_heap_block == 16 && L.size_nmethod == 352 && L.size_pcdesc == 16);
	CHECK(L.interp_sender_sp == -1 && L.interp_last_sp == -2 && L.has_linenumber_table == 1);
	/* a larger stride (a newer JDK adding a column) reads the same */
	build(im, syms, NULL, 64);
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == 0 && L.cm_code_size == 32);
cleanup:
	free(im);
}

TEST(java_vmstructs_missing_and_malformed)
{
	struct img *im = calloc(1, sizeof(*im));
	uint64_t syms[JS_MAX];
	struct jvm_reader r = {img_read, im};
	struct jvm_layout L;

	CHECK(im);
	/* a field the walk needs is absent: -ENOENT, and it is named in `missing` */
	build(im, syms, "_segmap", 56);
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == -ENOENT && L.missing != 0);
	/* a stride no entry layout has */
	build(im, syms, NULL, 56);
	set64(im, syms[JS_S_STRIDE], 1u << 20);
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == -EINVAL);
	/* an offset past the stride */
	build(im, syms, NULL, 56);
	set64(im, syms[JS_S_ADDRESS], 200);
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == -EINVAL);
	/* a table pointer into nowhere */
	build(im, syms, NULL, 56);
	set64(im, syms[JS_TYPES], 8);
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == -EIO);
	/* a symbol the process does not export */
	build(im, syms, NULL, 56);
	syms[JS_I_STRIDE] = 0;
	CHECK(jvm_parse_vmstructs(&r, syms, &L) == -ENOENT);
cleanup:
	free(im);
}

TEST(java_line_table)
{
	/* (bci 0, line 10) as an escape, then +4/+1, +3/+2, then an escape with a
	 * negative line delta (bci +100, line -5), then the end. */
	const uint8_t t[] = {0xff, 0, 20, (4 << 3) | 1, (3 << 3) | 2, 0xff, 200, 3, 9, 0};
	/* 200 >= 192: UNSIGNED5 continues: 200 + (3 << 6) = 392 = 2 * 196: bci +196 */

	CHECK(jvm_line_for_bci(t, sizeof(t), 0) == 10);
	CHECK(jvm_line_for_bci(t, sizeof(t), 3) == 10);
	CHECK(jvm_line_for_bci(t, sizeof(t), 4) == 11);
	CHECK(jvm_line_for_bci(t, sizeof(t), 6) == 11);
	CHECK(jvm_line_for_bci(t, sizeof(t), 7) == 13);
	CHECK(jvm_line_for_bci(t, sizeof(t), 7 + 196) == 8);
	CHECK(jvm_line_for_bci(t, 0, 3) == -1);
	/* truncated in an escape: what was read stands */
	CHECK(jvm_line_for_bci(t, 6, 7) == 13);
cleanup:;
}

TEST(java_scopes)
{
	/* PcDescs (pc, scope offset, 0, 0): pc 16 -> scope 1, pc 40 -> scope 6 */
	int32_t pcs[] = {-1, 0, 0, 0, 16, 1, 0, 0, 40, 6, 0, 0};
	/* scope at 1: sender 0, method 2, bci 5 + 1; at 6: sender 1, method 1, bci 7 + 1 */
	uint8_t scopes[] = {0, 0, 2, 6, 0, 0, 1, 1, 8, 0};
	uint64_t meta[] = {0xaaaa, 0xbbbb}, m[4];
	int64_t bci[4];

	/* a return address at 40: the inlined method first, then its caller */
	CHECK(jvm_scopes_at((uint8_t *)pcs, sizeof(pcs), 16, 0, 4, scopes, sizeof(scopes),
			    (uint8_t *)meta, sizeof(meta), 40, true, m, bci, 4) == 2);
	CHECK(m[0] == 0xaaaa && bci[0] == 7 && m[1] == 0xbbbb && bci[1] == 5);
	/* an interrupted pc takes the next PcDesc (after it: 16 is not at 16);
	 * exact lookups need the pc */
	CHECK(jvm_scopes_at((uint8_t *)pcs, sizeof(pcs), 16, 0, 4, scopes, sizeof(scopes),
			    (uint8_t *)meta, sizeof(meta), 16, false, m, bci, 4) == 2);
	CHECK(jvm_scopes_at((uint8_t *)pcs, sizeof(pcs), 16, 0, 4, scopes, sizeof(scopes),
			    (uint8_t *)meta, sizeof(meta), 10, false, m, bci, 4) == 1);
	CHECK(m[0] == 0xbbbb && bci[0] == 5);
	CHECK(jvm_scopes_at((uint8_t *)pcs, sizeof(pcs), 16, 0, 4, scopes, sizeof(scopes),
			    (uint8_t *)meta, sizeof(meta), 10, true, m, bci, 4) == 0);
	/* a method index past the metadata stops the chain */
	meta[1] = 0;
	CHECK(jvm_scopes_at((uint8_t *)pcs, sizeof(pcs), 16, 0, 4, scopes, sizeof(scopes),
			    (uint8_t *)meta, 8, 40, true, m, bci, 4) == 1);
cleanup:;
}

/* ---- the manager's names, on a fake JVM in this process's own memory ---- */

#include "java/java.h"
#include "runtime_abi.h"

#include <unistd.h>

struct fake_sym {
	uint32_t hash;
	uint16_t len;
	char body[32];
} __attribute__((packed));

static void fake_sym(struct fake_sym *s, const char *text)
{
	memset(s, 0, sizeof(*s));
	s->len = (uint16_t)strlen(text);
	memcpy(s->body, text, s->len);
}

/* A ConstMethod (48 bytes), 4 bytes of bytecodes, a line table: bci 0 line
 * 10, bci 2 line 11. */
struct fake_cm {
	uint64_t fingerprint;
	uint64_t constants; /* 8 */
	uint64_t pad16;
	uint32_t size;
	uint16_t flags; /* 28 */
	uint16_t pad30;
	uint16_t code_size;  /* 32 */
	uint16_t name_index; /* 34 */
	uint8_t pad36[12];
	uint8_t code[4];
	uint8_t lines[8];
} __attribute__((packed));

TEST(java_names_and_staleness)
{
	static struct fake_sym cls, m1, m2;
	static uint64_t klass[8], pool[16], method[4];
	static struct fake_cm cm1, cm2;
	struct java_mgr *m = NULL;
	struct jvm_layout L = {0};
	struct java_mgr_stats st;
	struct java_frame f[4];
	uint32_t pid = (uint32_t)getpid();
	uint64_t w1;

	fake_sym(&cls, "pkg/Outer$Inner");
	fake_sym(&m1, "run");
	fake_sym(&m2, "runRedefined");
	klass[3] = (uint64_t)(uintptr_t)&cls;	/* Klass::_name at 24 */
	pool[3] = (uint64_t)(uintptr_t)klass;	/* _pool_holder at 24 */
	pool[9 + 5] = (uint64_t)(uintptr_t)&m1; /* entry 5 after a 72-byte header */
	pool[9 + 6] = (uint64_t)(uintptr_t)&m2; /* entry 6 */
	cm1 = (struct fake_cm){.constants = (uint64_t)(uintptr_t)pool,
			       .flags = 1,
			       .code_size = 4,
			       .name_index = 5,
			       .lines = {0xff, 0, 20, (2 << 3) | 1, 0}};
	cm2 = cm1;
	cm2.name_index = 6;
	method[1] = (uint64_t)(uintptr_t)&cm1; /* Method::_constMethod at 8 */
	L.method_const = 8;
	L.cm_constants = 8;
	L.cm_name_index = 34;
	L.cm_code_size = 32;
	L.cm_flags = 28;
	L.cp_holder = 24;
	L.klass_name = 24;
	L.sym_length = 4;
	L.sym_body = 6;
	L.size_const_method = 48;
	L.size_constant_pool = 72;
	L.has_linenumber_table = 1;
	CHECK(java_mgr__new(-1, &m) == 0);
	CHECK(java_mgr__describe_for_test(m, pid, 7, &L, 0x1000, 0x2000) == 0);
	CHECK(java_mgr__in_code(m, pid, 7, 0x1800) && !java_mgr__in_code(m, pid, 7, 0x2000) &&
	      !java_mgr__in_code(m, pid, 8, 0x1800));
	/* an interpreted frame at bci 3: the class with dots, the line of bci 2 */
	w1 = HEARTH_RT_WORD1(HEARTH_RT_JAVA,
			     HEARTH_JAVA_POS(HEARTH_JAVA_INTERP, (uintptr_t)&cm1.code[3])) |
	     HEARTH_RT_FRAME_ENTRY;
	CHECK(java_mgr__resolve(m, pid, 7, (uintptr_t)method, w1, f, 4) == 1);
	CHECK_STREQ(f[0].name, "pkg.Outer$Inner.run");
	CHECK_STREQ(f[0].file, "pkg/Outer$Inner");
	CHECKF(f[0].line == 11, "line %lld", (long long)f[0].line);
	/* redefined: the Method now has another ConstMethod: read again, counted */
	method[1] = (uint64_t)(uintptr_t)&cm2;
	CHECK(java_mgr__resolve(m, pid, 7, (uintptr_t)method, w1, f, 4) == 1);
	CHECK_STREQ(f[0].name, "pkg.Outer$Inner.runRedefined");
	CHECK(f[0].line == 0); /* the bcp is not in the new bytecodes */
	java_mgr__stats(m, &st);
	CHECK(st.stale == 1 && st.methods == 1);
	/* unloaded: what it points to cannot be read: no name, never the old one */
	method[1] = 16;
	CHECK(java_mgr__resolve(m, pid, 7, (uintptr_t)method, w1, f, 4) == -EIO);
	java_mgr__stats(m, &st);
	CHECK(st.failed >= 1);
	/* another process start (pid reuse): not described */
	CHECK(java_mgr__resolve(m, pid, 8, (uintptr_t)method, w1, f, 4) == -ENOENT);
	/* a frame the walk could not tell */
	w1 = HEARTH_RT_WORD1(HEARTH_RT_JAVA, HEARTH_JAVA_POS(HEARTH_JAVA_UNKNOWN, 0x1800));
	CHECK(java_mgr__resolve(m, pid, 7, 0, w1, f, 4) == -EIO);
	/* after forget nothing is left */
	java_mgr__forget(m, pid, 0);
	CHECK(!java_mgr__in_code(m, pid, 7, 0x1800));
cleanup:
	java_mgr__free(m);
}
