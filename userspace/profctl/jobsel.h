/* jobsel: a job as profctl sees it, from profd's process list (the
 * members found by jobs.h), for jobs, and dump and top's --job. */
#ifndef PROFCTL_JOBSEL_H
#define PROFCTL_JOBSEL_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "client.h"
#include "jobs.h"
#include "protocol.h"


struct jobsel {
	struct proto_list list;
	struct job_proc *procs; /* list.procs as jobs.h takes them */
	struct job *jobs;
	size_t njobs;
	int t_cpu, t_offcpu, t_comm, t_comm_calls; /* indices in list.types; -1 none */
	char title[96]; /* dump --job's default title */
};

struct job_figures {
	double cpu_s, offcpu_s, comm_s;
	uint64_t comm_calls;
};

/* Ask profd for its list and find the jobs: 0, or -errno (reported). */
int jobsel_fetch(const struct ctl *ctl, struct jobsel *s);
void jobsel_free(struct jobsel *s);
const struct job *jobsel_job(const struct jobsel *s, uint32_t id);
/* --job ID (a->job): the request names every member with samples and
 * asks for subprocesses, which gives each process a root frame, for
 * jobsel_label to name ("rank 3 (pid N)"); a title unless one is given.
 * 0, 1 (reported), or 2: another selector given too (a usage error). */
int jobsel_select(const struct ctl *ctl, struct cli_args *a, struct jobsel *s);
/* Name ss's process roots ("comm (pid)", PROTO_DUMP_SUBPROCESSES) of
 * job id's members as jobsel_label does: 0, -ENOENT (no such job: left
 * as they are), -ENOMEM. */
struct stackset;
int jobsel_label_roots(const struct jobsel *s, uint32_t id, struct stackset *ss);
/* A member's root frame: "rank 3 (pid N)", "rank 3 worker (pid N)". */
void jobsel_label(const struct jobsel *s, const struct job_member *m, char *out, size_t len);

#endif
