/* control_pystack.c: the stacks `profctl stacks` reads from a process on
 * request, for threads BPF holds no stack of (profd runs without
 * --off-cpu, or the thread blocked before profd started and has not run
 * since): every Python thread's frames from the process's memory
 * (pystack.h), each blocked thread's native frames (control_native.c),
 * and where the caller may see them, the kernel's stack of each thread
 * from /proc/PID/task/TID/stack.
 *
 * Read outside the state lock and before the listing's job on the ingest
 * thread, on a reader thread of its own with a deadline (memread.h), with
 * a code-object cache of its own, as control_async.c does: the process
 * controls how long its memory takes to read, and neither the samples
 * nor the other clients must wait on it.  The frames are interned into
 * the reader's stackset, moved into the reply's when it returns in time;
 * the listing only picks them up by thread. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "control.h"
#include "memread.h"
#include "pycode.h"
#include "pystack.h"
#include "pythreads.h"

_Static_assert(PYNOW_NAME_MAX == PYTHREADS_NAME_MAX, "thread name size");

#define PYNOW_MAX_THREADS 65536
#define KSTACK_MAX_FRAMES 64

struct pynow_reader {
	struct pynow *pn;
	const struct pyruntime *rt;
	struct pycode_cache *pyc;
	struct stackset *out;
	uint64_t deadline_ns;
	/* Python's thread names: ident (pthread_self()) -> index in names. */
	struct hashmap by_ident;
	char (*names)[PYTHREADS_NAME_MAX];
	size_t nnames;
};

int pynow_grow_ids(uint32_t **ids, bool **flags, size_t *cap, size_t need)
{
	if (need > *cap) {
		size_t c = 2 * need;
		uint32_t *i = realloc(*ids, c * sizeof(**ids));
		bool *f = i ? realloc(*flags, c * sizeof(**flags)) : NULL;

		if (i)
			*ids = i;
		if (!f)
			return -ENOMEM;
		*flags = f;
		*cap = c;
	}
	return 0;
}

int pynow_keep_ids(struct pynow *pn, uint32_t n)
{
	return pynow_grow_ids(&pn->ids, &pn->entry, &pn->ids_cap, pn->nids + n);
}

static int add_id(struct pynow *pn, int64_t id)
{
	if (id < 0)
		return (int)id;
	if (pynow_keep_ids(pn, 1))
		return -ENOMEM;
	pn->entry[pn->nids] = false;
	pn->ids[pn->nids++] = (uint32_t)id;
	return 0;
}

/* The thread as its own pid namespace numbers it: the last NSpid figure
 * (the host's tid for a process in profd's namespace). */
static uint32_t ns_tid_of(uint32_t pid, uint32_t tid)
{
	char path[96], text[2048], *line, *end;
	unsigned long v = tid;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", pid, tid);
	if (proc_read_small_file(path, text, sizeof(text)) < 0)
		return tid;
	line = strstr(text, "\nNSpid:");
	if (!line)
		return tid;
	for (line += 7; *line && *line != '\n'; line = end) {
		unsigned long x = strtoul(line, &end, 10);

		if (end == line)
			break;
		v = x;
	}
	return (uint32_t)v;
}

/* Every thread of pid, by host and namespace tid. */
static int list_tasks(struct pynow *pn, uint32_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!err && pn->n < PYNOW_MAX_THREADS && (de = readdir(dir))) {
		struct pynow_thread *t;
		char *end;
		uint32_t tid = (uint32_t)strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end)
			continue;
		if (pn->n % 64 == 0) {
			t = realloc(pn->v, (pn->n + 64) * sizeof(*t));
			if (!t) {
				err = -ENOMEM;
				break;
			}
			pn->v = t;
		}
		t = &pn->v[pn->n];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->ns_tid = ns_tid_of(pid, tid);
		err = hashmap_put(&pn->by_tid, tid, pn->n);
		if (!err)
			err = hashmap_put(&pn->by_ns, t->ns_tid, pn->n++);
	}
	closedir(dir);
	return err;
}

/* "do_nanosleep_[k]" from "[<0>] do_nanosleep+0x6f/0x190". */
static int kernel_frame(struct stackset *out, const char *line, size_t len)
{
	const char *name = memchr(line, ' ', len);
	char text[160];
	size_t n;

	if (!name)
		return -EINVAL;
	name++;
	n = strcspn(name, "+\n");
	if (!n || name + n > line + len)
		return -EINVAL;
	snprintf(text, sizeof(text), "%.*s_[k]", (int)(n > 128 ? 128 : n), name);
	return (int)stackset_intern(out, FRAME_KERNEL, text);
}

