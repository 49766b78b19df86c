#include "unwinder.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* PROT_EXEC */
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "bpfcount.h"
#include "log.h"
#include "rootfs.h"
#include "unwinder_int.h"

/* A PyTorch process's tables take 22 MiB packed (its CUDA libraries 6 MiB
 * more), and everything else a training host runs shares the rest. */
#define DEFAULT_TABLE_BYTES (64ull << 20)
#define DEFAULT_MAX_MAPPINGS 65536u
#define DEFAULT_MAX_PROCS 8192u
#define DEFAULT_IDLE_NS (10ull * 1000 * 1000 * 1000)
#define DEFAULT_KEEP_UNUSED_NS (300ull * 1000 * 1000 * 1000)

_Static_assert(sizeof(struct profd_unwind_words) == 8, "word-pair stride in the mmapped array");
_Static_assert(sizeof(struct profd_unwind_mapping) % 8 == 0, "mapping stride in the mmapped array");

static void resolve_opts(const struct unwinder_opts *in, struct unwinder_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (in)
		*o = *in;
	if (!o->table_bytes)
		o->table_bytes = DEFAULT_TABLE_BYTES;
	if (!o->max_mappings)
		o->max_mappings = DEFAULT_MAX_MAPPINGS;
	if (!o->max_procs)
		o->max_procs = DEFAULT_MAX_PROCS;
	if (!o->proc_root)
		o->proc_root = "/proc";
	if (!o->idle_ns)
		o->idle_ns = DEFAULT_IDLE_NS;
	if (!o->keep_unused_ns)
		o->keep_unused_ns = DEFAULT_KEEP_UNUSED_NS;
}

/* The cap in values of unwind_rows (indexes fit in 31 bits), and in
 * chunks, the last one maybe used in part. */
static uint32_t rows_for(const struct unwinder_opts *o)
{
	uint64_t n = o->table_bytes / sizeof(struct profd_unwind_words);

	return n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (n ? (uint32_t)n : 1);
}

static uint32_t chunks_for(const struct unwinder_opts *o)
{
	return (rows_for(o) + PROFD_UNWIND_CHUNK_VALUES - 1) >> PROFD_UNWIND_CHUNK_SHIFT;
}

/* The cap in mappings, and in their chunks. */
static uint32_t mappings_for(const struct unwinder_opts *o)
{
	return o->max_mappings;
}

static uint32_t map_chunks_for(const struct unwinder_opts *o)
{
	return (mappings_for(o) + PROFD_UNWIND_MAP_CHUNK_VALUES - 1) >> PROFD_UNWIND_MAP_CHUNK_SHIFT;
}

int unwinder_size_maps(const struct unwinder_maps *maps, const struct unwinder_opts *opts)
{
	struct unwinder_opts o;
	int err;

	resolve_opts(opts, &o);
	err = bpf_map__set_max_entries(maps->rows, chunks_for(&o));
	if (!err)
		err = bpf_map__set_max_entries(maps->mappings, map_chunks_for(&o));
	if (!err)
		err = bpf_map__set_max_entries(maps->procs, o.max_procs);
	if (err)
		log_warn("unwinder: failed to size maps: %s", strerror(-err));
	return err;
}

