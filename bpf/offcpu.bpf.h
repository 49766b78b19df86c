/* offcpu.bpf.h: off-CPU time.  sched_switch (tp_btf) runs in the context
 * of the thread leaving the CPU, so at a voluntary switch-out (the thread
 * blocks: sleep, lock, I/O) its kernel stack, its user registers and its
 * Python frames are the blocked thread's own: that is where the stacks are
 * walked.  A block of at least offcpu_min_ns is sent as one event
 * weighted by its time off CPU.
 *
 * Only the switch-out runs code.  When the thread came back is the
 * scheduler's own record (sched_info.last_arrival, written right after
 * this tracepoint when it is switched in), so a block is settled (sent,
 * or counted as short) the next time the thread itself shows up: its
 * next switch-out, its next CPU sample or its exit, whichever comes
 * first.  A block's event is therefore late by at most the thread's run
 * until then (a sample interval for a thread that keeps running), and the
 * switch-in, half of every context switch, costs nothing: measured, its
 * task-storage look-up was half of what a storm switch paid
 * (bench/switch_floor --interleaved).
 *
 * Cost is bounded per CPU:
 *  - the per-thread state lives in task storage (no hash of all threads,
 *    freed with the task);
 *  - a switch-out is walked unless the thread is in a storm: its last 8
 *    blocks were all shorter than the threshold, it ran for less than the
 *    threshold since it came back, and it was walked less than
 *    offcpu_rewalk_ns ago.  A storm costs one task-storage lookup per
 *    switch, not a walk.  A long block right out of a storm is
 *    sent without stacks ("[off-cpu: stack not walked]"), except for
 *    a young thread (offcpu_young): a program starting up blocks
 *    briefly many times (pipes, imports), then often for good (a
 *    multiprocessing child that waits for work, a job that hangs),
 *    and that block is the one to see;
 *  - the time is the scheduler's own clock, read for this very switch
 *    (offcpu_now): reading the clocksource again cost more than all the
 *    rest of a storm switch on a paravirtualized clock (bench/RESULTS.md);
 *  - switches away from kernel threads, the idle task and profd's own
 *    threads return before any of it.
 *  - walks and events each have a per-CPU budget per 10 ms window; a
 *    thread's first walk has a budget of its own, so a busy machine's
 *    rewalks never starve a new thread (which may block once, forever).
 * Every skip is counted (PROFD_CNT_OFFCPU_*). */
#ifndef PROFD_OFFCPU_BPF_H
#define PROFD_OFFCPU_BPF_H

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "kcompat.bpf.h"
#include "profd_abi.h"
#include "python.bpf.h"
#include "stackcap.bpf.h"
#include "stackhash.bpf.h"
#include "unwind.bpf.h"

#define OFFCPU_WINDOW_NS 10000000ull /* budget window */
/* A thread younger than this is walked through a storm, for its first
 * OFFCPU_YOUNG_WALKS walks: a start-up's blocks are walked, a young
 * thread in a real storm costs that many walks (~1 ms) and no more. */
#define OFFCPU_YOUNG_NS 2000000000ull
#define OFFCPU_YOUNG_WALKS 64

/* Set by userspace before load. */
const volatile __u32 offcpu_enabled = 0;
const volatile __u64 offcpu_min_ns = 1000000;   /* blocks shorter are not sent */
const volatile __u64 offcpu_rewalk_ns = 1000000000; /* walk at least this often per thread */
const volatile __u32 offcpu_walks_per_window = 50;  /* per CPU per 10 ms, each kind */
const volatile __u32 offcpu_events_per_window = 200; /* per CPU per 10 ms */
/* profd's own process: never traced off CPU.  Its threads wake for the
 * events this program sends, so tracing them would feed on itself (they
 * were 61% of the machine's off-CPU time on a quiet machine). */
const volatile __u32 offcpu_self_tgid = 0;

/* Each thread's state: task storage, freed with the task (5.11+); in
 * the legacy object (kcompat.bpf.h) a hash by tid, deleted at the
 * thread's exit and bounded by LRU eviction. */
#ifdef PROFD_LEGACY
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct profd_thread_state);
} thread_states SEC(".maps");
#else
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct profd_thread_state);
} thread_states SEC(".maps");
#endif

