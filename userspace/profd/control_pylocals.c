/* control_pylocals.c: `profctl stacks --locals`: after each Python frame
 * read now, its arguments and local variables as FRAME_LOCAL frames
 * (protocol.h, PROTO_STACKS_LOCALS), read by pylocals.h.  Runs where
 * control_pystack.c reads the frames, under its time budget. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "control.h"
#include "pylocals.h"
#include "pystack.h"
#include "stackset.h"

/* A thread's ids: its frames, a cut marker and at most this many
 * variables. */
#define THREAD_IDS_MAX (PYSTACK_MAX_FRAMES + 1 + PYNOW_MAX_LOCALS)

struct locals_sink {
	struct pynow *pn;
	struct stackset *out;
	uint32_t first;
};

/* Grown as every pn->ids is, with its entry mark (never an eval call's
 * first frame: a variable). */
static int push_id(struct pynow *pn, uint32_t id)
{
	if (pynow_keep_ids(pn, 1))
		return -ENOMEM;
	pn->entry[pn->nids] = false;
	pn->ids[pn->nids++] = id;
	return 0;
}

static int keep_local(const struct pylocal *l, void *arg)
{
	struct locals_sink *s = arg;
	char text[16 + PYLOCALS_NAME_MAX + PYLOCALS_REPR_MAX], flags[4];
	size_t n = 0;
	int64_t id;

	if (s->pn->nids - s->first >= THREAD_IDS_MAX)
		return 1; /* enough for one thread: stop this frame */
	if (l->arg)
		flags[n++] = 'a';
	if (l->scope == PYLOCAL_CELL || l->scope == PYLOCAL_FREE)
		flags[n++] = l->scope;
	if (!n)
		flags[n++] = '-';
	flags[n] = '\0';
	snprintf(text, sizeof(text), "%s\t%s\t%s", flags, l->name, l->repr);
	id = stackset_intern(s->out, FRAME_LOCAL, text);
	if (id < 0)
		return (int)id;
	return push_id(s->pn, (uint32_t)id);
}

int pynow_add_locals(struct pynow *pn, const struct pyruntime *rt, uint64_t code, uint64_t frame,
		     uint32_t first, struct stackset *out)
{
	struct locals_sink s = {.pn = pn, .out = out, .first = first};
	int err = pylocals_frame(rt, code, frame, keep_local, &s);

	return err == -ENOMEM ? err : 0; /* 1: the cap; others: not readable */
}
