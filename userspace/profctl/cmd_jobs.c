/* profctl jobs: the distributed jobs profd sees (jobs.h finds them in
 * the process list), each rank's CPU, off-CPU and time in collectives,
 * and with --explain the straggler: the rank that waits least in
 * collectives while the others wait for it, and the Python lines it
 * spent its time on against the other ranks'. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "hashmap.h"
#include "jobs.h"
#include "jobsel.h"
#include "jsonw.h"
#include "protocol.h"
#include "stackset.h"

void jobs_usage(FILE *out)
{
	fputs("usage: profctl [--json] jobs [--explain ID [--since DUR] [--until DUR]]\n"
	      "The distributed jobs on this host: the process trees under a launcher\n"
	      "(torchrun, mpirun/mpiexec, srun, deepspeed, accelerate), each process's rank\n"
	      "from the variables its launcher set, workers under their rank.\n"
	      "  JOB is the launcher's pid; CPU_S CPU time (samples / rate), OFFCPU_S time\n"
	      "  blocked (profd --off-cpu), COMM_S time in the blocking calls of MPI, NCCL\n"
	      "  and PyTorch's c10d (the comm profile).\n"
	      "      --explain ID     each rank's figures, the straggler named (the rank the\n"
	      "                       others wait for in collectives) and the Python lines it\n"
	      "                       spent more CPU on than the other ranks did\n"
	      "      --since DUR, --until DUR\n"
	      "                       explain that window only (e.g. --since 2m: a slow\n"
	      "                       phase), in whole buckets of profd's --bucket (10s)\n"
	      "Dump a job with one root frame per rank: profctl dump --job ID.\n",
	      out);
}

/* profd's sampling rate: 99 Hz, its default, from a daemon that does
 * not say. */
static double daemon_rate(const struct jobsel *s)
{
	return s->list.rate_hz ? s->list.rate_hz : 99;
}

/* A member's figures from its whole profile; CPU samples as seconds at
 * profd's rate. */
static void member_figures(const struct jobsel *s, const struct job_member *m,
			   struct job_figures *f)
{
	const struct proto_proc *p = &s->list.procs[m->proc];

	f->cpu_s = (double)proto_proc_total(p, s->t_cpu) / daemon_rate(s);
	f->offcpu_s = (double)proto_proc_total(p, s->t_offcpu) / 1e9;
	f->comm_s = (double)proto_proc_total(p, s->t_comm) / 1e9;
	f->comm_calls = proto_proc_total(p, s->t_comm_calls);
}

/* A member's weight of one profile type in [since, until): 0 when it has
 * none at all (profd refuses a profile that does not exist). */
static int window_total(const struct ctl *ctl, const struct jobsel *s, const struct job_member *m,
			int type, const struct cli_args *a, uint64_t *out)
{
	const struct proto_proc *p = &s->list.procs[m->proc];
	uint32_t pid = p->pid;
	struct proto_dump_req r = { .pids = &pid, .npids = 1, .since_ns = a->req.since_ns,
				    .until_ns = a->req.until_ns };
	struct stackset *ss;
	int err;

	*out = 0;
	if (type < 0 || !proto_proc_total(p, type))
		return 0;
	r.type = s->list.types[type].name;
	if ((err = client_dump(ctl, &r, &ss)))
		return err;
	*out = ss->total;
	stackset_free(ss);
	return 0;
}

/* Each member's figures in the window --since/--until name, f[i] for
 * j->m[i], from its profiles: 0, or -errno (reported). */
static int window_figures(const struct ctl *ctl, const struct jobsel *s, const struct job *j,
			  const struct cli_args *a, struct job_figures *f)
{
	uint64_t cpu, offcpu, comm, calls;
	size_t i;
	int err = 0;

	for (i = 0; i < j->n && !err; i++) {
		err = window_total(ctl, s, &j->m[i], s->t_cpu, a, &cpu);
		err = err ? err : window_total(ctl, s, &j->m[i], s->t_offcpu, a, &offcpu);
		err = err ? err : window_total(ctl, s, &j->m[i], s->t_comm, a, &comm);
		err = err ? err : window_total(ctl, s, &j->m[i], s->t_comm_calls, a, &calls);
		f[i] = (struct job_figures){ .cpu_s = (double)cpu / daemon_rate(s),
					     .offcpu_s = (double)offcpu / 1e9,
					     .comm_s = (double)comm / 1e9,
					     .comm_calls = calls };
	}
	return err;
}