/* The legacy object's new states start as this value (zeroes).  A map in
 * both objects, so their globals and maps stay the same (kcompat.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_thread_state);
} thread_state_zero SEC(".maps");

/* t's state, or NULL; created when create is set and t has none. */
static __always_inline struct profd_thread_state *thread_state(struct task_struct *t, int create)
{
#ifdef PROFD_LEGACY
	__u32 tid = BPF_CORE_READ(t, pid), k = 0;
	struct profd_thread_state *ts = bpf_map_lookup_elem(&thread_states, &tid), *zero;

	if (ts || !create)
		return ts;
	zero = bpf_map_lookup_elem(&thread_state_zero, &k);
	if (!zero)
		return NULL;
	bpf_map_update_elem(&thread_states, &tid, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&thread_states, &tid);
#else
	return bpf_task_storage_get(&thread_states, t, 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
#endif
}

/* A thread exits: the legacy object's hash forgets it. */
static __always_inline void thread_state_forget(struct task_struct *t)
{
#ifdef PROFD_LEGACY
	__u32 tid = BPF_CORE_READ(t, pid);

	bpf_map_delete_elem(&thread_states, &tid);
#endif
}

/* Off-CPU walks build stacks here: the program runs with interrupts off,
 * but a slot of its own keeps that an implementation detail. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct profd_stack);
} offcpu_scratch SEC(".maps");

/* Per CPU: the budgets of the current window, and the offset from the
 * scheduler's clock to CLOCK_MONOTONIC (offcpu_now). */
struct offcpu_budget {
	__u64 window; /* ktime / OFFCPU_WINDOW_NS */
	__u32 walks, first_walks, events, _pad;
	__u64 clock_off;   /* ktime - rq->clock at clock_at (mod 2^64) */
	__u64 clock_at;    /* rq->clock then */
};

enum offcpu_spend { OFFCPU_EVENT, OFFCPU_WALK, OFFCPU_FIRST_WALK };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_budget);
} offcpu_budgets SEC(".maps");

#define OFFCPU_CALIB_NS 10000000ull /* rq->clock -> ktime offset refreshed this often */

static __always_inline struct offcpu_budget *offcpu_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&offcpu_budgets, &zero);
}

/* Now, in CLOCK_MONOTONIC ns (as bpf_ktime_get_ns, which userspace
 * compares off_ns with), from the clock the scheduler read at the start
 * of this switch (rq->clock, sched_clock): a bpf_ktime_get_ns() call per
 * switch was the largest part of a storm switch's cost on a
 * paravirtualized clocksource.  The offset between the two clocks is
 * measured again every 10 ms per CPU, so the error stays within their
 * drift over that time (ns with a stable TSC, at most microseconds where
 * the kernel filters an unstable one); a switch-out and a switch-in on
 * different CPUs may then disagree by that much, which only a block that
 * short could notice (offcpu_settle clamps it at 0).  Kernels without
 * cfs_rq->rq (no group scheduling) read the clocksource. */
static __always_inline __u64 offcpu_now(struct task_struct *t, struct offcpu_budget *b)
{
	__u64 sc = 0;

	if (bpf_core_field_exists(struct cfs_rq, rq)) {
		struct cfs_rq *cfs = t->se.cfs_rq;

		sc = cfs ? cfs->rq->clock : 0;
	}
	if (!sc || !b)
		return bpf_ktime_get_ns();
	if (sc - b->clock_at >= OFFCPU_CALIB_NS || !b->clock_at) {
		b->clock_off = bpf_ktime_get_ns() - sc;
		b->clock_at = sc;
	}
	return sc + b->clock_off;
}

/* Take one event or walk from this CPU's budget. */
static __always_inline int offcpu_take(struct offcpu_budget *b, __u64 now,
				       enum offcpu_spend what)
{
	__u64 w = now / OFFCPU_WINDOW_NS;

	if (!b)
		return 0;
	if (w > b->window) { /* never back: a late event counts in the current window */
		b->window = w;
		b->walks = 0;
		b->first_walks = 0;
		b->events = 0;
	}
	if (what == OFFCPU_WALK)
		return b->walks < offcpu_walks_per_window ? ++b->walks : 0;
	if (what == OFFCPU_FIRST_WALK)
		return b->first_walks < offcpu_walks_per_window ? ++b->first_walks : 0;
	return b->events < offcpu_events_per_window ? ++b->events : 0;
}

