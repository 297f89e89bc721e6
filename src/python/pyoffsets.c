/*
 * pyoffsets: where the fields the walk and the symbolizer read lie in each CPython
 * minor version, and the struct hearth_py_proc published for a process.
 *
 * The binary says what it can: PyCode_Type.tp_members (PyMemberDef {name, type,
 * offset, flags, doc}, read from the live process, relocated) gives the code object
 * fields, and 3.13's _Py_DebugOffsets (the first bytes of _PyRuntime, cookie
 * "xdebugpy") gives thread, frame and code offsets. The table below keeps the rest;
 * every value is offsetof() compiled against that release's headers with
 * -DPy_BUILD_CORE (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
 * pycore_code.h, cpython/pystate.h, cpython/frameobject.h, cpython/unicodeobject.h,
 * cpython/code.h) of 3.10.13, 3.11.7, 3.12.1, 3.13.0, x86-64; the tests check them
 * against real interpreters of those versions and Debian's 3.11.2. CPython keeps these
 * layouts within a minor version (patch releases do not change them).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "python/python_impl.h"

#define NO PY_NO_OFF

static const struct py_offsets py_table[] = {
    {
	/* 3.10: Include/internal/pycore_runtime.h (gilstate.autoTSSkey,
	 * interpreters.head), pycore_interp.h (tstate_head), cpython/pystate.h
	 * (frame, thread_id), cpython/frameobject.h (f_back, f_code, f_lasti) */
	.version = 0x030a00,
	.layout = HEARTH_PY_LAYOUT_310,
	.rt_tss = 584,
	.rt_interp_head = 32,
	.is_next = 0,
	.is_threads_head = 8,
	.ts_next = 8,
	.ts_thread_id = 176,
	.ts_native_thread_id = NO,
	.ts_frame = 24,
	.cframe_frame = NO,
	.f_previous = 24,
	.f_code = 32,
	.f_instr = 96,
	.f_owner = NO,
	.f_is_entry = NO,
	.co_filename = 104,
	.co_name = 112,
	.co_qualname = NO,
	.co_firstlineno = 40,
	.co_linetable = 120,
	.co_code_adaptive = NO,
	.ascii_size = 48,
	.compact_size = 72,
    },
    {
	/* 3.11: pycore_runtime.h (gilstate.autoTSSkey), pycore_interp.h
	 * (threads.head), cpython/pystate.h (cframe, thread_id, native_thread_id),
	 * pycore_frame.h (_PyInterpreterFrame), cpython/code.h (co_code_adaptive) */
	.version = 0x030b00,
	.layout = HEARTH_PY_LAYOUT_311,
	.rt_tss = 592,
	.rt_interp_head = 40,
	.is_next = 0,
	.is_threads_head = 16,
	.ts_next = 8,
	.ts_thread_id = 152,
	.ts_native_thread_id = 160,
	.ts_frame = 56,
	.cframe_frame = 8,
	.f_previous = 48,
	.f_code = 32,
	.f_instr = 56,
	.f_owner = 69,
	.f_is_entry = 68,
	.co_filename = 112,
	.co_name = 120,
	.co_qualname = 128,
	.co_firstlineno = 72,
	.co_linetable = 136,
	.co_code_adaptive = 184,
	.ascii_size = 48,
	.compact_size = 72,
    },
    {
	/* 3.12: pycore_runtime.h (autoTSSkey moved out of gilstate), pycore_interp.h,
	 * cpython/pystate.h, pycore_frame.h (f_code first, no is_entry),
	 * cpython/code.h; unicodeobject.h (wstr gone: smaller str headers) */
	.version = 0x030c00,
	.layout = HEARTH_PY_LAYOUT_312,
	.rt_tss = 1544,
	.rt_interp_head = 40,
	.is_next = 0,
	.is_threads_head = 72,
	.ts_next = 8,
	.ts_thread_id = 136,
	.ts_native_thread_id = 144,
	.ts_frame = 56,
	.cframe_frame = 0,
	.f_previous = 8,
	.f_code = 0,
	.f_instr = 56,
	.f_owner = 70,
	.f_is_entry = NO,
	.co_filename = 112,
	.co_name = 120,
	.co_qualname = 128,
	.co_firstlineno = 68,
	.co_linetable = 136,
	.co_code_adaptive = 192,
	.ascii_size = 40,
	.compact_size = 56,
    },
    {
	/* 3.13: pycore_runtime.h (autoTSSkey; _Py_DebugOffsets covers the rest and
	 * replaces these at probe time), cpython/pystate.h (current_frame),
	 * pycore_frame.h (f_executable, instr_ptr) */
	.version = 0x030d00,
	.layout = HEARTH_PY_LAYOUT_313,
	.rt_tss = 2160,
	.rt_interp_head = 632,
	.is_next = 7264,
	.is_threads_head = 7344,
	.ts_next = 8,
	.ts_thread_id = 152,
	.ts_native_thread_id = 160,
	.ts_frame = 72,
	.cframe_frame = NO,
	.f_previous = 8,
	.f_code = 0,
	.f_instr = 56,
	.f_owner = 70,
	.f_is_entry = NO,
	.co_filename = 112,
	.co_name = 120,
	.co_qualname = 128,
	.co_firstlineno = 68,
	.co_linetable = 136,
	.co_code_adaptive = 200,
	.ascii_size = 40,
	.compact_size = 56,
    },
};

