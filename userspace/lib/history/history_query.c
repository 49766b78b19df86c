/* history_query.c: stored counts back into a stackset, shaped as
 * aggregate_dump() shapes memory (process root "comm (pid)", thread root
 * "name (tid)", Python-only), and the stored process list.  Counts are
 * summed per (stack, thread) in a local table first, so each distinct
 * stack is decoded and interned once however many buckets it spans. */
#include "view.h"
#include "history_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct hq_proc {
	int64_t id;
	uint32_t pid;
	char label[64]; /* "comm (pid)" */
};

struct hq_series {
	int64_t id;
	uint64_t width;
};

struct hq_stack {
	uint32_t depth;
	uint32_t *ids; /* out's frame ids, filtered */
};

struct hq_cell {
	int64_t stack;
	uint32_t tid;
	int64_t thread;
	uint64_t count;
};

struct hq {
	struct history *h;
	const struct history_query *q;
	struct stackset *out;
	struct hq_proc *procs;
	size_t nprocs, procs_cap;
	struct hq_series *series;
	size_t nseries, series_cap;
	struct hashmap frame_map;  /* db frame -> out id + 1, 0 = filtered out */
	struct hashmap thread_map; /* (thread frame, tid) -> out id */
	struct hashmap kept_map;   /* thread frame -> 1 kept by the view, 2 not */
	struct hashmap stack_map;  /* db stack -> stacks + 1 */
	struct hq_stack *stacks;
	size_t nstacks, stacks_cap;
	struct hashmap cell_index; /* (stack, tid, thread) -> cells + 1 */
	struct hq_cell *cells;
	size_t ncells, cells_cap;
	uint32_t *ids;
	size_t ids_cap;
	uint64_t missing; /* dangling frame or stack ids met */
};

/* Stands for a frame or stack the file no longer has (ids start at 1, so
 * frame id 0 is never stored). */
#define HQ_MISSING "[missing from history]"

static int step_fail(struct hq *x, int rc, const char *what)
{
	return rc == SQLITE_DONE ? 0 : hist_fail(x->h, rc, what);
}

static int add_proc(struct hq *x, sqlite3_stmt *s)
{
	const struct history_query *q = x->q;
	const unsigned char *comm = sqlite3_column_text(s, 2);
	struct hq_proc *p;

	if (q->by_uid && (uint32_t)sqlite3_column_int64(s, 3) != q->uid)
		return 0;
	if (hist_grow((void **)&x->procs, &x->procs_cap, x->nprocs + 1, sizeof(*p)))
		return -ENOMEM;
	p = &x->procs[x->nprocs++];
	p->id = sqlite3_column_int64(s, 0);
	p->pid = (uint32_t)sqlite3_column_int64(s, 1);
	snprintf(p->label, sizeof(p->label), "%s (%u)", comm ? (const char *)comm : "", p->pid);
	return 0;
}

static int select_procs(struct hq *x)
{
	const struct history_query *q = x->q;
	size_t i, n = q->npids ? q->npids : 1;
	int rc = SQLITE_DONE, err = 0;

	for (i = 0; i < n && !err && rc == SQLITE_DONE; i++) {
		sqlite3_stmt *s = hist_stmt(x->h, q->npids ? HS_PROC_BY_PID : HS_PROC_ALL);

		if (q->npids)
			sqlite3_bind_int64(s, 1, q->pids[i]);
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			if (q->npids && q->start_times &&
			    (uint64_t)sqlite3_column_int64(s, 4) != q->start_times[i])
				continue;
			err = add_proc(x, s);
		}
		sqlite3_reset(s);
	}
	return err ? err : step_fail(x, rc, "listing processes");
}

