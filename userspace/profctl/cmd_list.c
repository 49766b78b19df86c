/* profctl list: processes profd has samples for, each profile type in
 * its own unit (CPU samples are not added to nanoseconds or bytes). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "duration.h"
#include "jsonw.h"
#include "protocol.h"

#define MIB (1024.0 * 1024.0)

/* How a weight's unit reads: in JSON keys, in a column's name, and the
 * column's figure (weight / scale, with that many decimals).  Units not
 * here (samples, calls) read as they are, whole. */
static const struct unit_view {
	const char *unit, *key, *col;
	double scale;
	int decimals;
} unit_views[] = {
	{ "nanoseconds", "ns", "S", 1e9, 2 },
	{ "bytes", "bytes", "MIB", MIB, 1 },
};

static struct unit_view view_of(const char *unit)
{
	size_t i;

	for (i = 0; i < sizeof(unit_views) / sizeof(unit_views[0]); i++)
		if (!strcmp(unit_views[i].unit, unit))
			return unit_views[i];
	return (struct unit_view){ unit, unit, unit, 1, 0 };
}

/* "off-cpu" in nanoseconds: "off_cpu_ns" (upper: "OFF_CPU_S", the
 * table's); the unit is left out where the name ends in it (cuda-calls). */
static void type_label(const struct proto_list_type *t, bool upper, char *out, size_t size)
{
	struct unit_view v = view_of(t->unit);
	const char *unit = upper ? v.col : v.key;
	size_t n = strlen(t->name), u = strlen(unit), i;

	if (n > u && t->name[n - u - 1] == '-' && !strcasecmp(t->name + n - u, unit))
		snprintf(out, size, "%s", t->name);
	else
		snprintf(out, size, "%s_%s", t->name, unit);
	for (i = 0; out[i]; i++) {
		if (out[i] == '-')
			out[i] = '_';
		else if (upper)
			out[i] = (char)toupper((unsigned char)out[i]);
	}
}

/* Process p's weight of type col (-1: CPU samples).  Signed: mmap's
 * unmaps count negative. */
static int64_t weight_of(const struct proto_proc *p, int col)
{
	return col < 0 ? (int64_t)p->samples : (int64_t)proto_proc_total(p, col);
}

/* What the command line asked to see. */
struct list_view {
	int col;	   /* -t's type in proto_list.types; -1: none (CPU samples) */
	bool all;	   /* exited processes too */
	uint64_t since_ns; /* exited ones that ended from then on too; 0: none */
};

static bool shown(const struct list_view *v, const struct proto_proc *p)
{
	if (!(p->flags & PROTO_PROC_EXITED) || v->all)
		return true;
	return v->since_ns && p->exit_ns >= v->since_ns;
}

