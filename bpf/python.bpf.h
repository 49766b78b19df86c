/* python.bpf.h: walk CPython frames at sample time.
 *
 * For a thread of a known Python process (py_procs, filled by userspace
 * with the runtime address and that version's offsets), find its
 * PyThreadState, then follow the frame chain from the innermost frame,
 * emitting (code object, instruction offset) pairs, each with the code
 * object's fingerprint (profd_abi.h) so that a code object freed and
 * another at its address are two frames.  Userspace turns them into
 * "qualname (file:line)".
 *
 * Finding the thread state costs the profiled program nothing: the
 * interpreter's thread list is searched here, matching the kernel tid
 * (native_thread_id, 3.11+) or the pthread id, which glibc derives from
 * the thread pointer (PROFD_PTHREAD_FROM_TP, arch.bpf.h; on x86-64 it is
 * the fs base itself).  native_thread_id is what gettid()
 * returned inside the process, so it is compared with the tid the task's
 * own pid namespace gives it, not the host's: a containerised Python
 * matches like any other.  The answer is cached per (host) tid and
 * re-validated with one read per sample, so a reused tid or a freed
 * tstate is noticed; new threads go to the head of the list, so only a
 * thread's first sample pays for the search.  An optional uprobe on the
 * eval loop (userspace attaches on_py_eval) fills the same cache.
 *
 * Frames are walked leaf first into the scratch stack used as a ring, so
 * a stack deeper than PROFD_MAX_PY_FRAMES keeps its outermost frames (a
 * flamegraph's root must not move with the depth); the ring is turned
 * leaf-first afterwards. */
#ifndef PROFD_PYTHON_BPF_H
#define PROFD_PYTHON_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "profd_abi.h"
#include "stackhash.bpf.h"

#define PY_MAX_INTERPS 4
/* Thread states searched per interpreter: a process with thousands of
 * threads must still find its oldest ones (the main thread sits at the
 * tail of the list).  bpf_loop keeps this out of the verifier's way. */
#define PY_MAX_THREADS 8192
/* Frames followed per walk (C-stack shims included): deeper than any
 * default recursion limit, bounded so a corrupted chain costs little. */
#define PY_MAX_WALK 4096
/* The same bounds in the legacy object (kcompat.bpf.h), whose verifier
 * walks a loop once per iteration (a few instructions each there): the
 * search covers a process's newest ~500 threads (the eval-loop uprobe
 * finds any). */
#ifndef PY_SEARCH_STEPS_LEGACY
#define PY_SEARCH_STEPS_LEGACY 512
#endif
#ifndef PY_MAX_WALK_LEGACY
#define PY_MAX_WALK_LEGACY 512
#endif
#define PY_RING_MASK (PROFD_STACK_WORDS - 1)
/* Bytes of a frame read at once (py_frame_from_span). */
#define PY_FRAME_BYTES 128
#define PY_FRAME_WORDS (PY_FRAME_BYTES / 8)
/* How long "this thread has no PyThreadState" is believed: short, since
 * a thread becomes Python as soon as the interpreter finishes starting. */
#define PY_NEGATIVE_TTL_NS (20ull * 1000 * 1000)
/* A thread this young is not believed to have none at all: a new
 * thread's state is bound a moment after it starts, and a "none" seen in
 * that moment would hide the frames of its first block (a thread that
 * starts and waits at once: seen for 2 of 300 such threads). */
#define PY_YOUNG_THREAD_NS (50ull * 1000 * 1000)
/* Code objects whose fingerprints a walk remembers (a power of two). */
#define PY_FP_MEMO 8
/* What a walk stopped by an unreadable frame leaves as its next frame:
 * not 0 (the stack is truncated), and never a real frame (aligned). */
#define PY_FRAME_UNREADABLE 1ull

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct profd_py_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct profd_py_thread);
} py_threads SEC(".maps");

/* Doubled copy of a ring being turned leaf-first (per CPU). */
struct py_rotate_buf {
	__u64 w[2 * PROFD_STACK_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYROT_SLOTS); /* a slot per enum pyrot_slot (common.bpf.h) */
	__type(key, __u32);
	__type(value, struct py_rotate_buf);
} py_rotate SEC(".maps");

/* The tid as the task's own pid namespace numbers it (the host tid when
 * it runs in the initial namespace): what native_thread_id holds. */
