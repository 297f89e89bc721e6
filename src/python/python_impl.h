/*
 * python internals: the steps of the manager (python.h), each usable alone so that
 * tests can check them against real interpreters: recognising a CPython process
 * (pyprobe.c), the per-version offsets (pyoffsets.c), glibc's thread-specific slot
 * (pytss.c), reading code objects and decoding line tables (pycode.c) and the
 * user-space reference walk of every thread's frames (pywalk.c).
 *
 * Address spaces: `addr` is an address in the target process; `vaddr` an ELF
 * virtual address of the CPython object; addr = vaddr + bias (py_target.bias).
 */
#ifndef HEARTH_PYTHON_IMPL_H
#define HEARTH_PYTHON_IMPL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/python.h"

/* Outcomes of a probe that are not an errno (python_strerror names them). */
#define PYTHON_E_NOT_PYTHON  4301 /* no CPython object (libpython, or _PyRuntime exported) */
#define PYTHON_E_UNSUPPORTED 4302 /* CPython, of a version with no offsets here */
#define PYTHON_E_NOT_READY   4303 /* CPython not initialised yet (no thread-state key) */
#define PYTHON_E_TSS_KEY     4304 /* its thread-state key is >= 32 (glibc's second level) */

/* What hearth reads of a process's memory at once, at most (bounds every read). */
#define PY_READ_MAX (64 * 1024)

/* Offsets (bytes) of one CPython minor version; PY_NO_OFF where it has no such field. */
#define PY_NO_OFF 0xffffffffu
struct py_offsets {
	uint32_t version; /* major << 16 | minor << 8 | micro */
	uint16_t layout;  /* enum hearth_py_layout */
	/* _PyRuntimeState */
	uint32_t rt_tss;	 /* Py_tss_t autoTSSkey {int _is_initialized; pthread_key_t _key} */
	uint32_t rt_interp_head; /* interpreters.head */
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head;
	/* PyThreadState */
	uint32_t ts_next, ts_thread_id, ts_native_thread_id;
	uint32_t ts_frame;     /* frame (3.10), cframe (3.11, 3.12), current_frame (3.13) */
	uint32_t cframe_frame; /* _PyCFrame.current_frame (3.11, 3.12) */
	/* frames: PyFrameObject (3.10), _PyInterpreterFrame (3.11+) */
	uint32_t f_previous, f_code, f_instr, f_owner, f_is_entry;
	/* PyCodeObject: co_code_adaptive from the table, the rest from PyCode_Type.tp_members */
	uint32_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
	uint32_t co_code_adaptive;
	/* objects */
	uint32_t ob_type;      /* PyObject.ob_type */
	uint32_t var_size;     /* PyVarObject.ob_size */
	uint32_t bytes_sval;   /* PyBytesObject.ob_sval */
	uint32_t ascii_size;   /* sizeof(PyASCIIObject): where an ASCII str's bytes start */
	uint32_t compact_size; /* sizeof(PyCompactUnicodeObject): a compact str's data */
	uint32_t str_length, str_state;
	uint32_t tp_members; /* PyTypeObject.tp_members */
};

/*
 * The built-in table for a version (major << 16 | minor << 8 | micro): 0 and *out
 * filled, or -PYTHON_E_UNSUPPORTED. Code object fields are the table's (tests compare
 * them with what the binary says); py_offsets_from_process replaces them.
 */
int py_offsets_for_version(uint32_t version, struct py_offsets *out);

/* A CPython object found in a process: what the probe learnt of it. */
struct py_target {
	uint32_t pid;
	uint32_t version;	       /* 0 when unknown */
	uint64_t bias;		       /* addr = vaddr + bias */
	uint64_t runtime;	       /* addr of _PyRuntime */
	uint64_t code_type;	       /* addr of PyCode_Type */
	uint64_t eval_start, eval_end; /* [start, end) of _PyEval_EvalFrameDefault, 0 if unknown */
	char path[PATH_MAX];	       /* the object as the maps name it */
	bool loading; /* the maps read had no libc yet: ld.so was still mapping libraries */
};

/*
 * Finds the CPython object of pid (a mapped libpython3.X.so*, else the executable when
 * it exports _PyRuntime and PyCode_Type), its symbols and version. 0, -ESRCH (no such
 * process), -PYTHON_E_NOT_PYTHON, -PYTHON_E_UNSUPPORTED (found, version unknown or
 * outside 3.10-3.13: *out still says what was found), other -errno.
 */
int py_probe_target(uint32_t pid, struct py_target *out);

/*
 * The offsets for t: the version's table, code fields from PyCode_Type's member table
 * read from the process, and (3.13) what _Py_DebugOffsets says. 0 or -errno
 * (-PYTHON_E_UNSUPPORTED, -EIO when the process cannot be read, -EPROTO when the
 * member table or the debug offsets are not what they should be).
 */