/* Live processes first: an exited one is what the user looks past. */
static int by_weight(const void *a, const void *b, void *arg)
{
	const struct proto_proc *x = *(const struct proto_proc *const *)a;
	const struct proto_proc *y = *(const struct proto_proc *const *)b;
	const struct list_view *v = arg;
	bool xe = x->flags & PROTO_PROC_EXITED, ye = y->flags & PROTO_PROC_EXITED;
	int64_t wx = weight_of(x, v->col), wy = weight_of(y, v->col);

	if (xe != ye)
		return xe - ye;
	if (wx != wy)
		return wx < wy ? 1 : -1;
	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The processes to print, in order: pointers into l (free them). */
static const struct proto_proc **rows_of(const struct proto_list *l, const struct list_view *v,
					 size_t *n)
{
	const struct proto_proc **rows = calloc(l->n + 1, sizeof(*rows));
	size_t i;

	if (!rows)
		return NULL;
	for (i = *n = 0; i < l->n; i++)
		if (shown(v, &l->procs[i]))
			rows[(*n)++] = &l->procs[i];
	qsort_r(rows, *n, sizeof(*rows), by_weight, (void *)v);
	return rows;
}

static void json_totals(struct jsonw *w, const struct proto_list *l, const struct proto_proc *p)
{
	char key[96];
	size_t i;

	for (i = 0; i < l->ntypes; i++) {
		type_label(&l->types[i], false, key, sizeof(key));
		jsonw_key(w, key);
		jsonw_i64(w, weight_of(p, (int)i));
	}
}

/* One object a process, a line each: grep finds a pid with its fields. */
static int print_json(const struct ctl *ctl, const struct proto_list *l,
		      const struct proto_proc **rows, size_t n)
{
	struct jsonw w;
	size_t i;
	uint32_t j;
	int k;

	jsonw_init(&w, 1);
	jsonw_array(&w);
	for (i = 0; i < n; i++) {
		const struct proto_proc *p = rows[i];

		jsonw_object(&w);
		jsonw_key_u64(&w, "pid", p->pid);
		jsonw_key_u64(&w, "uid", p->uid);
		jsonw_key_u64(&w, "start_time", p->start_time);
		jsonw_key_u64(&w, "samples", p->samples);
		json_totals(&w, l, p);
		jsonw_key_u64(&w, "rss_bytes", p->rss_bytes);
		jsonw_key_bool(&w, "exited", p->flags & PROTO_PROC_EXITED);
		jsonw_key_u64(&w, "exit_ns", p->exit_ns);
		jsonw_key_str(&w, "comm", p->comm);
		jsonw_key_str(&w, "exe", p->exe);
		for (k = 0; k < PROTO_IDENT_N; k++)
			jsonw_key_str(&w, proto_ident_name(k), p->ident[k] ? p->ident[k] : "");
		jsonw_key(&w, "rss_history");
		jsonw_array(&w);
		for (j = 0; j < p->nrss; j++) {
			jsonw_array(&w);
			jsonw_u64(&w, p->rss_history[2 * j]);
			jsonw_u64(&w, p->rss_history[2 * j + 1]);
			jsonw_end(&w);
		}
		jsonw_end(&w);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

/* "+80.3/50s": how the RSS moved (MiB) from its oldest point to its
 * newest, and over how long; "-" with fewer than two points. */
static void rss_change(const struct proto_proc *p, char *out, size_t size)
{
	uint64_t span_ns, s;
	char span[32];

	snprintf(out, size, "-");
	if (p->nrss < 2)
		return;
	span_ns = p->rss_history[2 * (p->nrss - 1)] - p->rss_history[0];
	s = (span_ns + 500000000ull) / 1000000000ull;
	snprintf(out, size, "%+.1f/%s",
		 ((double)p->rss_history[2 * p->nrss - 1] - (double)p->rss_history[1]) / MIB,
		 duration_format(s * 1000000000ull, span, sizeof(span)));
}

/* SERVICE: a word, so the columns stay split by blanks ("-" unknown). */
static const char *service_of(const struct proto_proc *p)
{
	const char *s = p->ident[PROTO_IDENT_SERVICE];

	return s && s[0] && !strpbrk(s, " \t\n") ? s : "-";
}

/* -t's column: its heading, how its figures read, how wide. */
struct type_col {
	char name[96];
	struct unit_view unit;
	int width;
};

static void print_table(const struct proto_list *l, const struct list_view *v,
			const struct proto_proc **rows, size_t n)
{
	struct type_col tc = { .width = 0 };
	size_t i;

	if (v->col >= 0) {
		type_label(&l->types[v->col], true, tc.name, sizeof(tc.name));
		tc.unit = view_of(l->types[v->col].unit);
		tc.width = (int)strlen(tc.name) > 10 ? (int)strlen(tc.name) : 10;
	}
	printf("%8s %10s", "PID", "SAMPLES");
	if (v->col >= 0)
		printf(" %*s", tc.width, tc.name);
	printf(" %9s %13s  %-16s %-7s %-20s %s\n", "RSS_MIB", "RSS_CHANGE", "COMM", "STATE",
	       "SERVICE", "EXE");
	for (i = 0; i < n; i++) {
		const struct proto_proc *p = rows[i];
		char rss[32] = "-", change[48]; /* exited, or not readable */

		if (p->rss_bytes)
			snprintf(rss, sizeof(rss), "%.1f", (double)p->rss_bytes / MIB);
		rss_change(p, change, sizeof(change));
		printf("%8u %10llu", p->pid, (unsigned long long)p->samples);
		if (v->col >= 0)
			printf(" %*.*f", tc.width, tc.unit.decimals,
			       (double)weight_of(p, v->col) / tc.unit.scale);
		printf(" %9s %13s  %-16s %-7s %-20s %s\n", rss, change, p->comm ? p->comm : "",
		       p->flags & PROTO_PROC_EXITED ? "exited" : "running", service_of(p),
		       p->exe ? p->exe : "");
	}
}

void list_usage(FILE *out)
{
	fputs("usage: profctl [--json] list [--all | --since DUR] [-t TYPE]\n"
	      "The running processes profd holds samples for, busiest first: by CPU\n"
	      "samples (SAMPLES; samples in --json, which counts nothing else), or by\n"
	      "TYPE's weights with -t.  Exited ones follow the running ones with --all\n"
	      "or --since.  Each live one's resident memory now (RSS_MIB; rss_bytes in\n"
	      "--json) and how it moved over the points profd kept, one per bucket\n"
	      "while the process ran (RSS_CHANGE, MiB over that span; rss_history in\n"
	      "--json: [realtime ns, bytes] pairs, oldest first).  SERVICE is its\n"
	      "workload: a systemd service's name, else the script or module an\n"
	      "interpreter runs, else the container's short id, else comm.\n"
	      "  -a, --all          exited processes too (those profd still keeps)\n"
	      "      --since DUR    exited processes that ended in the last DUR too\n"
	      "  -t, --type TYPE    TYPE's weights in a column of their unit: off-cpu,\n"
	      "                     wall, gpu-driver, cuda in seconds (OFF_CPU_S, ...),\n"
	      "                     memory, mmap in MiB, gil in samples, *-calls in calls\n"
	      "--json gives every type's weights, whole, under its name and unit:\n"
	      "cpu_samples, off_cpu_ns, wall_ns, memory_bytes, mmap_bytes (negative\n"
	      "when more was unmapped), gil_samples, cuda_ns, cuda_calls, ...; and\n"
	      "exit_ns (CLOCK_REALTIME; 0 while running); the workload's service,\n"
	      "unit, runtime, container, pod, qos, script and cgroup (\"\" unknown).\n",
	      out);
}

/* "cpu, gpu-driver, ...": the types profd counts, as far as they fit. */
static void type_names(const struct proto_list *l, char *out, size_t size)
{
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < l->ntypes && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ", " : "",
					l->types[i].name);
}

/* -t's type among those profd counts; 1 or 2 after reporting why not. */
static int find_type(const struct ctl *ctl, const struct proto_list *l, const char *type, int *col)
{
	char known[512];

	*col = -1;
	if (!type || !strcmp(type, "cpu"))
		return 0; /* SAMPLES is it */
	if ((*col = proto_list_type_index(l, type)) >= 0)
		return 0;
	if (!l->ntypes) {
		client_error(ctl, "this profd lists CPU samples only: upgrade it for --type");
		return 1;
	}
	type_names(l, known, sizeof(known));
	return cli_usage_error(ctl, "unknown profile type '%s' (known: %s)", type, known);
}

static int show(const struct ctl *ctl, const struct proto_list *l, const struct list_view *v)
{
	const struct proto_proc **rows;
	size_t n;
	int rc = 0;

	rows = rows_of(l, v, &n);
	if (!rows) {
		client_error(ctl, "out of memory");
		return 1;
	}
	if (ctl->json)
		rc = print_json(ctl, l, rows, n);
	else
		print_table(l, v, rows, n);
	free(rows);
	return rc;
}

int cmd_list(const struct ctl *ctl, struct cli_args *a)
{
	struct list_view v = { .all = a->req.flags & PROTO_DUMP_ALL, .since_ns = a->req.since_ns };
	struct proto_list l = { 0 };
	struct buf req, resp;
	int rc = 1;

	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_LIST, &req, PROTO_RESP_LIST, &resp))
		goto out;
	if (proto_decode_list(resp.data, resp.len, &l)) {
		client_error(ctl, "malformed list reply from profd");
		goto out;
	}
	rc = find_type(ctl, &l, a->req.type, &v.col);
	if (!rc)
		rc = show(ctl, &l, &v);
out:
	proto_list_free(&l);
	buf_free(&req);
	buf_free(&resp);
	return rc;
}