struct unwinder *unwinder_new(const struct unwinder_opts *opts, const struct unwinder_maps *maps)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	struct unwinder_opts o;
	int err;

	if (!u)
		return NULL;
	resolve_opts(opts, &o);
	u->maps = *maps;
	snprintf(u->proc_root, sizeof(u->proc_root), "%s", o.proc_root);
	u->idle_ns = o.idle_ns;
	u->keep_unused_ns = o.keep_unused_ns;
	hashmap_init(&u->files);
	hashmap_init(&u->procs);
	if (uwchunks_init(&u->rows_mem, maps->rows, "profd_uw_rows",
			  sizeof(struct profd_unwind_words), PROFD_UNWIND_CHUNK_SHIFT,
			  &u->st.table_bytes_allocated) ||
	    uwchunks_init(&u->maps_mem, maps->mappings, "profd_uw_maps",
			  sizeof(struct profd_unwind_mapping), PROFD_UNWIND_MAP_CHUNK_SHIFT,
			  &u->st.mapping_bytes_allocated) ||
	    rangealloc_init(&u->rows, rows_for(&o)) ||
	    rangealloc_init(&u->mappings, mappings_for(&o))) {
		errno = ENOMEM;
		goto fail;
	}
	u->st.table_bytes_limit = (uint64_t)u->rows.size * sizeof(struct profd_unwind_words);
	u->st.mappings_limit = u->mappings.size;
	return u;
fail:
	err = errno;
	unwinder_free(u);
	errno = err;
	return NULL;
}

static void proc_free(struct uw_proc *p)
{
	if (p) {
		free(p->files);
		free(p);
	}
}

void unwinder_free(struct unwinder *u)
{
	uint64_t k, v;
	size_t it;

	if (!u)
		return;
	for (it = 0; hashmap_next(&u->procs, &it, &k, &v);)
		proc_free((struct uw_proc *)(uintptr_t)v);
	for (it = 0; hashmap_next(&u->files, &it, &k, &v);)
		uwfile_free((struct uw_file *)(uintptr_t)v);
	hashmap_free(&u->procs);
	hashmap_free(&u->files);
	uwchunks_free(&u->rows_mem);
	uwchunks_free(&u->maps_mem);
	rangealloc_destroy(&u->rows);
	rangealloc_destroy(&u->mappings);
	free(u);
}

/* ---- processes ---- */

/* A process's new mapping list before it is published. */
struct plan {
	struct profd_unwind_mapping *ml;
	struct uw_file **files;
	uint32_t n;
	uint32_t pending; /* files whose tables are still to be built */
};

static uint64_t exec_maps_hash(const struct procmaps *pm)
{
	uint64_t h = 0x70726f6664ull;
	size_t i;

	for (i = 0; i < pm->n; i++) {
		const struct procmap *m = &pm->maps[i];

		if (!(m->prot & PROT_EXEC))
			continue;
		h = hash64_mix(h ^ m->start) ^ m->end;
		h = hash64_mix(h ^ m->offset) ^ m->inode;
		h = hash64_mix(h ^ ((uint64_t)m->dev_major << 32 | m->dev_minor));
	}
	return h;
}

/* ip - bias is the row pc: ip -> file offset -> ELF vaddr -> - pc_base. */
static bool mapping_bias(const struct uw_file *f, const struct procmap *m, uint64_t *bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < f->nsegs; i++) {
		const struct unwind_segment *s = &f->segs[i];

		if (m->offset < (s->offset & ~(page - 1)) || m->offset >= s->offset + s->filesz)
			continue;
		*bias = m->start - m->offset + s->offset - s->vaddr + f->pc_base;
		return true;
	}
	return false;
}

static void fill_mapping(struct profd_unwind_mapping *out, const struct uw_file *f,
			 const struct procmap *m)
{
	uint64_t bias;

	*out = (struct profd_unwind_mapping){.start = m->start, .end = m->end};
	if (!f) {
		out->flags = PROFD_UNWIND_MAP_ANON;
		return;
	}
	out->file_id = f->id;
	if (f->state == FILE_EVICTED) {
		/* Being built: no rows yet, so a walk reaching it stops there
		 * (a gap) instead of guessing by frame pointers. */
		out->flags = PROFD_UNWIND_MAP_PENDING;
		return;
	}
	if (f->state == FILE_LOADED && mapping_bias(f, m, &bias)) {
		out->bias = bias;
		uint32_t base = f->slot_start * 2;

		out->pages = base + f->loc.pages;
		out->npages = f->loc.npages;
		out->rules = base + f->loc.rules;
		out->rows = base + f->loc.rows;
	} else {
		out->flags = PROFD_UNWIND_MAP_FP | (uwfile_wanted(f) ? PROFD_UNWIND_MAP_WANTED : 0);
	}
}

