/* ingest_python.c: finding CPython in a process (on the worker, or here
 * at start-up), taking the answer, and noticing asyncio once it is
 * imported. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"
#include "log.h"
#include "pyruntime.h"

void ingest_detect_python_now(struct ingest *in, struct proc *p, uint64_t mono_ns,
			      bool here)
{
	p->ing->py->checked = true;
	p->ing->py->checked_mono_ns = mono_ns;
	if (p->ing->py->rt || p->ing->py->pending || p->exited || p->start_time == 0)
		return;
	p->ing->py->req++;
	p->ing->py->pending = true;
	in->c.requests++;
	if (here || !in->be.py_detect)
		ingest_python_found(in, p->pid, p->start_time, p->ing->py->req,
				    pyruntime_find((int)p->pid));
	else
		in->be.py_detect(in->be.ctx, p->pid, p->start_time, p->ing->py->req);
}

void ingest_detect_python(struct ingest *in, struct proc *p, uint64_t mono_ns)
{
	ingest_detect_python_now(in, p, mono_ns, false);
}

/* Hand p's interpreter to BPF (again when asyncio's offsets came later;
 * the eval uprobe, module set, is attached the first time only). */
static void publish_python(struct ingest *in, struct proc *p, const char *module)
{
	const struct pyruntime *rt = p->ing->py->rt;
	struct profd_py_proc pp;

	memset(&pp, 0, sizeof(pp));
	pp.runtime_addr = rt->runtime_addr;
	pp.off = rt->off;
	pp.asyncio_task_off = rt->async.known ? rt->async.dbg.tstate.running_task : 0;
	if (in->be.py_add && in->be.py_add(in->be.ctx, p->pid, &pp, module))
		log_warn("python: pid %u: could not enable Python frames", p->pid);
}

/* Does p's maps now hold a file whose name name_ok accepts? */
static bool maps_hold(const struct proc *p, bool (*name_ok)(const char *path))
{
	size_t i;

	for (i = 0; i < p->maps.n; i++)
		if (p->maps.maps[i].path && name_ok(p->maps.maps[i].path))
			return true;
	return false;
}

static bool is_asyncio(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strncmp(base + 1, "_asyncio.", 9);
}

/* What the interpreter was found without, and the maps now hold: a 3.14
 * process's _asyncio (imported after the interpreter was found), or (3.9
 * and 3.10 on arm64) the C library that says where pthread_self() is,
 * not yet loaded at exec.  Looked for again on the worker. */
void ingest_recheck_python(struct ingest *in, struct proc *p)
{
	const struct pyproc *py = p->ing->py;
	bool asyncio, pthread;

	if (!py->rt || py->pending || p->exited)
		return;
	asyncio = py->rt->minor >= 14 && !py->rt->async.known && maps_hold(p, is_asyncio);
	/* Once: a C library without the size (not glibc) stays unknown. */
	pthread = !py->pthread_asked && pyruntime_needs_pthread_size(py->rt) &&
		  maps_hold(p, pyruntime_is_libc);
	if (!asyncio && !pthread)
		return;
	if (pthread)
		p->ing->py->pthread_asked = true;
	p->ing->py->req++;
	p->ing->py->pending = true;
	in->c.requests++;
	if (in->be.py_detect)
		in->be.py_detect(in->be.ctx, p->pid, p->start_time, p->ing->py->req);
	else
		ingest_python_found(in, p->pid, p->start_time, p->ing->py->req, pyruntime_find((int)p->pid));
}

/* The answer to a recheck: only what the first answer lacked is taken
 * from it (asyncio's offsets, the size of struct pthread). */
static void recheck_found(struct ingest *in, struct proc *p, struct pyruntime *rt)
{
	struct pyruntime *cur = p->ing->py->rt;
	bool changed = false;

	if (rt && rt->async.known && !cur->async.known) {
		cur->async = rt->async;
		changed = true;
		log_info("python: pid %u: asyncio tasks known", p->pid);
	}
	if (rt && rt->off.pthread_below_tp && !cur->off.pthread_below_tp) {
		cur->off.pthread_below_tp = rt->off.pthread_below_tp;
		changed = true;
		log_info("python: pid %u: threads named by pthread_self(), %u bytes below the "
			 "thread pointer", p->pid, rt->off.pthread_below_tp);
	}
	if (changed)
		publish_python(in, p, NULL);
	free(rt);
}

void ingest_python_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			 struct pyruntime *rt)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (!p || p->start_time != start_time || !p->ing->py->pending || p->ing->py->req != req) {
		free(rt); /* exec'ed, asked again, or gone since it was asked */
		return;
	}
	p->ing->py->pending = false;
	if (p->ing->py->rt) {
		recheck_found(in, p, rt);
		return;
	}
	if (!rt)
		return;
	pyproc_attach(p->ing->py, rt);
	hashmap_free(&p->ing->stack_memo); /* stacks seen before now get Python names */
	in->c.py_processes++;
	publish_python(in, p, rt->path);
	log_info("python: pid %u runs CPython %d.%d (%s)", p->pid, rt->major, rt->minor, rt->path);
}

int ingest_scan_python(struct ingest *in)
{
	DIR *d = opendir(in->pt->proc_root);
	struct dirent *de;
	int found = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		struct proc *p;

		if (*end || !pid)
			continue;
		p = proctable_get(in->pt, (uint32_t)pid, NULL);
		if (!p)
			break;
		ingest_detect_python_now(in, p, clock_mono_ns(), true);
		found += p->ing->py->rt != NULL;
		/* Unwind tables come with each process's first sample: building
		 * them for every process here would delay the start. */
	}
	closedir(d);
	return found;
}