/* ---- the list ---- */

static const char *role_name(enum job_role r)
{
	static const char *const names[] = { "launcher", "rank", "worker", "other" };

	return names[r];
}

static bool member_live(const struct jobsel *s, const struct job_member *m)
{
	return !(s->list.procs[m->proc].flags & PROTO_PROC_EXITED);
}

/* The job's figures (f: its members') summed, and how many still run. */
static void job_sums(const struct jobsel *s, const struct job *j, const struct job_figures *f,
		     struct job_figures *sum, size_t *live)
{
	size_t i;

	memset(sum, 0, sizeof(*sum));
	*live = 0;
	for (i = 0; i < j->n; i++) {
		sum->cpu_s += f[i].cpu_s;
		sum->offcpu_s += f[i].offcpu_s;
		sum->comm_s += f[i].comm_s;
		sum->comm_calls += f[i].comm_calls;
		*live += member_live(s, &j->m[i]);
	}
}

/* Each member's whole-profile figures, f[i] for j->m[i]: NULL when out
 * of memory. */
static struct job_figures *whole_figures(const struct jobsel *s, const struct job *j)
{
	struct job_figures *f = calloc(j->n + 1, sizeof(*f));
	size_t i;

	for (i = 0; f && i < j->n; i++)
		member_figures(s, &j->m[i], &f[i]);
	return f;
}

static int print_list(const struct jobsel *s)
{
	size_t i, live;

	printf("%8s  %-12s %5s %7s %9s %9s %9s  %s\n", "JOB", "LAUNCHER", "RANKS", "WORKERS",
	       "CPU_S", "OFFCPU_S", "COMM_S", "STATE");
	for (i = 0; i < s->njobs; i++) {
		const struct job *j = &s->jobs[i];
		struct job_figures sum, *f = whole_figures(s, j);

		if (!f)
			return -ENOMEM;
		job_sums(s, j, f, &sum, &live);
		free(f);
		printf("%8u  %-12s %5zu %7zu %9.2f %9.2f %9.2f  %s\n", j->id,
		       j->launcher[0] ? j->launcher : "(by hand)", j->nranks, j->nworkers, sum.cpu_s,
		       sum.offcpu_s, sum.comm_s, live ? "running" : "exited");
	}
	if (!s->njobs)
		printf("(no jobs: no process runs under a launcher or with a rank set)\n");
	return 0;
}

/* comm_calls only where profd traced the calls (null: read from samples). */
static void json_figures(struct jsonw *w, const struct jobsel *s, const struct job_figures *f)
{
	jsonw_key(w, "cpu_s");
	jsonw_double(w, f->cpu_s);
	jsonw_key(w, "offcpu_s");
	jsonw_double(w, f->offcpu_s);
	jsonw_key(w, "comm_s");
	jsonw_double(w, f->comm_s);
	jsonw_key(w, "comm_calls");
	if (s->list.comm_traced)
		jsonw_u64(w, f->comm_calls);
	else
		jsonw_null(w);
}

static void json_member(struct jsonw *w, const struct jobsel *s, const struct job_member *m,
			const struct job_figures *f)
{
	const struct proto_proc *p = &s->list.procs[m->proc];

	jsonw_object(w);
	jsonw_key_u64(w, "pid", p->pid);
	jsonw_key_str(w, "role", role_name(m->role));
	jsonw_key(w, "rank");
	if (m->rank >= 0)
		jsonw_i64(w, m->rank);
	else
		jsonw_null(w);
	jsonw_key_str(w, "comm", p->comm);
	jsonw_key_bool(w, "exited", p->flags & PROTO_PROC_EXITED);
	json_figures(w, s, f);
	jsonw_end(w);
}

/* The job's id on every host its ranks run on (their launcher's
 * variables: "slurm:42.0", "pmix:1082130433"), "" when none says. */
static const char *host_job_id(const struct jobsel *s, const struct job *j)
{
	size_t i;

	for (i = 0; i < j->n; i++) {
		const char *v = s->list.procs[j->m[i].proc].ident[PROTO_IDENT_JOB];

		if (j->m[i].role == JOB_RANK && v && v[0])
			return v;
	}
	return "";
}