/* The thread's kernel stack (empty while it runs), root first. */
static int kernel_stack(struct pynow *pn, uint32_t pid, struct pynow_thread *t,
			struct stackset *out)
{
	char path[96], text[4096];
	const char *lines[KSTACK_MAX_FRAMES], *p;
	size_t n = 0, i;
	int64_t id;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/stack", pid, t->tid);
	if (proc_read_small_file(path, text, sizeof(text)) < 0)
		return 0; /* not root, or no such file in this kernel */
	for (p = text; *p && n < KSTACK_MAX_FRAMES; p = strchr(p, '\n') + 1) {
		lines[n++] = p;
		if (!strchr(p, '\n'))
			break;
	}
	t->k_first = (uint32_t)pn->nids;
	for (i = n; i > 0; i--) { /* the file is leaf first */
		id = kernel_frame(out, lines[i - 1], strcspn(lines[i - 1], "\n"));
		if (id == -EINVAL)
			continue;
		if (add_id(pn, id))
			return -ENOMEM;
		t->nk++;
	}
	return 0;
}

static int name_frame(struct pynow_reader *r, uint64_t code, int64_t instr)
{
	char name[2 * PYCODE_MAX_STR];

	/* Read from the live thread just now: nothing to check it against. */
	if (pycode_name(r->pyc, r->rt, code, 0, instr, name, sizeof(name)))
		snprintf(name, sizeof(name), "[code object %#" PRIx64 " not readable]", code);
	return add_id(r->pn, stackset_intern(r->out, FRAME_PYTHON, name));
}

/* One thread state's frames, root first, onto its thread's entry. */
static int keep_thread(const struct pystack_thread *ps, void *arg)
{
	struct pynow_reader *r = arg;
	struct pynow_thread *t;
	uint64_t i;
	int err = 0;

	if (clock_mono_ns() > r->deadline_ns) {
		r->pn->out_of_time = true;
		return 1;
	}
	if (!ps->tid || !hashmap_get(&r->pn->by_ns, ps->tid, &i))
		return 0; /* gone, or not told which thread it is */
	t = &r->pn->v[i];
	t->tstate = true;
	if (ps->ident && hashmap_get(&r->by_ident, ps->ident, &i))
		snprintf(t->pyname, sizeof(t->pyname), "%s", r->names[i]);
	if (r->pn->names_only)
		return 0;
	t->py_first = (uint32_t)r->pn->nids;
	if (ps->cut)
		err = add_id(
		    r->pn, stackset_intern(r->out, FRAME_UNKNOWN, "[more Python frames not read]"));
	for (i = ps->nframes; !err && i > 0; i--) {
		err = name_frame(r, ps->code[i - 1], ps->instr[i - 1]);
		if (!err)
			r->pn->entry[r->pn->nids - 1] = ps->entry[i - 1];
		if (!err && r->pn->locals)
			err = pynow_add_locals(r->pn, r->rt, ps->code[i - 1], ps->frame[i - 1],
					       t->py_first, r->out);
	}
	t->npy = (uint32_t)(r->pn->nids - t->py_first);
	return err;
}

static int keep_name(uint64_t ident, const char *name, void *arg)
{
	struct pynow_reader *r = arg;

	if (r->nnames == PYTHREADS_MAX)
		return 1;
	snprintf(r->names[r->nnames], sizeof(r->names[0]), "%s", name);
	return hashmap_put(&r->by_ident, ident, r->nnames++);
}

/* Python's names of the threads, before their stacks: a process that
 * lies about them only goes without (its OS names stay). */
static int read_names(struct pynow_reader *r)
{
	int err;

	r->names = malloc(PYTHREADS_MAX * sizeof(*r->names));
	if (!r->names)
		return -ENOMEM;
	err = pythreads_names(r->rt, keep_name, r);
	return err == -ENOMEM ? err : 0;
}

static int read_python(struct pynow *pn, uint32_t pid, struct stackset *out)
{
	struct pynow_reader r = {.pn = pn, .out = out};
	struct pyruntime rt;
	uint32_t *tids = malloc((pn->n ? pn->n : 1) * sizeof(*tids));
	size_t i;
	int err = tids ? pyruntime_detect((int)pid, &rt) : -ENOMEM;

	hashmap_init(&r.by_ident);
	if (!err && !(r.pyc = pycode_cache_new()))
		err = -ENOMEM;
	if (!err) {
		pn->python = true;
		r.rt = &rt;
		r.deadline_ns = clock_mono_ns() + PYNOW_BUDGET_NS;
		err = read_names(&r);
	}
	if (!err) {
		for (i = 0; i < pn->n; i++)
			tids[i] = pn->v[i].ns_tid;
		err = pystack_threads(&rt, tids, pn->n, keep_thread, &r);
	}
	pycode_cache_free(r.pyc);
	hashmap_free(&r.by_ident);
	free(r.names);
	free(tids);
	return err == 1 ? 0 : err; /* 1: the budget, what came is kept */
}

