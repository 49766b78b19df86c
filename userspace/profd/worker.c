/* worker.c: the daemon's slow path.  Reading a new process's identity (uid,
 * exe) and its maps (again when a sample's address is outside them), looking
 * for CPython in a process (its maps, its binaries' symbol
 * tables), reading Python code objects' and asyncio tasks' names, reading
 * symbol files and perf maps, and building native unwind tables
 * (1-50 ms per binary, seconds for a PyTorch library) run on this thread,
 * never in front of a sample or a client.  Ingest asks through a queue;
 * unwind tables go straight into their BPF maps, other answers come back
 * through a result list that the ingest thread publishes (woken by an
 * eventfd), since only that thread touches the process table. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "array.h"
#include "daemon.h"
#include "worker.h"
#include "log.h"
#include "debuginfod.h"
#include "elfsym.h"
#include "identity.h"
#include "kallsyms.h"
#include "perfmap.h"
#include "pyasync.h"
#include "pycode.h"
#include "pyruntime.h"
#include "symcache.h"
#include "unwinder.h"

#define QUEUE_MAX 65536 /* jobs waiting; beyond, counted and dropped */
/* Python names waiting (each holds a copy of its runtime, ~1 KiB):
 * beyond, answered "not read" and asked again by a later sample. */
#define PY_QUEUE_MAX 4096

enum job_kind {
	JOB_PY_DETECT,
	JOB_TABLES,
	JOB_TABLES_FORGET,
	JOB_TABLES_TICK, /* note which processes were sampled (unwinder_note_sampling) */
	JOB_IDENTITY,
	JOB_WORKLOAD, /* a process's workload (identity.h): argv and cgroup, or cgroup */
	JOB_MAPS,
	JOB_SYMBOLS, /* a file's symbols, for the symbolizer's cache */
	JOB_KALLSYMS, /* kallsyms again (map.path: the file) */
	JOB_RSS,      /* a process's resident set now */
	JOB_PERFMAP,  /* a process's perf map (JIT code names), for the symbolizer */
	JOB_PY_NAME,  /* a Python code object's or task's name (ask, rt) */
	JOB_PY_FORGET, /* a process's code objects, from the lane's cache */
	JOB_DEBUGINFOD, /* a stripped file's debug file fetched, its symbols again */
};

struct job {
	uint32_t kind, pid, req;
	uint64_t start_time;
	bool cgroup_only; /* JOB_WORKLOAD: a recheck */
	struct procmap map; /* JOB_SYMBOLS: the mapping (path owned by the job) */
	struct perfmap_stamp pm_prev; /* JOB_PERFMAP: what the symbolizer has */
	struct ingest_py_ask ask;     /* JOB_PY_NAME */
	struct pyruntime *rt;	      /* JOB_PY_NAME: a copy, owned by the job */
	uint64_t ticket;	      /* JOB_PY_*: its place in the Python lane */
	uint8_t build_id[64];	      /* JOB_DEBUGINFOD: the file's */
	size_t build_id_len;
};

/* An answer for ingest: a Python runtime or name, an identity, maps, a
 * file's symbols, kallsyms, a resident set or a perf map. */
struct result {
	struct job job;
	struct pyruntime *rt;
	struct ingest_identity id;
	struct workload_id *wid;
	int wid_err;
	struct procmaps maps;
	int maps_err;
	struct symcache_loaded syms;
	struct kallsyms *ks;
	uint64_t rss;
	int rss_err;
	struct perfmap_loaded pm;
	int py_err;
	char *py_text; /* JOB_PY_NAME: the name read */
	bool py_named; /* ... of a task: one given by the program */
};

/* Lanes, each a thread with its queue: the quick jobs (a process's
 * identity, maps, Python detection: up to a few ms) never wait behind a
 * table build or a symbol table read (seconds for a big library), nor
 * those behind each other; Python names (the samples of a Python program
 * starting wait for them) behind none of those; debuginfod downloads
 * (minutes, a server away) behind nothing: samples never wait for them,
 * a file's frames are named from its stripped symbols meanwhile. */