static void json_job(struct jsonw *w, const struct jobsel *s, const struct job *j,
		     const struct job_figures *f)
{
	struct job_figures sum;
	size_t i, live;

	job_sums(s, j, f, &sum, &live);
	jsonw_object(w);
	jsonw_key_u64(w, "id", j->id);
	jsonw_key_str(w, "launcher", j->launcher);
	jsonw_key_str(w, "job", host_job_id(s, j));
	jsonw_key_u64(w, "ranks", j->nranks);
	jsonw_key_u64(w, "workers", j->nworkers);
	jsonw_key_bool(w, "running", live > 0);
	jsonw_key_str(w, "collectives", s->list.comm_traced ? "traced" : "sampled");
	json_figures(w, s, &sum);
	jsonw_key(w, "members");
	jsonw_array(w);
	for (i = 0; i < j->n; i++)
		json_member(w, s, &j->m[i], &f[i]);
	jsonw_end(w);
	jsonw_end(w);
}

/* ---- --explain ---- */

/* The straggler: the rank with the least time in collectives, when the
 * other ranks' median is at least twice it and 50 ms more: they waited
 * for it.  Its index in j->m, or -1 when the ranks wait alike. */
#define STRAGGLER_MIN_GAP_S 0.05
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int find_straggler(const struct job *j, const struct job_figures *f, double *its,
			  double *others)
{
	double *waits = calloc(j->n + 1, sizeof(*waits)), least = 0;
	size_t i, n = 0;
	int best = -1;

	if (!waits)
		return -1;
	for (i = 0; i < j->n; i++) {
		if (j->m[i].role != JOB_RANK)
			continue;
		if (best < 0 || f[i].comm_s < least) {
			best = (int)i;
			least = f[i].comm_s;
		}
		waits[n++] = f[i].comm_s;
	}
	if (n < 2) {
		free(waits);
		return -1;
	}
	qsort(waits, n, sizeof(*waits), cmp_double);
	/* the others' median: the sorted list without its first (least) */
	*others = (n - 1) % 2 ? waits[1 + (n - 1) / 2] : (waits[n / 2] + waits[n / 2 + (n > 2)]) / 2;
	*its = least;
	free(waits);
	return *others >= 2 * least && *others - least >= STRAGGLER_MIN_GAP_S ? best : -1;
}

/* Leaf Python line -> CPU samples of one rank (its Python view) in the
 * window asked for. */
static int rank_lines(const struct ctl *ctl, uint32_t pid, const struct cli_args *a,
		      struct stackset **out)
{
	struct proto_dump_req r = { .pids = &pid, .npids = 1, .flags = PROTO_DUMP_PYTHON_ONLY,
				    .since_ns = a->req.since_ns, .until_ns = a->req.until_ns };

	return client_dump(ctl, &r, out);
}

struct line_diff {
	const char *name;
	double its, others; /* samples: the straggler's, the others' mean */
};

static int cmp_diff(const void *a, const void *b)
{
	const struct line_diff *x = a, *y = b;
	double dx = x->its - x->others, dy = y->its - y->others;

	return dx > dy ? -1 : dx < dy;
}

/* The leaf Python frame of each stack, weighted: name -> slot in d. */
static int add_leaves(const struct stackset *ss, struct hashmap *idx, struct line_diff **d,
		      size_t *n, bool straggler, double share)
{
	size_t i;

	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];
		const char *name = NULL;
		uint32_t k;
		uint64_t key, v;

		for (k = st->depth; k-- > 0 && !name;)
			if (ss->frames[st->frames[k]].kind == FRAME_PYTHON)
				name = ss->frames[st->frames[k]].name;
		if (!name)
			continue;
		key = hash64_str(name);
		if (!hashmap_get(idx, key, &v)) {
			struct line_diff *g = realloc(*d, (*n + 1) * sizeof(*g));

			if (!g || hashmap_put(idx, key, *n))
				return -ENOMEM;
			*d = g;
			g[*n] = (struct line_diff){ .name = name };
			v = (*n)++;
		}
		if (straggler)
			(*d)[v].its += (double)st->count;
		else
			(*d)[v].others += (double)st->count * share;
	}
	return 0;
}

#define EXPLAIN_LINES 5

