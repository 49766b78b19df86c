/* ingest_maps.c: a process's maps, read on the worker: asked for the
 * address a sample could not place, taken when the answer comes, and
 * re-read with a backoff while reloads do not help. */
#include <errno.h>
#include <stdlib.h>

#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"

/* Re-reading the maps for an address outside them: soon after the last
 * read (the loader maps libraries right after exec), then backing off
 * while reloads do not help. */
#define MAPS_RELOAD_MIN_NS (10ull * 1000000ull)
#define MAPS_RELOAD_MAX_NS (1000ull * 1000000ull)

void ingest_request_maps(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono_ns)
{
	struct procmaps fresh = { 0 };
	int err;

	if (p->maps_pending || p->exited || p->start_time == 0)
		return;
	in->c.maps_reloads++;
	in->c.requests++;
	p->maps_pending = true;
	p->maps_req++;
	p->maps_want_ip = ip;
	p->maps_mono_ns = mono_ns;
	if (in->be.maps) {
		in->be.maps(in->be.ctx, p->pid, p->start_time, p->maps_req);
		return;
	}
	err = procmaps_read_at(in->pt->proc_root, (int)p->pid, &fresh);
	ingest_maps_found(in, p->pid, p->start_time, p->maps_req, err, &fresh);
}

void ingest_maps_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req, int err,
		       struct procmaps *m)
{
	struct proc *p = proctable_find_live(in->pt, pid);
	bool found;

	if (!p || p->start_time != start_time || p->maps_req != req || !p->maps_pending) {
		procmaps_free(m); /* exec'ed, asked again, or gone since */
		return;
	}
	p->maps_pending = false;
	if (err)
		return; /* the address stays unnamed; asked again after the gap */
	proctable_set_maps(in->pt, p, m);
	if (!p->ing->py->rt)
		p->ing->py->checked = false; /* new mappings may be libpython */
	ingest_recheck_python(in, p);
	found = !p->maps_want_ip || procmaps_find(&p->maps, p->maps_want_ip);
	if (found) {
		p->maps_reload_gap_ns = MAPS_RELOAD_MIN_NS;
		return;
	}
	p->maps_reload_gap_ns = p->maps_reload_gap_ns ? p->maps_reload_gap_ns * 2 : MAPS_RELOAD_MIN_NS;
	if (p->maps_reload_gap_ns > MAPS_RELOAD_MAX_NS)
		p->maps_reload_gap_ns = MAPS_RELOAD_MAX_NS;
}

bool ingest_waits_for_maps(const struct proc *p, const struct profd_sample *e)
{
	return p->maps_pending && e->ustack_id;
}

/* Is ip inside the process's mappings?  If not, the maps are stale
 * (dlopen, the loader still at work when the exec was seen): have them
 * read again (rate-limited with backoff: a stray address must not cost a
 * read per sample).  Returns whether ip is mapped now. */
bool ingest_refresh_maps_for(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono)
{
	if (p->maps_loaded && procmaps_find(&p->maps, ip))
		return true;
	if (p->maps_loaded && mono < p->maps_mono_ns + p->maps_reload_gap_ns)
		return false;
	ingest_request_maps(in, p, ip, mono);
	return p->maps_loaded && procmaps_find(&p->maps, ip); /* read inline (tests) */
}