enum { LANE_QUICK, LANE_TABLES, LANE_SYMBOLS, LANE_PYTHON, LANE_FETCH, LANES };
/* Its thread's name (15 bytes at most): `top -H`, bench/own_cost.py. */
static const char *const lane_names[LANES] = {"profd-quick", "profd-tables", "profd-symbols",
					      "profd-python", "profd-fetch"};

/* Build-ids asked of debuginfod (each once a run): at most this many. */
#define FETCH_ASKED_MAX 65536

struct lane {
	struct worker *w;
	pthread_t thread;
	bool started;
	pthread_cond_t cv;
	struct job *q; /* ring of cap entries */
	size_t head, n, cap;
};

struct worker {
	bool stop;
	pthread_mutex_t mu; /* everything below, and the lanes' queues */
	struct lane lanes[LANES];
	struct hashmap tables_queued; /* pid -> 1 while a JOB_TABLES waits */
	bool tick_queued;	      /* a JOB_TABLES_TICK waits */
	uint64_t tick_next_ns;	      /* ingest's: none queued before */
	struct result *res;
	size_t nres, rescap;
	int efd;
	struct unwinder *u;
	struct pycode_cache *pyc; /* the Python lane's */
	/* pid -> ticket of its latest JOB_PY_FORGET still queued: a name
	 * asked before it is of a program gone (exec'ed or exited), not read. */
	struct hashmap py_forgets;
	uint64_t py_tickets;
	struct hashmap fetch_asked; /* build-id's first 8 bytes -> 1 */
	struct unwinder_stats snap; /* as of the last job, for stats */
	struct worker_stats st;
};

static struct lane *lane_of(struct worker *w, uint32_t kind)
{
	if (kind == JOB_SYMBOLS || kind == JOB_KALLSYMS || kind == JOB_PERFMAP)
		return &w->lanes[LANE_SYMBOLS];
	if (kind == JOB_TABLES || kind == JOB_TABLES_FORGET || kind == JOB_TABLES_TICK)
		return &w->lanes[LANE_TABLES];
	if (kind == JOB_PY_NAME || kind == JOB_PY_FORGET)
		return &w->lanes[LANE_PYTHON];
	if (kind == JOB_DEBUGINFOD)
		return &w->lanes[LANE_FETCH];
	return &w->lanes[LANE_QUICK];
}

/* Caller holds mu.  false: no room (the answer is lost). */
static bool keep_result(struct worker *w, const struct result *r)
{
	if (array_grow((void **)&w->res, &w->rescap, w->nres + 1, sizeof(*w->res)))
		return false;
	w->res[w->nres++] = *r;
	return true;
}

static void wake_ingest(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0)
		log_debug("worker: eventfd: %s", strerror(errno));
}

/* A job that will not run (caller holds mu).  A Python name is answered
 * "could not" so that its samples stop waiting for it. */
static void job_dropped(struct worker *w, struct job *j)
{
	struct result r = { .job = *j, .py_err = -EBUSY };

	free(j->map.path);
	free(j->rt);
	r.job.map.path = NULL;
	r.job.rt = NULL;
	if (j->kind == JOB_PY_NAME && keep_result(w, &r))
		wake_ingest(w);
}

/* Room for one more job in l's ring (caller holds mu): 0, or -ENOMEM. */
static int lane_room(struct lane *l)
{
	size_t cap = l->cap ? l->cap * 2 : 256, i;
	struct job *q;

	if (l->n < l->cap)
		return 0;
	if (!(q = malloc(cap * sizeof(*q))))
		return -ENOMEM;
	for (i = 0; i < l->n; i++)
		q[i] = l->q[(l->head + i) % l->cap];
	free(l->q);
	l->q = q;
	l->head = 0;
	l->cap = cap;
	return 0;
}