/* The straggler's Python lines against the other ranks' mean. */
static int explain_lines(const struct ctl *ctl, const struct jobsel *s, const struct job *j,
			 const struct cli_args *a, int straggler, struct jsonw *w)
{
	struct stackset **ss = calloc(j->n + 1, sizeof(*ss));
	struct line_diff *d = NULL;
	struct hashmap idx;
	size_t i, n = 0, nothers = j->nranks - 1;
	int err = ss ? 0 : -ENOMEM;

	hashmap_init(&idx);
	for (i = 0; i < j->n && !err; i++)
		if (j->m[i].role == JOB_RANK)
			err = rank_lines(ctl, s->list.procs[j->m[i].proc].pid, a, &ss[i]);
	for (i = 0; i < j->n && !err; i++)
		if (ss[i])
			err = add_leaves(ss[i], &idx, &d, &n, (int)i == straggler, 1.0 / nothers);
	if (!err) {
		qsort(d, n, sizeof(*d), cmp_diff);
		if (w) {
			jsonw_key(w, "extra_lines");
			jsonw_array(w);
		} else
			printf("what it did instead (CPU samples of its Python lines, against the "
			       "other ranks' mean):\n");
		/* lines that stand out: a tenth of the largest difference at least */
		for (i = 0; i < n && i < EXPLAIN_LINES && d[i].its - d[i].others >= 1 &&
			    d[i].its - d[i].others >= (d[0].its - d[0].others) / 10;
		     i++) {
			if (!w) {
				printf("  %+8.1f  %8.0f %8.1f  %s\n", d[i].its - d[i].others, d[i].its,
				       d[i].others, d[i].name);
				continue;
			}
			jsonw_object(w);
			jsonw_key_str(w, "line", d[i].name);
			jsonw_key(w, "samples");
			jsonw_double(w, d[i].its);
			jsonw_key(w, "others_mean");
			jsonw_double(w, d[i].others);
			jsonw_end(w);
		}
		if (w)
			jsonw_end(w);
	}
	for (i = 0; ss && i < j->n; i++)
		stackset_free(ss[i]);
	free(ss);
	free(d);
	hashmap_free(&idx);
	return err;
}

/* "HH:MM:SS" of a CLOCK_REALTIME ns timestamp, local time. */
static void clock_text(uint64_t ns, char *out, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(out, len, "%H:%M:%S", &tm))
		snprintf(out, len, "?");
}

static void print_window(const struct cli_args *a)
{
	char from[16] = "its start", to[16] = "now";

	if (!a->req.since_ns && !a->req.until_ns)
		return;
	if (a->req.since_ns)
		clock_text(a->req.since_ns, from, sizeof(from));
	if (a->req.until_ns)
		clock_text(a->req.until_ns, to, sizeof(to));
	printf("window: %s to %s (profd's whole buckets around it)\n", from, to);
}