static __always_inline struct profd_stack *offcpu_slot(__u32 kind)
{
	__u32 slot = kind - 1;

	return bpf_map_lookup_elem(&offcpu_scratch, &slot);
}

/* A user thread, not exiting: blocks during exit (after its exit hook
 * settled the last one, offcpu_note_exit) are not traced. */
static __always_inline int offcpu_user_task(struct task_struct *t)
{
	return t->pid && !(t->flags & (PF_KTHREAD | PF_EXITING)) && t->mm;
}

/* Walk the blocking thread's three stacks into its state. */
static __always_inline void offcpu_walk(void *ctx, struct task_struct *prev,
					struct profd_thread_state *ts, __u64 now)
{
	__u32 tgid = prev->tgid, tid = prev->pid;
	struct profd_py_proc *py = bpf_map_lookup_elem(&py_procs, &tgid);
	struct unwind_regs regs;
	int have_regs = stackcap_entry_regs(&regs) == 0;

	/* The flags gather in map memory, where the verifier does not follow
	 * their values (sample_scratch in sample.bpf.c says why). */
	ts->flags = 0;
	ts->kstack_id = stackcap_get_stack(ctx, offcpu_slot(PROFD_STACK_KERNEL),
					   PROFD_STACK_KERNEL, &ts->flags);
	ts->ustack_id = stackcap_user(ctx, offcpu_slot(PROFD_STACK_USER), &regs, have_regs, tgid,
				      &ts->flags, PYROT_SLOT_OFFCPU);
	ts->pystack_id = py ? py_capture_into(py, tid, offcpu_slot(PROFD_STACK_PYTHON),
					      &ts->flags, now, PYROT_SLOT_OFFCPU)
			    : 0;
	ts->captured_ns = now;
	ts->captured = 1;
	if (ts->walks < 255)
		ts->walks++;
	count(PROFD_CNT_OFFCPU_CAPTURES);
}

/* Whether t is a young thread still walked through a storm: a few walks
 * into its first OFFCPU_YOUNG_NS (start_time read only for a storm
 * candidate). */
static __always_inline int offcpu_young(struct task_struct *t, struct profd_thread_state *ts,
					__u64 now)
{
	return ts->walks < OFFCPU_YOUNG_WALKS &&
	       now - BPF_CORE_READ(t, start_time) < OFFCPU_YOUNG_NS;
}

/* t's state, created if it has none yet.  Looked up without the create
 * flag first: with it, the helper costs ~10 ns more per call even when
 * the state exists (kernel.bpf_stats_enabled), and nearly every call
 * finds it. */
static __always_inline struct profd_thread_state *offcpu_state(struct task_struct *t)
{
	struct profd_thread_state *ts = thread_state(t, 0);

	return ts ? ts : thread_state(t, 1);
}

/* Whether the kernel keeps sched_info (CONFIG_SCHED_INFO: last_arrival
 * and pcount come together); without it a switch-in hook notes arrivals
 * (offcpu_note_arrival). */
static __always_inline int offcpu_have_sched_info(void)
{
	return bpf_core_field_exists(struct sched_info, last_arrival);
}

/* Whether the scheduler recorded a switch-in of t since its switch-out
 * that noted pcount_out: sched_info_arrive() counts pcount exactly when
 * it writes last_arrival (and skips both for a task it did not see
 * queued, ~0.2% of blocks on 6.18).  Kernels without sched_info: the
 * switch-in hook's on_ns (offcpu_note_arrival). */
static __always_inline int offcpu_back_recorded(struct task_struct *t,
						struct profd_thread_state *ts)
{
	if (!offcpu_have_sched_info())
		return ts->on_ns >= ts->off_ns;
	return (__u32)t->sched_info.pcount != ts->pcount_out;
}

/* When t, running now, came back from its open block (CLOCK_MONOTONIC
 * ns), 0 if the scheduler did not record it: sched_info.last_arrival is
 * this CPU's rq->clock at that switch-in (a task changes CPU only
 * through a switch), converted with this CPU's offset. */
