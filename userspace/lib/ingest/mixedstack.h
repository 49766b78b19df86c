/* mixedstack: put Python frames where they ran.  Each native
 * _PyEval_EvalFrameDefault frame is replaced by the Python frames that
 * eval call ran, so C code called from Python shows between its Python
 * caller and any Python it calls back, and the native frames below the
 * interpreter (main, Py_RunMain) keep their place. */
#ifndef PROFD_MIXEDSTACK_H
#define PROFD_MIXEDSTACK_H

#include <stdbool.h>
#include <stdint.h>

struct mixed_in {
	const uint32_t *native; /* frame ids, root first */
	const bool *is_eval;	/* native[i] is an eval-loop frame */
	uint32_t nnative;
	const uint32_t *py;   /* frame ids, root first */
	const bool *py_entry; /* py[i] is the first frame of one eval call */
	uint32_t npy;
	bool py_cut;	     /* the Python frames' leaf side was cut (too deep) */
	bool native_cut;     /* the native walk may have stopped before the root */
	uint32_t cut_marker; /* frame id put where Python frames were cut */
};

/* Writes at most max ids to out; returns how many.
 *
 * Eval frames and Python groups (split at entry frames) are paired from
 * the leaf, where both walks are exact; when the native walk found fewer
 * eval frames (a truncated or frame-pointer-less unwind), the outermost
 * one takes all the remaining outer groups, and with none at all the
 * Python frames go below the native ones.
 *
 * With py_cut, the Python frames are the outermost ones of a deeper stack:
 * they pair with eval frames from the root instead, and cut_marker plus
 * the native frames leafward of the last eval frame follow them. */
uint32_t mixed_merge(const struct mixed_in *in, uint32_t *out, uint32_t max);

#endif