/* Caller holds mu. */
static void push_job(struct worker *w, struct job j)
{
	struct lane *l = lane_of(w, j.kind);

	if (l->n >= (j.kind == JOB_PY_NAME ? PY_QUEUE_MAX : QUEUE_MAX) || lane_room(l)) {
		w->st.dropped++; /* asked again later */
		job_dropped(w, &j);
		return;
	}
	if (j.kind == JOB_PY_NAME || j.kind == JOB_PY_FORGET)
		j.ticket = ++w->py_tickets;
	if (j.kind == JOB_PY_FORGET)
		hashmap_put(&w->py_forgets, j.pid, j.ticket);
	l->q[(l->head + l->n) % l->cap] = j;
	l->n++;
	w->st.queued++;
	pthread_cond_signal(&l->cv);
}

static void enqueue(struct worker *w, struct job j)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if (j.kind == JOB_TABLES_TICK) {
		if (!w->tick_queued)
			push_job(w, j);
		w->tick_queued = true;
	} else if (j.kind != JOB_TABLES || !hashmap_get(&w->tables_queued, j.pid, NULL)) {
		if (j.kind == JOB_TABLES)
			hashmap_put(&w->tables_queued, j.pid, 1);
		/* A request for the pid after its exit is for a new process
		 * (pid reuse): it must run after the forget, not merge into a
		 * job queued before it. */
		if (j.kind == JOB_TABLES_FORGET)
			hashmap_del(&w->tables_queued, j.pid);
		push_job(w, j);
	}
	pthread_mutex_unlock(&w->mu);
}

static struct job job(uint32_t kind, uint32_t pid, uint32_t req, uint64_t start_time)
{
	return (struct job){ .kind = kind, .pid = pid, .req = req, .start_time = start_time };
}

void worker_py_detect(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req)
{
	enqueue(w, job(JOB_PY_DETECT, pid, req, start_time));
}

void worker_rss(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req)
{
	enqueue(w, job(JOB_RSS, pid, req, start_time));
}

void worker_identify(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req)
{
	enqueue(w, job(JOB_IDENTITY, pid, req, start_time));
}

void worker_workload(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req,
		     bool cgroup_only)
{
	struct job j = job(JOB_WORKLOAD, pid, req, start_time);

	j.cgroup_only = cgroup_only;
	enqueue(w, j);
}

void worker_maps(struct worker *w, uint32_t pid, uint64_t start_time, uint32_t req)
{
	enqueue(w, job(JOB_MAPS, pid, req, start_time));
}

void worker_symbols(struct worker *w, uint32_t pid, const struct procmap *m)
{
	struct job j = { .kind = JOB_SYMBOLS, .pid = pid, .map = *m };

	j.map.path = strdup(m->path);
	if (j.map.path)
		enqueue(w, j);
}

void worker_perfmap(struct worker *w, uint32_t pid, uint32_t seq,
		    const struct perfmap_stamp *prev)
{
	struct job j = { .kind = JOB_PERFMAP, .pid = pid, .req = seq, .pm_prev = *prev };

	enqueue(w, j);
}

void worker_py_name(struct worker *w, const struct ingest_py_ask *a, const struct pyruntime *rt)
{
	struct job j = { .kind = JOB_PY_NAME, .pid = a->pid, .ask = *a };

	if (!w)
		return;
	j.rt = malloc(sizeof(*j.rt));
	if (j.rt) {
		*j.rt = *rt;
		enqueue(w, j);
		return;
	}
	pthread_mutex_lock(&w->mu);
	job_dropped(w, &j);
	pthread_mutex_unlock(&w->mu);
}

void worker_py_forget(struct worker *w, uint32_t pid)
{
	enqueue(w, job(JOB_PY_FORGET, pid, 0, 0));
}