static __always_inline __u64 offcpu_back(struct task_struct *t, struct profd_thread_state *ts,
					 struct offcpu_budget *b)
{
	if (!offcpu_back_recorded(t, ts))
		return 0;
	if (!offcpu_have_sched_info())
		return ts->on_ns;
	return b ? t->sched_info.last_arrival + b->clock_off : 0;
}

/* Send t's ended block (d ns off CPU, back on CPU at `back`); `now`
 * charges it to this CPU's current budget window. */
static __always_inline void offcpu_send(struct task_struct *t, struct profd_thread_state *ts,
					__u64 back, __u64 d, __u64 now, struct offcpu_budget *b)
{
	struct profd_offcpu_event *e;

	if (!offcpu_take(b, now, OFFCPU_EVENT)) {
		count(PROFD_CNT_OFFCPU_RATE_LIMITED);
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(PROFD_CNT_OFFCPU_RB_FULL);
		return;
	}
	e->type = PROFD_EV_OFFCPU;
	e->pid = t->tgid;
	e->tid = t->pid;
	e->state = ts->state;
	e->time_ns = back;
	e->duration_ns = d;
	e->_pad = 0;
	if (ts->captured) {
		e->kstack_id = ts->kstack_id;
		e->ustack_id = ts->ustack_id;
		e->pystack_id = ts->pystack_id;
		e->flags = ts->flags & ~(PROFD_SAMPLE_KSTACK_NEW | PROFD_SAMPLE_USTACK_NEW |
					 PROFD_SAMPLE_PYSTACK_NEW);
	} else {
		e->kstack_id = e->ustack_id = e->pystack_id = 0;
		e->flags = PROFD_OFFCPU_UNCAPTURED;
		count(PROFD_CNT_OFFCPU_UNCAPTURED);
	}
	e->start_ns = t->group_leader->start_boottime;
	__builtin_memcpy(e->comm, t->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, events_wakeup_flag());
	count(PROFD_CNT_OFFCPU_SENT);
}

/* t, on CPU now, came back at `back` from the block that began at
 * ts->off_ns: send it if it was long enough, count it either way.
 * Called by whatever sees the thread first after its block: its next
 * switch-out, a CPU sample of it, its exit.  The block is claimed first
 * (off_ns read and cleared in two adjacent instructions): the exit
 * program runs with interrupts on, and a sample interrupting it then
 * finds nothing left to settle. */
static __always_inline void offcpu_settle(struct task_struct *t, struct profd_thread_state *ts,
					  __u64 back, __u64 now, struct offcpu_budget *b)
{
	__u64 off = *(volatile __u64 *)&ts->off_ns, d;

	*(volatile __u64 *)&ts->off_ns = 0;
	if (!off)
		return;
	d = back > off ? back - off : 0; /* 0: two CPUs' clocks disagreeing a little */
	ts->last_block_ns = d;
	ts->long_hist = ts->long_hist << 1 | (d >= offcpu_min_ns);
	if (d < offcpu_min_ns) {
		count(PROFD_CNT_OFFCPU_SHORT);
		if (ts->captured)
			count(PROFD_CNT_OFFCPU_WALK_UNUSED); /* what the storm test missed */
		return;
	}
	offcpu_send(t, ts, back, d, now, b);
}

/* When t, on CPU now with an open block whose end the scheduler did not
 * record, came back: estimated from its run time since (sum_exec_runtime
 * counts from that switch-in, less interrupt and steal time: the block
 * may come out longer by that much; 0 if even that is missing: RT tasks
 * keep no prev_sum_exec_runtime).  The run since the last tick or switch
 * is not in sum_exec_runtime yet: the block may come out longer by that
 * much too. */
static __always_inline __u64 offcpu_back_estimated(struct task_struct *t, __u64 now)
{
	__u64 ran = t->se.sum_exec_runtime - t->se.prev_sum_exec_runtime;

	if (ran >= now)
		return 0; /* lost: counted by the caller */
	count(PROFD_CNT_OFFCPU_END_ESTIMATED);
	return now - ran;
}

/* At prev's switch-out: when it came back from its open block, as
 * recorded, else estimated. */
