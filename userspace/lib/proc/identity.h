/* identity: what a process is to the people who run it, its workload.
 * A fleet sees services, not `python3.11`: the systemd unit or scope,
 * the container (runtime and id) and Kubernetes pod (uid and QoS class)
 * from the cgroup path that those managers name, the script or module an
 * interpreter runs from its argv, and a service name derived from them.
 *
 * The parsers are pure (they take /proc text and argv bytes) so tests can
 * feed every layout; identity_read() does the bounded /proc reads and is
 * a slow path (the process controls its argv: a read is capped, and runs
 * on a worker in the daemon).  Every field is a bounded, NUL-terminated
 * array: a longer value is cut, never overflows, and "" means unknown. */
#ifndef PROFD_IDENTITY_H
#define PROFD_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#define WID_CGROUP_MAX 256
#define WID_NAME_MAX 128
#define WID_CONTAINER_MAX 65 /* 64 hex digits */
#define WID_POD_MAX 40	     /* a uuid, 36 characters */
/* Caps on what identity_read() reads of a process's files: the whole
 * cgroup file of a v1 machine with a dozen controllers fits, argv is
 * only needed up to the script. */
#define WID_CGROUP_READ_MAX 8192
#define WID_CMDLINE_READ_MAX 4096
/* The environment is read for a job's rank variables only: they come
 * early (a launcher adds them to what it was given), and a process with
 * a larger environment is read no further than this. */
#define WID_ENVIRON_READ_MAX 65536

/* Where a process stands in a distributed job, from the variables its
 * launcher set (torchrun's RANK, Open MPI's OMPI_COMM_WORLD_RANK, PMI's,
 * Slurm's): decimal digits as set, "" when not.  Read once, kept as
 * numbers only: nothing else of the environment is kept or logged. */
#define WID_JOB_MAX 72
struct wid_rank {
	char rank[12];
	char local_rank[12];
	char world_size[12];
	/* The job on every host it runs on: "slurm:JOBID.STEP",
	 * "torchelastic:RUN_ID", "pmix:NAMESPACE", "master:ADDR:PORT". */
	char job[WID_JOB_MAX];
};

struct workload_id {
	char cgroup[WID_CGROUP_MAX];	 /* the path identity came from, "/" root */
	char unit[WID_NAME_MAX];	 /* myapp.service, session-3.scope */
	char runtime[16];		 /* docker, containerd, cri-o, podman, cri */
	char container[WID_CONTAINER_MAX]; /* full hex id */
	char pod[WID_POD_MAX];		 /* Kubernetes pod uid, with dashes */
	char qos[12];			 /* guaranteed, burstable, besteffort */
	char script[WID_NAME_MAX];	 /* an interpreter's script or module */
	char comm[16];
	char exe[WID_CGROUP_MAX];	 /* the executable's path (cut when long) */
	char service[WID_NAME_MAX];	 /* derived: identity_derive() */
	struct wid_rank job;		 /* its rank in a job, if launched as one */
};

/* The template fields, for callers that take a field by name
 * (selectors, push labels): "service", "unit", ... as in templates. */
enum wid_field {
	WID_SERVICE,
	WID_UNIT,
	WID_CONTAINER,
	WID_POD,
	WID_QOS,
	WID_RUNTIME,
	WID_SCRIPT,
	WID_COMM,
	WID_EXE,
	WID_CGROUP,
	WID_RANK,
	WID_LOCAL_RANK,
	WID_WORLD_SIZE,
	WID_JOB,
	WID_NFIELDS
};
const char *identity_field_name(enum wid_field f);
/* The field's value ("" when unknown); NULL for a bad f. */
const char *identity_field(const struct workload_id *id, enum wid_field f);

/* The text of /proc/PID/cgroup, v2 ("0::/path") or v1 (one line per
 * hierarchy: name=systemd's first, else cpu's, else the first line): fills
 * cgroup and what its path names (unit, runtime, container, pod, qos),
 * clearing those first.  0, or -ENOENT when no line has a path. */
int identity_parse_cgroup(const char *text, struct workload_id *id);
/* The same from a path alone. */
void identity_parse_cgroup_path(const char *path, struct workload_id *id);
/* argv as /proc/PID/cmdline has it (NUL-separated, len bytes, the last
 * argument maybe cut): the script or module when argv[0] is an
 * interpreter (python*, node, ruby, java -jar), else script is "". */
void identity_parse_cmdline(const char *argv, size_t len, struct workload_id *id);
/* The text of /proc/PID/environ (NUL-separated KEY=VALUE, len bytes,
 * maybe cut): the rank variables into r, the first of each kind that
 * holds a plain decimal number (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
 * PMIX_RANK, SLURM_PROCID; LOCAL_RANK ...; WORLD_SIZE ...), and the
 * job's id shared by its hosts (SLURM_JOB_ID and SLURM_STEP_ID,
 * TORCHELASTIC_RUN_ID, PMIX_NAMESPACE, MASTER_ADDR and MASTER_PORT; only
 * [A-Za-z0-9._-], at most 32 characters each), cleared first.  Anything
 * else is skipped unread. */
void identity_parse_environ(const char *env, size_t len, struct wid_rank *r);
/* Set comm and exe (either may be NULL: kept) and derive service: a
 * service unit's stem (not a user@ manager's, not a scope), else the
 * script, else the container id's first 12 digits, else comm. */
void identity_derive(struct workload_id *id, const char *comm, const char *exe);

/* Read pid's cgroup and cmdline under proc_root, bounded as above, and
 * derive.  0, -ESRCH when the process is gone, -errno. */
int identity_read(const char *proc_root, uint32_t pid, const char *comm, const char *exe,
		  struct workload_id *id);
/* Only the cgroup again (a process moved by its manager): cheap, one
 * small read.  0 or -errno, id unchanged on error. */
int identity_reread_cgroup(const char *proc_root, uint32_t pid, struct workload_id *id);

/* Expand a template such as "{service}" or "{unit}/{container}" into out
 * (n bytes, NUL-terminated, cut when long).  An empty field drops the
 * literal text before it back to the previous field, so "{service}-{pod}"
 * is "myapp" outside Kubernetes (and the text after a leading empty field
 * goes); an empty result falls back to service.
 * Returns the length written, or -EINVAL for an unknown or unclosed field. */
int identity_format(const struct workload_id *id, const char *tmpl, char *out, size_t n);
/* Whether a template is valid (for option checking): 0 or -EINVAL. */
int identity_check_template(const char *tmpl);

#endif