void worker_kallsyms(struct worker *w, const char *path)
{
	struct job j = { .kind = JOB_KALLSYMS };

	j.map.path = strdup(path);
	if (j.map.path)
		enqueue(w, j);
}

void worker_tables(struct worker *w, uint32_t pid)
{
	enqueue(w, job(JOB_TABLES, pid, 0, 0));
}

void worker_tables_forget(struct worker *w, uint32_t pid)
{
	enqueue(w, job(JOB_TABLES_FORGET, pid, 0, 0));
}

/* Ingest's thread, every second: the tables lane is woken only as often
 * as the note does anything. */
void worker_tables_tick(struct worker *w)
{
	uint64_t now = clock_mono_ns();

	if (!w || !w->u || now < w->tick_next_ns)
		return;
	w->tick_next_ns = now + unwinder_note_every_ns(w->u);
	enqueue(w, job(JOB_TABLES_TICK, 0, 0, 0));
}

/* What an answer owns, when it is not published. */
static void result_free(struct result *r)
{
	free(r->rt);
	free(r->id.exe);
	free(r->wid);
	procmaps_free(&r->maps);
	elfsym_free(r->syms.es);
	kallsyms_free(r->ks);
	perfmap_free(r->pm.pm);
	free(r->py_text);
	free(r->job.map.path);
}

static void add_result(struct worker *w, struct result *r)
{
	bool kept;

	pthread_mutex_lock(&w->mu);
	kept = keep_result(w, r);
	pthread_mutex_unlock(&w->mu);
	if (!kept) {
		result_free(r); /* asked again on a later sample */
		return;
	}
	wake_ingest(w);
}

/* Whether a Python job's program is gone: a forget queued after it. */
static bool py_forgotten(struct worker *w, const struct job *j)
{
	uint64_t t;
	bool gone;

	pthread_mutex_lock(&w->mu);
	gone = hashmap_get(&w->py_forgets, j->pid, &t) && t > j->ticket;
	if (j->kind == JOB_PY_FORGET && !gone)
		hashmap_del(&w->py_forgets, j->pid);
	pthread_mutex_unlock(&w->mu);
	return gone;
}

/* A Python name, read from the process (which may keep this thread
 * waiting on its mm lock: only this lane waits). */
static void read_py_name(struct worker *w, const struct job *j, struct result *r)
{
	char text[2 * PYCODE_MAX_STR + 64];
	const struct ingest_py_ask *a = &j->ask;

	bool gone = py_forgotten(w, j);

	r->job.rt = NULL; /* freed with the job */
	if (gone)
		r->py_err = -ESRCH;
	else if (a->task) /* at most a task name's length, as inline */
		r->py_err = pyasync_task_name(j->rt, a->addr, text, PYASYNC_NAME_MAX, &r->py_named);
	else
		r->py_err = pycode_name(w->pyc, j->rt, a->addr, a->fp, a->off, text, sizeof(text));
	if (r->py_err == -ESRCH && !a->task)
		r->py_err = pycode_name_in_donor(w->pyc, j->rt, (int)a->donor, a->addr, a->fp,
						 a->off, text, sizeof(text));
	if (!r->py_err && !(r->py_text = strdup(text)))
		r->py_err = -ENOMEM;
}

/* A stripped file just read (on the symbols lane) with no debug file
 * here: ask debuginfod for it once a run, on the fetch lane. */
static void ask_debuginfod(struct worker *w, const struct job *j, const struct elfsym *es)
{
	struct job f = { .kind = JOB_DEBUGINFOD, .pid = j->pid, .map = j->map };
	const uint8_t *id;
	uint64_t key = 0;
	bool asked;

	if (!debuginfod_on() || !es || !elfsym_lacks_debug(es))
		return;
	id = elfsym_build_id(es, &f.build_id_len);
	if (!id || f.build_id_len > sizeof(f.build_id))
		return;
	memcpy(f.build_id, id, f.build_id_len);
	memcpy(&key, id, f.build_id_len < 8 ? f.build_id_len : 8);
	pthread_mutex_lock(&w->mu);
	asked = hashmap_get(&w->fetch_asked, key, NULL) ||
		w->fetch_asked.len >= FETCH_ASKED_MAX ||
		hashmap_put(&w->fetch_asked, key, 1);
	pthread_mutex_unlock(&w->mu);
	if (asked || !(f.map.path = strdup(j->map.path)))
		return;
	enqueue(w, f);
}

