/* view: which frames a dump shows.  The daemon's memory (aggregate) and
 * its history answer the same dump options, so the rule lives here once. */
#ifndef PROFD_VIEW_H
#define PROFD_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bits of a dump's flags word (struct agg_query.flags); aggregate.h adds
 * its own bits to the same word. */
#define VIEW_PYTHON_ONLY (1u << 1)
#define VIEW_NO_KERNEL (1u << 4) /* without kernel frames (perf_event_paranoid) */
#define VIEW_BY_TASK (1u << 5)	 /* with the asyncio task frame at the root */

/* Whether a dump with these flags keeps a frame of this kind (enum
 * frame_kind).  GPU leaves stay in Python-only dumps: they say what the
 * Python line waited for.  Stacks always hold their task frame; only
 * --by-task shows it. */
bool view_keeps(uint32_t flags, uint32_t kind);

/* A thread's name for what a process did before its exec (its parent's
 * program between fork and exec: "bash" for a job a shell started) is
 * its name then followed by this: "bash, before exec (1234)". */
#define VIEW_BEFORE_EXEC ", before exec"

/* Whether a thread's name name[0..len) (a root label's name part) is of
 * a process's life before its exec. */
bool view_before_exec(const char *name, size_t len);

/* Whether a dump with these flags keeps the samples of a thread named
 * name[0..len) (the root label's name part): the Python view drops a
 * process's life before its exec, which ran no Python of it. */
bool view_keeps_thread(uint32_t flags, const char *name, size_t len);

#endif
