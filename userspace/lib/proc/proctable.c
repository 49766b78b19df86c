#include "proctable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "array.h"
#include "log.h"

void proctable_init(struct proctable *pt, size_t max_procs, const char *proc_root)
{
	memset(pt, 0, sizeof(*pt));
	pt->max_procs = max_procs ? max_procs : 65536;
	pt->proc_root = proc_root ? proc_root : "/proc";
}

static void proc_destroy(struct proctable *pt, struct proc *p)
{
	size_t i;

	for (i = 0; i < pt->nowners; i++)
		if (pt->owners[i].on_free)
			pt->owners[i].on_free(p);
	procmaps_free(&p->maps);
	free(p->rss);
	free(p->exe);
	free(p->wid);
	free(p);
}

/* Each owner's state for a new entry: 0, or the first error (those
 * made are freed by proc_destroy, whose hooks take a missing one). */
static int owners_new(struct proctable *pt, struct proc *p)
{
	size_t i;
	int err = 0;

	for (i = 0; i < pt->nowners && !err; i++)
		if (pt->owners[i].on_new)
			err = pt->owners[i].on_new(p);
	return err;
}

int proctable_add_owner(struct proctable *pt, const struct proc_owner *o)
{
	size_t i;
	int err = 0;

	if (pt->nowners == PROC_OWNERS_MAX)
		return -ENOSPC;
	pt->owners[pt->nowners++] = *o;
	for (i = 0; i < pt->n && !err; i++)
		if (o->on_new)
			err = o->on_new(pt->all[i]);
	return err;
}

void proctable_free(struct proctable *pt)
{
	size_t i;

	for (i = 0; i < pt->n; i++)
		proc_destroy(pt, pt->all[i]);
	free(pt->all);
	free(pt->exited);
	hashmap_free(&pt->live);
	hashmap_free(&pt->dead);
	pt->all = NULL;
	pt->n = pt->cap = 0;
}

int proc_read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

/* Field n (3 = state, 22 = starttime, 24 = rss) of /proc/PID/stat text:
 * comm may hold spaces and parentheses, so count from the last ')'.
 * NULL when the text is shorter. */
static const char *stat_field(const char *text, int n)
{
	const char *p = strrchr(text, ')');
	int field;

	if (!p)
		return NULL;
	p++; /* the space before field 3 */
	for (field = 3; field < n && p; field++)
		p = strchr(p + 1, ' ');
	return p ? p + 1 : NULL;
}

static int parse_stat(const char *text, uint64_t *start_time, char comm[16])
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	const char *start = stat_field(text, 22);
	size_t len;

	if (!open || !close || close < open || !start)
		return -EINVAL;
	len = (size_t)(close - open - 1);
	if (len > 15)
		len = 15;
	memcpy(comm, open + 1, len);
	comm[len] = '\0';
	*start_time = strtoull(start, NULL, 10);
	return 0;
}

int proc_stat_rss(const char *text, uint64_t *start_time, uint64_t *rss_bytes)
{
	const char *start = stat_field(text, 22), *rss = stat_field(text, 24);
	long page = sysconf(_SC_PAGESIZE);

	if (!start || !rss)
		return -EINVAL;
	*start_time = strtoull(start, NULL, 10);
	*rss_bytes = strtoull(rss, NULL, 10) * (uint64_t)(page > 0 ? page : 4096);
	return 0;
}

int proc_read_rss(const char *proc_root, uint32_t pid, uint64_t start_time, uint64_t *rss_bytes)
{
	char path[PATH_MAX], text[1024];
	uint64_t read_start;
	int err;

	snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
	err = proc_read_small_file(path, text, sizeof(text));
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	if (proc_stat_rss(text, &read_start, rss_bytes))
		return -EINVAL;
	return read_start == start_time ? 0 : -ESRCH; /* the pid is another process now */
}

uint32_t proc_stat_ppid(const char *text)
{
	const char *close = strrchr(text, ')');
	char state;
	unsigned ppid;

	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so
	 * count from the last ')'. */
	if (!close || sscanf(close + 1, " %c %u", &state, &ppid) != 2)
		return 0;
	return ppid;
}