/* The debug file of j's build-id from debuginfod, then the file's
 * symbols with it: the answer replaces the stripped ones. */
static void fetch_debuginfo(struct worker *w, const struct job *j, struct result *r)
{
	int fd = debuginfod_fetch(j->build_id, j->build_id_len);

	pthread_mutex_lock(&w->mu);
	if (fd >= 0)
		w->st.debuginfod_fetched++;
	else if (fd == -ENOENT)
		w->st.debuginfod_not_found++;
	else
		w->st.debuginfod_failed++;
	pthread_mutex_unlock(&w->mu);
	if (fd >= 0) {
		symcache_load_debug("/proc", (int)j->pid, &j->map, fd, &r->syms);
		close(fd);
	}
	/* Gone with its process, or a file that does not match: the
	 * stripped symbols stay. */
	if (!r->syms.es || !elfsym_has_debug_file(r->syms.es)) {
		log_debug("worker: no symbols of %s from debuginfod: %s", j->map.path,
			  fd < 0 ? strerror(-fd) : "the file does not match, or has none");
		result_free(r);
		return;
	}
	add_result(w, r);
}

/* A start time read after the files proves they were this process's:
 * the pid may be another's by now. */
static void read_workload(const struct job *j, struct result *r)
{
	uint64_t rss;

	r->wid = calloc(1, sizeof(*r->wid));
	if (!r->wid) {
		r->wid_err = -ENOMEM;
		return;
	}
	if (j->cgroup_only)
		r->wid_err = identity_reread_cgroup("/proc", j->pid, r->wid);
	else
		r->wid_err = identity_read("/proc", j->pid, NULL, NULL, r->wid);
	if (!r->wid_err && proc_read_rss("/proc", j->pid, j->start_time, &rss))
		r->wid_err = -ESRCH;
}

