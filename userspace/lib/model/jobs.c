/* jobs.c: distributed jobs from the process tree (jobs.h). */
#include "jobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

/* A rank's ancestors are searched this far up: a launcher is its
 * parent (mpirun, torchrun) or a proxy's (hydra), a worker's a few more. */
#define JOBS_MAX_DEPTH 16

static const struct {
	const char *comm, *name;
} launcher_comms[] = {
	{ "torchrun", "torchrun" },	    { "mpirun", "mpirun" },
	{ "mpiexec", "mpiexec" },	    { "orterun", "mpirun" },
	{ "prterun", "mpirun" },	    { "mpiexec.hydra", "mpiexec" },
	{ "hydra_pmi_proxy", "mpiexec" },   { "srun", "srun" },
	{ "slurmstepd", "srun" },	    { "deepspeed", "deepspeed" },
	{ "accelerate", "accelerate" },
};

/* What python -m runs, or a launcher's script run by path. */
static const struct {
	const char *script, *name;
} launcher_scripts[] = {
	{ "torch.distributed.run", "torchrun" },
	{ "torch.distributed.launch", "torchrun" },
	{ "torchrun", "torchrun" },
	{ "deepspeed", "deepspeed" },
	{ "deepspeed.launcher.runner", "deepspeed" },
	{ "accelerate", "accelerate" },
	{ "accelerate.commands.launch", "accelerate" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *jobs_launcher_name(const char *comm, const char *script)
{
	const char *base;
	size_t i;

	for (i = 0; comm && i < COUNT(launcher_comms); i++)
		if (!strcmp(comm, launcher_comms[i].comm))
			return launcher_comms[i].name;
	if (!script || !script[0])
		return NULL;
	base = strrchr(script, '/');
	base = base ? base + 1 : script;
	for (i = 0; i < COUNT(launcher_scripts); i++)
		if (!strcmp(base, launcher_scripts[i].script))
			return launcher_scripts[i].name;
	return NULL;
}

int32_t jobs_rank_value(const char *text)
{
	long v = 0;
	size_t i;

	if (!text || !text[0] || strlen(text) > 9)
		return -1;
	for (i = 0; text[i]; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		v = v * 10 + (text[i] - '0');
	}
	return (int32_t)v;
}

/* Where each process stands: its job's id, role and rank, or no job. */
struct placing {
	bool in_job;
	uint32_t job;
	const char *launcher;
	enum job_role role;
	int32_t rank;
};

/* The parent of p as the table knows it: started no later than
 * the child (else a reused pid), not itself. */
static const struct job_proc *parent_of(const struct job_proc *procs, const struct hashmap *by_pid,
					const struct job_proc *p)
{
	uint64_t v;
	const struct job_proc *q;

	if (!p->ppid || p->ppid == p->pid || !hashmap_get(by_pid, p->ppid, &v))
		return NULL;
	q = &procs[v];
	if (q->start_time && p->start_time && q->start_time > p->start_time)
		return NULL;
	return q;
}

/* Walk up from p: the nearest launcher makes the job; the highest
 * ranked process met below it is the rank p works for (p itself when
 * none above it has one). */
static struct placing place(const struct job_proc *procs, const struct hashmap *by_pid, size_t i)
{
	const struct job_proc *p = &procs[i], *q = p, *top_ranked = p->rank >= 0 ? p : NULL;
	struct placing pl = { .rank = -1 };
	const char *name;
	size_t depth;

	if ((name = jobs_launcher_name(p->comm, p->script))) {
		pl = (struct placing){ true, p->pid, name, JOB_LAUNCHER, -1 };
		return pl;
	}
	for (depth = 0; depth < JOBS_MAX_DEPTH && (q = parent_of(procs, by_pid, q)); depth++) {
		if ((name = jobs_launcher_name(q->comm, q->script))) {
			pl.in_job = true;
			pl.job = q->pid;
			pl.launcher = name;
			break;
		}
		if (q->rank >= 0)
			top_ranked = q;
	}
	if (!pl.in_job) {
		/* No launcher: ranks set by hand, a job under their parent. */
		if (!top_ranked || !top_ranked->ppid)
			return pl;
		pl = (struct placing){ true, top_ranked->ppid, "", JOB_RANK, top_ranked->rank };
	}
	if (!top_ranked)
		pl.role = JOB_OTHER;
	else {
		pl.role = top_ranked == p ? JOB_RANK : JOB_WORKER;
		pl.rank = top_ranked->rank;
	}
	return pl;
}

static int cmp_member(const void *a, const void *b)
{
	const struct job_member *x = a, *y = b;

	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

static int cmp_job(const void *a, const void *b)
{
	const struct job *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int add_member(struct job *j, size_t proc, const struct placing *pl)
{
	struct job_member *m = realloc(j->m, (j->n + 1) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	j->m = m;
	m[j->n++] = (struct job_member){ proc, pl->role, pl->rank };
	j->nranks += pl->role == JOB_RANK;
	j->nworkers += pl->role == JOB_WORKER;
	if (pl->role == JOB_LAUNCHER || !j->launcher[0])
		j->launcher = pl->launcher;
	return 0;
}

/* The job with id, made when new. */
static struct job *job_for(struct job **jobs, size_t *njobs, struct hashmap *by_id, uint32_t id)
{
	struct job *grown;
	uint64_t v;

	if (hashmap_get(by_id, id, &v))
		return &(*jobs)[v];
	grown = realloc(*jobs, (*njobs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	*jobs = grown;
	if (hashmap_put(by_id, id, *njobs))
		return NULL;
	grown[*njobs] = (struct job){ .id = id, .launcher = "" };
	return &grown[(*njobs)++];
}

/* A job is worth listing when it has a rank: a launcher alone (mpirun
 * before its ranks start, or after they ended) is not one yet. */
static size_t drop_rankless(struct job *jobs, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (jobs[i].nranks)
			jobs[k++] = jobs[i];
		else
			free(jobs[i].m);
	}
	return k;
}

int jobs_find(const struct job_proc *procs, size_t n, struct job **out, size_t *njobs)
{
	struct hashmap by_pid, by_id;
	struct job *jobs = NULL;
	size_t i, nj = 0;
	int err = 0;

	hashmap_init(&by_pid);
	hashmap_init(&by_id);
	/* A pid listed twice (an exited process and its reuse): the later start. */
	for (i = 0; i < n && !err; i++) {
		uint64_t v;

		if (hashmap_get(&by_pid, procs[i].pid, &v) &&
		    procs[v].start_time > procs[i].start_time)
			continue;
		err = hashmap_put(&by_pid, procs[i].pid, i);
	}
	for (i = 0; i < n && !err; i++) {
		struct placing pl = place(procs, &by_pid, i);
		struct job *j;

		if (!pl.in_job)
			continue;
		j = job_for(&jobs, &nj, &by_id, pl.job);
		err = j ? add_member(j, i, &pl) : -ENOMEM;
	}
	hashmap_free(&by_pid);
	hashmap_free(&by_id);
	if (err) {
		jobs_free(jobs, nj);
		return err;
	}
	nj = drop_rankless(jobs, nj);
	for (i = 0; i < nj; i++)
		qsort(jobs[i].m, jobs[i].n, sizeof(*jobs[i].m), cmp_member);
	qsort(jobs, nj, sizeof(*jobs), cmp_job);
	*out = jobs;
	*njobs = nj;
	return 0;
}

void jobs_free(struct job *jobs, size_t n)
{
	size_t i;

	for (i = 0; jobs && i < n; i++)
		free(jobs[i].m);
	free(jobs);
}
