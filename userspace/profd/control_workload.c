/* control_workload.c: what the control answers say of workloads
 * (identity.h): their fields in lists, the selectors --service, --unit,
 * --container and --cgroup over memory's processes and history's, and
 * the title and "key=value" metadata of a workload's profile. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "array.h"
#include "control.h"
#include "daemon.h"
#include "identity.h"
#include "protocol.h"

/* A workload field by its wire index (enum proto_ident). */
const char *control_wid_ident(const struct workload_id *wid, int i)
{
	static const enum wid_field fields[PROTO_IDENT_N] = {
		[PROTO_IDENT_SERVICE] = WID_SERVICE, [PROTO_IDENT_UNIT] = WID_UNIT,
		[PROTO_IDENT_RUNTIME] = WID_RUNTIME, [PROTO_IDENT_CONTAINER] = WID_CONTAINER,
		[PROTO_IDENT_POD] = WID_POD,	     [PROTO_IDENT_QOS] = WID_QOS,
		[PROTO_IDENT_SCRIPT] = WID_SCRIPT,   [PROTO_IDENT_CGROUP] = WID_CGROUP,
		[PROTO_IDENT_RANK] = WID_RANK,	     [PROTO_IDENT_LOCAL_RANK] = WID_LOCAL_RANK,
		[PROTO_IDENT_WORLD_SIZE] = WID_WORLD_SIZE, [PROTO_IDENT_JOB] = WID_JOB,
	};

	return wid ? identity_field(wid, fields[i]) : NULL;
}

/* The stored workload by wire index. */
void control_history_ident(const struct history_proc *hp, const char **out)
{
	out[PROTO_IDENT_SERVICE] = hp->ident[HISTORY_ID_SERVICE];
	out[PROTO_IDENT_UNIT] = hp->ident[HISTORY_ID_UNIT];
	out[PROTO_IDENT_RUNTIME] = hp->ident[HISTORY_ID_RUNTIME];
	out[PROTO_IDENT_CONTAINER] = hp->ident[HISTORY_ID_CONTAINER];
	out[PROTO_IDENT_POD] = hp->ident[HISTORY_ID_POD];
	out[PROTO_IDENT_QOS] = hp->ident[HISTORY_ID_QOS];
	out[PROTO_IDENT_SCRIPT] = hp->ident[HISTORY_ID_SCRIPT];
	out[PROTO_IDENT_CGROUP] = hp->ident[HISTORY_ID_CGROUP];
	out[PROTO_IDENT_RANK] = hp->ident[HISTORY_ID_RANK];
	out[PROTO_IDENT_LOCAL_RANK] = hp->ident[HISTORY_ID_LOCAL_RANK];
	out[PROTO_IDENT_WORLD_SIZE] = hp->ident[HISTORY_ID_WORLD_SIZE];
	out[PROTO_IDENT_JOB] = hp->ident[HISTORY_ID_JOB];
}

/* --unit takes the unit's name with or without ".service". */
static bool unit_matches(const char *unit, const char *want)
{
	size_t n = strlen(want);

	return !strcmp(unit, want) || (!strncmp(unit, want, n) && !strcmp(unit + n, ".service"));
}

/* --cgroup takes the path or a directory above it. */
static bool cgroup_matches(const char *cgroup, const char *want)
{
	size_t n = strlen(want);

	while (n > 1 && want[n - 1] == '/')
		n--;
	return !strncmp(cgroup, want, n) && (cgroup[n] == '\0' || cgroup[n] == '/' || n == 1);
}

/* The workload selectors over a workload's fields (memory's or
 * history's); an unknown one ("") matches none. */
static bool ident_matches(const struct proto_dump_req *r, const char *service, const char *unit,
			  const char *container, const char *cgroup)
{
	if (r->service && service && service[0] && !strcmp(service, r->service))
		return true;
	if (r->unit && unit && unit[0] && unit_matches(unit, r->unit))
		return true;
	/* A prefix of the id, as docker ps shows it (12 digits), or whole. */
	if (r->container && r->container[0] && container && container[0] &&
	    !strncmp(container, r->container, strlen(r->container)))
		return true;
	return r->cgroup && cgroup && cgroup[0] && cgroup_matches(cgroup, r->cgroup);
}

bool control_workload_matches(const struct proto_dump_req *r, const struct workload_id *w)
{
	return w && ident_matches(r, w->service, w->unit, w->container, w->cgroup);
}

bool control_by_workload(const struct proto_dump_req *r)
{
	return r->service || r->unit || r->container || r->cgroup;
}

/* "comm x exe y service z" for an error message. */
void control_describe_selectors(const struct proto_dump_req *r, char *out, size_t n)
{
	const char *names[] = { "comm", "exe", "service", "unit", "container", "cgroup" };
	const char *vals[] = { r->comm, r->exe, r->service, r->unit, r->container, r->cgroup };
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && len < n; i++)
		if (vals[i])
			len += (size_t)snprintf(out + len, n - len, "%s%s %s", len ? " " : "",
						names[i], vals[i]);
}

