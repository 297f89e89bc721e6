/*
 * pycode: names a Python frame from its code object, read out of the process.
 *
 * A code object gives co_qualname (3.11+; co_name in 3.10), co_filename,
 * co_firstlineno and a line table; the frame's current line comes from decoding the
 * table at the frame's instruction offset:
 *   3.10  co_linetable: (byte delta, signed line delta) pairs, -128 = no line
 *         (Objects/lnotab_notes.txt of 3.10); the frame gives f_lasti, an index of
 *         2-byte code units: byte offset = 2 * f_lasti.
 *   3.11+ co_linetable: the location table (Objects/locations.md): entries of a
 *         header byte (bit 7 set, code in bits 3-6, length - 1 in code units in bits
 *         0-2) and varint payloads; the frame gives a pointer to the instruction:
 *         byte offset = instr - (code + offsetof(PyCodeObject, co_code_adaptive)).
 * Everything read is outside input: lengths are bounded, tables decoded with checks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "python/python_impl.h"

#define PY_STR_MAX   4096 /* characters of a str read at most */
#define PY_TABLE_MAX PY_READ_MAX

int64_t py_line_310(const uint8_t *t, size_t len, int64_t firstlineno, int64_t off)
{
	int64_t line = firstlineno, end = 0;

	for (size_t p = 0; p + 1 < len; p += 2) {
		int64_t start = end, cur;
		int8_t ldelta = (int8_t)t[p + 1];

		end += t[p];
		if (ldelta == -128) {
			cur = -1;
		} else {
			line += ldelta;
			cur = line;
		}
		if (off >= start && off < end)
			return cur;
	}
	return -1;
}