static int select_series(struct hq *x)
{
	sqlite3_stmt *s = hist_stmt(x->h, HS_SERIES_BY_TYPE);
	int rc;

	sqlite3_bind_text(s, 1, x->q->type ? x->q->type : "cpu", -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (hist_grow((void **)&x->series, &x->series_cap, x->nseries + 1,
			      sizeof(*x->series))) {
			sqlite3_reset(s);
			return -ENOMEM;
		}
		x->series[x->nseries].id = sqlite3_column_int64(s, 0);
		x->series[x->nseries++].width = (uint64_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return step_fail(x, rc, "listing series");
}

/* Step HS_FRAME_GET on a stored frame id: 0 with the row ready, or -errno
 * (the statement reset). */
static int frame_row(struct hq *x, int64_t id)
{
	sqlite3_stmt *s = hist_stmt(x->h, HS_FRAME_GET);
	int rc;

	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		return 0;
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return hist_fail(x->h, rc, "reading a frame");
	x->missing++;
	return -ENOENT;
}

/* The frame on HS_FRAME_GET's row interned into out with its module, as
 * memory has it: a module row gone (damaged file) leaves the frame
 * without one. */
static int64_t intern_row(struct hq *x, sqlite3_stmt *s)
{
	const char *name = (const char *)sqlite3_column_text(s, 1);
	const char *path = (const char *)sqlite3_column_text(s, 2);
	int64_t mod = 0;

	if (path)
		mod = stackset_module(x->out, path, (const char *)sqlite3_column_text(s, 3));
	if (mod < 0)
		return mod;
	return stackset_intern_in(x->out, (uint32_t)sqlite3_column_int64(s, 0), name ? name : "",
				  (uint32_t)mod);
}

/* out's id for a stored frame, 0 with *keep false when filtered out. */
static int64_t map_frame(struct hq *x, int64_t id, bool *keep)
{
	sqlite3_stmt *s = x->h->st[HS_FRAME_GET];
	uint32_t kind;
	uint64_t v;
	int64_t out;
	int err;

	if (hashmap_get(&x->frame_map, (uint64_t)id, &v)) {
		*keep = v != 0;
		return v ? (int64_t)(v - 1) : 0;
	}
	err = frame_row(x, id);
	if (err && err != -ENOENT)
		return err;
	kind = err ? FRAME_UNKNOWN : (uint32_t)sqlite3_column_int64(s, 0);
	*keep = view_keeps((x->q->python_only ? VIEW_PYTHON_ONLY : 0) |
				(x->q->no_kernel ? VIEW_NO_KERNEL : 0) |
				(x->q->by_task ? VIEW_BY_TASK : 0),
			kind);
	if (!*keep)
		out = 0;
	else
		out = err ? stackset_intern(x->out, kind, HQ_MISSING) : intern_row(x, s);
	sqlite3_reset(s);
	if (out < 0)
		return out;
	if (hashmap_put(&x->frame_map, (uint64_t)id, *keep ? (uint64_t)out + 1 : 0))
		return -ENOMEM;
	return out;
}

static int translate_stack(struct hq *x, const uint8_t *blob, size_t len, struct hq_stack *st)
{
	size_t i;

	st->depth = 0;
	st->ids = malloc(len ? len : 1);
	if (!st->ids)
		return -ENOMEM;
	for (i = 0; i + 4 <= len; i += 4) {
		bool keep = false;
		int64_t id = map_frame(x, hist_decode_u32(blob + i), &keep);

		if (id < 0)
			return (int)id;
		if (keep)
			st->ids[st->depth++] = (uint32_t)id;
	}
	return 0;
}

static const struct hq_stack *get_stack(struct hq *x, int64_t id, int *err)
{
	const uint8_t *blob;
	sqlite3_stmt *s;
	struct hq_stack *st;
	uint64_t v;
	int rc;

	if (hashmap_get(&x->stack_map, (uint64_t)id, &v))
		return &x->stacks[v - 1];
	*err = -ENOMEM;
	if (hist_grow((void **)&x->stacks, &x->stacks_cap, x->nstacks + 1, sizeof(*st)))
		return NULL;
	s = hist_stmt(x->h, HS_STACK_GET);
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sqlite3_reset(s);
		*err = hist_fail(x->h, rc, "reading a stack");
		return NULL;
	}
	/* The blob is ours only until the next call on s: translate now.
	 * A stack gone missing keeps its count under one placeholder frame. */
	st = &x->stacks[x->nstacks];
	if (rc == SQLITE_ROW) {
		blob = sqlite3_column_blob(s, 0);
		*err = translate_stack(x, blob, (size_t)sqlite3_column_bytes(s, 0), st);
	} else {
		x->missing++;
		*err = translate_stack(x, (const uint8_t[4]){ 0 }, 4, st);
	}
	sqlite3_reset(s);
	if (*err) {
		free(st->ids);
		return NULL;
	}
	x->nstacks++;
	if (hashmap_put(&x->stack_map, (uint64_t)id, x->nstacks)) {
		*err = -ENOMEM;
		return NULL;
	}
	return st;
}

/* "name (tid)", as the aggregator labels threads. */
static int64_t thread_root(struct hq *x, int64_t frame, uint32_t tid)
{
	uint64_t k = (uint64_t)frame << 32 | tid, v; /* frame ids fit 32 bits */
	const unsigned char *name;
	char label[300];
	int64_t id;
	int err;

	if (hashmap_get(&x->thread_map, k, &v))
		return (int64_t)v;
	err = frame_row(x, frame);
	if (err && err != -ENOENT)
		return err;
	name = err ? NULL : sqlite3_column_text(x->h->st[HS_FRAME_GET], 1);
	snprintf(label, sizeof(label), "%.255s (%u)", name && *name ? (const char *)name : "?",
		 tid);
	sqlite3_reset(x->h->st[HS_FRAME_GET]);
	id = stackset_intern(x->out, FRAME_ROOT, label);
	if (id >= 0 && hashmap_put(&x->thread_map, k, (uint64_t)id))
		return -ENOMEM;
	return id;
}

static int add_cell(struct hq *x, int64_t stack, uint32_t tid, int64_t thread, uint64_t count)
{
	uint64_t k = hash64_mix((uint64_t)stack ^ hash64_mix((uint64_t)thread << 32 | tid)), v;
	struct hq_cell *c;

	for (; hashmap_get(&x->cell_index, k, &v); k++) {
		c = &x->cells[v - 1];
		if (c->stack == stack && c->tid == tid && c->thread == thread) {
			c->count += count;
			return 0;
		}
	}
	if (hist_grow((void **)&x->cells, &x->cells_cap, x->ncells + 1, sizeof(*c)))
		return -ENOMEM;
	c = &x->cells[x->ncells];
	c->stack = stack;
	c->tid = tid;
	c->thread = thread;
	c->count = count;
	if (hashmap_put(&x->cell_index, k, x->ncells + 1))
		return -ENOMEM;
	x->ncells++;
	return 0;
}

static int scan_series(struct hq *x, const struct hq_proc *p, const struct hq_series *se)
{
	const struct history_query *q = x->q;
	/* Bucket n covers [n * width, (n + 1) * width). */
	uint64_t lo = se->width ? q->since_ns / se->width : 0;
	uint64_t hi = q->until_ns && se->width ? (q->until_ns - 1) / se->width + 1 : INT64_MAX;
	sqlite3_stmt *s = hist_stmt(x->h, HS_SAMPLE_RANGE);
	int rc, err = 0;

	sqlite3_bind_int64(s, 1, p->id);
	sqlite3_bind_int64(s, 2, se->id);
	sqlite3_bind_int64(s, 3, (int64_t)lo);
	sqlite3_bind_int64(s, 4, (int64_t)hi);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t stack = sqlite3_column_int64(s, 0);
		uint32_t tid = q->by_thread ? (uint32_t)sqlite3_column_int64(s, 1) : 0;
		/* The Python view needs the thread's name (thread_kept). */
		int64_t thread = q->by_thread || q->python_only ? sqlite3_column_int64(s, 2) : 0;

		err = add_cell(x, stack, tid, thread, (uint64_t)sqlite3_column_int64(s, 3));
	}
	sqlite3_reset(s);
	return err ? err : step_fail(x, rc, "reading samples");
}