int py_offsets_for_version(uint32_t version, struct py_offsets *out)
{
	for (size_t i = 0; i < sizeof(py_table) / sizeof(py_table[0]); i++) {
		if ((py_table[i].version >> 8) != (version >> 8))
			continue;
		*out = py_table[i];
		out->version = version;
		/* the same in every version: Include/object.h, cpython/bytesobject.h,
		 * cpython/unicodeobject.h (length, state), cpython/object.h (tp_members) */
		out->ob_type = 8;
		out->var_size = 16;
		out->bytes_sval = 32;
		out->str_length = 16;
		out->str_state = 32;
		out->tp_members = 240;
		return 0;
	}
	return -PYTHON_E_UNSUPPORTED;
}

/* One PyMemberDef as laid out on x86-64 (Include/descrobject.h, structmember.h). */
struct py_memberdef {
	uint64_t name;
	int32_t type;
	int32_t pad;
	int64_t offset;
	int32_t flags;
	int32_t pad2;
	uint64_t doc;
};
_Static_assert(sizeof(struct py_memberdef) == 40, "PyMemberDef");

#define PY_MAX_MEMBERS 64

/* Code object offsets from PyCode_Type.tp_members: the binary's own answer. */
static int offsets_from_members(const struct py_target *t, struct py_offsets *o)
{
	struct py_memberdef defs[PY_MAX_MEMBERS];
	uint64_t members;
	int err, found = 0;

	err = py_read(t->pid, t->code_type + o->tp_members, &members, sizeof(members));
	if (err)
		return err;
	if (!members)
		return -EPROTO;
	/* the array ends with a NULL name; read what can be, then stop at it */
	err = py_read(t->pid, members, defs, sizeof(defs));
	if (err)
		err = py_read(t->pid, members, defs, 16 * sizeof(defs[0]));
	if (err)
		return err;
	for (size_t i = 0; i < PY_MAX_MEMBERS && defs[i].name; i++) {
		char name[24] = "";
		uint32_t *field = NULL;

		if (defs[i].offset < 0 || defs[i].offset > 4096 ||
		    py_read(t->pid, defs[i].name, name, sizeof(name) - 1))
			continue;
		if (strcmp(name, "co_filename") == 0)
			field = &o->co_filename;
		else if (strcmp(name, "co_name") == 0)
			field = &o->co_name;
		else if (strcmp(name, "co_qualname") == 0)
			field = &o->co_qualname;
		else if (strcmp(name, "co_firstlineno") == 0)
			field = &o->co_firstlineno;
		else if (strcmp(name, "co_linetable") == 0)
			field = &o->co_linetable;
		if (field) {
			*field = (uint32_t)defs[i].offset;
			found++;
		}
	}
	/* filename, name, firstlineno, linetable; qualname too from 3.11 */
	return found >= (o->layout == HEARTH_PY_LAYOUT_310 ? 4 : 5) ? 0 : -EPROTO;
}

