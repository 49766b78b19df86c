/* ingest_proc.c: ingest's state per process (struct proc_ingest), owned
 * here through the process table's hooks: the table calls them and never
 * looks inside. */
#include <errno.h>
#include <stdlib.h>

#include "gpu.h"
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"

static int on_new(struct proc *p)
{
	p->ing = calloc(1, sizeof(*p->ing));
	if (p->ing && !(p->ing->py = pyproc_new())) {
		free(p->ing);
		p->ing = NULL;
	}
	return p->ing ? 0 : -ENOMEM;
}

/* Mappings moved (dlopen/munmap): cached ip -> frame may be stale.
 * Python names stay: they depend on no mapping, and a sample held for the
 * maps must keep the names read when it came, not read its code objects
 * again later, when their memory may hold others (a process starting up
 * frees and reuses code objects within milliseconds). */
static void on_maps(struct proc *p)
{
	if (!p->ing)
		return;
	hashmap_free(&p->ing->user_frames);
	hashmap_free(&p->ing->stack_memo);
}

/* A new program: nothing cached for the old one holds. */
static void on_exec(struct proc *p)
{
	struct proc_ingest *pi = p->ing;

	if (!pi)
		return;
	on_maps(p);
	ingest_anon_retire(pi);
	pyproc_forget(pi->py);
	/* Its CUDA kernel handles stay: the new program's first ones may
	 * have come (GPU ring) before the exec (lifecycle ring), and an old
	 * address made again is renamed when it is made. */
	pi->unwind_added = false;
}

static void on_free(struct proc *p)
{
	if (!p->ing)
		return;
	on_maps(p);
	hashmap_free(&p->ing->comm_of);
	ingest_anon_release(p->ing);
	pyproc_free(p->ing->py);
	gpu_ktab_free(p->ing->kernels);
	free(p->ing);
	p->ing = NULL;
}

int ingest_own_procs(struct proctable *pt)
{
	static const struct proc_owner owner = {
		.on_new = on_new, .on_exec = on_exec, .on_maps = on_maps, .on_free = on_free,
	};

	return proctable_add_owner(pt, &owner);
}

bool ingest_is_python(const struct proc *p)
{
	return p->ing && p->ing->py->rt;
}