/* Whether the query's view keeps the samples of this thread (the Python
 * view leaves out a process's life before its exec): 1, 0 or -errno. */
static int thread_kept(struct hq *x, int64_t frame)
{
	const unsigned char *name;
	uint64_t v;
	int err, kept;

	if (!x->q->python_only)
		return 1;
	if (hashmap_get(&x->kept_map, (uint64_t)frame, &v))
		return v == 1;
	err = frame_row(x, frame);
	if (err && err != -ENOENT)
		return err;
	name = err ? NULL : sqlite3_column_text(x->h->st[HS_FRAME_GET], 1);
	kept = !name || view_keeps_thread(VIEW_PYTHON_ONLY, (const char *)name,
					  strlen((const char *)name));
	sqlite3_reset(x->h->st[HS_FRAME_GET]);
	if (hashmap_put(&x->kept_map, (uint64_t)frame, kept ? 1 : 2))
		return -ENOMEM;
	return kept;
}

static int emit_cell(struct hq *x, const struct hq_cell *c, int64_t proc_root)
{
	const struct hq_stack *st;
	uint32_t n = 0;
	int64_t id;
	int err = 0;

	if ((err = thread_kept(x, c->thread)) <= 0)
		return err;
	st = get_stack(x, c->stack, &err);
	if (!st)
		return err;
	if (hist_grow((void **)&x->ids, &x->ids_cap, st->depth + 2, sizeof(*x->ids)))
		return -ENOMEM;
	if (x->q->process_root)
		x->ids[n++] = (uint32_t)proc_root;
	if (x->q->by_thread) {
		if ((id = thread_root(x, c->thread, c->tid)) < 0)
			return (int)id;
		x->ids[n++] = (uint32_t)id;
	}
	memcpy(x->ids + n, st->ids, st->depth * sizeof(*x->ids));
	return stackset_add(x->out, x->ids, n + st->depth,
			    x->q->scale ? c->count * x->q->scale : c->count);
}