static void run_job(struct worker *w, const struct job *j)
{
	struct result r = { .job = *j };
	char comm[16];

	switch (j->kind) {
	case JOB_PY_DETECT: /* "no Python" is an answer too */
		r.rt = pyruntime_find((int)j->pid);
		add_result(w, &r);
		break;
	case JOB_IDENTITY:
		r.id.err = proc_read_identity("/proc", j->pid, &r.id.read_start, &r.id.uid, &r.id.ppid, comm,
					      &r.id.exe);
		add_result(w, &r);
		break;
	case JOB_WORKLOAD:
		read_workload(j, &r);
		add_result(w, &r);
		break;
	case JOB_MAPS:
		r.maps_err = procmaps_read((int)j->pid, &r.maps);
		add_result(w, &r);
		break;
	case JOB_RSS:
		r.rss_err = proc_read_rss("/proc", j->pid, j->start_time, &r.rss);
		add_result(w, &r);
		break;
	case JOB_SYMBOLS: /* the path goes back with the answer */
		symcache_load("/proc", (int)j->pid, &j->map, &r.syms);
		ask_debuginfod(w, j, r.syms.es);
		add_result(w, &r);
		break;
	case JOB_DEBUGINFOD:
		fetch_debuginfo(w, j, &r);
		break;
	case JOB_KALLSYMS:
		r.ks = kallsyms_load(j->map.path);
		add_result(w, &r);
		break;
	case JOB_PERFMAP:
		perfmap_load("/proc", (int)j->pid, &j->pm_prev, &r.pm);
		add_result(w, &r);
		break;
	case JOB_TABLES:
		pthread_mutex_lock(&w->mu);
		hashmap_del(&w->tables_queued, j->pid);
		pthread_mutex_unlock(&w->mu);
		/* Also refreshes.  Yielded to another process: its turn again
		 * after theirs. */
		if (w->u && unwinder_add_process(w->u, (int)j->pid) == -EAGAIN) {
			pthread_mutex_lock(&w->mu);
			w->st.tables_yields++;
			pthread_mutex_unlock(&w->mu);
			worker_tables(w, j->pid);
		}
		break;
	case JOB_TABLES_FORGET:
		if (w->u)
			unwinder_remove_process(w->u, (int)j->pid);
		break;
	case JOB_PY_NAME:
		read_py_name(w, j, &r);
		add_result(w, &r);
		break;
	case JOB_PY_FORGET:
		py_forgotten(w, j);
		pycode_cache_forget_pid(w->pyc, (int)j->pid);
		break;
	case JOB_TABLES_TICK:
		pthread_mutex_lock(&w->mu);
		w->tick_queued = false;
		pthread_mutex_unlock(&w->mu);
		if (w->u)
			unwinder_note_sampling(w->u);
		break;
	}
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;
	struct worker *w = l->w;
	struct unwinder_stats us;
	struct job j;
	uint64_t t0;
	bool tables = l == &w->lanes[LANE_TABLES];

	pthread_setname_np(pthread_self(), lane_names[l - w->lanes]);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!l->n && !w->stop)
			pthread_cond_wait(&l->cv, &w->mu);
		if (w->stop)
			break;
		j = l->q[l->head];
		l->head = (l->head + 1) % l->cap;
		l->n--;
		pthread_mutex_unlock(&w->mu);
		t0 = clock_mono_ns();
		run_job(w, &j);
		free(j.rt);
		if (tables && w->u)
			unwinder_stats(w->u, &us);
		pthread_mutex_lock(&w->mu);
		if (tables && w->u)
			w->snap = us;
		w->st.done++;
		w->st.busy_ns += clock_mono_ns() - t0;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* unwinder_set_yield()'s question, on the tables lane: does another
 * process wait for its tables? */
static bool tables_wait(void *ctx)
{
	struct worker *w = ctx;
	bool waiting;

	pthread_mutex_lock(&w->mu);
	waiting = w->lanes[LANE_TABLES].n > 0;
	pthread_mutex_unlock(&w->mu);
	return waiting;
}

int worker_new(struct unwinder *u, struct worker **out)
{
	struct worker *w = calloc(1, sizeof(*w));
	int i, err = 0;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	for (i = 0; i < LANES; i++) {
		w->lanes[i].w = w;
		pthread_cond_init(&w->lanes[i].cv, NULL);
	}
	w->u = u;
	w->pyc = pycode_cache_new();
	if (u) {
		unwinder_stats(u, &w->snap);
		unwinder_set_yield(u, tables_wait, w);
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0)
		err = -errno;
	else if (!w->pyc)
		err = -ENOMEM;
	/* pthread_create returns its error; it does not set errno. */
	for (i = 0; i < LANES && !err; i++) {
		err = -pthread_create(&w->lanes[i].thread, NULL, lane_main, &w->lanes[i]);
		w->lanes[i].started = !err;
	}
	if (err) {
		worker_free(w);
		return err;
	}
	*out = w;
	return 0;
}

