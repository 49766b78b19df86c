/* pylocals: a Python frame's arguments and local variables, read from
 * outside the process for `profctl stacks --locals` (py-spy dump
 * --locals).  Names come from the code object (co_varnames, co_cellvars
 * and co_freevars before 3.11; co_localsplusnames with its kinds after),
 * values from the frame's fast locals (f_localsplus / localsplus).
 *
 * Each value becomes a short repr, made here without running any Python:
 * int (small or big), bool, None, float, str, bytes, and lists, tuples
 * and dicts of at most PYLOCALS_ITEMS of those, nested PYLOCALS_DEPTH
 * deep as Python's repr shows them ("[...]" deeper: reprlib's way, and
 * what bounds a list that holds itself); everything else as
 * "<TYPE at 0xADDR>".  Nothing more is read once the repr is full.  The process runs on while it is read and its
 * memory may lie: every read is bounded in bytes and count, every pointer
 * is followed only by reading through it, and a value that cannot be read
 * sanely says "<unreadable>". */
#ifndef PROFD_PYLOCALS_H
#define PROFD_PYLOCALS_H

#include <stdbool.h>
#include <stdint.h>

#include "pyoffsets.h"
#include "pyruntime.h"

#define PYLOCALS_MAX 32	       /* variables given per frame, arguments first */
#define PYLOCALS_SLOTS_MAX 512 /* fast-locals slots looked at */
#define PYLOCALS_NAME_MAX 64   /* bytes of a name, NUL included */
#define PYLOCALS_REPR_MAX 192  /* bytes of a repr, NUL included */
#define PYLOCALS_STR_CHARS 100 /* characters of a str or bytes shown */
#define PYLOCALS_ITEMS 4       /* items of a list, tuple or dict shown */
#define PYLOCALS_DEPTH 3       /* containers shown inside containers */
#define PYLOCALS_INT_DIGITS 40 /* 30-bit digits of an int converted (~360 decimal) */

/* What a variable is besides a plain local. */
enum pylocal_scope {
	PYLOCAL_LOCAL = 'l',
	PYLOCAL_CELL = 'c', /* a local that inner functions capture */
	PYLOCAL_FREE = 'f', /* captured from an enclosing function */
};

struct pylocal {
	bool arg;
	char scope; /* enum pylocal_scope */
	char name[PYLOCALS_NAME_MAX];
	char repr[PYLOCALS_REPR_MAX]; /* UTF-8, no control characters */
};

typedef int (*pylocals_fn)(const struct pylocal *l, void *arg);

/* The layout for rt's version (3.13+: read from the process). */
int pylocals_layout(const struct pyruntime *rt, struct pyoff_locals *out);

/* Calls fn for each bound variable of the frame at frame (what
 * pystack_walk() recorded) running code: arguments first, unbound ones
 * left out, at most PYLOCALS_MAX; stops at fn's first nonzero return and
 * returns it.  0, -EFAULT / -EINVAL (the frame or its code object not
 * readable or not sane), -EPROTONOSUPPORT, -ENOMEM. */
int pylocals_frame(const struct pyruntime *rt, uint64_t code, uint64_t frame, pylocals_fn fn,
		   void *arg);
/* The same with the layout given. */
int pylocals_frame_at(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		      uint64_t frame, pylocals_fn fn, void *arg);

/* The repr of the object at obj into buf (len >= 16): always a string,
 * "<unreadable>" when nothing sane could be read. */
void pylocals_repr(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		   char *buf, size_t len);

/* The text of the str at obj, bare (no quotes; what does not print
 * escaped) into buf (len >= 8), cut at a whole character with "..." where
 * it does not fit: 0, or -EFAULT (not a str that could be read). */
int pylocals_str(const struct pyruntime *rt, uint64_t obj, char *buf, size_t len);

#endif