static __always_inline __u64 offcpu_back_at_switch(struct task_struct *prev,
						   struct profd_thread_state *ts, __u64 now,
						   struct offcpu_budget *b)
{
	__u64 back = offcpu_back(prev, ts, b);

	if (back || !ts->off_ns)
		return back;
	return offcpu_back_estimated(prev, now);
}

/* prev leaves the CPU: settle the block it came back from, note when this
 * one starts, walk its stacks if worth it.  One task-storage lookup: a
 * thread's storage is zeroed when created, and one never walked (new, or
 * created by a CPU sample) is "fresh". */
static __always_inline void offcpu_switch_out(void *ctx, struct task_struct *prev,
					      unsigned int state, __u64 now,
					      struct offcpu_budget *b)
{
	struct profd_thread_state *ts;
	__u64 back;
	int fresh;

	ts = offcpu_state(prev);
	if (!ts) {
		count(PROFD_CNT_OFFCPU_NO_STORAGE);
		return;
	}
	back = offcpu_back_at_switch(prev, ts, now, b);
	if (back)
		offcpu_settle(prev, ts, back, now, b);
	else if (ts->off_ns)
		count(PROFD_CNT_OFFCPU_END_LOST);
	count(PROFD_CNT_OFFCPU_BLOCKS);
	ts->off_ns = now;
	if (offcpu_have_sched_info())
		ts->pcount_out = (__u32)prev->sched_info.pcount;
	ts->state = state;
	ts->captured = 0;
	fresh = !ts->captured_ns;
	/* The storm test first: most switches of a busy machine end here. */
	if (!fresh && !(ts->long_hist & 0xff) && back && now - back < offcpu_min_ns &&
	    now - ts->captured_ns < offcpu_rewalk_ns && !offcpu_young(prev, ts, now))
		return;
	if (fresh)
		ts->long_hist = 0xff; /* no history yet: not a storm */
	if (!offcpu_take(b, now, fresh ? OFFCPU_FIRST_WALK : OFFCPU_WALK)) {
		count(PROFD_CNT_OFFCPU_CAPTURE_LIMITED);
		return;
	}
	offcpu_walk(ctx, prev, ts, now);
}

/* Kernels without sched_info only: next comes back now. */
static __always_inline void offcpu_note_arrival(struct task_struct *next, __u64 now)
{
	struct profd_thread_state *ts = thread_state(next, 0);

	if (ts)
		ts->on_ns = now;
}

/* The offset from rq->clock to CLOCK_MONOTONIC is measured by switches
 * (offcpu_now: rq->clock is only fresh inside the scheduler); one older
 * than this is not used: NTP slews CLOCK_MONOTONIC by up to 500 us a
 * second. */
#define OFFCPU_OFFSET_MAX_AGE_NS 1000000000ull

/* When t, running on this CPU since it came back from its open block,
 * came back, with this CPU's offset measured again here if it is missing
 * or stale: a CPU where no traced thread switched out for a second (idle
 * but for a sleeper that wakes and exits at once) has none fresh, and the
 * last block of such a sleeper was lost.  rq->clock was last updated at
 * t's switch-in or a tick since, so the estimate lies between the true
 * end and now: late by at most t's run since it came back, as a block
 * settled at a switch-out whose arrival the scheduler did not record. */
static __always_inline __u64 offcpu_back_now(struct task_struct *t,
					     struct profd_thread_state *ts, __u64 now,
					     struct offcpu_budget *b)
{
	struct offcpu_budget fresh = {};
	__u64 rq_clock = 0;

	if (!offcpu_have_sched_info() ||
	    (b->clock_at && now - (b->clock_at + b->clock_off) <= OFFCPU_OFFSET_MAX_AGE_NS))
		return offcpu_back(t, ts, b);
	if (bpf_core_field_exists(struct cfs_rq, rq)) {
		struct cfs_rq *cfs = t->se.cfs_rq;

		rq_clock = cfs ? cfs->rq->clock : 0;
	}
	if (!rq_clock || rq_clock > now)
		return 0;
	fresh.clock_off = now - rq_clock;
	count(PROFD_CNT_OFFCPU_END_RECALIBRATED);
	return offcpu_back(t, ts, &fresh);
}