static int query_proc(struct hq *x, const struct hq_proc *p)
{
	int64_t root = 0;
	size_t i;
	int err = 0;

	x->ncells = 0;
	hashmap_free(&x->cell_index);
	for (i = 0; i < x->nseries && !err; i++)
		err = scan_series(x, p, &x->series[i]);
	if (!err && x->ncells && x->q->process_root) {
		root = stackset_intern(x->out, FRAME_ROOT, p->label);
		if (root < 0)
			err = (int)root;
	}
	for (i = 0; i < x->ncells && !err; i++)
		err = emit_cell(x, &x->cells[i], root);
	return err;
}

static void hq_free(struct hq *x)
{
	size_t i;

	for (i = 0; i < x->nstacks; i++)
		free(x->stacks[i].ids);
	free(x->stacks);
	free(x->procs);
	free(x->series);
	free(x->cells);
	free(x->ids);
	hashmap_free(&x->frame_map);
	hashmap_free(&x->thread_map);
	hashmap_free(&x->kept_map);
	hashmap_free(&x->stack_map);
	hashmap_free(&x->cell_index);
}

/* One read transaction: a consistent snapshot, one lock. */
static int read_begin(struct history *h)
{
	int rc;

	if (h->in_txn)
		return -EBUSY;
	if ((h->broken || !h->db) && (rc = hist_recover(h)) != 0)
		return rc;
	rc = sqlite3_step(hist_stmt(h, HS_BEGIN_READ));
	sqlite3_reset(h->st[HS_BEGIN_READ]);
	return rc == SQLITE_DONE ? 0 : hist_fail(h, rc, "starting a read");
}

static void read_end(struct history *h)
{
	if (h->db && !sqlite3_get_autocommit(h->db)) {
		sqlite3_step(hist_stmt(h, HS_COMMIT));
		sqlite3_reset(h->st[HS_COMMIT]);
	}
}

int history_query(struct history *h, const struct history_query *q, struct stackset *out)
{
	struct hq x;
	size_t i;
	int err;

	memset(&x, 0, sizeof(x));
	x.h = h;
	x.q = q;
	x.out = out;
	err = read_begin(h);
	if (err)
		return err;
	err = select_procs(&x);
	if (!err)
		err = select_series(&x);
	for (i = 0; i < x.nprocs && !err; i++)
		err = query_proc(&x, &x.procs[i]);
	if (x.missing)
		log_warn("history: %s: %llu frames or stacks missing (damaged file?); their "
			 "samples are under \"%s\"", h->path, (unsigned long long)x.missing,
			 HQ_MISSING);
	read_end(h);
	hq_free(&x);
	return err;
}

/* The newest RSS points of process row id into buf (pairs, oldest
 * first): how many. */
