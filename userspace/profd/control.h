/* control.h: the control thread (control_server.c), the answers it gives
 * (control.c), and what they read: stats (control_stats.c), threads'
 * stacks (control_threads.c, with what control_pystack.c reads on
 * request), asyncio tasks (control_async.c). */
#ifndef PROFD_CONTROL_H
#define PROFD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hashmap.h"

struct daemon;
struct proc;
struct control;
struct proto_stats;

/* control_threads.c: threads' current stacks (BPF's per-thread state) */
struct agg_query;
struct stackset;
/* Blocks of p's threads still under way, as off-cpu weight up to now
 * (a job on the ingest thread: it names frames and stores stacks). */
int control_ongoing_blocks(struct daemon *d, struct proc *p, const struct agg_query *q,
			   struct stackset *out);
/* Every thread of pid with its current stack into out (PROTO_RESP_STACKS),
 * made by a job on the ingest thread: call without d->lock.  uid: the caller's (0 sees every process); kernel: keep
 * kernel frames; locals: each Python frame read now with its variables
 * (PROTO_STACKS_LOCALS).  0, -EACCES, -ESRCH or -errno. */
int control_thread_stacks(struct daemon *d, uint32_t pid, uint32_t uid, bool kernel, bool locals,
			  struct stackset *out);

/* control_pystack.c: stacks read from the process on request.  Frame ids
 * are the reply stackset's, each range root first. */
#define PYNOW_NAME_MAX 64 /* PYTHREADS_NAME_MAX */
struct pynow_thread {
	uint32_t tid;	 /* host */
	uint32_t ns_tid; /* in the process's pid namespace */
	bool tstate;	 /* a Python thread state is this thread's */
	uint32_t py_first, npy; /* its Python frames (a cut stack: a marker first) */
	uint32_t k_first, nk;	/* its kernel frames (none while it runs) */
	/* Python's name of it (threading's Thread.name), "" if none. */
	char pyname[PYNOW_NAME_MAX];
	uint32_t nnat;		/* native frames read (a cut stack: a marker first) */
	uint32_t u_first, nu;	/* its user frames: native, Python in the eval loop's place */
	const char *native_why; /* why no native frames, when none */
};
struct pynow {
	struct pynow_thread *v;
	size_t n;
	struct hashmap by_tid, by_ns; /* tid -> index in v */
	uint32_t *ids;
	bool *entry; /* ids[i] is the outermost Python frame of an eval call */
	size_t nids, ids_cap;
	bool python;	  /* a CPython runtime was found */
	bool out_of_time; /* threads after the budget ran out were not read */
	bool locals;	  /* each Python frame's variables after it */
	bool names_only;  /* which thread state is which, and names: no frames */
	char why[96];	  /* why no Python stack was read at all, "" if read */
	const char *unread; /* why no thread was read: timed out or refused */
};
/* Every thread of pid, its Python frames (and with kernel, its kernel
 * frames; with locals, after each Python frame its FRAME_LOCAL ones, at
 * most PYNOW_MAX_LOCALS a thread) interned into out, which must be empty:
 * 0 (a process whose Python memory cannot be read says why in pn->why;
 * one whose memory did not answer within CONTROL_MEMREAD_TIMEOUT_MS, or
 * while too many other reads are stuck, in pn->unread, with no thread),
 * -ESRCH or -ENOMEM.  Read on a reader thread (memread.h); pn is to be
 * freed either way.  Check the caller may look at pid first. */
#define PYNOW_MAX_LOCALS 2048
int pynow_read(struct pynow *pn, uint32_t pid, bool kernel, bool locals, struct stackset *out);
/* control_pylocals.c: the variables of the Python frame at frame (code
 * running) as FRAME_LOCAL frames into out and their ids onto pn->ids,
 * while the thread whose ids start at first has fewer than
 * PYNOW_MAX_LOCALS of them.  A frame whose variables cannot be read gets
 * none.  0 or -ENOMEM. */
struct pyruntime;
int pynow_add_locals(struct pynow *pn, const struct pyruntime *rt, uint64_t code, uint64_t frame,
		     uint32_t first, struct stackset *out);
/* The same, threads' Python names only (pyname; no frames read). */
int pynow_read_names(struct pynow *pn, uint32_t pid);
/* A process with thousands of threads (or memory that lies) gets this
 * long for its Python frames, and as long again for its native ones; the
 * threads not read by then say so. */
#define PYNOW_BUDGET_NS (500ull * 1000000ull)
/* control_native.c: each thread of pn (read by pynow_read) with its
 * native frames, walked from the user registers of a thread blocked in
 * the kernel on a reader thread of their own (memread.h), named into out
 * and merged with its Python frames (u_first, nu).  A read that times out
 * leaves every thread's Python frames and says why in native_why.
 * 0 or -ENOMEM. */
int pynow_read_native(struct pynow *pn, uint32_t pid, struct stackset *out);
/* Room for n more ids in pn->ids: 0 or -ENOMEM. */
int pynow_keep_ids(struct pynow *pn, uint32_t n);
/* An ids array and its parallel flags grown together to hold need
 * entries (*cap updated): 0 or -ENOMEM, the arrays kept either way. */
int pynow_grow_ids(uint32_t **ids, bool **flags, size_t *cap, size_t need);
const struct pynow_thread *pynow_find(const struct pynow *pn, uint32_t tid);