static __always_inline __u32 py_ns_tid(struct task_struct *task, __u32 host_tid)
{
	struct pid *pid = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	int nr = 0;

	if (!pid || level > 32 /* MAX_PID_NS_LEVEL */)
		return host_tid;
	bpf_core_read(&nr, sizeof(nr), &pid->numbers[level].nr);
	return nr > 0 ? (__u32)nr : host_tid;
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* Does tstate belong to this thread? */
static __always_inline int py_tstate_matches(const struct profd_pyoffsets *o, __u64 tstate,
					     __u32 tid, __u64 tp)
{
	if (o->tstate_native_thread_id != PYOFF_NONE) {
		__u64 native = 0;

		bpf_probe_read_user(&native, sizeof(native),
				    (const void *)(tstate + o->tstate_native_thread_id));
		return (__u32)native == tid;
	}
	return py_read_ptr(tstate + o->tstate_thread_id) ==
	       PROFD_PTHREAD_FROM_TP(tp, o->pthread_below_tp);
}

struct py_search {
	const struct profd_pyoffsets *o;
	__u64 interp, t, tp, found;
	__u32 tid, interps;
};

/* One step of the thread-list search: check one tstate, or move on to
 * the next interpreter when this one's list ends. */
static __always_inline long py_search_step_in(struct py_search *s, const struct profd_pyoffsets *o)
{
	if (!s->t) {
		if (s->interps++)
			s->interp = py_read_ptr(s->interp + o->interp_next);
		if (!s->interp || s->interps > PY_MAX_INTERPS)
			return 1;
		s->t = py_read_ptr(s->interp + o->interp_tstate_head);
		return 0;
	}
	if (py_tstate_matches(o, s->t, s->tid, s->tp)) {
		s->found = s->t;
		return 1;
	}
	s->t = py_read_ptr(s->t + o->tstate_next);
	return 0;
}


/* Where a walk stands, what it read last (a frame's span or a code
 * object's fields, in buf) and the fingerprints it remembers: in per-CPU
 * map memory, a slot per caller (enum pyrot_slot), not on the BPF stack.
 * Each program that walks Python frames also unwinds native ones through
 * four nested subprograms, and 6.1 and 6.12 allow a call chain 512 bytes
 * of stack in all (6.1 rounds each frame up to 32): on the stack, this
 * state took the memory program to 544 on 6.1. */
struct py_walk_state {
	__u64 frame;
	__u32 span; /* bytes read per frame, 0: field by field */
	/* The code object's fields its fingerprint is made of: one read of
	 * code_span bytes from code_lo (0: no fingerprint). */
	__u32 code_lo, code_span;
	/* Fingerprints read this walk, by code object (py_code_fp_memo). */
	__u64 fp_code[PY_FP_MEMO];
	__u32 fp[PY_FP_MEMO];
	__u64 buf[PY_FRAME_WORDS];
};

/* The modern object's walk states.  The legacy one keeps its own in
 * py_legacy_state, but has the map too: both are opened through the
 * skeleton of the modern one, which names every map it has. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYROT_SLOTS);
	__type(key, __u32);
	__type(value, struct py_walk_state);
} py_walk_states SEC(".maps");

#ifdef PROFD_LEGACY
/* The legacy object's loops (kcompat.bpf.h): each step is a global
 * function, which the verifier checks once instead of once per iteration,
 * working on state kept here, per CPU, in a slot per caller that may
 * interrupt another on a CPU (enum pyrot_slot, as py_rotate). */
struct py_legacy {
	__u32 search_stop, walk_stop; /* the loop ended (PROFD_LEGACY_LOOP) */
	struct py_search s;
	struct py_walk_state w;
	struct profd_pyoffsets off;
	struct profd_stack st;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYROT_SLOTS);
	__type(key, __u32);
	__type(value, struct py_legacy);
} py_legacy_state SEC(".maps");

__noinline int py_search_step_global(__u32 slot, __u32 i)
{
	struct py_legacy *L = bpf_map_lookup_elem(&py_legacy_state, &slot);

	if (!L || L->search_stop)
		return 0;
	if (i >= PY_SEARCH_STEPS_LEGACY || py_search_step_in(&L->s, &L->off))
		L->search_stop = 1;
	return 0;
}