static void plan_release(struct unwinder *u, struct plan *pl)
{
	uint32_t i;

	for (i = 0; i < pl->n; i++)
		uwfile_unref(u, pl->files[i]);
	free(pl->ml);
	free(pl->files);
	memset(pl, 0, sizeof(*pl));
}

/* Anonymous executable memory: JIT code ("" or "[anon:name]"), which
 * the walk crosses by frame pointers, checked.  Not [vsyscall] and the
 * like, nor a file. */
static bool anon_code(const struct procmap *m)
{
	return !m->path[0] || !strncmp(m->path, "[anon:", 6);
}

/* The largest anonymous mapping looked at for stub copies: 256 of
 * CPython's 64 KiB trampoline arenas, over a million code objects. */
#define STUB_MAX_BYTES (16u << 20)

static bool stub_at(const unsigned char *mem, size_t size, size_t at, const struct arch_stub *st)
{
	return at + st->len <= size && !memcmp(mem + at, st->code, st->len);
}

/* Is the anonymous code m nothing but copies of a stub whose frame we
 * know (CPython's perf trampolines, arch_py_trampolines())?  Then the
 * walk crosses it by that frame (PROFD_UNWIND_MAP_STUB in out).  The
 * copies lie at a fixed stride from the start of an arena whose pages
 * hold as many as fit; arenas mapped next to each other may share one
 * mapping, so the phase restarts every arena (stub_chunk).  Every copy
 * of every arena must match, read from the process's memory: the code
 * alone says where the frame is, whoever wrote it. */
static void stub_mapping(int pid, const struct procmap *m, struct profd_unwind_mapping *out)
{
	uint64_t size = m->end - m->start, page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct arch_stub *stubs, *st = NULL;
	unsigned char head[4096]; /* a page: -X perf_jit spaces its copies 272 bytes apart */
	struct iovec local, remote;
	size_t stride = 0, k, c, j, chunk;
	unsigned char *mem;
	unsigned int n, i;

	if (size < sizeof(head) || size > STUB_MAX_BYTES)
		return;
	local = (struct iovec){head, sizeof(head)};
	remote = (struct iovec){(void *)(uintptr_t)m->start, sizeof(head)};
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(head))
		return;
	stubs = arch_py_trampolines(&n);
	for (i = 0; i < n && !st; i++)
		if (stub_at(head, sizeof(head), 0, &stubs[i]))
			st = &stubs[i];
	if (!st)
		return;
	/* The stride: where the second copy starts. */
	for (j = st->len; j + st->len <= sizeof(head) && !stride; j++)
		if (stub_at(head, sizeof(head), j, st))
			stride = j;
	if (!stride || !(mem = malloc(size)))
		return;
	local = (struct iovec){mem, size};
	remote = (struct iovec){(void *)(uintptr_t)m->start, size};
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)size)
		goto out;
	for (k = 0; stub_at(mem, size, k * stride, st); k++)
		;
	chunk = (k * stride + page - 1) / page * page;
	if (!chunk || chunk > size || size % chunk || chunk > UINT32_MAX || stride > UINT16_MAX)
		goto out;
	for (c = chunk; c < size; c += chunk)
		for (j = 0; j < k; j++)
			if (!stub_at(mem, size, c + j * stride, st))
				goto out;
	out->flags |= PROFD_UNWIND_MAP_STUB;
	out->stub_chunk = (uint32_t)chunk;
	out->stub_stride = (uint16_t)stride;
	out->stub_lo = st->frame_lo;
	out->stub_hi = st->frame_hi;
	out->stub_cfa = st->cfa;
	out->stub_fp_off = st->fp_off;
out:
	free(mem);
}