/* Word indices in 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h of
 * 3.13.0: a uint64_t per field, sections in this order). */
enum {
	DBG_COOKIE = 0,
	DBG_VERSION = 1,
	DBG_FREE_THREADED = 2,
	DBG_RT_INTERP_HEAD = 5,
	DBG_IS_NEXT = 8,
	DBG_IS_THREADS_HEAD = 9,
	DBG_TS_NEXT = 21,
	DBG_TS_CURRENT_FRAME = 23,
	DBG_TS_THREAD_ID = 24,
	DBG_TS_NATIVE_THREAD_ID = 25,
	DBG_F_PREVIOUS = 29,
	DBG_F_EXECUTABLE = 30,
	DBG_F_INSTR_PTR = 31,
	DBG_F_OWNER = 33,
	DBG_CO_FILENAME = 35,
	DBG_CO_NAME = 36,
	DBG_CO_QUALNAME = 37,
	DBG_CO_LINETABLE = 38,
	DBG_CO_FIRSTLINENO = 39,
	DBG_CO_CODE_ADAPTIVE = 43,
	DBG_OB_TYPE = 45,
	DBG_BYTES_OB_SIZE = 65,
	DBG_BYTES_OB_SVAL = 66,
	DBG_STR_STATE = 68,
	DBG_STR_LENGTH = 69,
	DBG_STR_ASCII_SIZE = 70,
	DBG_WORDS = 71,
};

int py_offsets_debug313(const struct py_target *t, struct py_offsets *o)
{
	static const struct {
		int word;
		size_t field; /* offsetof(struct py_offsets, ...) */
	} map[] = {
	    {DBG_RT_INTERP_HEAD, offsetof(struct py_offsets, rt_interp_head)},
	    {DBG_IS_NEXT, offsetof(struct py_offsets, is_next)},
	    {DBG_IS_THREADS_HEAD, offsetof(struct py_offsets, is_threads_head)},
	    {DBG_TS_NEXT, offsetof(struct py_offsets, ts_next)},
	    {DBG_TS_CURRENT_FRAME, offsetof(struct py_offsets, ts_frame)},
	    {DBG_TS_THREAD_ID, offsetof(struct py_offsets, ts_thread_id)},
	    {DBG_TS_NATIVE_THREAD_ID, offsetof(struct py_offsets, ts_native_thread_id)},
	    {DBG_F_PREVIOUS, offsetof(struct py_offsets, f_previous)},
	    {DBG_F_EXECUTABLE, offsetof(struct py_offsets, f_code)},
	    {DBG_F_INSTR_PTR, offsetof(struct py_offsets, f_instr)},
	    {DBG_F_OWNER, offsetof(struct py_offsets, f_owner)},
	    {DBG_CO_FILENAME, offsetof(struct py_offsets, co_filename)},
	    {DBG_CO_NAME, offsetof(struct py_offsets, co_name)},
	    {DBG_CO_QUALNAME, offsetof(struct py_offsets, co_qualname)},
	    {DBG_CO_LINETABLE, offsetof(struct py_offsets, co_linetable)},
	    {DBG_CO_FIRSTLINENO, offsetof(struct py_offsets, co_firstlineno)},
	    {DBG_CO_CODE_ADAPTIVE, offsetof(struct py_offsets, co_code_adaptive)},
	    {DBG_OB_TYPE, offsetof(struct py_offsets, ob_type)},
	    {DBG_BYTES_OB_SIZE, offsetof(struct py_offsets, var_size)},
	    {DBG_BYTES_OB_SVAL, offsetof(struct py_offsets, bytes_sval)},
	    {DBG_STR_STATE, offsetof(struct py_offsets, str_state)},
	    {DBG_STR_LENGTH, offsetof(struct py_offsets, str_length)},
	    {DBG_STR_ASCII_SIZE, offsetof(struct py_offsets, ascii_size)},
	};
	uint64_t w[DBG_WORDS];
	int err;

	err = py_read(t->pid, t->runtime, w, sizeof(w));
	if (err)
		return err;
	if (memcmp(&w[DBG_COOKIE], "xdebugpy", 8) != 0 || (w[DBG_VERSION] >> 16) != 0x030d)
		return -EPROTO;
	if (w[DBG_FREE_THREADED])
		return -PYTHON_E_UNSUPPORTED; /* 3.13t: other object and frame layouts */
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (w[map[i].word] > 65535)
			return -EPROTO; /* no field of these structs is that far in */
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		*(uint32_t *)((char *)o + map[i].field) = (uint32_t)w[map[i].word];
	/* the compact (non-ASCII) header: PyCompactUnicodeObject adds utf8_length and
	 * utf8 (two words) to PyASCIIObject */
	o->compact_size = o->ascii_size + 16;
	return 0;
}