/* An unsigned varint of the location table: 6 bits a byte, bit 6 = more follow. */
static bool read_varint(const uint8_t *t, size_t len, size_t *p, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (*p >= len || shift > 60)
			return false;
		b = t[(*p)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return true;
}

static bool read_svarint(const uint8_t *t, size_t len, size_t *p, int64_t *out)
{
	uint64_t u;

	/* a line delta beyond an int's range is corrupt (and would overflow the sum) */
	if (!read_varint(t, len, p, &u) || u > 2 * (uint64_t)UINT32_MAX + 1)
		return false;
	*out = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

int64_t py_line_311(const uint8_t *t, size_t len, int64_t firstlineno, int64_t off)
{
	int64_t line = firstlineno, unit = off / 2, addr = 0;
	size_t p = 0;

	if (off < 0)
		return -1;
	while (p < len) {
		uint8_t h = t[p++];
		int code = (h >> 3) & 15;
		int64_t delta = 0, n = (h & 7) + 1;
		uint64_t skip;
		bool has = true;

		if (!(h & 0x80))
			return -1; /* not an entry's first byte: a corrupt table */
		if (code == 15) {  /* no location */
			has = false;
		} else if (code == 14) { /* long form: line, end line, column, end column */
			if (!read_svarint(t, len, &p, &delta) || !read_varint(t, len, &p, &skip) ||
			    !read_varint(t, len, &p, &skip) || !read_varint(t, len, &p, &skip))
				return -1;
		} else if (code == 13) { /* no column: line delta only */
			if (!read_svarint(t, len, &p, &delta))
				return -1;
		} else if (code >= 10) { /* one line form: delta = code - 10, two columns */
			delta = code - 10;
			p += 2;
		} else { /* short form: same line, one column byte */
			p += 1;
		}
		line += delta;
		if (line > INT32_MAX || line < INT32_MIN)
			return -1; /* co_firstlineno is an int: a corrupt table */
		if (unit >= addr && unit < addr + n)
			return has ? line : -1;
		addr += n;
	}
	return -1;
}

/* Appends code point c as UTF-8 to out (room for len bytes with the NUL). */
static size_t put_utf8(char *out, size_t at, size_t len, uint32_t c)
{
	uint8_t b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (uint8_t)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (uint8_t)(0xc0 | c >> 6);
		b[1] = (uint8_t)(0x80 | (c & 63));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (uint8_t)(0xe0 | c >> 12);
		b[1] = (uint8_t)(0x80 | ((c >> 6) & 63));
		b[2] = (uint8_t)(0x80 | (c & 63));
		n = 3;
	} else if (c < 0x110000) {
		b[0] = (uint8_t)(0xf0 | c >> 18);
		b[1] = (uint8_t)(0x80 | ((c >> 12) & 63));
		b[2] = (uint8_t)(0x80 | ((c >> 6) & 63));
		b[3] = (uint8_t)(0x80 | (c & 63));
		n = 4;
	} else {
		b[0] = '?';
		n = 1;
	}
	if (at + n >= len)
		return at; /* no room: truncated at a character boundary */
	memcpy(out + at, b, n);
	return at + n;
}

int py_read_str(uint32_t pid, const struct py_offsets *o, uint64_t addr, char *out, size_t len)
{
	uint8_t hdr[128], *data = NULL;
	uint32_t state, kind;
	int64_t n;
	size_t at = 0;
	int err;

	if (len == 0)
		return -EINVAL;
	out[0] = '\0';
	if (o->compact_size > sizeof(hdr))
		return -EINVAL;
	err = py_read(pid, addr, hdr, o->compact_size);
	if (err)
		return err;
	memcpy(&n, hdr + o->str_length, sizeof(n));
	memcpy(&state, hdr + o->str_state, sizeof(state));
	/* state: interned:2, kind:3, compact:1, ascii:1 (cpython/unicodeobject.h) */
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || n < 0 || n > PY_STR_MAX)
		return -EINVAL;
	if ((state >> 6) & 1) { /* compact ASCII: the bytes follow PyASCIIObject */
		size_t take = (size_t)n < len - 1 ? (size_t)n : len - 1;

		err = py_read(pid, addr + o->ascii_size, out, take);
		out[err ? 0 : take] = '\0';
		return err;
	}
	data = malloc((size_t)n * kind + 1);
	if (!data)
		return -ENOMEM;
	err = py_read(pid, addr + o->compact_size, data, (size_t)n * kind);
	if (err)
		goto cleanup;
	for (int64_t i = 0; i < n; i++) {
		uint32_t c;

		if (kind == 1) {
			c = data[i]; /* latin-1 */
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		at = put_utf8(out, at, len, c);
	}
	out[at] = '\0';
cleanup:
	free(data);
	return err;
}

/* Words of the code object read to check it and find its fields. */
#define PY_CODE_HEAD 256

static int read_head(uint32_t pid, const struct py_offsets *o, uint64_t code, uint8_t *head,
		     uint64_t *sum)
{
	uint32_t fields[] = {o->co_filename, o->co_name, o->co_qualname, o->co_linetable};
	int32_t firstlineno;
	int err;

	err = py_read(pid, code, head, PY_CODE_HEAD);
	if (err)
		return err;
	memcpy(&firstlineno, head + o->co_firstlineno, sizeof(firstlineno));
	*sum = base_hash_bytes(0x9e3779b97f4a7c15ull, &firstlineno, sizeof(firstlineno));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] != PY_NO_OFF)
			*sum = base_hash_bytes(*sum, head + fields[i], 8);
	return 0;
}

static uint64_t word_at(const uint8_t *head, uint32_t off)
{
	uint64_t w;

	memcpy(&w, head + off, 8);
	return w;
}

int py_code_checksum(uint32_t pid, const struct py_offsets *o, uint64_t code, uint64_t *sum)
{
	uint8_t head[PY_CODE_HEAD];

	return read_head(pid, o, code, head, sum) ? -EIO : 0;
}

