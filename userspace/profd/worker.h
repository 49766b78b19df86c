/* worker.h: the slow path, on the worker's lanes: /proc reads, Python
 * detection and names, unwind tables, symbols. */
#ifndef PROFD_WORKER_H
#define PROFD_WORKER_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct ingest;
struct ingest_py_ask;
struct pyruntime;
struct worker;

struct worker_stats {
	uint64_t queued, done, dropped, busy_ns, waiting;
	uint64_t tables_yields; /* a process's builds paused for another's */
	/* Debug files asked of debuginfod: got, no server has it, other errors. */
	uint64_t debuginfod_fetched, debuginfod_not_found, debuginfod_failed;
};
struct unwinder;
struct unwinder_stats;
/* Starts the lanes: 0 and *out, or -errno (a thread not started). */
int worker_new(struct unwinder *u, struct worker **out);
void worker_free(struct worker *w);
void worker_py_detect(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_identify(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_workload(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req,
		     bool cgroup_only);
void worker_rss(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
void worker_maps(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req);
struct procmap;
void worker_symbols(struct worker *w, uint32_t pid, const struct procmap *m);
void worker_kallsyms(struct worker *w, const char *path);
/* A Python name read on the worker's Python lane (rt copied); a
 * process's code objects forgotten there when it ends. */
void worker_py_name(struct worker *w, const struct ingest_py_ask *a, const struct pyruntime *rt);
void worker_py_forget(struct worker *w, uint32_t pid);
struct perfmap_stamp;
void worker_perfmap(struct worker *w, uint32_t pid, uint32_t seq,
		    const struct perfmap_stamp *prev);
void worker_tables(struct worker *w, uint32_t pid);
void worker_tables_forget(struct worker *w, uint32_t pid);
/* Once a second: the tables' worker notes which processes BPF sampled,
 * so the least recently sampled files give way when memory runs out. */
void worker_tables_tick(struct worker *w);
/* Readable when Python answers wait; worker_publish() hands them to
 * ingest (call with d->lock held). */
int worker_fd(const struct worker *w);
void worker_publish(struct worker *w, struct ingest *in);
void worker_stats(struct worker *w, struct worker_stats *st, struct unwinder_stats *us);
void worker_prebuild(struct worker *w, struct daemon *d);

#endif