/* The current thread, running, `now` (CLOCK_MONOTONIC): settle its
 * block if it is still open (it has not switched out since it came
 * back).  0: left open (the scheduler did not record the switch-in):
 * its next switch-out settles it. */
static __always_inline int offcpu_settle_current(struct task_struct *t,
						 struct profd_thread_state *ts, __u64 now)
{
	struct offcpu_budget *b;
	__u64 back;

	if (!ts->off_ns)
		return 1;
	b = offcpu_cpu();
	if (!b)
		return 0;
	back = offcpu_back_now(t, ts, now, b);
	if (!back)
		return 0;
	offcpu_settle(t, ts, back, now, b);
	return 1;
}

/* A CPU sample of the current thread: remembered for `profctl stacks`,
 * and the block it came back from settled. */
static __always_inline void offcpu_note_sample(const struct profd_sample *e)
{
	struct profd_thread_state *ts;

	if (!offcpu_enabled)
		return;
#ifdef PROFD_LEGACY
	/* No BTF pointer to the current task here: the sample is kept and
	 * the block it ended is settled at the thread's next switch-out. */
	ts = thread_state(profd_current_task(), 1);
	if (!ts)
		return;
#else
	struct task_struct *t = bpf_get_current_task_btf();

	ts = offcpu_state(t);
	if (!ts)
		return;
	offcpu_settle_current(t, ts, e->time_ns);
#endif
	ts->sample_ns = e->time_ns;
	ts->sample_kstack_id = e->kstack_id;
	ts->sample_ustack_id = e->ustack_id;
	ts->sample_pystack_id = e->pystack_id;
	ts->sample_flags = e->flags;
}

/* A thread of a selected process exits: the block it came back from, if
 * neither a switch-out nor a sample settled it (blocks after this one
 * are not traced: offcpu_user_task).  No switch-out will come to settle
 * a block whose end the scheduler did not record: its end is estimated
 * here, as a switch-out would (a sleeper that wakes only to exit lost
 * its whole sleep without this, seen once in ~20 such sleepers in CI). */
static __always_inline void offcpu_note_exit(struct task_struct *t)
{
	struct profd_thread_state *ts;
	struct offcpu_budget *b;
	__u64 now, back = 0;

	if (!offcpu_enabled || !selected(t->tgid))
		return;
	ts = thread_state(t, 0);
	if (ts && ts->off_ns) {
		now = bpf_ktime_get_ns();
		b = offcpu_cpu();
		if (b && !(back = offcpu_back_now(t, ts, now, b)))
			back = offcpu_back_estimated(t, now);
		if (back) {
			offcpu_settle(t, ts, back, now, b);
		} else {
			ts->off_ns = 0;
			count(PROFD_CNT_OFFCPU_END_LOST);
		}
	}
	thread_state_forget(t);
}

/* Fires in prev's context with interrupts off.  A preempted thread
 * (preempt, or prev_state TASK_RUNNING) is off CPU too, runnable and
 * waiting for one (state 0): on a busy machine that is part of its wall
 * time.  Every switch on the machine runs this: the cheap tests come
 * first, and a switch away from a kernel thread, the idle task or one
 * of profd's own threads reads neither the clock nor any map (on
 * kernels without sched_info, a switch to a traced thread notes its
 * arrival). */
#ifdef PROFD_LEGACY
/* Before 5.14 the field was state, a long. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* The tracepoint passes prev_state from 5.18 on; before, the task has it. */
static __always_inline unsigned int offcpu_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	unsigned int prev_state = offcpu_task_state(prev);
#else
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
#endif
	int out = offcpu_user_task(prev) && prev->tgid != offcpu_self_tgid && selected(prev->tgid);
	int in = !offcpu_have_sched_info() && offcpu_user_task(next) &&
		 selected(next->tgid);
	struct offcpu_budget *b;
	__u64 now;

	if (!out && !in)
		return 0;
	b = offcpu_cpu();
	now = offcpu_now(prev, b);
	if (out)
		offcpu_switch_out(ctx, prev, preempt ? 0 : prev_state, now, b);
	if (in)
		offcpu_note_arrival(next, now);
	return 0;
}

#endif