/* Files and mapping entries for every executable mapping, sorted by
 * start as procmaps keeps them; anonymous code gets an entry without a
 * file (files[k] NULL).  No table is built here: files still to be built
 * are counted in pl->pending and published as gaps (sync_process builds
 * them next).  Every file is referenced, so making room for one table
 * never evicts another this process maps. */
static int plan_build(struct unwinder *u, int pid, const struct procmaps *pm, struct plan *pl)
{
	uint64_t now = clock_mono_ns();
	size_t i;

	memset(pl, 0, sizeof(*pl));
	pl->ml = calloc(pm->n ? pm->n : 1, sizeof(*pl->ml));
	pl->files = calloc(pm->n ? pm->n : 1, sizeof(*pl->files));
	if (!pl->ml || !pl->files) {
		plan_release(u, pl);
		return -ENOMEM;
	}
	for (i = 0; i < pm->n; i++) {
		const struct procmap *m = &pm->maps[i];
		struct uw_file *f;

		if (!(m->prot & PROT_EXEC))
			continue;
		if (pl->n == PROFD_UNWIND_MAX_PROC_MAPPINGS) {
			u->st.mappings_dropped++;
			continue;
		}
		f = anon_code(m) ? NULL : uwfile_get(u, pid, m);
		if (!f && !anon_code(m))
			continue;
		if (f) {
			f->refs++;
			f->sampled_ns = now; /* its process is sampled: keep its tables */
			pl->pending += uwfile_needs_build(u, f);
		}
		fill_mapping(&pl->ml[pl->n], f, m);
		if (!f)
			stub_mapping(pid, m, &pl->ml[pl->n]);
		pl->files[pl->n++] = f;
	}
	return 0;
}

