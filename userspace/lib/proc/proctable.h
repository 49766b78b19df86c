/* proctable: every process profd has seen, keyed by (pid, start time) so
 * a reused pid never merges two programs.  Live processes are indexed by
 * pid; exited ones stay (queryable) until the retention time passes. */
#ifndef PROFD_PROCTABLE_H
#define PROFD_PROCTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "procmaps.h"

struct proc_profile;
struct proc_ingest;
struct workload_id;

#define PROC_UID_UNKNOWN UINT32_MAX

/* An exited process keeps its maps this long: its last samples are read
 * after its exit (the lifecycle ring is read before the samples', which
 * ingest reads at most a second apart) and are named with them.  One
 * that never got a sample or event is then dropped. */
#define PROC_LINGER_NS (3ull * 1000000000ull)

/* A process's resident set over time: one point per bucket while it
 * runs (read on the worker), oldest overwritten first. */
#define PROC_RSS_POINTS 64
struct proc_rss {
	uint64_t t_ns[PROC_RSS_POINTS]; /* CLOCK_REALTIME */
	uint64_t bytes[PROC_RSS_POINTS];
	uint32_t head, n; /* the oldest point, how many */
};

struct proc {
	size_t slot;         /* index in proctable.all */
	uint64_t exit_ticket; /* place in proctable.exited (exited only) */
	uint32_t pid;
	uint32_t ppid;       /* the parent's pid (exec event or /proc); 0 unknown */
	uint32_t uid;
	uint64_t start_time; /* clock ticks since boot (/proc/PID/stat field 22); 0 = unknown */
	char comm[16];
	char *exe;           /* readlink(/proc/PID/exe) or NULL */
	/* uid and exe are read off the sample path (proctable_add): until
	 * the answer comes, uid is PROC_UID_UNKNOWN (only root sees it). */
	bool identity_pending;
	uint32_t identity_req; /* requests made: an old answer is ignored */
	/* Its workload (identity.h: unit, container, pod, script, service),
	 * read off the sample path: NULL until the first answer, then
	 * replaced whole by each (an exec's, a cgroup recheck's). */
	struct workload_id *wid;
	uint32_t wid_req;	   /* requests made: an old answer is ignored */
	uint64_t wid_asked_mono_ns; /* the last request */
	uint64_t wid_activity;	   /* samples + events then: idle ones wait */
	bool exited;
	/* A process with ranks of a job under it (their workload says so):
	 * kept after its exit as one with samples is, so that the job keeps
	 * its launcher (mpirun, torchrun mostly wait, and may exit first). */
	bool heads_job;
	uint64_t exit_ns;    /* CLOCK_REALTIME */
	uint64_t exec_ns;    /* its last exec seen, CLOCK_REALTIME; 0 none */
	uint64_t first_ns, last_ns; /* first and last event of any type, CLOCK_REALTIME */
	uint64_t samples;    /* CPU samples */
	uint64_t events;     /* weights of other profile types (GPU, CUDA) */
	struct proc_rss *rss; /* NULL until the first point */
	uint64_t rss_asked_mono_ns; /* when its RSS was last asked for */
	uint64_t rss_activity; /* samples + events then: idle ones are not asked again */
	uint32_t rss_req;      /* requests made: an old answer is ignored */
	uint64_t rss_flushed_ns; /* the newest point history holds */

	struct procmaps maps;
	bool maps_loaded;
	uint64_t maps_mono_ns; /* when maps were last read (CLOCK_MONOTONIC) */
	uint64_t maps_reload_gap_ns; /* backoff between reloads that find nothing */
	/* Maps are read on the worker: one request at a time, for the address
	 * that asked (a reload that maps it resets the backoff). */
	bool maps_pending;
	uint32_t maps_req;
	uint64_t maps_want_ip;

	/* What other stages keep per process, each made, reset and freed
	 * through its owner's hooks (struct proc_owner), never here. */
	struct proc_ingest *ing;      /* ingest's caches and Python state (ingest.h) */
	struct proc_profile *profile; /* owned by the aggregator */
};

/* A stage that keeps state per process (the aggregator's profile,
 * ingest's caches) is told of each entry's life: made with the entry (an
 * error refuses the entry: the sample is counted as dropped), reset when
 * the process execs or its maps change (cached addresses are stale), and
 * freed with it.  Any hook may be NULL. */
struct proc_owner {
	int (*on_new)(struct proc *p);
	void (*on_exec)(struct proc *p);
	void (*on_maps)(struct proc *p);
	void (*on_free)(struct proc *p);
};
#define PROC_OWNERS_MAX 4

