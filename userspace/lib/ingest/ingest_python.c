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

/* A 3.14 process whose maps now hold _asyncio (imported after the
 * interpreter was found): look again, on the worker, for its offsets. */
void ingest_recheck_asyncio(struct ingest *in, struct proc *p)
{
	const struct pyproc *py = p->ing->py;
	size_t i;

	if (!py->rt || py->rt->minor < 14 || py->rt->async.known || py->pending || p->exited)
		return;
	for (i = 0; i < p->maps.n; i++) {
		const char *path = p->maps.maps[i].path, *base = path ? strrchr(path, '/') : NULL;

		if (base && !strncmp(base + 1, "_asyncio.", 9))
			break;
	}
	if (i == p->maps.n)
		return;
	p->ing->py->req++;
	p->ing->py->pending = true;
	in->c.requests++;
	if (in->be.py_detect)
		in->be.py_detect(in->be.ctx, p->pid, p->start_time, p->ing->py->req);
	else
		ingest_python_found(in, p->pid, p->start_time, p->ing->py->req, pyruntime_find((int)p->pid));
}

/* The answer to a recheck: only asyncio's offsets are taken from it. */
static void asyncio_found(struct ingest *in, struct proc *p, struct pyruntime *rt)
{
	if (rt && rt->async.known && !p->ing->py->rt->async.known) {
		p->ing->py->rt->async = rt->async;
		publish_python(in, p, NULL);
		log_info("python: pid %u: asyncio tasks known", p->pid);
	}
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
		asyncio_found(in, p, rt);
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