static void print_ranks(const struct jobsel *s, const struct job *j, const struct job_figures *f,
			const struct cli_args *a)
{
	const char *id = host_job_id(s, j);
	size_t i;

	printf("job %u (%s%s%s): %zu ranks, %zu workers\n", j->id,
	       j->launcher[0] ? j->launcher : "ranks set by hand", id[0] ? ", " : "", id, j->nranks,
	       j->nworkers);
	print_window(a);
	printf("%-9s %5s %8s %9s %9s %9s %10s  %s\n", "ROLE", "RANK", "PID", "CPU_S", "OFFCPU_S",
	       "COMM_S", "COMM_CALLS", "STATE");
	for (i = 0; i < j->n; i++) {
		const struct job_member *m = &j->m[i];
		char rank[12] = "-", calls[24] = "-";

		if (m->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", m->rank);
		if (s->list.comm_traced)
			snprintf(calls, sizeof(calls), "%" PRIu64, f[i].comm_calls);
		printf("%-9s %5s %8u %9.2f %9.2f %9.2f %10s  %s\n", role_name(m->role), rank,
		       s->list.procs[m->proc].pid, f[i].cpu_s, f[i].offcpu_s, f[i].comm_s, calls,
		       member_live(s, m) ? "running" : "exited");
	}
	if (!s->list.comm_traced)
		printf("collectives read from samples: waits that spin (MPI's default) from CPU samples,\n"
		       "those that sleep with profd --off-cpu; profd --collectives times every call\n");
}

static int explain_text(const struct ctl *ctl, const struct jobsel *s, const struct job *j,
			const struct job_figures *f, const struct cli_args *a)
{
	double its = 0, others = 0;
	int k = find_straggler(j, f, &its, &others);

	print_ranks(s, j, f, a);
	if (k < 0) {
		printf("no straggler: the ranks wait alike in collectives\n");
		return 0;
	}
	printf("straggler: rank %d (pid %u): %.2f s in collectives, the other ranks %.2f s "
	       "(median): they wait for it\n",
	       j->m[k].rank, s->list.procs[j->m[k].proc].pid, its, others);
	return explain_lines(ctl, s, j, a, k, NULL) ? 1 : 0;
}

static void json_window(struct jsonw *w, const struct cli_args *a)
{
	jsonw_key(w, "window");
	jsonw_object(w);
	jsonw_key(w, "since_ns");
	if (a->req.since_ns)
		jsonw_u64(w, a->req.since_ns);
	else
		jsonw_null(w);
	jsonw_key(w, "until_ns");
	if (a->req.until_ns)
		jsonw_u64(w, a->req.until_ns);
	else
		jsonw_null(w);
	jsonw_end(w);
}

static int explain_json(const struct ctl *ctl, const struct jobsel *s, const struct job *j,
			const struct job_figures *f, const struct cli_args *a)
{
	double its = 0, others = 0;
	int k = find_straggler(j, f, &its, &others), err = 0;
	struct jsonw w;

	jsonw_init(&w, 1);
	jsonw_object(&w);
	jsonw_key(&w, "job");
	json_job(&w, s, j, f);
	json_window(&w, a);
	jsonw_key(&w, "straggler");
	if (k < 0) {
		jsonw_null(&w);
	} else {
		jsonw_object(&w);
		jsonw_key_u64(&w, "rank", (uint64_t)j->m[k].rank);
		jsonw_key_u64(&w, "pid", s->list.procs[j->m[k].proc].pid);
		jsonw_key(&w, "comm_s");
		jsonw_double(&w, its);
		jsonw_key(&w, "others_comm_s_median");
		jsonw_double(&w, others);
		err = explain_lines(ctl, s, j, a, k, &w);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	if (err) {
		jsonw_free(&w);
		return 1;
	}
	return client_print_json(ctl, &w);
}

/* --explain ID [--since DUR] [--until DUR]. */
static int explain(const struct ctl *ctl, const struct jobsel *s, const struct cli_args *a)
{
	const struct job *j = jobsel_job(s, a->explain);
	struct job_figures *f;
	int rc;

	if (!j) {
		client_error(ctl, "no job %u (profctl jobs lists them)", a->explain);
		return 1;
	}
	if (!a->req.since_ns && !a->req.until_ns)
		f = whole_figures(s, j);
	else if ((f = calloc(j->n + 1, sizeof(*f))) && window_figures(ctl, s, j, a, f)) {
		free(f);
		return 1;
	}
	if (!f) {
		client_error(ctl, "out of memory");
		return 1;
	}
	rc = ctl->json ? explain_json(ctl, s, j, f, a) : explain_text(ctl, s, j, f, a);
	free(f);
	return rc;
}

static int list_json(const struct ctl *ctl, const struct jobsel *s)
{
	struct jsonw w;
	size_t i;

	jsonw_init(&w, 1);
	jsonw_array(&w);
	for (i = 0; i < s->njobs; i++) {
		struct job_figures *f = whole_figures(s, &s->jobs[i]);

		if (!f) {
			jsonw_free(&w);
			return -ENOMEM;
		}
		json_job(&w, s, &s->jobs[i], f);
		free(f);
	}
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

int cmd_jobs(const struct ctl *ctl, struct cli_args *a)
{
	struct jobsel s;
	int rc;

	if ((a->req.since_ns || a->req.until_ns) && !a->explain)
		return cli_usage_error(ctl, "--since and --until go with --explain ID");
	if (a->req.since_ns && a->req.until_ns && a->req.until_ns <= a->req.since_ns)
		return cli_usage_error(ctl, "--until must be later than --since");
	if (jobsel_fetch(ctl, &s)) {
		jobsel_free(&s);
		return 1;
	}
	if (a->explain)
		rc = explain(ctl, &s, a);
	else if (ctl->json)
		rc = list_json(ctl, &s);
	else
		rc = print_list(&s);
	if (rc < 0) {
		client_error(ctl, "out of memory");
		rc = 1;
	}
	jobsel_free(&s);
	return rc;
}