int py_offsets_from_process(const struct py_target *t, struct py_offsets *out)
{
	int err;

	err = py_offsets_for_version(t->version, out);
	if (err)
		return err;
	if (out->layout == HEARTH_PY_LAYOUT_313) {
		err = py_offsets_debug313(t, out);
		if (err)
			return err;
	}
	err = offsets_from_members(t, out);
	if (err)
		return err;
	/* the BPF program reads HEARTH_PY_FRAME_READ bytes of a frame at once */
	if (out->f_previous >= HEARTH_PY_FRAME_READ - 8 ||
	    out->f_code >= HEARTH_PY_FRAME_READ - 8 || out->f_instr >= HEARTH_PY_FRAME_READ - 8 ||
	    (out->f_owner != NO && out->f_owner >= HEARTH_PY_FRAME_READ))
		return -EPROTO;
	return 0;
}

static uint16_t off16(uint32_t off)
{
	return off == NO ? HEARTH_PY_NO_OFFSET : (uint16_t)off;
}

int py_describe(const struct py_target *t, const struct py_offsets *o, uint64_t pstart,
		struct hearth_py_proc *out)
{
	struct {
		int32_t initialized;
		uint32_t key;
	} tss;
	uint64_t interp = 0, slot;
	int err;

	memset(out, 0, sizeof(*out));
	err = py_read(t->pid, t->runtime + o->rt_tss, &tss, sizeof(tss));
	if (!err)
		err = py_read(t->pid, t->runtime + o->rt_interp_head, &interp, sizeof(interp));
	if (err)
		return err;
	/* Py_Initialize creates the key, then the main interpreter */
	if (!tss.initialized || !interp)
		return -PYTHON_E_NOT_READY;
	err = py_tss_offset(tss.key, &slot);
	if (err)
		return err;
	out->pstart = pstart;
	out->tss_slot = slot;
	out->code_type = t->code_type;
	out->version = t->version;
	out->layout = o->layout;
	out->ts_frame = off16(o->ts_frame);
	out->cframe_frame = off16(o->cframe_frame);
	out->f_previous = off16(o->f_previous);
	out->f_code = off16(o->f_code);
	out->f_instr = off16(o->f_instr);
	out->f_owner = off16(o->f_owner);
	out->f_is_entry = off16(o->f_is_entry);
	out->ob_type = off16(o->ob_type);
	return 0;
}