/* Write the list into the mappings map, then point the process at it. */
static int plan_publish(struct unwinder *u, int pid, const struct plan *pl, uint64_t start_stack,
			uint32_t *start)
{
	struct profd_unwind_proc v;
	int err;

	*start = 0;
	if (pl->n && rangealloc_alloc_wait(&u->mappings, pl->n, start, clock_mono_ns))
		return -ENOSPC;
	err = uwchunks_write(&u->maps_mem, *start, pl->ml, pl->n * sizeof(*pl->ml));
	if (err) {
		rangealloc_free(&u->mappings, *start, pl->n);
		return err;
	}
	/* Rows and mappings must be visible before the entry that leads a
	 * walk to them. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	v = (struct profd_unwind_proc){*start, pl->n, start_stack, 0};
	if (bpf_map_update_elem(bpf_map__fd(u->maps.procs), &pid, &v, BPF_ANY)) {
		err = -errno;
		rangealloc_free(&u->mappings, *start, pl->n);
		return err;
	}
	return 0;
}

static struct uw_proc *proc_find(struct unwinder *u, int pid)
{
	uint64_t v;

	return hashmap_get(&u->procs, (uint64_t)pid, &v) ? (struct uw_proc *)(uintptr_t)v : NULL;
}

/* Let go of what p's previous list held: its slice after the grace
 * period, its file references now. */
static void proc_retire(struct unwinder *u, struct uw_proc *p)
{
	struct plan old = {NULL, p->files, p->map_count, 0};

	rangealloc_free_later(&u->mappings, p->map_start, p->map_count,
			      clock_mono_ns() + UNWINDER_GRACE_NS);
	plan_release(u, &old);
	p->files = NULL;
	p->map_count = 0;
}

static int proc_install(struct unwinder *u, int pid, struct plan *pl, uint64_t hash,
			uint64_t start_stack)
{
	struct uw_proc *p = proc_find(u, pid);
	bool fresh = !p;
	uint32_t start;
	int err;

	if (fresh) {
		p = calloc(1, sizeof(*p));
		if (!p || hashmap_put(&u->procs, (uint64_t)pid, (uint64_t)(uintptr_t)p)) {
			free(p);
			return -ENOMEM;
		}
		p->pid = pid;
	}
	err = plan_publish(u, pid, pl, start_stack, &start);
	if (err) {
		if (fresh) {
			hashmap_del(&u->procs, (uint64_t)pid);
			free(p);
		}
		return err;
	}
	if (!fresh)
		proc_retire(u, p);
	p->map_start = start;
	p->map_count = pl->n;
	p->files = pl->files;
	p->maps_hash = hash;
	p->start_stack = start_stack;
	free(pl->ml);
	return 0;
}

/* mm->start_stack: field 28 of /proc/PID/stat, counted after the
 * parenthesised command name (which may hold spaces and parentheses). */
static int read_start_stack(const char *proc_root, int pid, uint64_t *out)
{
	char path[PATH_MAX], *text = NULL, *p;
	size_t len;
	int i, err;

	snprintf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
	err = rootfs_read_file(NULL, path, 4096, &text, &len);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	p = strrchr(text, ')');
	for (i = 2; p && i < 28; i++) /* p sits before field i + 1 */
		p = strchr(p + 1, ' ');
	*out = p ? strtoull(p + 1, NULL, 10) : 0;
	free(text);
	/* 0: a kernel thread, a zombie, or no ptrace access to the process */
	return *out ? 0 : -EPERM;
}

/* Whether a table this process walks by frame pointers for want of
 * room could be had now: loaded since for another process, or room made. */
static bool proc_wants_table(struct unwinder *u, const struct uw_proc *p)
{
	uint32_t i;

	for (i = 0; i < p->map_count; i++) {
		const struct uw_file *f = p->files[i];

		if (!(uwproc_mapping(u, p, i)->flags & PROFD_UNWIND_MAP_WANTED))
			continue;
		if (f && (f->state == FILE_LOADED || uwfile_has_room(u, f->nslots)))
			return true;
	}
	return false;
}

/* ---- least recently sampled ---- */

uint32_t unwinder_tables_pending(const struct unwinder *u)
{
	return __atomic_load_n(&u->tables_pending, __ATOMIC_RELAXED);
}

void unwinder_set_yield(struct unwinder *u, bool (*fn)(void *ctx), void *ctx)
{
	u->yield = fn;
	u->yield_ctx = ctx;
}

uint64_t unwinder_note_every_ns(const struct unwinder *u)
{
	return u->idle_ns / 4;
}

void unwinder_note_sampling(struct unwinder *u)
{
	int fd = bpf_map__fd(u->maps.procs);
	uint64_t k, v, epoch, now = clock_mono_ns();
	size_t it;

	/* As often as the tick: memory goes back within seconds. */
	uwfile_expire_unused(u, now);
	uwchunks_trim(&u->rows_mem, &u->rows);
	uwchunks_trim(&u->maps_mem, &u->mappings);
	if (!u->maps.epoch ||
	    (u->sampled_read_ns && now - u->sampled_read_ns < unwinder_note_every_ns(u)))
		return;
	u->sampled_read_ns = now;
	epoch = __atomic_load_n(u->maps.epoch, __ATOMIC_ACQUIRE);
	for (it = 0; hashmap_next(&u->procs, &it, &k, &v);) {
		struct uw_proc *p = (struct uw_proc *)(uintptr_t)v;
		struct profd_unwind_proc bp;
		uint32_t i;

		/* Walked since the epoch began, i.e. since the last read. */
		if (bpf_map_lookup_elem(fd, &p->pid, &bp) || bp.sampled_epoch != epoch)
			continue;
		for (i = 0; i < p->map_count; i++)
			if (p->files[i])
				p->files[i]->sampled_ns = now;
	}
	__atomic_store_n(u->maps.epoch, epoch + 1, __ATOMIC_RELEASE);
}

void uwproc_unpublish_file(struct unwinder *u, const struct uw_file *f)
{
	uint64_t k, v;
	size_t it;

	for (it = 0; hashmap_next(&u->procs, &it, &k, &v);) {
		const struct uw_proc *p = (const struct uw_proc *)(uintptr_t)v;
		uint32_t i;

		for (i = 0; i < p->map_count; i++) {
			if (p->files[i] != f)
				continue;
			/* One store: a walk sees the table (its rows stay for
			 * the grace period) or frame pointers. */
			__atomic_store_n(&uwproc_mapping(u, p, i)->flags,
					 PROFD_UNWIND_MAP_FP | PROFD_UNWIND_MAP_WANTED, __ATOMIC_RELEASE);
		}
	}
}

/* Plan pid's list from pm and publish it. */
static int publish_process(struct unwinder *u, int pid, const struct procmaps *pm, uint64_t hash,
			   uint64_t start_stack, uint32_t *pending)
{
	struct plan pl;
	int err = plan_build(u, pid, pm, &pl);

	if (err)
		return err;
	*pending = pl.pending;
	err = proc_install(u, pid, &pl, hash, start_stack);
	if (err) {
		log_warn("unwinder: pid %d: cannot publish %u mappings: %s", pid, pl.n,
			 strerror(-err));
		plan_release(u, &pl);
	}
	return err;
}

/* Set pid's share of tables_pending to n (its files not built yet). */
static void proc_set_pending(struct unwinder *u, int pid, uint32_t n)
{
	struct uw_proc *p = proc_find(u, pid);

	if (!p)
		return;
	if (n >= p->pending)
		__atomic_add_fetch(&u->tables_pending, n - p->pending, __ATOMIC_RELAXED);
	else
		__atomic_sub_fetch(&u->tables_pending, p->pending - n, __ATOMIC_RELAXED);
	p->pending = n;
}

static int read_proc(struct unwinder *u, int pid, struct procmaps *pm, uint64_t *hash,
		     uint64_t *start_stack)
{
	int err = read_start_stack(u->proc_root, pid, start_stack);

	if (!err)
		err = procmaps_read_at(u->proc_root, pid, pm);
	if (err)
		return err;
	*hash = exec_maps_hash(pm);
	return 0;
}

/* publish_process(), and pid's pending count from what it published. */
static int publish_counted(struct unwinder *u, int pid, const struct procmaps *pm,
			   uint64_t hash, uint64_t start_stack, uint32_t *pending)
{
	int err = publish_process(u, pid, pm, hash, start_stack, pending);

	proc_set_pending(u, pid, err ? 0 : *pending);
	return err;
}

/* pid's list again from its maps, building nothing. */
static void republish(struct unwinder *u, int pid)
{
	uint64_t hash, start_stack;
	struct procmaps pm;

	if (read_proc(u, pid, &pm, &hash, &start_stack))
		return;
	publish_counted(u, pid, &pm, hash, start_stack, &(uint32_t){ 0 });
	procmaps_free(&pm);
}

/* Other processes whose lists still mark pending a file built since
 * (by another's turn: a process that yielded waits for its next one)
 * get their lists again, so a shared file is never a gap for longer
 * than UNWINDER_REPUBLISH_NS after it is built. */
static void republish_waiting(struct unwinder *u, int self)
{
	int pids[64];
	uint64_t k, v;
	size_t it, n = 0, i;

	for (it = 0; n < 64 && hashmap_next(&u->procs, &it, &k, &v);) {
		const struct uw_proc *p = (const struct uw_proc *)(uintptr_t)v;
		uint32_t j;

		if (p->pid == self || !p->pending)
			continue;
		for (j = 0; j < p->map_count; j++) {
			if (p->files[j] && p->files[j]->state == FILE_LOADED &&
			    (uwproc_mapping(u, p, j)->flags & PROFD_UNWIND_MAP_PENDING)) {
				pids[n++] = p->pid;
				break;
			}
		}
	}
	for (i = 0; i < n; i++)
		republish(u, pids[i]);
}

/* Build the tables pid's list still lacks, one file at a time,
 * publishing the list again every UNWINDER_REPUBLISH_NS of building and
 * at the end: a process mapping PyTorch (300 files, seconds of building)
 * gets each table as it comes instead of all of them at the end.  After
 * UNWINDER_YIELD_NS, -EAGAIN when u->yield says others wait: they get
 * their turn, this process its next one (its files stay pending). */
static int build_pending(struct unwinder *u, int pid, const struct procmaps *pm, uint64_t hash,
			 uint64_t start_stack, uint32_t pending)
{
	uint64_t start = clock_mono_ns(), last = start;
	bool fresh = false, loaded = false;
	int err = 0;
	size_t i;

	for (i = 0; i < pm->n && pending; i++) {
		const struct procmap *m = &pm->maps[i];
		struct uw_file *f;

		if (!(m->prot & PROT_EXEC) || anon_code(m) || !(f = uwfile_get(u, pid, m)) ||
		    !uwfile_needs_build(u, f))
			continue;
		f->refs++; /* held while it is built */
		uwfile_load(u, f, pid, m);
		loaded |= f->state == FILE_LOADED;
		uwfile_unref(u, f);
		proc_set_pending(u, pid, --pending);
		fresh = true;
		/* Only a turn that loaded something yields: one that met only
		 * tables that do not fit would build them again every turn. */
		if (clock_mono_ns() - start >= UNWINDER_YIELD_NS && pending && loaded && u->yield &&
		    u->yield(u->yield_ctx)) {
			err = -EAGAIN;
			break;
		}
		if (clock_mono_ns() - last >= UNWINDER_REPUBLISH_NS) {
			publish_process(u, pid, pm, hash, start_stack, &(uint32_t){0});
			republish_waiting(u, pid);
			last = clock_mono_ns();
			fresh = false;
		}
	}
	if (!err)
		proc_set_pending(u, pid, 0); /* the rest could not be built: not pending */
	if (fresh) {
		publish_process(u, pid, pm, hash, start_stack, &(uint32_t){0});
		republish_waiting(u, pid);
	}
	return err;
}

static int sync_process(struct unwinder *u, int pid)
{
	struct uw_proc *p = proc_find(u, pid);
	uint64_t hash, start_stack;
	struct procmaps pm;
	uint32_t pending = 0;
	int err;

	err = read_proc(u, pid, &pm, &hash, &start_stack);
	if (err) {
		proc_set_pending(u, pid, 0); /* gone: what a yield left goes too */
		return err;
	}
	/* Unchanged, nothing left to build (a yield left some), nothing
	 * that gave way to come back. */
	if (p && p->maps_hash == hash && p->start_stack == start_stack && !p->pending &&
	    !proc_wants_table(u, p)) {
		procmaps_free(&pm);
		return 0;
	}
	/* What is built now, at once; the rest as it is built. */
	err = publish_counted(u, pid, &pm, hash, start_stack, &pending);
	if (!err && pending)
		err = build_pending(u, pid, &pm, hash, start_stack, pending);
	procmaps_free(&pm);
	return err;
}

int unwinder_add_process(struct unwinder *u, int pid)
{
	return sync_process(u, pid);
}

int unwinder_refresh_process(struct unwinder *u, int pid)
{
	return sync_process(u, pid);
}

int unwinder_remove_process(struct unwinder *u, int pid)
{
	struct uw_proc *p = proc_find(u, pid);

	if (!p)
		return -ENOENT;
	bpf_map_delete_elem(bpf_map__fd(u->maps.procs), &pid);
	proc_set_pending(u, pid, 0);
	proc_retire(u, p);
	hashmap_del(&u->procs, (uint64_t)pid);
	proc_free(p);
	return 0;
}

/* ---- reporting ---- */

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out)
{
	uint64_t k, v;
	size_t it;

	*out = u->st;
	out->procs = (uint32_t)u->procs.len;
	out->mappings_used = u->mappings.used;
	out->chunks_made = u->rows_mem.made + u->maps_mem.made;
	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		const struct uw_file *f = (const struct uw_file *)(uintptr_t)v;

		out->files++;
		out->files_loaded += f->state == FILE_LOADED;
		out->files_no_cfi += f->state == FILE_NO_CFI;
		out->files_failed += f->state == FILE_FAILED;
		if (f->state == FILE_LOADED) {
			out->rows_loaded += f->nrows;
			out->table_bytes_used += (uint64_t)f->nslots * sizeof(struct profd_unwind_words);
		}
	}
}

