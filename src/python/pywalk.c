/*
 * pywalk: the reference walk of a CPython process's threads and frames, from user
 * space, with the offsets the BPF program gets (struct hearth_py_proc) and the same
 * rules: a frame whose code is not a code object ends the walk; 3.12+'s frames owned
 * by the C stack are shims (not recorded) marking the outermost frame of one
 * _PyEval_EvalFrameDefault call; at most HEARTH_PY_MAX_FRAMES frames. Tests compare
 * it with what the interpreter says of itself; docs/python.md describes the chain:
 *
 *   _PyRuntime.interpreters.head -> PyInterpreterState.threads.head
 *     -> PyThreadState (next ...) -> frame (3.10) | cframe->current_frame (3.11, 3.12)
 *        | current_frame (3.13) -> frame.previous (f_back in 3.10) -> ...
 */
#include <errno.h>
#include <string.h>

#include "python/python_impl.h"

#define PY_WALK_MAX_THREADS 4096

static uint64_t word(const uint8_t *buf, uint32_t off)
{
	uint64_t w;

	memcpy(&w, buf + off, 8);
	return w;
}

static int read_word(uint32_t pid, uint64_t addr, uint64_t *w)
{
	return py_read(pid, addr, w, sizeof(*w));
}

/* The thread's innermost frame: 0 when it runs no Python code now. */
static int first_frame(uint32_t pid, const struct py_offsets *o, uint64_t ts, uint64_t *frame)
{
	uint64_t cframe;
	int err;

	*frame = 0;
	if (o->layout != HEARTH_PY_LAYOUT_311 && o->layout != HEARTH_PY_LAYOUT_312)
		return read_word(pid, ts + o->ts_frame, frame);
	err = read_word(pid, ts + o->ts_frame, &cframe);
	if (err || !cframe)
		return err;
	return read_word(pid, cframe + o->cframe_frame, frame);
}

static int walk_frames(const struct py_target *t, const struct py_offsets *o, uint64_t frame,
		       struct py_walk_thread *th)
{
	uint8_t f[HEARTH_PY_FRAME_READ];

	th->n_frames = 0;
	for (size_t i = 0; frame && i < 4 * HEARTH_PY_MAX_FRAMES; i++) {
		struct py_walk_frame *out;
		uint64_t code, type;

		if (py_read(t->pid, frame, f, sizeof(f)))
			return -EIO;
		frame = word(f, o->f_previous);
		if (o->f_owner != PY_NO_OFF && f[o->f_owner] == HEARTH_PY_OWNED_BY_CSTACK) {
			/* a shim below the outermost frame of one evaluation loop call */
			if (th->n_frames)
				th->frames[th->n_frames - 1].entry = true;
			continue;
		}
		code = word(f, o->f_code);
		if (read_word(t->pid, code + o->ob_type, &type) || type != t->code_type)
			break; /* not a code object: the walk stops, as in BPF */
		if (th->n_frames == HEARTH_PY_MAX_FRAMES)
			break;
		out = &th->frames[th->n_frames++];
		out->code = code;
		if (o->layout == HEARTH_PY_LAYOUT_310) {
			uint32_t lasti;

			memcpy(&lasti, f + o->f_instr, sizeof(lasti));
			out->instr = lasti;
			out->entry = true; /* every 3.10 frame has its own evaluation call */
		} else {
			out->instr = word(f, o->f_instr);
			out->entry = o->f_is_entry != PY_NO_OFF && f[o->f_is_entry];
		}
	}
	if (th->n_frames)
		th->frames[th->n_frames - 1].entry = true; /* the first call of them all */
	return 0;
}

int py_walk(const struct py_target *t, const struct py_offsets *o, struct py_walk_thread *threads,
	    size_t max)
{
	uint64_t interp, ts;
	size_t n = 0;
	int err;

	err = read_word(t->pid, t->runtime + o->rt_interp_head, &interp);
	if (err)
		return err;
	if (!interp)
		return -PYTHON_E_NOT_READY;
	err = read_word(t->pid, interp + o->is_threads_head, &ts);
	for (size_t i = 0; !err && ts && n < max && i < PY_WALK_MAX_THREADS; i++) {
		struct py_walk_thread *th = &threads[n];
		uint64_t frame;

		memset(th, 0, sizeof(*th));
		th->tstate = ts;
		err = read_word(t->pid, ts + o->ts_thread_id, &th->thread_id);
		if (!err && o->ts_native_thread_id != PY_NO_OFF)
			err = read_word(t->pid, ts + o->ts_native_thread_id, &th->native_thread_id);
		if (!err)
			err = first_frame(t->pid, o, ts, &frame);
		if (!err)
			err = walk_frames(t, o, frame, th);
		if (!err)
			err = read_word(t->pid, ts + o->ts_next, &ts);
		n++;
	}
	return err ? err : (int)n;
}