/* The bytes object at addr (bounded), malloc'd into *out. */
static int read_bytes(uint32_t pid, const struct py_offsets *o, uint64_t addr, uint8_t **out,
		      size_t *len)
{
	int64_t n;
	int err;

	*out = NULL;
	*len = 0;
	err = py_read(pid, addr + o->var_size, &n, sizeof(n));
	if (err)
		return err;
	if (n < 0 || n > PY_TABLE_MAX)
		return -EIO;
	*out = malloc((size_t)n + 1);
	if (!*out)
		return -ENOMEM;
	err = py_read(pid, addr + o->bytes_sval, *out, (size_t)n);
	if (err) {
		free(*out);
		*out = NULL;
		return err;
	}
	*len = (size_t)n;
	return 0;
}

int py_read_code(uint32_t pid, const struct py_offsets *o, uint64_t code_type, uint64_t code,
		 struct py_code_info *info)
{
	uint8_t head[PY_CODE_HEAD];
	uint32_t name_off = o->co_qualname != PY_NO_OFF ? o->co_qualname : o->co_name;
	int32_t firstlineno;
	int err;

	memset(info, 0, sizeof(*info));
	if (o->co_filename + 8 > PY_CODE_HEAD || name_off + 8 > PY_CODE_HEAD ||
	    o->co_linetable + 8 > PY_CODE_HEAD || o->co_firstlineno + 4 > PY_CODE_HEAD)
		return -EINVAL;
	err = read_head(pid, o, code, head, &info->checksum);
	if (err || word_at(head, o->ob_type) != code_type) {
		err = -EIO; /* unreadable, or not a code object */
		goto cleanup;
	}
	memcpy(&firstlineno, head + o->co_firstlineno, sizeof(firstlineno));
	info->firstlineno = firstlineno;
	err = py_read_str(pid, o, word_at(head, name_off), info->qualname, sizeof(info->qualname));
	if (!err)
		err = py_read_str(pid, o, word_at(head, o->co_filename), info->file,
				  sizeof(info->file));
	if (!err)
		err = read_bytes(pid, o, word_at(head, o->co_linetable), &info->linetable,
				 &info->linetable_len);
	if (err == -ENOMEM)
		goto cleanup;
	if (err)
		err = -EIO; /* a field that is not what a code object holds */
cleanup:
	if (err)
		py_code_info__fini(info);
	return err;
}

void py_code_info__fini(struct py_code_info *info)
{
	free(info->linetable);
	info->linetable = NULL;
	info->linetable_len = 0;
}

int64_t py_code_line(const struct py_offsets *o, const struct py_code_info *info, uint64_t code,
		     uint64_t instr)
{
	int64_t line;

	if (o->layout == HEARTH_PY_LAYOUT_310) {
		int32_t lasti = (int32_t)(uint32_t)instr; /* f_lasti, an int; -1 before the first */

		line = lasti < 0 ? -1
				 : py_line_310(info->linetable, info->linetable_len,
					       info->firstlineno, 2 * (int64_t)lasti);
	} else {
		/* instr points at the current instruction (prev_instr, instr_ptr); before
		 * the first one (3.11: prev_instr = first - 1) the offset is negative */
		int64_t off = (int64_t)(instr - (code + o->co_code_adaptive));

		line = off < 0 ? -1
			       : py_line_311(info->linetable, info->linetable_len,
					     info->firstlineno, off);
	}
	return line >= 0 ? line : info->firstlineno;
}

void py_frame_name(const char *file, const char *qualname, char *out, size_t len)
{
	const char *base = strrchr(file, '/'), *dir = file;
	size_t blen;

	base = base ? base + 1 : file;
	blen = strlen(base);
	if (blen > 3 && strcmp(base + blen - 3, ".py") == 0)
		blen -= 3;
	if (blen == 8 && strncmp(base, "__init__", 8) == 0 && base > file + 1) {
		/* a package: name it by its directory */
		const char *end = base - 1, *p = end;

		while (p > file && p[-1] != '/')
			p--;
		dir = p;
		snprintf(out, len, "%.*s.%s", (int)(end - dir), dir, qualname);
		return;
	}
	if (blen == 0)
		snprintf(out, len, "%s", qualname);
	else
		snprintf(out, len, "%.*s.%s", (int)blen, base, qualname);
}