int proc_read_identity(const char *proc_root, uint32_t pid, uint64_t *start_time, uint32_t *uid,
		       uint32_t *ppid, char comm[16], char **exe)
{
	char path[PATH_MAX], text[1024], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int err;

	snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
	err = proc_read_small_file(path, text, sizeof(text));
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	if (parse_stat(text, start_time, comm))
		return -EINVAL;
	*ppid = proc_stat_ppid(text);
	snprintf(path, sizeof(path), "%s/%u", proc_root, pid);
	if (stat(path, &st))
		return errno == ENOENT ? -ESRCH : -errno;
	*uid = st.st_uid;
	if (exe) {
		*exe = NULL;
		snprintf(path, sizeof(path), "%s/%u/exe", proc_root, pid);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			*exe = strdup(link);
		}
	}
	return 0;
}

static void exited_push(struct proctable *pt, struct proc *p)
{
	if (pt->exited_head > pt->exited_len / 2) { /* amortized: O(1) per push */
		memmove(pt->exited, pt->exited + pt->exited_head,
			(pt->exited_len - pt->exited_head) * sizeof(*pt->exited));
		pt->exited_first += pt->exited_head;
		pt->exited_len -= pt->exited_head;
		pt->exited_head = 0;
	}
	if (array_grow((void **)&pt->exited, &pt->exited_cap, pt->exited_len + 1,
		       sizeof(*pt->exited))) {
		p->exit_ticket = UINT64_MAX; /* evicted only by expiry */
		pt->unqueued++;
		return;
	}
	p->exit_ticket = pt->exited_first + pt->exited_len;
	pt->exited[pt->exited_len++] = p;
}

static void exited_unlink(struct proctable *pt, const struct proc *p)
{
	uint64_t i = p->exit_ticket - pt->exited_first;

	if (p->exited && p->exit_ticket != UINT64_MAX && p->exit_ticket >= pt->exited_first &&
	    i < pt->exited_len)
		pt->exited[i] = NULL;
}

/* The exited process that ended first, or NULL. */
static struct proc *exited_oldest(struct proctable *pt)
{
	while (pt->exited_head < pt->exited_len && !pt->exited[pt->exited_head])
		pt->exited_head++;
	return pt->exited_head < pt->exited_len ? pt->exited[pt->exited_head] : NULL;
}

/* Drop entry i; the table's order does not matter. */
static void proc_remove(struct proctable *pt, size_t i)
{
	struct proc *p = pt->all[i];
	uint64_t v;

	if (hashmap_get(&pt->dead, p->pid, &v) && (struct proc *)(uintptr_t)v == p)
		hashmap_del(&pt->dead, p->pid);
	if (p->exited && p->exit_ticket == UINT64_MAX)
		pt->unqueued--;
	exited_unlink(pt, p);
	proc_destroy(pt, p);
	pt->n--;
	if (i < pt->n) {
		pt->all[i] = pt->all[pt->n];
		pt->all[i]->slot = i;
	}
}

/* Keep max_procs: drop the exited process that ended longest ago. */
static void evict_one(struct proctable *pt)
{
	struct proc *victim = exited_oldest(pt);

	if (!victim)
		return;
	proc_remove(pt, victim->slot);
	pt->evicted++;
}

static void retire(struct proctable *pt, struct proc *p, uint64_t now_ns);

/* The exited entry a late sample for pid belongs to, or NULL. */
static struct proc *late_sample_owner(struct proctable *pt, uint32_t pid, bool gone,
				      uint64_t start_time, const char *comm)
{
	struct proc *prev;
	uint64_t v;

	if (!hashmap_get(&pt->dead, pid, &v))
		return NULL;
	prev = (struct proc *)(uintptr_t)v;
	if (!gone)
		return prev->start_time == start_time ? prev : NULL;
	return comm && strncmp(prev->comm, comm, sizeof(prev->comm) - 1) == 0 ? prev : NULL;
}

/* Give p a slot (evicting the exited process that ended first when the
 * table is full) and, when live, its pid.  Frees p and returns NULL when
 * there is no room. */
static struct proc *proc_insert(struct proctable *pt, struct proc *p, bool live)
{
	if (pt->n >= pt->max_procs)
		evict_one(pt);
	if (pt->n >= pt->max_procs ||
	    array_grow((void **)&pt->all, &pt->cap, pt->n + 1, sizeof(*pt->all)) ||
	    owners_new(pt, p) ||
	    (live && hashmap_put(&pt->live, p->pid, (uint64_t)(uintptr_t)p))) {
		proc_destroy(pt, p);
		return NULL; /* the caller counts the sample as dropped */
	}
	p->slot = pt->n;
	pt->all[pt->n++] = p;
	return p;
}

