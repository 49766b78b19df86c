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

#include "commands.h"
#include "hashmap.h"
#include "jobs.h"
#include "jobsel.h"
#include "jsonw.h"
#include "protocol.h"
#include "stackset.h"

void jobs_usage(FILE *out)
{
	fputs("usage: profctl [--json] jobs [--explain ID]\n"
	      "The distributed jobs on this host: the process trees under a launcher\n"
	      "(torchrun, mpirun/mpiexec, srun, deepspeed, accelerate), each process's rank\n"
	      "from the variables its launcher set, workers under their rank.\n"
	      "  JOB is the launcher's pid; CPU_S CPU time (samples / rate), OFFCPU_S time\n"
	      "  blocked (profd --off-cpu), COMM_S time in the blocking calls of MPI, NCCL\n"
	      "  and PyTorch's c10d (the comm profile).\n"
	      "      --explain ID     each rank's figures, the straggler named (the rank the\n"
	      "                       others wait for in collectives) and the Python lines it\n"
	      "                       spent more CPU on than the other ranks did\n"
	      "Dump a job with one root frame per rank: profctl dump --job ID.\n",
	      out);
}

/* A member's figures; CPU samples as seconds at profd's rate (99 Hz, its
 * default, from a daemon that does not say). */
static void member_figures(const struct jobsel *s, const struct job_member *m,
			   struct job_figures *f)
{
	const struct proto_proc *p = &s->list.procs[m->proc];