void unwinder_for_each_file(const struct unwinder *u, unwinder_file_fn fn, void *ctx)
{
	uint64_t k, v;
	size_t it;

	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		const struct uw_file *f = (const struct uw_file *)(uintptr_t)v;
		struct unwinder_file_info fi = {
		    .path = f->path,
		    .id = f->id,
		    .refs = f->refs,
		    .rows = f->state == FILE_LOADED ? f->nrows : 0,
		    .build_ns = f->build_ns,
		    .state = uwfile_state_name(f->state),
		};

		fi.bytes = fi.rows ? (uint64_t)f->nslots * sizeof(struct profd_unwind_words) : 0;
		fi.first_byte = fi.rows ? (uint64_t)f->slot_start * sizeof(struct profd_unwind_words) : 0;
		fn(ctx, &fi);
	}
}

int unwinder_counters(const struct unwinder *u, uint64_t out[PROFD_UNWIND_CNT_MAX])
{
	memset(out, 0, sizeof(uint64_t) * PROFD_UNWIND_CNT_MAX);
	if (!u->maps.counters)
		return -ENOENT;
	return bpfcount_sum_value(bpf_map__fd(u->maps.counters), PROFD_UNWIND_CNT_MAX, out);
}

uint64_t unwinder_rule_cache_hits(const struct unwinder *u)
{
	int ncpus = libbpf_num_possible_cpus(), i;
	struct profd_unwind_rule_cache *v;
	uint32_t zero = 0;
	uint64_t sum = 0;

	if (!u->maps.rule_cache || ncpus <= 0 || !(v = calloc((size_t)ncpus, sizeof(*v))))
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(u->maps.rule_cache), &zero, v) == 0)
		for (i = 0; i < ncpus; i++)
			sum += v[i].hits;
	free(v);
	return sum;
}