/* control_pynames.c: in a dump by thread (ss) of the live processes
 * pids, the roots of threads Python names renamed "NAME (TID)", at depth
 * 1 under a process root (process_root), else 0.  Nothing done for more
 * than PYNAMES_MAX_PROCS processes (each is read from its memory).  0 or
 * -ENOMEM. */
#define PYNAMES_MAX_PROCS 16
int control_python_thread_roots(const uint32_t *pids, size_t n, bool process_root,
				struct stackset *ss);
/* The same for a timeline's threads: their pyname set. */
struct tlset;
int control_python_thread_tracks(const uint32_t *pids, size_t n, struct tlset *tl);
void pynow_free(struct pynow *pn);

/* How long the control thread waits for a read of a process's memory
 * (memread.h): the reads' own 500 ms budget, finding the runtime, and a
 * margin.  Every other client may wait this long behind it, no longer
 * (`profctl stacks`: this, then up to a second for the native frames). */
#define CONTROL_MEMREAD_TIMEOUT_MS 1500
/* Moves from's stacks and frames into out, which must be empty (else
 * -EINVAL); from is left empty. */
int control_stackset_move(struct stackset *out, struct stackset *from);

/* control_async.c: whether uid may look at pid (its owner or root):
 * 0, -EACCES or -ESRCH; takes d->lock briefly. */
int control_may_look(struct daemon *d, uint32_t pid, uint32_t uid);
/* control_async.c: pid's asyncio tasks into out (PROTO_STACKS_ASYNC);
 * takes d->lock only to check uid; read on a reader thread (memread.h).
 * 0, -EACCES, -ESRCH, -ENOENT (no CPython, or asyncio not imported),
 * -EPROTONOSUPPORT (before 3.14), -ETIMEDOUT (its memory did not answer
 * within CONTROL_MEMREAD_TIMEOUT_MS), -EBUSY (too many reads stuck). */
int control_async_tasks(struct daemon *d, uint32_t pid, uint32_t uid, struct stackset *out);

/* control_workload.c: workloads in answers (identity.h) */
struct workload_id;
struct history_proc;
struct proto_dump_req;
/* A field of p's workload by wire index (enum proto_ident); NULL when
 * wid is. */
const char *control_wid_ident(const struct workload_id *wid, int i);
/* History's stored fields by wire index into out[PROTO_IDENT_N]. */
void control_history_ident(const struct history_proc *hp, const char **out);
/* Whether r selects by workload, and whether wid is selected (NULL:
 * not read yet, never). */
bool control_by_workload(const struct proto_dump_req *r);
bool control_workload_matches(const struct proto_dump_req *r, const struct workload_id *wid);
/* "comm x service y" for messages and titles. */
void control_describe_selectors(const struct proto_dump_req *r, char *out, size_t n);
/* A dump's title (its service where that says more than comm) and, with
 * fields, the workload fields every selected process shares. */
void control_workload_meta(struct stackset *ss, struct proc **sel, size_t nsel, bool fields);
/* The title of a dump made only of history's processes. */
void control_history_title(struct stackset *ss, const struct proto_dump_req *r, size_t n);
/* Processes history knows whose stored workload r selects, uid's (0:
 * any), but for the n (pid, start time) pairs memory selected: appended
 * to out (freed by the caller).  0 or -errno. */
struct control_wl_sel {
	uint32_t *pids;
	uint64_t *starts;
	size_t n, cap;
};
int control_workload_history(struct daemon *d, uint32_t uid, const struct proto_dump_req *r,
			     const uint32_t *pids, const uint64_t *starts, size_t n,
			     struct control_wl_sel *out);

/* control_timeline.c: under d->lock, the timelines of the nsel processes
 * in sel within q's window (q's view flags apply) into out; then, without
 * the lock, out sorted by time and encoded as PROTO_RESP_TIMELINE's
 * payload.  0 or -errno. */
struct tlset;
struct buf;
int control_timeline_collect(struct daemon *d, struct proc **sel, size_t nsel,
			     const struct agg_query *q, struct tlset *out);
int control_timeline_encode(struct tlset *t, struct buf *payload);

/* control_server.c: the control thread */
/* Before the slow start: 0 if path can become the socket, -EADDRINUSE
 * when a daemon answers there already, -EEXIST when something other than
 * a socket is there, -ENAMETOOLONG. */
int control_check_free(const char *path);
/* The listening socket at path (replacing a stale socket, nothing else),
 * or -errno. */
int control_listen(const char *path);
/* Removes path if it is a socket (on the way out). */
void control_unlink_socket(const char *path);
struct control *control_start(struct daemon *d, int listen_fd);
void control_stop(struct control *c);
void control_stats(struct control *c, struct proto_stats *s);

/* control.c: one request, answered into out (a whole message: header and
 * payload), taking the locks it needs. */
struct caller {
	uid_t uid;
	pid_t pid;
};
struct buf;
void control_answer(struct daemon *d, const struct caller *c, uint16_t type,
		    const struct buf *payload, struct buf *out);

/* Under d->lock (the tick): keep the stats figures for daemon_lock_other_within's timeouts. */
void control_publish_stats(struct daemon *d);
/* The stats answer's payload (control_stats.c). */
int control_stats_payload(struct daemon *d, struct buf *payload);

#endif