	f->cpu_s = (double)proto_proc_total(p, s->t_cpu) / (s->list.rate_hz ? s->list.rate_hz : 99);
	f->offcpu_s = (double)proto_proc_total(p, s->t_offcpu) / 1e9;
	f->comm_s = (double)proto_proc_total(p, s->t_comm) / 1e9;
	f->comm_calls = proto_proc_total(p, s->t_comm_calls);
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

/* The job's figures summed over its members, and how many still run. */
static void job_sums(const struct jobsel *s, const struct job *j, struct job_figures *sum,
		     size_t *live)
{
	size_t i;

	memset(sum, 0, sizeof(*sum));
	*live = 0;
	for (i = 0; i < j->n; i++) {
		struct job_figures f;

		member_figures(s, &j->m[i], &f);
		sum->cpu_s += f.cpu_s;
		sum->offcpu_s += f.offcpu_s;
		sum->comm_s += f.comm_s;
		sum->comm_calls += f.comm_calls;
		*live += member_live(s, &j->m[i]);
	}
}

static void print_list(const struct jobsel *s)
{
	size_t i, live;

	printf("%8s  %-12s %5s %7s %9s %9s %9s  %s\n", "JOB", "LAUNCHER", "RANKS", "WORKERS",
	       "CPU_S", "OFFCPU_S", "COMM_S", "STATE");
	for (i = 0; i < s->njobs; i++) {
		const struct job *j = &s->jobs[i];
		struct job_figures sum;

		job_sums(s, j, &sum, &live);
		printf("%8u  %-12s %5zu %7zu %9.2f %9.2f %9.2f  %s\n", j->id,
		       j->launcher[0] ? j->launcher : "(by hand)", j->nranks, j->nworkers, sum.cpu_s,
		       sum.offcpu_s, sum.comm_s, live ? "running" : "exited");
	}
	if (!s->njobs)
		printf("(no jobs: no process runs under a launcher or with a rank set)\n");
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

static void json_member(struct jsonw *w, const struct jobsel *s, const struct job_member *m)
{
	const struct proto_proc *p = &s->list.procs[m->proc];
	struct job_figures f;

	member_figures(s, m, &f);
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
	json_figures(w, s, &f);
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

static void json_job(struct jsonw *w, const struct jobsel *s, const struct job *j)
{
	struct job_figures sum;
	size_t i, live;

	job_sums(s, j, &sum, &live);
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
		json_member(w, s, &j->m[i]);
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

static int find_straggler(const struct jobsel *s, const struct job *j, double *its,
			  double *others)
{
	double *waits = calloc(j->n + 1, sizeof(*waits)), least = 0;
	size_t i, n = 0;
	int best = -1;

	if (!waits)
		return -1;
	for (i = 0; i < j->n; i++) {
		struct job_figures f;

		if (j->m[i].role != JOB_RANK)
			continue;
		member_figures(s, &j->m[i], &f);
		if (best < 0 || f.comm_s < least) {
			best = (int)i;
			least = f.comm_s;
		}
		waits[n++] = f.comm_s;
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

/* Leaf Python line -> CPU samples of one rank (its Python view). */
static int rank_lines(const struct ctl *ctl, uint32_t pid, struct stackset **out)
{
	struct proto_dump_req r = { .pids = &pid, .npids = 1, .flags = PROTO_DUMP_PYTHON_ONLY };

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
			 int straggler, struct jsonw *w)
{
	struct stackset **ss = calloc(j->n + 1, sizeof(*ss));
	struct line_diff *d = NULL;
	struct hashmap idx;
	size_t i, n = 0, nothers = j->nranks - 1;
	int err = ss ? 0 : -ENOMEM;

	hashmap_init(&idx);
	for (i = 0; i < j->n && !err; i++)
		if (j->m[i].role == JOB_RANK)
			err = rank_lines(ctl, s->list.procs[j->m[i].proc].pid, &ss[i]);
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

static void print_ranks(const struct jobsel *s, const struct job *j)
{
	const char *id = host_job_id(s, j);
	size_t i;

	printf("job %u (%s%s%s): %zu ranks, %zu workers\n", j->id,
	       j->launcher[0] ? j->launcher : "ranks set by hand", id[0] ? ", " : "", id, j->nranks,
	       j->nworkers);
	printf("%-9s %5s %8s %9s %9s %9s %10s  %s\n", "ROLE", "RANK", "PID", "CPU_S", "OFFCPU_S",
	       "COMM_S", "COMM_CALLS", "STATE");
	for (i = 0; i < j->n; i++) {
		const struct job_member *m = &j->m[i];
		struct job_figures f;
		char rank[12] = "-", calls[24] = "-";

		member_figures(s, m, &f);
		if (m->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", m->rank);
		if (s->list.comm_traced)
			snprintf(calls, sizeof(calls), "%" PRIu64, f.comm_calls);
		printf("%-9s %5s %8u %9.2f %9.2f %9.2f %10s  %s\n", role_name(m->role), rank,
		       s->list.procs[m->proc].pid, f.cpu_s, f.offcpu_s, f.comm_s, calls,
		       member_live(s, m) ? "running" : "exited");
	}
	if (!s->list.comm_traced)
		printf("collectives read from samples: waits that spin (MPI's default) from CPU samples,\n"
		       "those that sleep with profd --off-cpu; profd --collectives times every call\n");
}

static int explain(const struct ctl *ctl, const struct jobsel *s, uint32_t id)
{
	const struct job *j = jobsel_job(s, id);
	double its = 0, others = 0;
	struct jsonw w;
	int k, err = 0;

	if (!j) {
		client_error(ctl, "no job %u (profctl jobs lists them)", id);
		return 1;
	}
	k = find_straggler(s, j, &its, &others);
	if (!ctl->json) {
		print_ranks(s, j);
		if (k < 0) {
			printf("no straggler: the ranks wait alike in collectives\n");
			return 0;
		}
		printf("straggler: rank %d (pid %u): %.2f s in collectives, the other ranks %.2f s "
		       "(median): they wait for it\n",
		       j->m[k].rank, s->list.procs[j->m[k].proc].pid, its, others);
		return explain_lines(ctl, s, j, k, NULL) ? 1 : 0;
	}
	jsonw_init(&w, 1);
	jsonw_object(&w);
	jsonw_key(&w, "job");
	json_job(&w, s, j);
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
		err = explain_lines(ctl, s, j, k, &w);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	if (err) {
		jsonw_free(&w);
		return 1;
	}
	return client_print_json(ctl, &w);
}

int cmd_jobs(const struct ctl *ctl, struct cli_args *a)
{
	struct jobsel s;
	struct jsonw w;
	size_t i;
	int rc;

	if (jobsel_fetch(ctl, &s)) {
		jobsel_free(&s);
		return 1;
	}
	if (a->explain) {
		rc = explain(ctl, &s, a->explain);
	} else if (ctl->json) {
		jsonw_init(&w, 1);
		jsonw_array(&w);
		for (i = 0; i < s.njobs; i++)
			json_job(&w, &s, &s.jobs[i]);
		jsonw_end(&w);
		rc = client_print_json(ctl, &w);
	} else {
		print_list(&s);
		rc = 0;
	}
	jobsel_free(&s);
	return rc;
}
