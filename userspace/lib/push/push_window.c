/* push_window: exact push windows from the aggregator's time buckets.
 *
 * At push k (time T_k) every active process is dumped twice per profile
 * type: once over the buckets chosen at push k-1 (since = S_k), which
 * minus what those buckets held at push k-1 is the window; and once over
 * the buckets it will compare against at push k+1 (since = S_k+1 =
 * T_k - slack).  A sample stamped more than `slack` before the push it
 * is counted after is missed by push (never by the daemon). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "array.h"
#include "hashmap.h"
#include "identity.h"
#include "log.h"
#include "proctable.h"
#include "push.h"

#define DEFAULT_SLACK_NS (10ull * 1000000000ull)

struct pw_entry {
	uint32_t pid;
	int type;
	uint64_t start_time;
	uint64_t gen; /* last flush that saw the process */
	struct stackset *prev; /* buckets >= since, at the last flush */
};

/* Series labels from the workload, those known: service_name and the
 * fields a fleet filters by.  Not the pid: a label value per process
 * would make a series per process, unbounded. */
#define PW_LABELS_MAX 9 /* service_name and workload_labels' fields */
#define PW_NAME_MAX 128

struct push_window {
	char name_tmpl[PW_NAME_MAX]; /* --push-name */
	uint64_t slack_ns;
	uint64_t since_ns; /* S_k: buckets compared at the next flush */
	uint64_t last_ns;  /* T_k-1: the next window's start */
	uint64_t gen;
	struct pw_entry *e;
	size_t n, cap;
	struct hashmap index; /* hash(pid, start, type) -> index + 1 */
};

struct push_window *push_window_new(uint64_t slack_ns)
{
	struct push_window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->slack_ns = slack_ns ? slack_ns : DEFAULT_SLACK_NS;
	snprintf(w->name_tmpl, sizeof(w->name_tmpl), "%s", PUSH_DEFAULT_NAME);
	hashmap_init(&w->index);
	return w;
}

int push_window_set_name(struct push_window *w, const char *tmpl)
{
	if (!tmpl || strlen(tmpl) >= sizeof(w->name_tmpl) || identity_check_template(tmpl))
		return -EINVAL;
	snprintf(w->name_tmpl, sizeof(w->name_tmpl), "%s", tmpl);
	return 0;
}

/* What a push item says of p's workload: its name (into name) and its
 * labels (into l, pointing into p's workload and name).  Unknown (not
 * read yet): neither, and the encoders name it by comm. */
static size_t workload_labels(const struct push_window *w, const struct proc *p, char *name,
			      size_t size, struct push_label *l)
{
	static const struct {
		const char *label;
		enum wid_field f;
	} fields[] = {
		{ "unit", WID_UNIT },	{ "container", WID_CONTAINER }, { "pod", WID_POD },
		{ "qos", WID_QOS },	{ "script", WID_SCRIPT },	{ "cgroup", WID_CGROUP },
		/* a job spread over hosts: one query by job, a series per rank */
		{ "job", WID_JOB },	{ "rank", WID_RANK },
	};
	size_t i, n = 0;

	name[0] = '\0';
	if (!p->wid)
		return 0;
	if (identity_format(p->wid, w->name_tmpl, name, size) > 0)
		l[n++] = (struct push_label){ "service_name", name };
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *v = identity_field(p->wid, fields[i].f);

		if (v && v[0])
			l[n++] = (struct push_label){ fields[i].label, v };
	}
	return n;
}

void push_window_free(struct push_window *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->n; i++)
		stackset_free(w->e[i].prev);
	free(w->e);
	hashmap_free(&w->index);
	free(w);
}

static uint64_t entry_key(uint32_t pid, uint64_t start_time, int type)
{
	return hash64_mix(((uint64_t)pid << 8 | (uint64_t)type) ^ hash64_mix(start_time));
}

static bool entry_is(const struct pw_entry *e, const struct proc *p, int type)
{
	return e->pid == p->pid && e->start_time == p->start_time && e->type == type;
}

static struct pw_entry *entry_find(struct push_window *w, const struct proc *p, int type)
{
	uint64_t h, v;

	for (h = entry_key(p->pid, p->start_time, type); hashmap_get(&w->index, h, &v); h++)
		if (entry_is(&w->e[v - 1], p, type))
			return &w->e[v - 1];
	return NULL;
}

static struct pw_entry *entry_add(struct push_window *w, const struct proc *p, int type)
{
	uint64_t h, v;

	if (array_grow((void **)&w->e, &w->cap, w->n + 1, sizeof(*w->e)))
		return NULL;
	for (h = entry_key(p->pid, p->start_time, type); hashmap_get(&w->index, h, &v); h++)
		;
	if (hashmap_put(&w->index, h, w->n + 1))
		return NULL;
	w->e[w->n] = (struct pw_entry){ p->pid, type, p->start_time, 0, NULL };
	return &w->e[w->n++];
}