struct proctable {
	struct hashmap live; /* pid -> struct proc * */
	struct hashmap dead; /* pid -> the latest exited struct proc * with it */
	struct proc **all;   /* every tracked process, live or exited */
	size_t n, cap;
	/* Exited processes in the order they ended, so the one to evict is
	 * found without a scan (10,000 processes, hundreds of execs a
	 * second).  Entries of processes removed since are NULL; ticket t is
	 * at exited[t - exited_first]. */
	struct proc **exited;
	size_t exited_head, exited_len, exited_cap;
	uint64_t exited_first;
	uint64_t settled_ticket; /* exits before this one have ended their linger */
	size_t unqueued;     /* exited processes the FIFO had no room for */
	size_t max_procs;
	uint64_t evicted;    /* exited processes dropped to respect max_procs */
	uint64_t expired;    /* exited processes dropped after the retention */
	const char *proc_root; /* "/proc", overridable for tests */
	struct proc_owner owners[PROC_OWNERS_MAX];
	size_t nowners;
};

void proctable_init(struct proctable *pt, size_t max_procs, const char *proc_root);
void proctable_free(struct proctable *pt);
/* Registers o for every entry, those already there included: 0, -ENOMEM
 * (then the entries made so far keep theirs until freed) or -ENOSPC. */
int proctable_add_owner(struct proctable *pt, const struct proc_owner *o);
/* The live process with this pid, creating its entry from /proc when new.
 * A sample that arrives after its process's exit event (taken on another
 * CPU, or in the kernel's exit path) goes to that exited entry: same start
 * time in /proc (a zombie), or /proc has the pid no more and the comm
 * matches.  comm is the sampled thread's name, used when /proc has
 * nothing. */
struct proc *proctable_get(struct proctable *pt, uint32_t pid, const char *comm);
/* A process first seen in an event that carries its start time: its entry
 * is made at once, with no look into /proc (comm from the event, uid and
 * exe unknown until proctable_set_identity).  NULL when the table is full. */
struct proc *proctable_add(struct proctable *pt, uint32_t pid, uint64_t start_time,
			   const char *comm);
/* uid and exe (owned by p from here) as read from /proc. */
void proctable_set_identity(struct proc *p, uint32_t uid, char *exe);
/* p's workload is wid from here (owned; the old one is freed). */
void proctable_set_workload(struct proc *p, struct workload_id *wid);
/* One more RSS point (t_ns: CLOCK_REALTIME): 0 or -ENOMEM. */
int proctable_add_rss(struct proc *p, uint64_t t_ns, uint64_t bytes);
/* Its i-th point, oldest first (i < p->rss->n). */
void proctable_rss_point(const struct proc *p, uint32_t i, uint64_t *t_ns, uint64_t *bytes);
struct proc *proctable_find_live(struct proctable *pt, uint32_t pid);
/* Every entry, live or exited, for readers that need not know the
 * table's layout: for (it = 0; (p = proctable_next(pt, &it));). */
struct proc *proctable_next(const struct proctable *pt, size_t *it);
size_t proctable_count(const struct proctable *pt);
size_t proctable_live_count(const struct proctable *pt);
/* The latest exited process with this pid and start time, or NULL. */
struct proc *proctable_find_exited(struct proctable *pt, uint32_t pid, uint64_t start_time);
/* The live process with pid, else the latest exited one, or NULL. */
struct proc *proctable_find_pid(struct proctable *pt, uint32_t pid);
/* exec(): same process, new program: maps and caches are stale, and its
 * exe (and maybe uid) must be read again (identity_pending is set). */
void proctable_exec(struct proctable *pt, uint32_t pid, const char *comm);
void proctable_exit(struct proctable *pt, uint32_t pid, uint64_t now_ns);
/* Re-read the maps (rate-limited by the caller). 0 or -errno. */
int proctable_reload_maps(struct proctable *pt, struct proc *p, uint64_t mono_ns);
/* Take maps read elsewhere (moved from fresh): caches keyed by address are
 * dropped, as after a reload. */
void proctable_set_maps(struct proctable *pt, struct proc *p, struct procmaps *fresh);
/* Once a tick: exited processes past their linger (PROC_LINGER_NS) lose
 * their maps, those never sampled go; those whose exit is older than
 * retention_ns go too. */
void proctable_expire(struct proctable *pt, uint64_t now_ns, uint64_t retention_ns);

/* A small /proc file into buf, NUL-terminated: bytes read or -errno. */
int proc_read_small_file(const char *path, char *buf, size_t size);
/* Read start time, uid, comm and exe of a pid from /proc. -ESRCH if gone. */
int proc_read_identity(const char *proc_root, uint32_t pid, uint64_t *start_time, uint32_t *uid,
		       uint32_t *ppid, char comm[16], char **exe);
/* Start time (clock ticks) and resident set size from /proc/PID/stat
 * text: 0 or -EINVAL. */
int proc_stat_rss(const char *text, uint64_t *start_time, uint64_t *rss_bytes);
/* The resident set of the process (pid, start_time) now: 0, -ESRCH when
 * it is gone (or the pid is another process's), -errno. */
int proc_read_rss(const char *proc_root, uint32_t pid, uint64_t start_time, uint64_t *rss_bytes);
/* The parent's pid from /proc/PID/stat text (field 4); 0 if unreadable. */
uint32_t proc_stat_ppid(const char *stat_text);

#endif
