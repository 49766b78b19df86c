/* unwind_user: a userspace walk by the BPF walker's rules (unwind_user.h).
 * The steps mirror bpf/unwind.bpf.h's unwind_cfa and unwind_table_step, less
 * what a walk from outside cannot have: rbp at the leaf. */
#include "unwind_user.h"

#include <errno.h>
#include <stddef.h>

#include "clock.h"

struct uw_state {
	const struct unwind_user_ops *ops;
	struct unwind_user_regs r;
};

/* A CFA from rbp: only when some callee's saved copy told us rbp. */
static enum unwind_user_end cfa_from_bp(const struct uw_state *s, int64_t off, uint64_t *cfa)
{
	if (!s->r.have_bp)
		return UNWIND_USER_NEED_BP;
	*cfa = s->r.bp + (uint64_t)off;
	return UNWIND_USER_END;
}

/* The frame's CFA from its row; UNWIND_USER_END (0) when found. */
static enum unwind_user_end row_cfa(const struct uw_state *s, const struct profd_unwind_row *row,
				    uint64_t *cfa)
{
	switch (row->cfa_type) {
	case PROFD_UNWIND_CFA_RSP:
		*cfa = s->r.sp + (uint64_t)(int64_t)row->cfa_off;
		return UNWIND_USER_END;
	case PROFD_UNWIND_CFA_RSP_X8:
		*cfa = s->r.sp + (uint64_t)((int64_t)row->cfa_off * 8);
		return UNWIND_USER_END;
	case PROFD_UNWIND_CFA_PLT:
		*cfa = s->r.sp + 8 + ((s->r.pc & 15) >= (uint64_t)(int64_t)row->cfa_off ? 8 : 0);
		return UNWIND_USER_END;
	case PROFD_UNWIND_CFA_RBP:
		return cfa_from_bp(s, row->cfa_off, cfa);
	case PROFD_UNWIND_CFA_RBP_DEREF:
		if (!s->r.have_bp)
			return UNWIND_USER_NEED_BP;
		return s->ops->read(s->ops->arg, s->r.bp + (uint64_t)(int64_t)row->cfa_off, cfa)
			       ? UNWIND_USER_READ
			       : UNWIND_USER_END;
	case PROFD_UNWIND_CFA_GAP:
		return UNWIND_USER_GAP;
	default: /* STOP, and anything a newer table knows and we do not */
		return UNWIND_USER_STOP;
	}
}

/* The caller's rbp: read where the row says this frame saved it, or the
 * same as ours (known or not) when it did not. */
static enum unwind_user_end caller_bp(struct uw_state *s, const struct profd_unwind_row *row,
				      uint64_t cfa, uint64_t *bp, bool *have)
{
	uint64_t at;

	*bp = s->r.bp;
	*have = s->r.have_bp;
	if (row->cfa_type == PROFD_UNWIND_CFA_RBP_DEREF)
		at = s->r.bp;
	else if (row->rbp_off)
		at = cfa + (uint64_t)((int64_t)row->rbp_off * 8);
	else
		return UNWIND_USER_END;
	if (s->ops->read(s->ops->arg, at, bp))
		return UNWIND_USER_READ;
	*have = true;
	return UNWIND_USER_END;
}

/* Where the row says the return address is: in the link register (known
 * for the leaf only: a leaf that has not moved sp is no loop), or saved
 * at a CFA offset.  Stripped of a pointer authentication signature. */
static enum unwind_user_end return_address(const struct uw_state *s,
					   const struct profd_unwind_row *row, uint64_t cfa,
					   uint64_t *ra)
{
	uint64_t mask = s->ops->code_mask ? s->ops->code_mask : ~0ull;

	if (row->ra_off == PROFD_UNWIND_RA_LR) {
		if (!s->r.lr)
			return UNWIND_USER_STOP;
		if (cfa < s->r.sp)
			return UNWIND_USER_BAD;
		*ra = s->r.lr & mask;
		return UNWIND_USER_END;
	}
	if (cfa <= s->r.sp)
		return UNWIND_USER_BAD; /* a loop, or garbage */
	if (s->ops->read(s->ops->arg, cfa + (row->ra_off ? (int64_t)row->ra_off * 8 : -8), ra))
		return UNWIND_USER_READ;
	*ra &= mask;
	return UNWIND_USER_END;
}

/* One step from frame i to its caller; UNWIND_USER_END (0) to go on,
 * else why the walk ends here. */
static enum unwind_user_end step(struct uw_state *s, uint32_t i, bool *outermost)
{
	/* A return address is after its call, maybe in the next function. */
	const struct profd_unwind_row *row = s->ops->row(s->ops->arg, i ? s->r.pc - 1 : s->r.pc);
	uint64_t cfa = 0, bp, ra;
	enum unwind_user_end e;
	bool have;

	if (!row)
		return UNWIND_USER_UNKNOWN;
	if (row->cfa_type == PROFD_UNWIND_CFA_END) {
		*outermost = true;
		return UNWIND_USER_END;
	}
	e = row_cfa(s, row, &cfa);
	if (!e)
		e = caller_bp(s, row, cfa, &bp, &have);
	if (e)
		return e;
	e = return_address(s, row, cfa, &ra);
	if (e)
		return e;
	if (!ra) {
		*outermost = true;
		return UNWIND_USER_END;
	}
	s->r = (struct unwind_user_regs){.pc = ra, .sp = cfa, .bp = bp, .have_bp = have};
	return UNWIND_USER_END;
}

enum unwind_user_end unwind_user_walk(const struct unwind_user_ops *ops,
				      struct unwind_user_regs r, uint64_t *pcs, uint32_t max,
				      uint32_t *n)
{
	struct uw_state s = {.ops = ops, .r = r};
	enum unwind_user_end e = UNWIND_USER_DEPTH;
	bool outermost = false;
	uint32_t i;

	*n = 0;
	for (i = 0; i < max; i++) {
		if (ops->deadline_ns && clock_mono_ns() > ops->deadline_ns)
			return UNWIND_USER_TIME;
		pcs[(*n)++] = s.r.pc;
		e = step(&s, i, &outermost);
		if (e || outermost)
			return e;
		e = UNWIND_USER_DEPTH;
	}
	return e;
}

const char *unwind_user_end_name(enum unwind_user_end e)
{
	static const char *const names[] = {
	    [UNWIND_USER_END] = "whole",
	    [UNWIND_USER_DEPTH] = "too deep",
	    [UNWIND_USER_UNKNOWN] = "code in no file with unwind tables",
	    [UNWIND_USER_GAP] = "code no unwind table covers",
	    [UNWIND_USER_STOP] = "an unwind rule profd cannot follow",
	    [UNWIND_USER_NEED_BP] = "a frame needs rbp, which a blocked thread's registers lack",
	    [UNWIND_USER_READ] = "stack memory not readable",
	    [UNWIND_USER_BAD] = "a frame that did not move up the stack",
	    [UNWIND_USER_TIME] = "the time budget ran out",
	};

	return (unsigned)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}
