/* pyproc: one process's Python as profd knows it.  The runtime found in it
 * (pyruntime: versions, offsets, where the interpreter lives), whether and
 * when it was looked for, and the names its frames and asyncio tasks were
 * given, each with the epoch it was last checked against the process's
 * memory, and the reads of names asked and not yet answered.
 *
 * Owned here: ingest holds one per process and calls pyproc_forget on
 * exec and pyproc_free when the process is dropped; what a name means in
 * a profile (its frame id) is ingest's, kept here as an opaque number. */
#ifndef PROFD_PYPROC_H
#define PROFD_PYPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct pyruntime;

struct pyproc {
	/* Detection: looked for on the first sample and again when the maps
	 * change (libpython may be dlopen'ed or exec'ed into). */
	struct pyruntime *rt; /* NULL: not (yet) a Python process */
	bool checked;	      /* asked (pending until the answer came) */
	bool pending;
	bool pthread_asked; /* asked again once its C library was mapped */
	uint32_t req; /* requests made: an old answer is ignored */
	uint64_t checked_mono_ns;

	/* Names: key (pyproc_frame_key, pyproc_task_key) -> the id given and
	 * the epoch it was last checked. */
	struct hashmap names;
	/* Code object (pyproc_code_key) -> the epoch it was last checked:
	 * one read per code object per epoch, however many of its
	 * instructions were sampled. */
	struct hashmap code_checked;
	/* Reads asked and not answered: key -> the epoch asked, and whether
	 * the answer was "unreadable"; gen counts programs (exec), so an
	 * answer asked by the one before is dropped. */
	struct hashmap asked;
	uint32_t asks_pending;
	uint32_t gen;
	/* Hashes of the asyncio task names given frames (bounded). */
	struct hashmap task_names;
};

/* NULL when out of memory. */
struct pyproc *pyproc_new(void);
/* A new program: runtime and names dropped, answers still coming ignored. */
void pyproc_forget(struct pyproc *pp);
void pyproc_free(struct pyproc *pp);
/* The runtime found (taken over; a previous one freed). */
void pyproc_attach(struct pyproc *pp, struct pyruntime *rt);
/* A fork child: the parent's interpreter at the same addresses.  0 or
 * -ENOMEM; a child with a runtime of its own keeps it. */
int pyproc_inherit(struct pyproc *child, const struct pyproc *parent, int pid, uint64_t mono_ns);

/* A code object is its address and its fingerprint (profd_abi.h's
 * profd_pyfp): another code object at a freed one's address has other
 * keys, so it never takes the old one's names. */
uint64_t pyproc_code_key(uint64_t code, uint32_t fp);
uint64_t pyproc_frame_key(uint64_t code, uint32_t fp, int64_t off);
uint64_t pyproc_task_key(uint64_t addr);

/* The id key was named with and the epoch it was checked: false if none. */
bool pyproc_name(const struct pyproc *pp, uint64_t key, int64_t *id, uint32_t *epoch);
/* Keep key's name, checked at epoch.  true when the cache was full and
 * started over: the caller's stacks built from names must go too. */
bool pyproc_keep_name(struct pyproc *pp, uint64_t key, uint32_t epoch, int64_t id);
/* code_key: pyproc_code_key's. */
bool pyproc_code_checked(const struct pyproc *pp, uint64_t code_key, uint32_t epoch);
void pyproc_code_mark(struct pyproc *pp, uint64_t code_key, uint32_t epoch);

/* Where the read asked for key stands this epoch: 1 awaited, 0 answered
 * "unreadable", -1 not asked. */
int pyproc_asked(const struct pyproc *pp, uint64_t key, uint32_t epoch);
/* Ask key's read this epoch: 0, -EBUSY when too many are awaited (ask
 * again later), -ENOMEM. */
int pyproc_ask(struct pyproc *pp, uint64_t key, uint32_t epoch);
/* An answer came for key, asked at epoch: false when a newer ask or name
 * makes it stale (dropped). */
bool pyproc_answer_fresh(struct pyproc *pp, uint64_t key, uint32_t epoch);
/* The answer is taken (named, or not read at all: ask again). */
void pyproc_ask_done(struct pyproc *pp, uint64_t key);
/* The answer was "unreadable": not asked again this epoch. */
void pyproc_ask_failed(struct pyproc *pp, uint64_t key, uint32_t epoch);

/* The label of a task's frame: "[task NAME]", "[unnamed task]" (their
 * coroutines tell them apart), or one label for the names past the
 * bound. */
void pyproc_task_label(struct pyproc *pp, const char *name, bool is_named, char *out, size_t size);

#endif
