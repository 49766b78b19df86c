/* unwind_user: walk a thread's user stack from outside it, in userspace,
 * with the rows profd builds for its BPF walker (unwind_table.h), applied
 * as bpf/unwind.bpf.h applies them.  For `profctl stacks` on a thread
 * blocked in the kernel, whose registers /proc/PID/task/TID/syscall gives
 * without stopping it: pc and sp, but no rbp.  A frame whose CFA needs rbp
 * is walked only when a callee already unwound saved it; else the walk
 * stops there (UNWIND_USER_NEED_BP), cut, never guessed.
 *
 * The thread's memory is the process's: it may lie.  Every step is
 * bounded: a CFA must move up the stack, the walk stops at max frames, at
 * the first read that fails, at a pc with no row, and at the deadline. */
#ifndef PROFD_UNWIND_USER_H
#define PROFD_UNWIND_USER_H

#include <stdbool.h>
#include <stdint.h>

#include "profd_abi_unwind.h"

/* Why a walk ended: only UNWIND_USER_END is a whole stack. */
enum unwind_user_end {
	UNWIND_USER_END = 0,	 /* the outermost frame (or a zero return address) */
	UNWIND_USER_DEPTH,	 /* max frames */
	UNWIND_USER_UNKNOWN,	 /* a pc in no file with a table */
	UNWIND_USER_GAP,	 /* a pc no FDE covers */
	UNWIND_USER_STOP,	 /* a CFI rule the rows cannot express */
	UNWIND_USER_NEED_BP,	 /* the CFA needs rbp, and no callee saved it */
	UNWIND_USER_READ,	 /* stack memory not readable */
	UNWIND_USER_BAD,	 /* a CFA that did not move up the stack */
	UNWIND_USER_TIME,	 /* the deadline passed */
};

struct unwind_user_regs {
	uint64_t pc, sp, bp;
	bool have_bp; /* bp is known (from a callee's saved copy) */
	uint64_t lr;  /* the link register (arm64's x30) of the leaf; 0: unknown */
};

struct unwind_user_ops {
	/* The row in effect at runtime address pc (a return address already
	 * moved back into its call), or NULL: in no file with a table. */
	const struct profd_unwind_row *(*row)(void *arg, uint64_t pc);
	/* One word of the thread's memory: 0 or -errno. */
	int (*read)(void *arg, uint64_t addr, uint64_t *out);
	void *arg;
	uint64_t deadline_ns; /* clock_mono_ns(); 0: none */
	/* The bits of a code address (arch_code_addr_mask(): what pointer
	 * authentication leaves of a signed return address); 0: all. */
	uint64_t code_mask;
};

/* Up to max pcs into pcs, leaf first (the leaf as given, callers as their
 * return addresses); *n gets how many.  Returns why it ended. */
enum unwind_user_end unwind_user_walk(const struct unwind_user_ops *ops,
				      struct unwind_user_regs r, uint64_t *pcs, uint32_t max,
				      uint32_t *n);
/* A few words for each enum unwind_user_end, for the cut marker. */
const char *unwind_user_end_name(enum unwind_user_end e);

#endif