static struct proc *proc_create(struct proctable *pt, uint32_t pid, const char *comm)
{
	struct proc *p, *prev;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	err = proc_read_identity(pt->proc_root, pid, &p->start_time, &p->uid, &p->ppid, p->comm,
				 &p->exe);
	prev = late_sample_owner(pt, pid, err != 0, p->start_time, comm);
	if (prev) {
		free(p->exe);
		free(p);
		return prev;
	}
	if (!err)
		return proc_insert(pt, p, true);
	/* Gone before we looked: keep its samples under what we know, as an
	 * exited process, so a later process with this pid does not merge
	 * into it. */
	snprintf(p->comm, sizeof(p->comm), "%s", comm ? comm : "?");
	p->start_time = 0;
	p->uid = PROC_UID_UNKNOWN;
	p = proc_insert(pt, p, false);
	if (p)
		retire(pt, p, clock_realtime_ns());
	return p;
}

struct proc *proctable_add(struct proctable *pt, uint32_t pid, uint64_t start_time,
			   const char *comm)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->start_time = start_time;
	p->uid = PROC_UID_UNKNOWN;
	p->identity_pending = true;
	snprintf(p->comm, sizeof(p->comm), "%s", comm ? comm : "?");
	return proc_insert(pt, p, true);
}

void proctable_set_identity(struct proc *p, uint32_t uid, char *exe)
{
	free(p->exe);
	p->exe = exe;
	p->uid = uid;
	p->identity_pending = false;
}

void proctable_set_workload(struct proc *p, struct workload_id *wid)
{
	free(p->wid);
	p->wid = wid;
}

int proctable_add_rss(struct proc *p, uint64_t t_ns, uint64_t bytes)
{
	struct proc_rss *r = p->rss;
	uint32_t i;

	if (!r && !(r = p->rss = calloc(1, sizeof(*r))))
		return -ENOMEM;
	if (r->n < PROC_RSS_POINTS) {
		i = (r->head + r->n++) % PROC_RSS_POINTS;
	} else {
		i = r->head;
		r->head = (r->head + 1) % PROC_RSS_POINTS;
	}
	r->t_ns[i] = t_ns;
	r->bytes[i] = bytes;
	return 0;
}

void proctable_rss_point(const struct proc *p, uint32_t i, uint64_t *t_ns, uint64_t *bytes)
{
	uint32_t k = (p->rss->head + i) % PROC_RSS_POINTS;

	*t_ns = p->rss->t_ns[k];
	*bytes = p->rss->bytes[k];
}

struct proc *proctable_next(const struct proctable *pt, size_t *it)
{
	return *it < pt->n ? pt->all[(*it)++] : NULL;
}

size_t proctable_count(const struct proctable *pt)
{
	return pt->n;
}

size_t proctable_live_count(const struct proctable *pt)
{
	return pt->live.len;
}

struct proc *proctable_find_live(struct proctable *pt, uint32_t pid)
{
	uint64_t v;

	return hashmap_get(&pt->live, pid, &v) ? (struct proc *)(uintptr_t)v : NULL;
}

struct proc *proctable_find_exited(struct proctable *pt, uint32_t pid, uint64_t start_time)
{
	uint64_t v;

	if (!hashmap_get(&pt->dead, pid, &v))
		return NULL;
	return ((struct proc *)(uintptr_t)v)->start_time == start_time ? (struct proc *)(uintptr_t)v
								      : NULL;
}

struct proc *proctable_find_pid(struct proctable *pt, uint32_t pid)
{
	struct proc *p = proctable_find_live(pt, pid);
	uint64_t v;

	if (p)
		return p;
	return hashmap_get(&pt->dead, pid, &v) ? (struct proc *)(uintptr_t)v : NULL;
}

struct proc *proctable_get(struct proctable *pt, uint32_t pid, const char *comm)
{
	struct proc *p = proctable_find_live(pt, pid);

	return p ? p : proc_create(pt, pid, comm);
}