void worker_free(struct worker *w)
{
	size_t i;

	if (!w)
		return;
	if (w->u)
		unwinder_set_yield(w->u, NULL, NULL); /* the worker goes first */
	debuginfod_cancel(); /* a download under way ends now */
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	for (i = 0; i < LANES; i++)
		pthread_cond_signal(&w->lanes[i].cv);
	pthread_mutex_unlock(&w->mu);
	for (i = 0; i < LANES; i++) {
		struct lane *l = &w->lanes[i];
		size_t k;

		if (l->started)
			pthread_join(l->thread, NULL);
		for (k = 0; k < l->n; k++) {
			free(l->q[(l->head + k) % l->cap].map.path);
			free(l->q[(l->head + k) % l->cap].rt);
		}
		free(l->q);
		pthread_cond_destroy(&w->lanes[i].cv);
	}
	for (i = 0; i < w->nres; i++)
		result_free(&w->res[i]);
	free(w->res);
	hashmap_free(&w->tables_queued);
	hashmap_free(&w->py_forgets);
	hashmap_free(&w->fetch_asked);
	pycode_cache_free(w->pyc);
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int worker_fd(const struct worker *w)
{
	return w->efd;
}

void worker_publish(struct worker *w, struct ingest *in)
{
	struct result *res;
	uint64_t v;
	size_t n, i;

	if (read(w->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("worker: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&w->mu);
	res = w->res;
	n = w->nres;
	w->res = NULL;
	w->nres = w->rescap = 0;
	pthread_mutex_unlock(&w->mu);
	for (i = 0; i < n; i++) {
		const struct job *j = &res[i].job;

		if (j->kind == JOB_IDENTITY)
			ingest_identity_found(in, j->pid, j->start_time, j->req, &res[i].id);
		else if (j->kind == JOB_WORKLOAD)
			ingest_workload_found(in, j->pid, j->start_time, j->req, res[i].wid_err,
					      j->cgroup_only, res[i].wid);
		else if (j->kind == JOB_MAPS)
			ingest_maps_found(in, j->pid, j->start_time, j->req, res[i].maps_err,
					  &res[i].maps);
		else if (j->kind == JOB_SYMBOLS)
			symbolizer_file_loaded(in->sym, &j->map, &res[i].syms);
		else if (j->kind == JOB_DEBUGINFOD)
			symbolizer_file_upgraded(in->sym, &j->map, &res[i].syms);
		else if (j->kind == JOB_KALLSYMS)
			symbolizer_kallsyms_loaded(in->sym, res[i].ks);
		else if (j->kind == JOB_PERFMAP)
			symbolizer_perfmap_loaded(in->sym, (int)j->pid, j->req, &res[i].pm);
		else if (j->kind == JOB_RSS)
			ingest_rss_found(in, j->pid, j->start_time, j->req, res[i].rss_err,
					 res[i].rss);
		else if (j->kind == JOB_PY_NAME)
			ingest_py_named(in, &j->ask, res[i].py_err, res[i].py_text,
					res[i].py_named);
		else
			ingest_python_found(in, j->pid, j->start_time, j->req, res[i].rt);
		free(res[i].job.map.path);
		free(res[i].py_text);
	}
	free(res);
}

void worker_stats(struct worker *w, struct worker_stats *st, struct unwinder_stats *us)
{
	pthread_mutex_lock(&w->mu);
	*st = w->st;
	st->waiting = 0;
	for (size_t i = 0; i < LANES; i++)
		st->waiting += w->lanes[i].n;
	*us = w->snap;
	pthread_mutex_unlock(&w->mu);
}

/* --pid: the few processes asked for get their tables before sampling
 * starts, so their first samples unwind as well as the rest.  (With
 * --all-processes that would delay the start by the whole machine's
 * binaries; those come with each process's first sample instead.)  Runs
 * before the worker has anything to do. */
void worker_prebuild(struct worker *w, struct daemon *d)
{
	size_t i;

	for (i = 0; w->u && i < d->cfg.npids; i++) {
		struct proc *p = proctable_get(&d->pt, d->cfg.pids[i], NULL);

		if (!p || unwinder_add_process(w->u, (int)d->cfg.pids[i]))
			continue; /* the first sample asks again */
		ingest_unwind_requested(p);
	}
	pthread_mutex_lock(&w->mu);
	if (w->u)
		unwinder_stats(w->u, &w->snap);
	pthread_mutex_unlock(&w->mu);
}