const char *unwinder_counter_name(int which)
{
	static const char *const names[PROFD_UNWIND_CNT_MAX] = {
	    [PROFD_UNWIND_CNT_CALLS] = "unwind_calls",
	    [PROFD_UNWIND_CNT_NO_PROC] = "unwind_no_proc",
	    [PROFD_UNWIND_CNT_COMPLETE] = "unwind_complete",
	    [PROFD_UNWIND_CNT_FRAMES] = "unwind_frames",
	    [PROFD_UNWIND_CNT_FP_USED] = "unwind_fp_used",
	    [PROFD_UNWIND_CNT_DEPTH] = "unwind_trunc_depth",
	    [PROFD_UNWIND_CNT_UNKNOWN] = "unwind_trunc_unknown",
	    [PROFD_UNWIND_CNT_GAP] = "unwind_trunc_gap",
	    [PROFD_UNWIND_CNT_STOP] = "unwind_trunc_stop",
	    [PROFD_UNWIND_CNT_READ] = "unwind_trunc_read",
	    [PROFD_UNWIND_CNT_BAD] = "unwind_trunc_bad",
	    [PROFD_UNWIND_CNT_STALE] = "unwind_stale",
	    [PROFD_UNWIND_CNT_ANON] = "unwind_walks_through_anon_code",
	};

	return which >= 0 && which < PROFD_UNWIND_CNT_MAX && names[which] ? names[which] : "?";
}