int py_offsets_from_process(const struct py_target *t, struct py_offsets *out);
/* 3.13: the fields _Py_DebugOffsets (at _PyRuntime) covers, written over o. 0, -EIO,
 * -EPROTO (no "xdebugpy" cookie, another version, or a value beyond reason),
 * -PYTHON_E_UNSUPPORTED (a free-threaded build). */
int py_offsets_debug313(const struct py_target *t, struct py_offsets *o);

/* Reads len bytes at addr of pid (process_vm_readv): 0, -EIO (short or unmapped),
 * -ESRCH (gone), -EPERM, -EINVAL (len above PY_READ_MAX). */
int py_read(uint32_t pid, uint64_t addr, void *buf, size_t len);

/*
 * glibc's pthread_getspecific slot of key (< 32) as an offset from the thread pointer
 * (pthread_self(), the fs base on x86-64): the word at tp + offset is the key's value.
 * Found once, in hearth's own threads (same glibc as the targets, see docs/python.md).
 * 0 or -errno (-PYTHON_E_TSS_KEY for key >= 32, -ENOTSUP when the layout is not found).
 */
int py_tss_offset(uint32_t key, uint64_t *offset);

/*
 * The struct hearth_py_proc of a probed process: tss slot of its interpreter's key and
 * the frame offsets. 0, -PYTHON_E_NOT_READY, -PYTHON_E_TSS_KEY, -EIO.
 */
int py_describe(const struct py_target *t, const struct py_offsets *o, uint64_t pstart,
		struct hearth_py_proc *out);

/* ---- code objects and line tables (pycode.c) ---- */

/*
 * The line of the instruction at byte offset `off` of the code (code units of 2 bytes)
 * from a line table: 3.10's co_linetable (byte-delta, line-delta pairs) or 3.11+'s
 * location table (Objects/locations.md). -1 when the table gives the instruction no
 * line or off is outside it.
 */
int64_t py_line_310(const uint8_t *table, size_t len, int64_t firstlineno, int64_t off);
int64_t py_line_311(const uint8_t *table, size_t len, int64_t firstlineno, int64_t off);

/*
 * Reads the str object at addr into UTF-8 (NUL-terminated, truncated to fit len).
 * 0, -EIO (unreadable), -EINVAL (not a compact str, or its length beyond reason).
 */
int py_read_str(uint32_t pid, const struct py_offsets *o, uint64_t addr, char *out, size_t len);

/* What a code object says of itself. */
struct py_code_info {
	char qualname[PYTHON_NAME_MAX]; /* co_qualname (3.11+), co_name (3.10) */
	char file[PYTHON_FILE_MAX];	/* co_filename */
	int64_t firstlineno;
	uint64_t checksum;  /* of the field words read: a reused address is noticed */
	uint8_t *linetable; /* malloc'd, the caller frees */
	size_t linetable_len;
};

/*
 * Reads the code object at code (checked to be one: its ob_type is code_type).
 * 0, -EIO (unreadable or not a code object), -ENOMEM. On success info->linetable
 * is the caller's to free (py_code_info__fini).
 */
int py_read_code(uint32_t pid, const struct py_offsets *o, uint64_t code_type, uint64_t code,
		 struct py_code_info *info);
void py_code_info__fini(struct py_code_info *info);
/* Only the checksum of the code object at code (cheap: one read). 0 or -EIO. */
int py_code_checksum(uint32_t pid, const struct py_offsets *o, uint64_t code, uint64_t *sum);
/* The current line of a frame of code at instr (the record's second word; its
 * meaning per version: docs/python.md), firstlineno when the table says none. */
int64_t py_code_line(const struct py_offsets *o, const struct py_code_info *info, uint64_t code,
		     uint64_t instr);
/* "module.qualname" from the file name: base name without .py, the package
 * directory's name for __init__.py. */
void py_frame_name(const char *file, const char *qualname, char *out, size_t len);

/* ---- the reference walk (pywalk.c) ---- */

struct py_walk_frame {
	uint64_t code;	/* code object address */
	uint64_t instr; /* as the BPF walk records it (without HEARTH_PY_FRAME_ENTRY) */
	bool entry;	/* outermost frame of one _PyEval_EvalFrameDefault call */
};

struct py_walk_thread {
	uint64_t tstate;	   /* PyThreadState address */
	uint64_t thread_id;	   /* pthread_self() of the thread (threading.get_ident()) */
	uint64_t native_thread_id; /* its tid, 0 where the version does not keep it (3.10) */
	size_t n_frames;
	struct py_walk_frame frames[HEARTH_PY_MAX_FRAMES]; /* leaf first */
};

/*
 * Walks every thread of the first interpreter of a probed process, the way the BPF
 * program does (same offsets, same stops), into threads (up to max). Number of threads
 * or -errno (-PYTHON_E_NOT_READY, -EIO).
 */
int py_walk(const struct py_target *t, const struct py_offsets *o, struct py_walk_thread *threads,
	    size_t max);

#endif /* HEARTH_PYTHON_IMPL_H */