static void retire(struct proctable *pt, struct proc *p, uint64_t now_ns)
{
	p->exited = true;
	p->exit_ns = now_ns;
	hashmap_del(&pt->live, p->pid);
	hashmap_put(&pt->dead, p->pid, (uint64_t)(uintptr_t)p); /* best effort */
	exited_push(pt, p);
	/* Its maps stay a while (proctable_expire): samples taken before the
	 * exit are read after it and are named with them. */
}

void proctable_exec(struct proctable *pt, uint32_t pid, const char *comm)
{
	struct proc *p = proctable_find_live(pt, pid);
	size_t i;

	if (!p)
		return;
	p->identity_pending = true; /* a new exe; a setuid program, a new uid */
	p->wid_req++; /* a new argv: the old program's answer is dropped */
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	procmaps_free(&p->maps);
	p->maps_loaded = false;
	p->maps_pending = false;
	p->maps_req++; /* an answer for the old program is dropped */
	p->maps_reload_gap_ns = 0;
	for (i = 0; i < pt->nowners; i++)
		if (pt->owners[i].on_exec)
			pt->owners[i].on_exec(p);
}

void proctable_exit(struct proctable *pt, uint32_t pid, uint64_t now_ns)
{
	struct proc *p = proctable_find_live(pt, pid);

	if (!p)
		return;
	retire(pt, p, now_ns);
}

void proctable_set_maps(struct proctable *pt, struct proc *p, struct procmaps *fresh)
{
	size_t i;

	procmaps_free(&p->maps);
	p->maps = *fresh;
	memset(fresh, 0, sizeof(*fresh));
	p->maps_loaded = true;
	/* Mappings moved (dlopen/munmap): what owners cached by address may
	 * be stale. */
	for (i = 0; i < pt->nowners; i++)
		if (pt->owners[i].on_maps)
			pt->owners[i].on_maps(p);
}

int proctable_reload_maps(struct proctable *pt, struct proc *p, uint64_t mono_ns)
{
	struct procmaps fresh = { 0 };
	int err;

	p->maps_mono_ns = mono_ns;
	err = procmaps_read((int)p->pid, &fresh);
	if (err)
		return err;
	proctable_set_maps(pt, p, &fresh);
	return 0;
}

/* The end of an exited process's linger: its maps go, and so does the
 * entry itself when it never got a sample or event (an exec storm must
 * not fill the table).  true: p was removed. */
static bool settle(struct proctable *pt, struct proc *p)
{
	procmaps_free(&p->maps);
	p->maps_loaded = false;
	if (p->samples || p->events || p->heads_job)
		return false;
	proc_remove(pt, p->slot);
	return true;
}

static bool lingering(const struct proc *p, uint64_t now_ns)
{
	return p->exit_ns + PROC_LINGER_NS > now_ns;
}

/* Exits in FIFO order from where the last call stopped, up to the first
 * still lingering. */
static void settle_exits(struct proctable *pt, uint64_t now_ns)
{
	uint64_t t = pt->settled_ticket, end = pt->exited_first + pt->exited_len;

	if (t < pt->exited_first + pt->exited_head)
		t = pt->exited_first + pt->exited_head;
	for (; t < end; t++) {
		struct proc *p = pt->exited[t - pt->exited_first];

		if (p && lingering(p, now_ns))
			break;
		if (p)
			settle(pt, p);
	}
	pt->settled_ticket = t;
}

/* Oldest exit first, from the exit FIFO: a tick costs what settles and
 * expires, not what is tracked.  Entries the FIFO could not take (no
 * memory) need a scan, only while there are any. */
void proctable_expire(struct proctable *pt, uint64_t now_ns, uint64_t retention_ns)
{
	struct proc *p;
	size_t i = 0;

	settle_exits(pt, now_ns);

	while ((p = exited_oldest(pt)) && now_ns - p->exit_ns > retention_ns) {
		proc_remove(pt, p->slot);
		pt->expired++;
	}
	while (pt->unqueued && i < pt->n) {
		p = pt->all[i];
		if (p->exited && p->exit_ticket == UINT64_MAX && now_ns - p->exit_ns > retention_ns) {
			proc_remove(pt, i);
			pt->expired++;
			continue;
		}
		if (p->exited && p->exit_ticket == UINT64_MAX && !lingering(p, now_ns) &&
		    (p->maps_loaded || !(p->samples || p->events)) && settle(pt, p))
			continue;
		i++;
	}
}