static __always_inline void py_search_loop(struct py_search *s, const struct profd_py_proc *pp,
					   __u32 slot)
{
	struct py_legacy *L = bpf_map_lookup_elem(&py_legacy_state, &slot);

	if (!L)
		return;
	L->s.interp = s->interp;
	L->s.t = s->t;
	L->s.tp = s->tp;
	L->s.found = 0;
	L->s.tid = s->tid;
	L->s.interps = s->interps;
	L->search_stop = 0;
	bpf_probe_read_kernel(&L->off, sizeof(L->off), &pp->off);
	PROFD_LEGACY_LOOP(PY_SEARCH_STEPS_LEGACY, py_search_step_global, slot, &L->search_stop);
	s->found = L->s.found;
}
#else
static long py_search_step(__u32 i, void *ctx)
{
	struct py_search *s = ctx;

	return py_search_step_in(s, s->o);
}

static __always_inline void py_search_loop(struct py_search *s, const struct profd_py_proc *pp,
					   __u32 slot)
{
	PROFD_OPAQUE(&s->interp, s + 1);
	bpf_loop(PY_MAX_INTERPS * (PY_MAX_THREADS + 1), py_search_step, s, 0);
}
#endif

/* Search every interpreter's thread list for this thread's state. */
static __always_inline __u64 py_find_tstate(const struct profd_py_proc *pp, __u32 tid, __u64 tp,
					    __u32 slot)
{
	struct py_search s = {
		.o = &pp->off,
		.interp = py_read_ptr(pp->runtime_addr + pp->off.runtime_interp_head),
		.tp = tp,
		.tid = tid,
	};

	count(PROFD_CNT_PY_TSTATE_WALKS);
	py_search_loop(&s, pp, slot);
	return s.found;
}

/* Whether task started less than PY_YOUNG_THREAD_NS ago: read only where
 * a "none" is in question, not on every sample of a known thread. */
static __always_inline bool py_thread_young(struct task_struct *task, __u64 now)
{
	return now - BPF_CORE_READ(task, start_time) < PY_YOUNG_THREAD_NS;
}

/* tid keys the cache (the host's, as the uprobe sees it); ns_tid is
 * matched against the thread states; no "none" is cached for a young
 * thread. */
static __always_inline __u64 py_thread_state(const struct profd_py_proc *pp, __u32 tid,
					     __u32 ns_tid, __u64 tp, __u64 now,
					     struct task_struct *task, __u32 slot)
{
	struct profd_py_thread *cached = bpf_map_lookup_elem(&py_threads, &tid);
	struct profd_py_thread fresh = { 0, now };

	if (cached) {
		if (cached->tstate && py_tstate_matches(&pp->off, cached->tstate, ns_tid, tp))
			return cached->tstate;
		if (!cached->tstate && now - cached->checked_ns < PY_NEGATIVE_TTL_NS &&
		    !py_thread_young(task, now))
			return 0;
	}
	fresh.tstate = py_find_tstate(pp, ns_tid, tp, slot);
	if (fresh.tstate || !py_thread_young(task, now))
		bpf_map_update_elem(&py_threads, &tid, &fresh, BPF_ANY);
	return fresh.tstate;
}

/* The innermost frame of a thread state. */
static __always_inline __u64 py_top_frame(const struct profd_pyoffsets *o, __u64 tstate)
{
	__u64 f = py_read_ptr(tstate + o->tstate_frame);

	if (o->frame_kind == PYOFF_FRAME_CFRAME && f)
		f = py_read_ptr(f + o->cframe_current_frame);
	return f;
}

/* Free-threaded 3.14+: where the bytecode copy instr_ptr points into
 * starts.  Copy 0 is co_code_adaptive itself; a thread with its own copy
 * runs entries[i] of the code's _PyCodeArray { Py_ssize_t size; char
 * *entries[]; }. */
static __always_inline __u64 py_bytecode_base(const struct profd_pyoffsets *o, __s32 idx,
					      __u64 code)
{
	__u64 arr, base;

	if (o->frame_tlbc_index == PYOFF_NONE || o->code_tlbc == PYOFF_NONE)
		return code + o->code_adaptive;
	if (idx <= 0 || idx > 4096)
		return code + o->code_adaptive;
	arr = py_read_ptr(code + o->code_tlbc);
	base = arr ? py_read_ptr(arr + 8 + 8 * (__u64)idx) : 0;
	return base ? base : code + o->code_adaptive;
}