/* Drop entries not seen at this flush, and re-index. */
static int entries_compact(struct push_window *w)
{
	size_t i, n = 0;
	uint64_t h, v;
	int err = 0;

	for (i = 0; i < w->n; i++) {
		if (w->e[i].gen != w->gen || !w->e[i].prev) {
			stackset_free(w->e[i].prev);
			continue;
		}
		w->e[n++] = w->e[i];
	}
	w->n = n;
	hashmap_free(&w->index);
	hashmap_init(&w->index);
	for (i = 0; i < n && !err; i++) {
		for (h = entry_key(w->e[i].pid, w->e[i].start_time, w->e[i].type);
		     hashmap_get(&w->index, h, &v); h++)
			;
		err = hashmap_put(&w->index, h, i + 1);
	}
	return err;
}

static struct stackset *dump(struct aggregate *a, const struct proc *p, int type,
			     uint64_t since)
{
	struct agg_query q = { since, 0, 0, type, 0 };
	struct stackset *ss = stackset_new();

	if (ss && aggregate_dump(a, p, &q, ss)) {
		stackset_free(ss);
		ss = NULL;
	}
	return ss;
}

static int flush_one(struct push_window *w, struct pusher *pu, struct aggregate *a,
		     const struct proc *p, int type, uint64_t now_ns, uint32_t rate_hz)
{
	struct pw_entry *e = entry_find(w, p, type);
	struct stackset *cur, *win, *next;
	struct push_label labels[PW_LABELS_MAX];
	char title[PW_NAME_MAX + 32], name[PW_NAME_MAX];
	int queued = 0, err;

	cur = dump(a, p, type, w->since_ns);
	if (!cur)
		return -ENOMEM;
	win = e && e->prev ? stackset_subtract(cur, e->prev) : cur;
	if (!win) {
		stackset_free(cur);
		return -ENOMEM;
	}
	if (win->total) {
		struct push_item it = {
			.ss = win,
			.pid = p->pid,
			.comm = p->comm,
			.exe = p->exe,
			.type = aggregate_type_name(type),
			.from_ns = w->last_ns ? w->last_ns : p->first_ns,
			.until_ns = now_ns,
			.labels = labels,
		};

		it.n_labels = workload_labels(w, p, name, sizeof(name), labels);
		it.service = name[0] ? name : NULL;
		snprintf(title, sizeof(title), "%s (pid %u)", name[0] ? name : p->comm, p->pid);
		stackset_set_str(&win->title, title);
		stackset_set_str(&win->type, aggregate_type_name(type));
		stackset_set_str(&win->unit, aggregate_type_unit(type));
		win->rate_hz = rate_hz;
		win->start_ns = it.from_ns;
		win->end_ns = now_ns;
		err = push_enqueue(pu, &it);
		if (err == 0)
			queued = 1;
		else if (err != -ENODATA)
			log_debug("push: window of pid %u not queued: %s", p->pid, strerror(-err));
	}
	if (win != cur)
		stackset_free(win);
	stackset_free(cur);

	/* What the next flush compares against. */
	next = dump(a, p, type, now_ns > w->slack_ns ? now_ns - w->slack_ns : 0);
	if (!next)
		return -ENOMEM;
	if (!next->total) {
		stackset_free(next);
		if (e) {
			stackset_free(e->prev);
			e->prev = NULL;
		}
		return queued;
	}
	if (!e && !(e = entry_add(w, p, type))) {
		stackset_free(next);
		return -ENOMEM;
	}
	stackset_free(e->prev);
	e->prev = next;
	e->gen = w->gen;
	return queued;
}

int push_window_flush(struct push_window *w, struct pusher *pu, struct aggregate *a,
		      struct proctable *pt, uint64_t now_ns, uint32_t rate_hz)
{
	size_t i;
	int type, r, queued = 0, err = 0;

	if (!w || !pu || !a || !pt)
		return -EINVAL;
	w->gen++;
	for (i = 0; i < pt->n && !err; i++) {
		const struct proc *p = pt->all[i];

		/* No cell of p can reach into the compared buckets. */
		if (!p->profile || p->last_ns + a->bucket_ns <= w->since_ns)
			continue;
		for (type = 0; type < AGG_TYPE_MAX && !err; type++) {
			/* Only CPU samples unless the process has other events;
			 * wall is composed at dump time, never stored. */
			if (type == AGG_WALL || (type != AGG_CPU && !p->events))
				continue;
			r = flush_one(w, pu, a, p, type, now_ns, rate_hz);
			if (r < 0)
				err = r;
			else
				queued += r;
		}
	}
	if (!err)
		err = entries_compact(w);
	w->last_ns = now_ns;
	w->since_ns = now_ns > w->slack_ns ? now_ns - w->slack_ns : 0;
	return err ? err : queued;
}