static uint32_t rss_of(struct history *h, int64_t id, uint64_t *buf)
{
	sqlite3_stmt *s = hist_stmt(h, HS_RSS_OF_PROC);
	uint32_t n = 0, i;
	int rc;

	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, HISTORY_RSS_POINTS_MAX);
	while (n < HISTORY_RSS_POINTS_MAX && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		buf[2 * n] = (uint64_t)sqlite3_column_int64(s, 0);
		buf[2 * n + 1] = (uint64_t)sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_reset(s);
	for (i = 0; i < n / 2; i++) { /* newest first -> oldest first */
		uint64_t t = buf[2 * i], b = buf[2 * i + 1];

		buf[2 * i] = buf[2 * (n - 1 - i)];
		buf[2 * i + 1] = buf[2 * (n - 1 - i) + 1];
		buf[2 * (n - 1 - i)] = t;
		buf[2 * (n - 1 - i) + 1] = b;
	}
	return n;
}

/* Process row id's stored weights per type into buf: how many types. */
static uint32_t totals_of(struct history *h, int64_t id, struct history_total *buf)
{
	sqlite3_stmt *s = hist_stmt(h, HS_PROC_TOTALS);
	uint32_t n = 0;

	sqlite3_bind_int64(s, 1, id);
	while (n < HISTORY_TOTALS_MAX && sqlite3_step(s) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(s, 0);

		snprintf(buf[n].type, sizeof(buf[n].type), "%s", type ? type : "");
		buf[n].count = (uint64_t)sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_reset(s);
	return n;
}

/* Room for one process's arrays, reused row after row. */
struct proc_scratch {
	uint64_t rss[2 * HISTORY_RSS_POINTS_MAX];
	struct history_total totals[HISTORY_TOTALS_MAX];
};

struct proc_walk {
	history_skip_fn skip;
	history_proc_fn fn;
	void *ctx;
};

static int proc_row(struct history *h, sqlite3_stmt *s, struct proc_scratch *sc,
		    const struct proc_walk *w)
{
	int64_t id = sqlite3_column_int64(s, 8);
	struct history_proc p = {
		.pid = (uint32_t)sqlite3_column_int64(s, 0),
		.uid = (uint32_t)sqlite3_column_int64(s, 1),
		.start_time = (uint64_t)sqlite3_column_int64(s, 2),
		.comm = (const char *)sqlite3_column_text(s, 3),
		.exe = (const char *)sqlite3_column_text(s, 4),
		.first_ns = (uint64_t)sqlite3_column_int64(s, 5),
		.last_ns = (uint64_t)sqlite3_column_int64(s, 6),
		.exited_ns = (uint64_t)sqlite3_column_int64(s, 7),
	};
	int i;

	for (i = 0; i < HISTORY_IDENT_N; i++)
		p.ident[i] = (const char *)sqlite3_column_text(s, 9 + i);
	p.ppid = (uint32_t)sqlite3_column_int64(s, 9 + HISTORY_IDENT_N);
	if (w->skip && w->skip(&p, w->ctx))
		return 0;
	p.rss = sc->rss;
	p.nrss = rss_of(h, id, sc->rss);
	p.totals = sc->totals;
	p.ntotals = totals_of(h, id, sc->totals);
	return w->fn(&p, w->ctx);
}

int history_procs(struct history *h, uint64_t since_ns, history_skip_fn skip, history_proc_fn fn,
		  void *ctx)
{
	const struct proc_walk w = { skip, fn, ctx };
	struct proc_scratch *sc = malloc(sizeof(*sc));
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (!sc)
		return -ENOMEM;
	if ((ret = read_begin(h)) != 0) {
		free(sc);
		return ret;
	}
	s = hist_stmt(h, HS_PROC_LIST);
	sqlite3_bind_int64(s, 1, since_ns > INT64_MAX ? INT64_MAX : (int64_t)since_ns);
	while (!ret && (rc = sqlite3_step(s)) == SQLITE_ROW)
		ret = proc_row(h, s, sc, &w);
	sqlite3_reset(s);
	if (!ret && rc != SQLITE_DONE)
		ret = hist_fail(h, rc, "listing processes");
	read_end(h);
	free(sc);
	return ret;
}
