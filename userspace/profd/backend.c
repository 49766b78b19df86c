/* backend.c: the ingest stage's view of the rest of the daemon: the
 * sampler's BPF maps, and the worker, which does every slow read (a
 * process's identity and maps, Python detection and names, unwind tables,
 * a file's symbols, kallsyms) off the sample path. */
#include "daemon.h"
#include "backend.h"
#include "worker.h"
#include "gpu.h"
#include "symcache.h"

static void be_stack_gen(void *ctx, uint32_t gen)
{
	struct daemon *d = ctx;

	if (d->sampler)
		sampler_set_stack_gen(d->sampler, gen);
}

static int be_py_add(void *ctx, uint32_t pid, const struct profd_py_proc *pp, const char *module)
{
	struct daemon *d = ctx;

	return d->sampler ? sampler_py_add(d->sampler, pid, pp, module) : 0;
}

static void be_py_detect(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	worker_py_detect(((struct daemon *)ctx)->worker, pid, start_time, req);
}

static void be_py_name(void *ctx, const struct ingest_py_ask *a, const struct pyruntime *rt)
{
	worker_py_name(((struct daemon *)ctx)->worker, a, rt);
}

static void be_identify(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	worker_identify(((struct daemon *)ctx)->worker, pid, start_time, req);
}

static void be_workload(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req,
			bool cgroup_only)
{
	worker_workload(((struct daemon *)ctx)->worker, pid, start_time, req, cgroup_only);
}

static void be_rss(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	worker_rss(((struct daemon *)ctx)->worker, pid, start_time, req);
}

static void be_maps(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	worker_maps(((struct daemon *)ctx)->worker, pid, start_time, req);
}

/* A file's symbols are read on the worker; until then its frames wait
 * (ingest defers their samples to the batch end, then names what it can). */
static void load_symbols(void *ctx, int pid, const struct procmap *m)
{
	worker_symbols(((struct daemon *)ctx)->worker, (uint32_t)pid, m);
}

static void reload_kallsyms(void *ctx, const char *path)
{
	worker_kallsyms(((struct daemon *)ctx)->worker, path);
}

static void load_perfmap(void *ctx, int pid, uint32_t seq, const struct perfmap_stamp *prev)
{
	worker_perfmap(((struct daemon *)ctx)->worker, (uint32_t)pid, seq, prev);
}

static void be_proc_event(void *ctx, uint32_t pid, enum ingest_proc_event what)
{
	struct daemon *d = ctx;
	struct proc *p = what != INGEST_PROC_EXIT ? proctable_find_live(&d->pt, pid) : NULL;

	/* New mappings may be CUDA libraries (the mmap report covers most). */
	if (p && p->maps_loaded) {
		gpu_scan_maps(d->gpu, pid, &p->maps);
		sampler_mmap_scan(d->sampler, pid, &p->maps); /* a C library not seen yet */
	}
	if (what == INGEST_PROC_EXIT)
		worker_tables_forget(d->worker, pid);
	else
		worker_tables(d->worker, pid);
}

static void be_py_del(void *ctx, uint32_t pid)
{
	struct daemon *d = ctx;
	struct proc *p = proctable_find_live(&d->pt, pid);

	if (d->sampler)
		sampler_py_del(d->sampler, pid);
	if (p && ingest_is_python(p)) /* its names' reads are over: not one job per exec */
		worker_py_forget(d->worker, pid);
}

void daemon_ingest_backend(struct daemon *d, struct ingest_backend *be)
{
	*be = (struct ingest_backend){
		.stack_gen = be_stack_gen, .py_add = be_py_add, .py_del = be_py_del,
		.py_detect = be_py_detect, .py_name = be_py_name, .identify = be_identify,
		.maps = be_maps,
		.rss = be_rss, .workload = be_workload,
		.proc_event = be_proc_event, .ctx = d,
	};
}

/* Once the worker runs: before, the symbolizer reads files itself. */
void daemon_symbolizer_hooks(struct daemon *d)
{
	symbolizer_set_loader(d->sym, &(struct symcache_loader){ load_symbols, d });
	symbolizer_set_kallsyms_reload(d->sym, reload_kallsyms, d);
	symbolizer_set_perfmap_loader(d->sym, &(struct symbolizer_perfmap_loader){ load_perfmap, d });
}
