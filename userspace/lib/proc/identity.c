/* identity.c: a workload from its cgroup path (units, containers, pods),
 * the derived service name, and the bounded /proc reads.  argv is read in
 * identity_cmdline.c, templates expanded in identity_format.c. */
#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Copy at most len bytes of s into a field of size n, cut to fit. */
static void set_field(char *dst, size_t n, const char *s, size_t len)
{
	if (len >= n)
		len = n - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

#define SET(field, s, len) set_field(field, sizeof(field), s, len)

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

static bool is_hex_id(const char *s, size_t len)
{
	size_t i;

	if (len != 64)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Scopes that runtimes name "<prefix><64 hex>.scope" (systemd cgroup
 * driver) or "<prefix><64 hex>" (cgroupfs, podman's libpod_parent).  The
 * conmon monitors beside them ("crio-conmon-", "libpod-conmon-") are not
 * the container: their id does not match. */
static const struct {
	const char *prefix, *runtime;
} scopes[] = {
	{ "docker-", "docker" },
	{ "cri-containerd-", "containerd" },
	{ "crio-", "cri-o" },
	{ "libpod-", "podman" },
};

/* A container named by one path component: true when it was. */
static bool container_component(const char *c, size_t len, const char *prev, size_t plen,
				struct workload_id *id)
{
	size_t i, k, n;

	for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		k = strlen(scopes[i].prefix);
		n = has_suffix(c, len, ".scope") ? len - 6 : len;
		if (has_prefix(c, n, scopes[i].prefix) && is_hex_id(c + k, n - k)) {
			SET(id->runtime, scopes[i].runtime, strlen(scopes[i].runtime));
			SET(id->container, c + k, n - k);
			return true;
		}
	}
	if (!is_hex_id(c, len))
		return false;
	/* A bare id: docker's cgroupfs driver ("/docker/<id>"), or a
	 * kubelet's cgroupfs layout whose runtime the path does not say. */
	if (plen == 6 && !memcmp(prev, "docker", 6))
		SET(id->runtime, "docker", 6);
	else if (!id->runtime[0])
		SET(id->runtime, "cri", 3);
	SET(id->container, c, len);
	return true;
}

static void set_qos(struct workload_id *id, const char *q, size_t len)
{
	if (len == 9 && !memcmp(q, "burstable", 9))
		SET(id->qos, q, len);
	else if (len == 10 && !memcmp(q, "besteffort", 10))
		SET(id->qos, q, len);
}

/* A pod uid: "pod<uid>" (cgroupfs) or, from the systemd driver's slice,
 * with '_' where the uid has '-'. */
static void set_pod(struct workload_id *id, const char *uid, size_t len)
{
	size_t i;

	SET(id->pod, uid, len);
	for (i = 0; id->pod[i]; i++)
		if (id->pod[i] == '_')
			id->pod[i] = '-';
}

/* kubepods components: "kubepods" (cgroupfs) then "burstable" or
 * "besteffort" (guaranteed pods sit right under it) then "pod<uid>"; or
 * the systemd driver's "kubepods.slice", "kubepods-burstable.slice",
 * "kubepods-burstable-pod<uid>.slice" ("kubepods-pod<uid>.slice" when
 * guaranteed). */
static void kube_component(const char *c, size_t len, struct workload_id *id)
{
	const char *dash;
	size_t n = has_suffix(c, len, ".slice") ? len - 6 : len;

	if (n == 8 && !memcmp(c, "kubepods", 8)) {
		SET(id->qos, "guaranteed", 10);
		return;
	}
	if (!id->qos[0])
		return; /* not under kubepods */
	if (has_prefix(c, n, "kubepods-")) {
		c += 9;
		n -= 9;
	}
	dash = memchr(c, '-', n);
	if (!has_prefix(c, n, "pod") && dash) {
		set_qos(id, c, (size_t)(dash - c));
		n -= (size_t)(dash + 1 - c);
		c = dash + 1;
	}
	if (has_prefix(c, n, "pod") && n > 3)
		set_pod(id, c + 3, n - 3);
	else
		set_qos(id, c, n);
}

/* A unit is a component ending in .service or .scope; the innermost one
 * names the process (user@1000.service/app.slice/foo.service is foo). */
static void unit_component(const char *c, size_t len, struct workload_id *id)
{
	if (has_suffix(c, len, ".service") || has_suffix(c, len, ".scope"))
		SET(id->unit, c, len);
}

/* The path is parsed whole even where the cgroup field cuts it: the
 * container is its last component. */
static void parse_path(const char *path, size_t plen_all, struct workload_id *id)
{
	const char *c = path, *stop = path + plen_all, *prev = "", *end;
	size_t len, plen = 0;

	id->unit[0] = id->runtime[0] = id->container[0] = id->pod[0] = id->qos[0] = '\0';
	SET(id->cgroup, path, plen_all);
	for (; c < stop; c = end + 1) {
		end = memchr(c, '/', (size_t)(stop - c));
		if (!end)
			end = stop;
		len = (size_t)(end - c);
		if (!len)
			continue;
		unit_component(c, len, id);
		kube_component(c, len, id);
		container_component(c, len, prev, plen, id);
		prev = c;
		plen = len;
	}
}

void identity_parse_cgroup_path(const char *path, struct workload_id *id)
{
	parse_path(path, strlen(path), id);
}

/* One line of /proc/PID/cgroup: "hierarchy-id:controllers:path". */
struct cg_line {
	const char *controllers, *path;
	size_t clen, plen;
};

static bool split_line(const char *line, const char *end, struct cg_line *l)
{
	const char *a = memchr(line, ':', (size_t)(end - line)), *b;

	if (!a || !(b = memchr(a + 1, ':', (size_t)(end - a - 1))))
		return false;
	l->controllers = a + 1;
	l->clen = (size_t)(b - a - 1);
	l->path = b + 1;
	l->plen = (size_t)(end - b - 1);
	return l->plen > 0 && l->path[0] == '/';
}

static bool has_controller(const struct cg_line *l, const char *name)
{
	const char *c = l->controllers, *end = c + l->clen, *comma;
	size_t n = strlen(name);

	for (; c < end; c = comma + 1) {
		comma = memchr(c, ',', (size_t)(end - c));
		if (!comma)
			comma = end;
		if ((size_t)(comma - c) == n && !memcmp(c, name, n))
			return true;
	}
	return false;
}

/* Which line names the workload, best first: systemd's own hierarchy
 * (v1), the unified one (v2, or hybrid), cpu or cpuacct (where runtimes
 * put containers on v1 without systemd), then any.  A line at "/" says
 * nothing, so it ranks below every other. */
static int line_rank(const struct cg_line *l)
{
	int rank = l->plen == 1 ? 10 : 0;

	if (has_controller(l, "name=systemd"))
		return rank + 1;
	if (l->clen == 0)
		return rank + 2;
	if (has_controller(l, "cpu") || has_controller(l, "cpuacct"))
		return rank + 3;
	return rank + 4;
}

int identity_parse_cgroup(const char *text, struct workload_id *id)
{
	struct cg_line l, best = { 0 };
	const char *line, *end;
	int rank, best_rank = 100;

	for (line = text; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (!split_line(line, end, &l))
			continue;
		rank = line_rank(&l);
		if (rank < best_rank) {
			best = l;
			best_rank = rank;
		}
	}
	if (!best.path)
		return -ENOENT;
	parse_path(best.path, best.plen, id);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A service unit's stem: "myapp.service" -> "myapp".  Not a user's
 * service manager (user@1000.service holds a whole login) nor a scope
 * (sessions, containers: processes started from outside). */
static size_t service_stem(const char *unit)
{
	size_t len = strlen(unit);

	if (!has_suffix(unit, len, ".service") || has_prefix(unit, len, "user@"))
		return 0;
	return len - 8;
}

void identity_derive(struct workload_id *id, const char *comm, const char *exe)
{
	size_t stem = service_stem(id->unit);

	if (comm)
		SET(id->comm, comm, strlen(comm));
	if (exe)
		SET(id->exe, exe, strlen(exe));
	if (stem)
		SET(id->service, id->unit, stem);
	else if (id->script[0])
		SET(id->service, id->script, strlen(id->script));
	else if (id->container[0])
		SET(id->service, id->container, 12);
	else if (id->comm[0])
		SET(id->service, id->comm, strlen(id->comm));
	else
		SET(id->service, base_name(id->exe), strlen(base_name(id->exe)));
}

/* Up to size - 1 bytes of a /proc file, NUL-terminated: a few reads at
 * most, since procfs hands a page or so per read. */
static ssize_t read_capped(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t got = 0;
	ssize_t n = 1;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (got < size - 1 && n > 0) {
		n = read(fd, buf + got, size - 1 - got);
		if (n > 0)
			got += (size_t)n;
	}
	close(fd);
	if (n < 0 && !got)
		return errno == ESRCH ? -ESRCH : -EIO;
	buf[got] = '\0';
	return (ssize_t)got;
}

int identity_reread_cgroup(const char *proc_root, uint32_t pid, struct workload_id *id)
{
	char path[PATH_MAX], text[WID_CGROUP_READ_MAX];
	struct workload_id fresh = *id;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root, pid);
	n = read_capped(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	if (identity_parse_cgroup(text, &fresh))
		identity_parse_cgroup_path("/", &fresh);
	identity_derive(&fresh, NULL, NULL);
	*id = fresh;
	return 0;
}

/* Each rank variable by its kind, in the order a name is preferred:
 * a launcher's own before a scheduler's under it (torchrun under srun
 * sets RANK; SLURM_PROCID is srun's task, not the rank). */
static const struct {
	const char *name;
	size_t field; /* offset in struct wid_rank */
} rank_vars[] = {
	{ "RANK", offsetof(struct wid_rank, rank) },
	{ "OMPI_COMM_WORLD_RANK", offsetof(struct wid_rank, rank) },
	{ "PMI_RANK", offsetof(struct wid_rank, rank) },
	{ "PMIX_RANK", offsetof(struct wid_rank, rank) },
	{ "SLURM_PROCID", offsetof(struct wid_rank, rank) },
	{ "LOCAL_RANK", offsetof(struct wid_rank, local_rank) },
	{ "OMPI_COMM_WORLD_LOCAL_RANK", offsetof(struct wid_rank, local_rank) },
	{ "MPI_LOCALRANKID", offsetof(struct wid_rank, local_rank) },
	{ "SLURM_LOCALID", offsetof(struct wid_rank, local_rank) },
	{ "WORLD_SIZE", offsetof(struct wid_rank, world_size) },
	{ "OMPI_COMM_WORLD_SIZE", offsetof(struct wid_rank, world_size) },
	{ "PMI_SIZE", offsetof(struct wid_rank, world_size) },
	{ "SLURM_NTASKS", offsetof(struct wid_rank, world_size) },
};
#define N_RANK_VARS (sizeof(rank_vars) / sizeof(rank_vars[0]))

/* Whether the entry at kv, its '=' at eq, is the variable name. */
static bool key_is(const char *kv, const char *eq, const char *name)
{
	size_t n = (size_t)(eq - kv);

	return strlen(name) == n && !memcmp(kv, name, n);
}

/* A value kept: 1 to 9 decimal digits, nothing else. */
static bool plain_number(const char *v, size_t len)
{
	size_t i;

	if (!len || len > 9)
		return false;
	for (i = 0; i < len; i++)
		if (v[i] < '0' || v[i] > '9')
			return false;
	return true;
}

/* The variables a job's id is made of, in the order one is preferred:
 * the scheduler's job, torchrun's run, the MPI launcher's namespace, the
 * rendezvous address. */
enum { JV_SLURM_JOB, JV_SLURM_STEP, JV_TORCH_RUN, JV_PMIX_NS, JV_MASTER_ADDR, JV_MASTER_PORT,
       JV_N };
static const char *const job_vars[JV_N] = {
	"SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE",
	"MASTER_ADDR", "MASTER_PORT",
};
#define JOB_VAR_MAX 32

/* A job variable's value kept: a short name or number, no separator of
 * the id, nothing a label or a log could misread. */
static bool plain_name(const char *v, size_t len)
{
	size_t i;

	if (!len || len > JOB_VAR_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'z') ||
		      (v[i] >= 'A' && v[i] <= 'Z') || v[i] == '.' || v[i] == '_' || v[i] == '-'))
			return false;
	return true;
}

static void take_job_var(const char *kv, const char *eq, const char *nul,
			 char vals[JV_N][JOB_VAR_MAX + 1])
{
	size_t i, vlen = (size_t)(nul - eq - 1);

	for (i = 0; i < JV_N; i++)
		if (key_is(kv, eq, job_vars[i]) && plain_name(eq + 1, vlen)) {
			memcpy(vals[i], eq + 1, vlen);
			vals[i][vlen] = '\0';
		}
}

/* torchrun's run id is "none" unless --rdzv-id or --standalone set it. */
static void job_id(char vals[JV_N][JOB_VAR_MAX + 1], char *out, size_t n)
{
	const char *kind = NULL, *a = NULL, *sep = "", *b = "";

	if (vals[JV_SLURM_JOB][0]) {
		kind = "slurm", a = vals[JV_SLURM_JOB], b = vals[JV_SLURM_STEP];
		sep = b[0] ? "." : "";
	} else if (vals[JV_TORCH_RUN][0] && strcmp(vals[JV_TORCH_RUN], "none")) {
		kind = "torchelastic", a = vals[JV_TORCH_RUN];
	} else if (vals[JV_PMIX_NS][0]) {
		kind = "pmix", a = vals[JV_PMIX_NS];
	} else if (vals[JV_MASTER_ADDR][0] && vals[JV_MASTER_PORT][0]) {
		kind = "master", a = vals[JV_MASTER_ADDR], sep = ":", b = vals[JV_MASTER_PORT];
	}
	/* at most 12 + 1 + 32 + 1 + 32 bytes: never cut (WID_JOB_MAX) */
	if (kind && snprintf(out, n, "%s:%s%s%s", kind, a, sep, b) >= (int)n)
		out[0] = '\0';
}

void identity_parse_environ(const char *env, size_t len, struct wid_rank *r)
{
	char jv[JV_N][JOB_VAR_MAX + 1] = { { 0 } };
	/* per field (rank, local_rank, world_size): the index + 1 of the var it came from */
	size_t best[offsetof(struct wid_rank, job) / sizeof(r->rank)], i, pos = 0;
	const char *end = env + len;

	memset(r, 0, sizeof(*r));
	memset(best, 0, sizeof(best));
	while (env + pos < end) {
		const char *kv = env + pos, *nul = memchr(kv, '\0', (size_t)(end - kv));
		const char *eq = memchr(kv, '=', (size_t)((nul ? nul : end) - kv));
		size_t kvlen = (size_t)((nul ? nul : end) - kv);

		pos += kvlen + 1;
		if (!eq || !nul) /* the last one cut by the read cap is not trusted */
			continue;
		take_job_var(kv, eq, nul, jv);
		for (i = 0; i < N_RANK_VARS; i++) {
			char *field = (char *)r + rank_vars[i].field;
			size_t vlen = (size_t)(nul - eq - 1);
			size_t *b = &best[rank_vars[i].field / sizeof(r->rank)];

			if (!key_is(kv, eq, rank_vars[i].name) || !plain_number(eq + 1, vlen) ||
			    (*b && *b <= i + 1))
				continue;
			memcpy(field, eq + 1, vlen);
			field[vlen] = '\0';
			*b = i + 1;
		}
	}
	job_id(jv, r->job, sizeof(r->job));
}

/* The rank variables of pid's environment; none when it cannot be read
 * (another user's process read by a non-root profd, a zombie). */
static void read_rank(const char *proc_root, uint32_t pid, struct wid_rank *r)
{
	char path[PATH_MAX], *env = malloc(WID_ENVIRON_READ_MAX);
	ssize_t n;

	memset(r, 0, sizeof(*r));
	if (!env)
		return;
	snprintf(path, sizeof(path), "%s/%u/environ", proc_root, pid);
	n = read_capped(path, env, WID_ENVIRON_READ_MAX);
	if (n > 0)
		identity_parse_environ(env, (size_t)n, r);
	free(env);
}

int identity_read(const char *proc_root, uint32_t pid, const char *comm, const char *exe,
		  struct workload_id *id)
{
	char path[PATH_MAX], argv[WID_CMDLINE_READ_MAX];
	ssize_t n;
	int err;

	memset(id, 0, sizeof(*id));
	snprintf(path, sizeof(path), "%s/%u/cmdline", proc_root, pid);
	n = read_capped(path, argv, sizeof(argv));
	if (n < 0)
		return (int)n;
	identity_parse_cmdline(argv, (size_t)n, id);
	read_rank(proc_root, pid, &id->job);
	identity_derive(id, comm, exe);
	err = identity_reread_cgroup(proc_root, pid, id);
	return err == -ENOENT ? -ESRCH : err;
}

static const char *const field_names[WID_NFIELDS] = {
	[WID_SERVICE] = "service", [WID_UNIT] = "unit",	      [WID_CONTAINER] = "container",
	[WID_POD] = "pod",	   [WID_QOS] = "qos",	      [WID_RUNTIME] = "runtime",
	[WID_SCRIPT] = "script",   [WID_COMM] = "comm",	      [WID_EXE] = "exe",
	[WID_CGROUP] = "cgroup",   [WID_RANK] = "rank",	      [WID_LOCAL_RANK] = "local_rank",
	[WID_WORLD_SIZE] = "world_size", [WID_JOB] = "job",
};

const char *identity_field_name(enum wid_field f)
{
	return (unsigned)f < WID_NFIELDS ? field_names[f] : NULL;
}

const char *identity_field(const struct workload_id *id, enum wid_field f)
{
	switch (f) {
	case WID_SERVICE: return id->service;
	case WID_UNIT: return id->unit;
	case WID_CONTAINER: return id->container;
	case WID_POD: return id->pod;
	case WID_QOS: return id->qos;
	case WID_RUNTIME: return id->runtime;
	case WID_SCRIPT: return id->script;
	case WID_COMM: return id->comm;
	case WID_RANK: return id->job.rank;
	case WID_LOCAL_RANK: return id->job.local_rank;
	case WID_WORLD_SIZE: return id->job.world_size;
	case WID_JOB: return id->job.job;
	case WID_EXE: return id->exe;
	case WID_CGROUP: return id->cgroup;
	default: return NULL;
	}
}