/* A workload field every selected process shares (those not read yet
 * aside), or NULL. */
static const char *shared_field(struct proc **sel, size_t nsel, int f)
{
	const char *v = NULL, *x;
	size_t i;

	for (i = 0; i < nsel; i++) {
		if (!sel[i]->wid)
			continue;
		x = control_wid_ident(sel[i]->wid, f);
		if (!x[0] || (v && strcmp(v, x)))
			return NULL;
		v = x;
	}
	return v;
}

/* "key=value" lines of the fields the selection shares: a pprof's
 * comments, a JSON profile's workload object. */
static void set_workload(struct stackset *ss, struct proc **sel, size_t nsel)
{
	char text[1024];
	size_t len = 0;
	const char *v;
	int f;

	text[0] = '\0';
	for (f = 0; f < PROTO_IDENT_N && len < sizeof(text); f++)
		if ((v = shared_field(sel, nsel, f)))
			len += (size_t)snprintf(text + len, sizeof(text) - len, "%s=%s\n",
						proto_ident_name(f), v);
	if (len)
		stackset_set_str(&ss->workload, text);
}

/* The title names the workload where it says more than comm: speedscope
 * shows it as the profile's name, pprof as its first comment. */
static void set_title(struct stackset *ss, struct proc **sel, size_t nsel)
{
	const char *svc = shared_field(sel, nsel, PROTO_IDENT_SERVICE);
	char title[256];

	if (nsel == 1 && svc && strcmp(svc, sel[0]->comm))
		snprintf(title, sizeof(title), "%s (%s, pid %u)", svc, sel[0]->comm, sel[0]->pid);
	else if (nsel == 1)
		snprintf(title, sizeof(title), "%s (pid %u)", sel[0]->comm, sel[0]->pid);
	else if (svc)
		snprintf(title, sizeof(title), "%s (%zu processes)", svc, nsel);
	else
		snprintf(title, sizeof(title), "%zu processes", nsel);
	stackset_set_str(&ss->title, title);
}

void control_workload_meta(struct stackset *ss, struct proc **sel, size_t nsel, bool fields)
{
	set_title(ss, sel, nsel);
	if (nsel && fields)
		set_workload(ss, sel, nsel);
}

/* "service myapp (3 exited processes)" */
void control_history_title(struct stackset *ss, const struct proto_dump_req *r, size_t n)
{
	char what[256], title[320];

	control_describe_selectors(r, what, sizeof(what));
	snprintf(title, sizeof(title), "%s (%zu exited process%s)", what, n, n == 1 ? "" : "es");
	stackset_set_str(&ss->title, title);
}

struct wl_ctx {
	const struct proto_dump_req *r;
	uint32_t uid;
	const uint32_t *pids; /* memory's selection */
	const uint64_t *starts;
	size_t n;
	struct control_wl_sel *out;
};

/* In memory's part of the selection already, or not the caller's. */
static bool wl_skip(const struct history_proc *hp, void *arg)
{
	const struct wl_ctx *x = arg;
	size_t i;

	if (x->uid != 0 && hp->uid != x->uid)
		return true;
	if (!ident_matches(x->r, hp->ident[HISTORY_ID_SERVICE], hp->ident[HISTORY_ID_UNIT],
			   hp->ident[HISTORY_ID_CONTAINER], hp->ident[HISTORY_ID_CGROUP]))
		return true;
	for (i = 0; i < x->n; i++)
		if (x->pids[i] == hp->pid && x->starts[i] == hp->start_time)
			return true;
	return false;
}

static int wl_add(const struct history_proc *hp, void *arg)
{
	struct control_wl_sel *o = ((struct wl_ctx *)arg)->out;
	size_t cap = o->cap; /* the two arrays grow in step */

	if (array_grow((void **)&o->pids, &o->cap, o->n + 1, sizeof(*o->pids)) ||
	    array_grow((void **)&o->starts, &cap, o->n + 1, sizeof(*o->starts)))
		return -ENOMEM;
	o->pids[o->n] = hp->pid;
	o->starts[o->n++] = hp->start_time;
	return 0;
}

/* --service and the like: the workload's processes only history knows,
 * by the workload stored with each (history_procs reads no samples for
 * the ones skipped). */
int control_workload_history(struct daemon *d, uint32_t uid, const struct proto_dump_req *r,
			     const uint32_t *pids, const uint64_t *starts, size_t n,
			     struct control_wl_sel *out)
{
	struct wl_ctx x = { r, uid, pids, starts, n, out };

	if (!d->hist || !control_by_workload(r) || (r->flags & PROTO_DUMP_ALL))
		return 0;
	return history_procs(d->hist, r->since_ns, wl_skip, wl_add, &x);
}

