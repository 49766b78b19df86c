/* jobs: the distributed jobs among a host's processes.  A job is the
 * process tree under a launcher (torchrun, mpirun, srun, deepspeed ...);
 * its ranks are the processes a launcher gave a rank (the RANK,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID variables profd reads at
 * exec), the processes under a rank are its workers (DataLoader,
 * multiprocessing: they inherit the variables, so a rank above them
 * says they are not ranks themselves).  Processes that set a rank by
 * hand without a launcher form a job under their common parent.
 *
 * Pure: it takes what profctl list gives (pid, parent, start time, comm,
 * script, rank) and finds the jobs; the caller owns every string. */
#ifndef PROFD_JOBS_H
#define PROFD_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct job_proc {
	uint32_t pid, ppid;   /* ppid 0: unknown */
	uint64_t start_time;  /* boot ticks; 0 unknown (then not compared) */
	const char *comm;     /* may be NULL */
	const char *script;   /* an interpreter's script or module, or NULL */
	int32_t rank;         /* -1: none set */
};

enum job_role {
	JOB_LAUNCHER, /* the launcher itself */
	JOB_RANK,     /* a process the launcher gave a rank */
	JOB_WORKER,   /* a process under a rank (rank: its rank's) */
	JOB_OTHER,    /* under the launcher, neither (a helper, an agent) */
};

struct job_member {
	size_t proc;	     /* index in the caller's array */
	enum job_role role;
	int32_t rank;	     /* ranks and workers; -1 else */
};

struct job {
	uint32_t id;	     /* the launcher's pid (by hand: the ranks' parent) */
	const char *launcher; /* "mpirun", "torchrun" ...; "" when ranks were set by hand */
	struct job_member *m; /* the launcher first (when seen), then by role and rank */
	size_t n, nranks, nworkers;
};

/* Is a process with this comm and script a launcher?  Its name for a
 * job ("torchrun" for python -m torch.distributed.run), or NULL. */
const char *jobs_launcher_name(const char *comm, const char *script);

/* The jobs among procs (n of them): 0 and *out (caller frees with
 * jobs_free), *njobs of them, ordered by id; -ENOMEM. */
int jobs_find(const struct job_proc *procs, size_t n, struct job **out, size_t *njobs);
void jobs_free(struct job *jobs, size_t n);

/* A rank's number from its text ("3"); -1 for "" or anything else. */
int32_t jobs_rank_value(const char *text);

#endif