static __always_inline __u8 py_read_u8(__u64 addr)
{
	__u8 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* A frame's fields are read in one probe read of the span holding them
 * all (a _PyInterpreterFrame's first 72 bytes on 3.11) rather than one
 * read per field: a read costs far more than the bytes it copies.  Frames
 * whose fields lie further apart, or whose span cannot be read whole (a
 * frame at the very end of a mapping), are read field by field
 * (PY_FRAME_BYTES, above). */

/* What the walk needs of one frame. */
struct py_frame_fields {
	__u64 code, instr, previous;
	__s32 tlbc_index;
	__u8 owner, is_entry;
};

static __always_inline int py_instr_is_lasti(const struct profd_pyoffsets *o)
{
	return o->instr_kind == PYOFF_INSTR_LASTI_BYTES || o->instr_kind == PYOFF_INSTR_LASTI_UNITS;
}

/* The span one read must cover for every field the walk uses, or 0 when
 * no read of at most PY_FRAME_BYTES does (or a field is not aligned as
 * its type: the copy on the BPF stack is read with aligned loads). */
static __always_inline __u32 py_frame_span(const struct profd_pyoffsets *o)
{
	__u32 end, f, size;

	if ((o->frame_previous | o->frame_code) & 7)
		return 0;
	end = o->frame_previous + 8 > o->frame_code + 8 ? o->frame_previous + 8 : o->frame_code + 8;
	size = py_instr_is_lasti(o) ? 4 : 8;
	if (o->frame_instr & (size - 1))
		return 0;
	f = o->frame_instr + size;
	end = f > end ? f : end;
	if (o->frame_owner_cstack != PYOFF_NONE && o->frame_owner + 1 > end)
		end = o->frame_owner + 1;
	if (o->frame_is_entry != PYOFF_NONE && o->frame_is_entry + 1 > end)
		end = o->frame_is_entry + 1;
	if (o->frame_tlbc_index != PYOFF_NONE) {
		if (o->frame_tlbc_index & 3)
			return 0;
		if (o->frame_tlbc_index + 4 > end)
			end = o->frame_tlbc_index + 4;
	}
	return end <= PY_FRAME_BYTES ? end : 0;
}

/* Fields from the copy in w->buf; offsets were checked by py_frame_span
 * (the masks only keep the verifier's bounds). */
static __always_inline __u64 py_buf_u64(const struct py_walk_state *w, __u32 off)
{
	return w->buf[(off / 8) & (PY_FRAME_WORDS - 1)];
}

static __always_inline __u32 py_buf_u32(const struct py_walk_state *w, __u32 off)
{
	return ((const __u32 *)w->buf)[(off / 4) & (PY_FRAME_BYTES / 4 - 1)];
}

static __always_inline __u8 py_buf_u8(const struct py_walk_state *w, __u32 off)
{
	return ((const __u8 *)w->buf)[off & (PY_FRAME_BYTES - 1)];
}

/* One read of the frame's span into w->buf, then the fields from it.
 * -1 when the span could not be read. */
static __always_inline int py_frame_from_span(struct py_walk_state *w,
					      const struct profd_pyoffsets *o, __u64 frame,
					      struct py_frame_fields *f)
{
	__u32 span = w->span;

	if (!span || span > PY_FRAME_BYTES ||
	    bpf_probe_read_user(w->buf, span, (const void *)frame))
		return -1;
	f->code = py_buf_u64(w, o->frame_code);
	f->previous = py_buf_u64(w, o->frame_previous);
	f->instr = py_instr_is_lasti(o) ? py_buf_u32(w, o->frame_instr)
					: py_buf_u64(w, o->frame_instr);
	f->owner = o->frame_owner_cstack != PYOFF_NONE ? py_buf_u8(w, o->frame_owner) : 0;
	f->is_entry = o->frame_is_entry != PYOFF_NONE ? py_buf_u8(w, o->frame_is_entry) : 0;
	f->tlbc_index = o->frame_tlbc_index != PYOFF_NONE
			    ? (__s32)py_buf_u32(w, o->frame_tlbc_index)
			    : 0;
	return 0;
}

/* The same, one read per field.  -1 when code or previous (what the walk
 * cannot do without) could not be read. */
static __always_inline int py_frame_by_field(const struct profd_pyoffsets *o, __u64 frame,
					     struct py_frame_fields *f)
{
	__u32 lasti = 0;

	if (o->frame_owner_cstack != PYOFF_NONE)
		f->owner = py_read_u8(frame + o->frame_owner);
	if (o->frame_is_entry != PYOFF_NONE)
		f->is_entry = py_read_u8(frame + o->frame_is_entry);
	if (o->frame_tlbc_index != PYOFF_NONE)
		bpf_probe_read_user(&f->tlbc_index, sizeof(f->tlbc_index),
				    (const void *)(frame + o->frame_tlbc_index));
	if (py_instr_is_lasti(o)) {
		bpf_probe_read_user(&lasti, sizeof(lasti), (const void *)(frame + o->frame_instr));
		f->instr = lasti;
	} else {
		f->instr = py_read_ptr(frame + o->frame_instr);
	}
	if (bpf_probe_read_user(&f->code, sizeof(f->code), (const void *)(frame + o->frame_code)))
		return -1;
	return bpf_probe_read_user(&f->previous, sizeof(f->previous),
				   (const void *)(frame + o->frame_previous))
		   ? -1
		   : 0;
}

/* The span of the code object holding the fingerprint's fields
 * (profd_pyfp), one read of at most PY_FRAME_BYTES: 72-88 bytes on every
 * supported version.  *span 0 where it is longer or a field is not
 * aligned as its type. */
static __always_inline void py_code_span(const struct profd_pyoffsets *o, __u32 *lo, __u32 *span)
{
	__u32 ptrs[] = {o->code_filename, o->code_name, o->code_qualname, o->code_linetable};
	__u32 first = o->code_firstlineno, start = first, end = first + 4, i;

	*span = 0;
	*lo = 0;
	if (first == PYOFF_NONE || (first & 3))
		return;
	for (i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
		if (ptrs[i] == PYOFF_NONE)
			continue;
		if (ptrs[i] & 7)
			return;
		start = ptrs[i] < start ? ptrs[i] : start;
		end = ptrs[i] + 8 > end ? ptrs[i] + 8 : end;
	}
	*lo = start & ~7u; /* the copy is read with aligned loads */
	*span = end - *lo <= PY_FRAME_BYTES ? end - *lo : 0;
}

/* A pointer field of the code object copy in w->buf (0 for none). */
static __always_inline __u64 py_code_ptr(const struct py_walk_state *w, __u32 off)
{
	return off == PYOFF_NONE ? 0 : py_buf_u64(w, off - w->code_lo);
}

/* The code object's fingerprint (profd_abi.h), in one read into w->buf
 * (the frame's fields are taken from it by now); 0 where it cannot be
 * read. */
static __always_inline __u32 py_code_fp(struct py_walk_state *w, const struct profd_pyoffsets *o,
					__u64 code)
{
	__u32 span = w->code_span;

	if (!span || span > PY_FRAME_BYTES ||
	    bpf_probe_read_user(w->buf, span, (const void *)(code + w->code_lo)))
		return 0;
	return profd_pyfp(py_code_ptr(w, o->code_filename), py_code_ptr(w, o->code_name),
			  py_code_ptr(w, o->code_qualname), py_code_ptr(w, o->code_linetable),
			  py_buf_u32(w, o->code_firstlineno - w->code_lo));
}

/* py_code_fp, read once a walk per code object: a frame holds a
 * reference to its code object, so while the walked thread stands still
 * one address is one code object all along its stack, and a recursion
 * costs one read, not one per level. */
static __always_inline __u32 py_code_fp_memo(struct py_walk_state *w,
					     const struct profd_pyoffsets *o, __u64 code)
{
	__u32 i = (__u32)(code >> 4 ^ code >> 9) & (PY_FP_MEMO - 1);

	if (w->fp_code[i] != code) {
		w->fp[i] = py_code_fp(w, o, code);
		w->fp_code[i] = code;
	}
	return w->fp[i];
}

/* Instruction offset the way userspace's pycode module expects it. */
static __always_inline __s32 py_instr_offset(const struct profd_pyoffsets *o,
					     const struct py_frame_fields *f, __u64 code)
{
	if (py_instr_is_lasti(o))
		return (__s32)f->instr;
	return (__s32)(f->instr - py_bytecode_base(o, f->tlbc_index, code));
}

/* One bpf_loop step: emit the current frame (or skip a C-stack shim)
 * into the Python scratch stack and move to the caller.  st->nr counts
 * the words emitted, past the ring's size too.  It lives in map memory
 * on purpose: the verifier does not track its value there, so checking
 * this callback converges at once instead of once per possible depth. */
static __always_inline long py_walk_step_in(struct py_walk_state *w,
					    const struct profd_pyoffsets *o, struct profd_stack *st)
{
	struct py_frame_fields f = {};
	__u64 code, frame = w->frame;
	__u32 flags = 0, n, fp;

	if (!st || !frame)
		return 1;
	/* An unreadable frame is counted and ends the walk without its
	 * root (the sentinel is a frame left), not complete. */
	if (py_frame_from_span(w, o, frame, &f) && py_frame_by_field(o, frame, &f))
		goto unreadable;
	n = st->nr / 2; /* frames emitted so far */
	/* 3.12+: shim frames owned by the C stack (3.14+: by the
	 * interpreter) sit between eval calls; the frame just leafward of
	 * one starts a C-level call. */
	if (o->frame_owner_cstack != PYOFF_NONE && f.owner >= o->frame_owner_cstack) {
		__u64 entry = (__u64)PROFD_PYFRAME_ENTRY << 32;

		if (n > 0)
			st->ips[(2 * n - 1) & PY_RING_MASK] |= entry;
		w->frame = f.previous;
		return 0;
	}
	code = f.code & ~PYOFF_STACKREF_TAG;
	if (o->frame_kind == PYOFF_FRAME_OBJECT)
		flags = PROFD_PYFRAME_ENTRY; /* <= 3.10: one eval call per frame */
	else if (o->frame_is_entry != PYOFF_NONE && f.is_entry)
		flags = PROFD_PYFRAME_ENTRY;
	fp = py_code_fp_memo(w, o, code);
	/* Past PROFD_MAX_PY_FRAMES the ring overwrites the leafmost frames. */
	st->ips[(2 * n) & PY_RING_MASK] = code;
	st->ips[(2 * n + 1) & PY_RING_MASK] = (__u64)(__u32)py_instr_offset(o, &f, code) |
					      (__u64)flags << PROFD_PYFRAME_FLAGS_SHIFT |
					      (__u64)fp << PROFD_PYFRAME_FP_SHIFT;
	st->nr = 2 * (n + 1);
	w->frame = f.previous;
	return 0;
unreadable:
	count(PROFD_CNT_PY_READ_FAIL);
	w->frame = PY_FRAME_UNREADABLE;
	return 1;
}


/* A walk from frame starts afresh: the spans for these offsets, and
 * nothing remembered.  The map keeps the last walk's memo, fingerprints
 * included: cleared, a code object at 0 (a torn frame) gets 0, as a read
 * there would give. */
static __always_inline void py_walk_begin(struct py_walk_state *w,
					  const struct profd_pyoffsets *o, __u64 frame)
{
	w->frame = frame;
	w->span = py_frame_span(o);
	py_code_span(o, &w->code_lo, &w->code_span);
	__builtin_memset(w->fp_code, 0, sizeof(w->fp_code));
	__builtin_memset(w->fp, 0, sizeof(w->fp));
}

#ifdef PROFD_LEGACY
__noinline int py_walk_step_global(__u32 slot, __u32 i)
{
	struct py_legacy *L = bpf_map_lookup_elem(&py_legacy_state, &slot);

	if (!L || L->walk_stop)
		return 0;
	if (i >= PY_MAX_WALK_LEGACY || py_walk_step_in(&L->w, &L->off, &L->st))
		L->walk_stop = 1;
	return 0;
}

/* The walk on the slot's state, its frames copied to st after; the
 * state, or NULL without one. */
static __always_inline struct py_walk_state *py_walk_loop(const struct profd_pyoffsets *o,
							  __u64 frame, struct profd_stack *st,
							  __u32 slot)
{
	struct py_legacy *L = bpf_map_lookup_elem(&py_legacy_state, &slot);

	if (!L)
		return NULL;
	py_walk_begin(&L->w, o, frame);
	L->st.kind = PROFD_STACK_PYTHON;
	L->st.nr = 0;
	L->walk_stop = 0;
	bpf_probe_read_kernel(&L->off, sizeof(L->off), o);
	PROFD_LEGACY_LOOP(PY_MAX_WALK_LEGACY, py_walk_step_global, slot, &L->walk_stop);
	bpf_probe_read_kernel(st, sizeof(*st), &L->st);
	return &L->w;
}
#else
/* bpf_loop's context, on the stack as bpf_loop wants it: what the walk
 * reads and writes, and its state in py_walk_states (a pointer kept in
 * map memory would not be one to the verifier). */
struct py_walk_ctx {
	const struct profd_pyoffsets *o;
	struct profd_stack *st; /* the caller's scratch slot */
	struct py_walk_state *w;
};

static long py_walk_step(__u32 i, void *ctx)
{
	struct py_walk_ctx *c = ctx;

	return py_walk_step_in(c->w, c->o, c->st);
}

static __always_inline struct py_walk_state *py_walk_loop(const struct profd_pyoffsets *o,
							  __u64 frame, struct profd_stack *st,
							  __u32 slot)
{
	struct py_walk_state *w = bpf_map_lookup_elem(&py_walk_states, &slot);
	struct py_walk_ctx c = { .o = o, .st = st };

	if (!w)
		return NULL;
	py_walk_begin(w, o, frame);
	c.w = w;
	bpf_loop(PY_MAX_WALK, py_walk_step, &c, 0);
	return w;
}
#endif

/* A ring that went round holds the outermost PROFD_MAX_PY_FRAMES frames
 * starting at slot n % PROFD_MAX_PY_FRAMES (the leafmost one kept): copy
 * it twice end to end and take the leaf-first window.  Three fixed-size
 * copies, so the verifier sees constant bounds. */
static __always_inline void py_unring(struct profd_stack *st, __u32 n, __u32 rot_slot)
{
	struct py_rotate_buf *b = bpf_map_lookup_elem(&py_rotate, &rot_slot);
	__u32 off = (2 * (n % PROFD_MAX_PY_FRAMES)) & PY_RING_MASK;

	if (!b)
		return;
	bpf_probe_read_kernel(&b->w[0], sizeof(st->ips), st->ips);
	bpf_probe_read_kernel(&b->w[PROFD_STACK_WORDS], sizeof(st->ips), st->ips);
	bpf_probe_read_kernel(st->ips, sizeof(st->ips), &b->w[off]);
}

/* Walk the frames into the Python scratch stack (pairs, leaf first).
 * Returns the PROFD_SAMPLE_* bits of what was left out: PYSTACK_TRUNC
 * when a stack deeper than PROFD_MAX_PY_FRAMES lost its leafmost frames,
 * PYSTACK_NOROOT when the walk stopped before the outermost frame (an
 * unreadable frame, or a chain longer than PY_MAX_WALK). */
static __always_inline __u32 py_walk(const struct profd_pyoffsets *o, __u64 frame,
				     struct profd_stack *st, __u32 rot_slot)
{
	struct py_walk_state *w;
	__u32 n, lost = 0;

	st->kind = PROFD_STACK_PYTHON;
	st->nr = 0;
	w = py_walk_loop(o, frame, st, rot_slot);
	if (!w) {
		count(PROFD_CNT_PY_READ_FAIL);
		return PROFD_SAMPLE_PYSTACK_NOROOT;
	}
	n = st->nr / 2;
	if (n > PROFD_MAX_PY_FRAMES) {
		py_unring(st, n, rot_slot);
		st->nr = 2 * PROFD_MAX_PY_FRAMES;
		lost |= PROFD_SAMPLE_PYSTACK_TRUNC;
	}
	if (w->frame)
		lost |= PROFD_SAMPLE_PYSTACK_NOROOT;
	return lost;
}

/* The asyncio task the thread runs now, as one more pair past the
 * outermost frame (part of the stack's identity, so a task's samples
 * stay apart); nothing outside a task or while the offset is unknown. */
static __always_inline void py_tag_task(const struct profd_py_proc *pp, __u64 tstate,
					struct profd_stack *st)
{
	__u32 n = st->nr;
	__u64 task;

	if (!pp->asyncio_task_off || n + 2 > PROFD_STACK_WORDS)
		return;
	task = py_read_ptr(tstate + pp->asyncio_task_off);
	if (!task)
		return;
	st->ips[n & PY_RING_MASK] = task;
	st->ips[(n + 1) & PY_RING_MASK] = (__u64)PROFD_PYFRAME_TASK << 32;
	st->nr = n + 2;
}

/* The GIL's last holder and locked word: one read of both when locked
 * follows the holder at +8 or +12 (every CPython so far), else two. */
static __always_inline int py_gil_read(const struct profd_pyoffsets *o, __u64 gil, __u64 *holder,
				       __u32 *locked)
{
	__u64 both[2] = {};
	__u32 d = o->gil_locked - o->gil_last_holder;

	if (o->gil_locked > o->gil_last_holder && (d == 8 || d == 12)) {
		if (bpf_probe_read_user(both, d == 8 ? 12 : 16, (void *)(gil + o->gil_last_holder)))
			return -1;
		*holder = both[0];
		*locked = d == 8 ? (__u32)both[1] : (__u32)(both[1] >> 32);
		return 0;
	}
	if (bpf_probe_read_user(holder, sizeof(*holder), (void *)(gil + o->gil_last_holder)) ||
	    bpf_probe_read_user(locked, sizeof(*locked), (void *)(gil + o->gil_locked)))
		return -1;
	return 0;
}

/* Whether thread state tstate holds the GIL: the GIL is locked and it was
 * the last to take it.  Sets PROFD_SAMPLE_GIL_KNOWN when the state could
 * be read (offsets known, memory readable). */
static __always_inline void py_gil(const struct profd_py_proc *pp, __u64 tstate, __u32 *flags)
{
	const struct profd_pyoffsets *o = &pp->off;
	__u64 gil = 0, holder = 0, interp;
	__u32 locked = 0;

	if (o->gil_runtime_state) {
		gil = pp->runtime_addr + o->gil_runtime_state;
	} else if (o->gil_interp_ptr) {
		interp = py_read_ptr(tstate + o->tstate_interp);
		if (interp)
			gil = py_read_ptr(interp + o->gil_interp_ptr);
	}
	if (!gil || py_gil_read(o, gil, &holder, &locked))
		return;
	*flags |= PROFD_SAMPLE_GIL_KNOWN;
	if (locked && holder == tstate)
		*flags |= PROFD_SAMPLE_HOLDS_GIL;
}

/* Capture the Python stack of the current thread into the stacks map,
 * building it in scratch slot st, and return its ID (0: not a Python
 * thread right now).  Sets PROFD_SAMPLE_* bits in *flags.  rot_slot: the
 * caller's enum pyrot_slot (common.bpf.h). */
static __always_inline __u64 py_capture_into(const struct profd_py_proc *pp, __u32 tid,
					     struct profd_stack *st, __u32 *flags, __u64 now,
					     __u32 rot_slot)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 tp = PROFD_TASK_TP(task);
	__u64 tstate, frame;
	__u32 lost;

	count(PROFD_CNT_PY_SAMPLES);
	*flags |= PROFD_SAMPLE_PYTHON;
	tstate = py_thread_state(pp, tid, py_ns_tid(task, tid), tp, now, task, rot_slot);
	if (!tstate) {
		count(PROFD_CNT_PY_NO_TSTATE);
		return 0;
	}
	py_gil(pp, tstate, flags);
	frame = py_top_frame(&pp->off, tstate);
	if (!frame)
		return 0; /* a Python thread outside any Python code */
	if (!st)
		return 0;
	lost = py_walk(&pp->off, frame, st, rot_slot);
	if (lost) {
		count(PROFD_CNT_PY_TRUNC);
		*flags |= lost;
	}
	if (!st->nr)
		return 0;
	py_tag_task(pp, tstate, st);
	return stackhash_store(st, flags, PROFD_SAMPLE_PYSTACK_NEW, PROFD_CNT_STACKMAP_FULL);
}

/* The same for a CPU sample, in the sampler's own scratch slot. */
static __always_inline __u64 py_capture(const struct profd_py_proc *pp, __u32 tid,
					struct profd_sample *e)
{
	return py_capture_into(pp, tid, stackhash_scratch(PROFD_STACK_PYTHON), &e->flags,
			       e->time_ns, PYROT_SLOT_SAMPLE);
}

/* Optional eval-loop uprobe: _PyEval_EvalFrameDefault(tstate, frame,
 * throwflag) on 3.9+.  Records tid -> tstate for the sampler. */
SEC("uprobe")
int BPF_KPROBE(on_py_eval, __u64 tstate)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profd_py_thread v = { tstate, 0 }, *old;

	if (!bpf_map_lookup_elem(&py_procs, &tgid))
		return 0;
	count(PROFD_CNT_PY_UPROBE_HITS);
	old = bpf_map_lookup_elem(&py_threads, &tid);
	if (!old || old->tstate != tstate) /* writes are rarer than hits */
		bpf_map_update_elem(&py_threads, &tid, &v, BPF_ANY);
	return 0;
}

#endif