static void say_why(struct pynow *pn, int err)
{
	if (err == -ENOENT)
		snprintf(pn->why, sizeof(pn->why), "not a Python process");
	else if (err == -EPROTONOSUPPORT)
		snprintf(pn->why, sizeof(pn->why), "a Python profd cannot read");
	else if (err)
		snprintf(pn->why, sizeof(pn->why), "its memory not read: %s", strerror(-err));
}

static int read_here(struct pynow *pn, uint32_t pid, bool kernel, struct stackset *out)
{
	size_t i;
	int err;

	err = list_tasks(pn, pid);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	for (i = 0; kernel && i < pn->n; i++)
		if (kernel_stack(pn, pid, &pn->v[i], out))
			return -ENOMEM;
	err = read_python(pn, pid, out);
	say_why(pn, err);
	return err == -ENOMEM ? err : 0;
}

/* What the reader owns: freed by whichever of it and the control thread
 * is done last. */
struct pynow_job {
	uint32_t pid;
	bool kernel;
	int err;
	struct pynow pn;
	struct stackset *ss;
};

static void job_read(void *arg)
{
	struct pynow_job *j = arg;

	j->err = read_here(&j->pn, j->pid, j->kernel, j->ss);
}

static void job_drop(void *arg)
{
	struct pynow_job *j = arg;

	pynow_free(&j->pn);
	stackset_free(j->ss);
	free(j);
}

static int read_job(struct pynow *pn, uint32_t pid, bool kernel, bool locals, bool names_only,
		    struct stackset *out)
{
	struct pynow_job *j = calloc(1, sizeof(*j));
	int err = j ? 0 : -ENOMEM;

	memset(pn, 0, sizeof(*pn));
	hashmap_init(&pn->by_tid);
	hashmap_init(&pn->by_ns);
	if (!err) {
		j->pid = pid;
		j->kernel = kernel;
		j->pn.locals = locals;
		j->pn.names_only = names_only;
		hashmap_init(&j->pn.by_tid);
		hashmap_init(&j->pn.by_ns);
		j->ss = stackset_new();
		err = j->ss ? memread_run(job_read, job_drop, j, CONTROL_MEMREAD_TIMEOUT_MS)
			    : -ENOMEM;
	}
	/* The listing goes on without: on a timeout, j is the reader's now. */
	if (err == -ETIMEDOUT) {
		pn->unread = "not read: memory read timed out (its memory did not answer)";
		return 0;
	}
	if (err == -EBUSY) {
		pn->unread = "not read: too many reads of processes' memory are stuck";
		job_drop(j);
		return 0;
	}
	if (!err)
		err = j->err;
	if (!err)
		err = control_stackset_move(out, j->ss);
	if (!err) {
		pynow_free(pn);
		*pn = j->pn;
		memset(&j->pn, 0, sizeof(j->pn));
	}
	if (j)
		job_drop(j);
	/* Then the native frames, on a reader of their own (control_native.c);
	 * a dump asking for thread names wants none. */
	return err || names_only ? err : pynow_read_native(pn, pid, out);
}

int pynow_read(struct pynow *pn, uint32_t pid, bool kernel, bool locals, struct stackset *out)
{
	return read_job(pn, pid, kernel, locals, false, out);
}

int pynow_read_names(struct pynow *pn, uint32_t pid)
{
	struct stackset *scratch = stackset_new(); /* no frames come */
	int err = scratch ? read_job(pn, pid, false, false, true, scratch) : -ENOMEM;

	if (!scratch)
		memset(pn, 0, sizeof(*pn));
	stackset_free(scratch);
	return err;
}

const struct pynow_thread *pynow_find(const struct pynow *pn, uint32_t tid)
{
	uint64_t i;

	return pn && hashmap_get(&pn->by_tid, tid, &i) ? &pn->v[i] : NULL;
}

void pynow_free(struct pynow *pn)
{
	hashmap_free(&pn->by_tid);
	hashmap_free(&pn->by_ns);
	free(pn->v);
	free(pn->ids);
	free(pn->entry);
}
