/* stackset: a profile ready to render or send: interned frames plus
 * weighted stacks (root first).  The daemon builds one per dump request,
 * the protocol carries it to profctl, and every renderer reads it. */
#ifndef PROFD_STACKSET_H
#define PROFD_STACKSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

/* What a frame is; drives colors in the SVG and filters such as
 * --python-only.  Values travel on the wire: append only. */
enum frame_kind {
	FRAME_UNKNOWN = 0, /* "[module+0x1a2b]" or "[unknown]" */
	FRAME_KERNEL = 1,  /* "symbol_[k]" */
	FRAME_NATIVE = 2,  /* demangled symbol */
	FRAME_PYTHON = 3,  /* "qualname (path:line)" */
	FRAME_ROOT = 4,    /* synthetic: process or thread root */
	FRAME_GPU = 5,     /* driver command or CUDA entry point */
	FRAME_WAIT = 6,    /* synthetic: what a blocked thread waits for ("[GIL wait]") */
	FRAME_TASK = 7,    /* synthetic: the asyncio task running ("[task fetch-3]") */
	/* synthetic: a variable of the Python frame before it, only in a
	 * PROTO_STACKS_LOCALS reply: "flags<TAB>name<TAB>repr" (protocol.h) */
	FRAME_LOCAL = 8,
	FRAME_KIND_MAX
};

struct ss_frame {
	char *name;
	uint32_t kind;
	uint32_t module; /* native frames: index + 1 in modules; 0 = none */
};

/* The binary a native frame's code is in: pprof's Mapping. */
struct ss_module {
	char *path;     /* as the process mapped it */
	char *build_id; /* lowercase hex; "" when the file has none */
};

struct ss_stack {
	uint64_t count;
	uint32_t depth;
	uint32_t *frames; /* frame ids, root first */
};

struct stackset {
	struct ss_frame *frames;
	size_t nframes, frames_cap;
	struct ss_stack *stacks;
	size_t nstacks, stacks_cap;
	struct ss_module *modules;
	size_t nmodules, modules_cap;
	uint64_t total; /* sum of counts */

	/* What the profile is, for titles and metadata. */
	char *title;      /* e.g. "python3 (pid 1234)" */
	char *unit;       /* "samples", "nanoseconds", "calls" */
	char *type;       /* "cpu", "gpu-driver", "cuda" */
	/* The workload the profile is of, "key=value" lines ("service=myapp\n
	 * unit=myapp.service\n"): the fields every process in it shares.
	 * NULL or "": none said.  pprof carries them as comments, JSON as an
	 * object. */
	char *workload;
	uint64_t start_ns, end_ns; /* wall-clock window, CLOCK_REALTIME */
	uint32_t rate_hz;
	/* Set by stackset_split_signs: a signed profile's stacks under
	 * "[mapped]" and "[unmapped]", counts made positive. */
	bool signs_split;

	struct hashmap frame_index; /* hash(kind,name) -> id+1; module compared too */
	struct hashmap module_index; /* hash(path,build_id) -> index+1 */
	struct hashmap stack_index; /* hash(frames) -> index+1 */
};

struct stackset *stackset_new(void);
void stackset_free(struct stackset *ss);
/* Returns the frame id, or -ENOMEM. */
int64_t stackset_intern(struct stackset *ss, uint32_t kind, const char *name);
/* The same, for a frame in module (a stackset_module result; 0 = none):
 * one name in two binaries makes two frames. */
int64_t stackset_intern_in(struct stackset *ss, uint32_t kind, const char *name, uint32_t module);
/* A frame of its own, never merged with another by stackset_intern (it
 * is not in the index), so that it can be renamed later: the daemon's
 * dictionary holds one per address of JIT code that no perf map names
 * yet.  Its id or -ENOMEM. */
int64_t stackset_add_unindexed(struct stackset *ss, uint32_t kind, const char *name,
			       uint32_t module);
/* A new name for a frame made by stackset_add_unindexed (an indexed one
 * would be found under its old name).  0, -EINVAL or -ENOMEM (then
 * unchanged). */
int stackset_rename(struct stackset *ss, uint32_t id, uint32_t kind, const char *name,
		    uint32_t module);
/* A module interned: its index + 1 (what ss_frame.module holds), or
 * -ENOMEM.  build_id may be NULL or "". */
int64_t stackset_module(struct stackset *ss, const char *path, const char *build_id);
/* Frame id of src interned into dst, with its module: dst's id or -ENOMEM. */
int64_t stackset_copy_frame(struct stackset *dst, const struct stackset *src, uint32_t id);
/* The module of a frame, or NULL. */
const struct ss_module *stackset_frame_module(const struct stackset *ss, uint32_t id);
/* Adds count to the stack (merging identical ones). 0 or -errno. */
int stackset_add(struct stackset *ss, const uint32_t *frames, uint32_t depth, uint64_t count);
/* The same, returning the stack's index (new or merged), or -errno. */
int64_t stackset_add_at(struct stackset *ss, const uint32_t *frames, uint32_t depth,
			uint64_t count);
/* Convenience: intern each (kind,name) pair then add. */
int stackset_add_named(struct stackset *ss, const uint32_t *kinds, const char *const *names,
		       uint32_t depth, uint64_t count);
/* Replace a metadata string (title/unit/type/workload); 0 or -ENOMEM. */
int stackset_set_str(char **field, const char *value);
/* The counts of `after` minus those of the same stacks (by frame kinds,
 * names and modules) in `before`, as a new stackset with after's metadata; stacks
 * that did not grow are left out.  For exact windows from two cumulative
 * dumps (profctl record, top).  NULL on allocation failure. */
struct stackset *stackset_subtract(const struct stackset *after, const struct stackset *before);
/* The count of the stack whose frames (kinds, names and modules) equal
 * those of stack i of other, or 0. */
uint64_t stackset_count_like(const struct stackset *ss, const struct stackset *other, size_t i);

/* stackset_signed.c.  Whether counts are signed: the mmap profile's
 * frees are negative, held in two's complement (sums stay exact as
 * int64); total is then the net change. */
bool stackset_signed(const struct stackset *ss);
/* For the formats that draw widths (svg, speedscope, pstats, diff, top):
 * a copy of a signed profile whose stacks sit under a "[mapped]" or an
 * "[unmapped]" root frame with positive counts, so the two flows are
 * drawn side by side instead of cancelling out; total is then the sum of
 * both.  NULL on allocation failure. */
struct stackset *stackset_split_signs(const struct stackset *ss);

/* A thread's root frame as dump --by-thread makes it, "NAME (TID)": true
 * with the name's length and the tid, false for another shape. */
bool stackset_root_tid(const char *label, size_t *nlen, uint32_t *tid);

/* Replace the pos-th frame (root first) of every stack deep enough by
 * map's value for it (frame id -> frame id; frames not in map stay),
 * adding up stacks that become equal.  0 or -ENOMEM (the stacks are
 * then listed once each, some perhaps not merged). */
int stackset_replace_at(struct stackset *ss, uint32_t pos, const struct hashmap *map);

/* Sort stacks lexicographically by frame names (stable, deterministic
 * output for folded and golden tests). */
void stackset_sort(struct stackset *ss);

#endif
