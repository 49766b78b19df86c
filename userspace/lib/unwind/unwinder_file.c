/* unwinder_file: the per-file half of the unwinder: file identity, table
 * building, the shared row space and its eviction. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "rootfs.h"
#include "unwinder_int.h"

void uwfile_free(struct uw_file *f)
{
	if (f) {
		free(f->path);
		free(f);
	}
}

const char *uwfile_state_name(enum file_state s)
{
	static const char *const names[] = {"loaded",  "no-cfi",  "failed",
					    "refused", "evicted", "gave-way"};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---- files: identity, building, the row space ---- */

static uint64_t key_hash(const struct file_key *k)
{
	return hash64_bytes(k, sizeof(*k), 0x756e77696e64ull);
}

static struct uw_file *file_find(struct unwinder *u, const struct file_key *k)
{
	uint64_t v;
	struct uw_file *f;

	if (!hashmap_get(&u->files, key_hash(k), &v))
		return NULL;
	f = (struct uw_file *)(uintptr_t)v;
	return memcmp(&f->key, k, sizeof(*k)) ? NULL : f;
}

static void file_forget(struct unwinder *u, struct uw_file *f)
{
	hashmap_del(&u->files, key_hash(&f->key));
	uwfile_free(f);
}

/* Drop the rows of a table no process maps, and the file with them. */
static void drop_unused(struct unwinder *u, struct uw_file *victim)
{
	log_debug("unwinder: dropping the table of %s (%u rows)", victim->path, victim->nrows);
	/* A walk that started before the last process let go of the file
	 * may still read its rows. */
	if (victim->unref_ns + UNWINDER_GRACE_NS <= clock_mono_ns())
		rangealloc_free(&u->rows, victim->slot_start, victim->nslots);
	else
		rangealloc_free_later(&u->rows, victim->slot_start, victim->nslots,
				      victim->unref_ns + UNWINDER_GRACE_NS);
	file_forget(u, victim);
}

/* Drop the rows of the least recently used table no process maps.
 * false when there is none. */
static bool evict_one(struct unwinder *u)
{
	struct uw_file *victim = NULL;
	uint64_t k, v;
	size_t it;

	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		struct uw_file *f = (struct uw_file *)(uintptr_t)v;

		if (f->state == FILE_LOADED && !f->refs &&
		    (!victim || f->last_used < victim->last_used))
			victim = f;
	}
	if (!victim)
		return false;
	u->st.evictions++;
	drop_unused(u, victim);
	return true;
}

void uwfile_expire_unused(struct unwinder *u, uint64_t now)
{
	uint64_t k, v;
	size_t it;

	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		struct uw_file *f = (struct uw_file *)(uintptr_t)v;

		if (f->state == FILE_LOADED && !f->refs && f->unref_ns + u->keep_unused_ns <= now) {
			u->st.expired++;
			drop_unused(u, f); /* a deletion leaves the iteration valid */
		}
	}
}

static uint64_t evictable_rows(const struct unwinder *u)
{
	uint64_t k, v, sum = 0;
	size_t it;

	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		const struct uw_file *f = (const struct uw_file *)(uintptr_t)v;

		if (f->state == FILE_LOADED && !f->refs)
			sum += f->nslots;
	}
	return sum;
}

/* Values of unwind_rows free once every unused table is evicted. */
static uint64_t rows_available(struct unwinder *u)
{
	uint64_t held = 0;
	size_t i;

	rangealloc_reap(&u->rows, clock_mono_ns());
	for (i = 0; i < u->rows.nheld; i++)
		held += u->rows.held[i].len; /* free within the grace period */
	return (uint64_t)u->rows.size - u->rows.used + held + evictable_rows(u);
}

static bool rows_could_fit(struct unwinder *u, uint32_t n)
{
	return rows_available(u) >= n;
}

/* A loaded table that may give way: mapped, but by no process sampled
 * within idle_ns (a table being built for a process counts as sampled). */
static bool file_idle(const struct unwinder *u, const struct uw_file *f, uint64_t now)
{
	return f->state == FILE_LOADED && f->refs && f->sampled_ns + u->idle_ns <= now;
}

static uint64_t idle_rows(struct unwinder *u, uint64_t now)
{
	uint64_t k, v, sum = 0;
	size_t it;

	unwinder_note_sampling(u);
	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		const struct uw_file *f = (const struct uw_file *)(uintptr_t)v;

		if (file_idle(u, f, now))
			sum += f->nslots;
	}
	return sum;
}

bool uwfile_has_room(struct unwinder *u, uint32_t n)
{
	uint64_t avail = rows_available(u);

	return avail >= n || avail + idle_rows(u, clock_mono_ns()) >= n;
}

bool uwfile_wanted(const struct uw_file *f)
{
	return f && (f->state == FILE_REFUSED || f->state == FILE_GAVE_WAY);
}

/* The least recently sampled idle table gives way: its processes walk
 * that file by frame pointers (and ask for it back when sampled).
 * false when none is idle. */
static bool give_way_one(struct unwinder *u, uint64_t now)
{
	struct uw_file *victim = NULL;
	uint64_t k, v;
	size_t it;

	for (it = 0; hashmap_next(&u->files, &it, &k, &v);) {
		struct uw_file *f = (struct uw_file *)(uintptr_t)v;

		if (file_idle(u, f, now) && (!victim || f->sampled_ns < victim->sampled_ns))
			victim = f;
	}
	if (!victim)
		return false;
	log_info("unwinder: table of %s (%u rows, not sampled for %llu s) gives way", victim->path,
		 victim->nrows, (unsigned long long)((now - victim->sampled_ns) / 1000000000ull));
	uwproc_unpublish_file(u, victim);
	rangealloc_free_later(&u->rows, victim->slot_start, victim->nslots, now + UNWINDER_GRACE_NS);
	victim->state = FILE_GAVE_WAY;
	u->st.given_way++;
	return true;
}

/* Room for n values: evict unused tables, then idle ones give way, until
 * it fits.  0 or -ENOSPC; a table that cannot fit even then takes
 * nothing from anyone. */
static int rows_reserve(struct unwinder *u, uint32_t n, uint32_t *start)
{
	uint64_t now = clock_mono_ns();

	if (!uwfile_has_room(u, n))
		return -ENOSPC;
	while (!rows_could_fit(u, n))
		if (!give_way_one(u, now))
			return -ENOSPC;
	while (rangealloc_alloc_wait(&u->rows, n, start, clock_mono_ns)) {
		if (!evict_one(u))
			return -ENOSPC;
	}
	return 0;
}

/* /proc/PID/map_files/START-END: the mapped file itself, for root. */
static bool map_files_path(const struct unwinder *u, int pid, const struct procmap *m, char *buf,
			   size_t size)
{
	int n = snprintf(buf, size, "%s/%d/map_files/%llx-%llx", u->proc_root, pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);

	return n > 0 && (size_t)n < size;
}

/* Our own vdso: the same image every 64-bit process of this kernel maps. */
static int build_vdso(struct unwind_table *t)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct procmaps self;
	size_t i, len = 0;
	int err;

	if (!image)
		return -ENOENT;
	err = procmaps_read(getpid(), &self);
	if (err)
		return err;
	for (i = 0; i < self.n; i++)
		if (self.maps[i].start == (uint64_t)(uintptr_t)image)
			len = (size_t)(self.maps[i].end - self.maps[i].start);
	procmaps_free(&self);
	return len ? unwind_table_build_mem(image, len, NULL, t) : -ENOENT;
}

static int build_table(struct unwinder *u, struct uw_file *f, int pid, const struct procmap *m,
		       struct unwind_table *t)
{
	int fd, err;

	if (f->key.dev == UINT64_MAX)
		return build_vdso(t);
	fd = procfile_open_mapped(u->proc_root, pid, m);
	if (fd < 0)
		return fd;
	err = unwind_table_build_fd(fd, NULL, t);
	close(fd);
	return err;
}

static void note_build(struct unwinder *u, struct uw_file *f, const struct unwind_table *t,
		       const struct unwind_packed *p)
{
	f->nrows = (uint32_t)t->nrows;
	f->nslots = (p->nwords + 1) / 2;
	f->loc = (struct unwind_packed_loc){0, p->npages, p->rules, p->rows};
	f->pc_base = t->pc_base;
	f->nsegs = t->nsegs;
	memcpy(f->segs, t->segs, sizeof(f->segs));
	f->build_ns = t->stats.build_ns;
	u->st.tables_built++;
	u->st.build_ns_total += t->stats.build_ns;
	if (t->stats.build_ns > u->st.build_ns_max)
		u->st.build_ns_max = t->stats.build_ns;
	log_debug("unwinder: %s: %zu rows, %u rules, %u pages (%u FDEs, %u skipped, %u stop) in "
		  "%.1f ms",
		  f->path, t->nrows, p->nrules, p->npages, t->stats.fdes, t->stats.fdes_skipped,
		  t->stats.rows_stop, (double)t->stats.build_ns / 1e6);
}

/* Build f's table and put its rows into the BPF map, or settle on
 * frame pointers for it. */
void uwfile_load(struct unwinder *u, struct uw_file *f, int pid, const struct procmap *m)
{
	struct unwind_packed p = {0};
	struct unwind_table t;
	uint32_t start;
	int err;

	err = build_table(u, f, pid, m, &t);
	if (!err && t.nrows) {
		err = unwind_pack(&t, &p);
		if (err)
			unwind_table_free(&t);
	}
	if (err == -ENOENT && f->key.dev != UINT64_MAX) {
		/* The file could not be opened through pid: it exited (or
		 * execed) after its maps were read.  Not the file's fault:
		 * leave it unbuilt for the next process that maps it, or one
		 * short-lived process would cost libc its table for good. */
		log_debug("unwinder: %s: not opened through pid %d, left for later", f->path, pid);
		return;
	}
	if (err) {
		log_debug("unwinder: %s: no table: %s", f->path, strerror(-err));
		f->state = FILE_FAILED;
		return;
	}
	note_build(u, f, &t, &p);
	if (!t.nrows) {
		f->state = FILE_NO_CFI;
	} else if (rows_reserve(u, f->nslots, &start)) {
		if (f->state != FILE_REFUSED)
			log_info("unwinder: no room for the %u rows of %s (%u bytes packed, limit %llu "
				 "bytes)",
				 f->nrows, f->path, f->nslots * 8, (unsigned long long)u->st.table_bytes_limit);
		f->state = FILE_REFUSED;
		u->st.refusals++;
	} else if (uwchunks_write(&u->rows_mem, start, p.words, (size_t)p.nwords * sizeof(uint32_t))) {
		rangealloc_free(&u->rows, start, f->nslots); /* never published */
		f->state = FILE_REFUSED;
		u->st.refusals++;
	} else {
		f->slot_start = start;
		f->state = FILE_LOADED;
	}
	unwind_packed_free(&p);
	unwind_table_free(&t);
}

static int mapping_key(struct unwinder *u, int pid, const struct procmap *m, struct file_key *k)
{
	char p[PATH_MAX];
	struct stat st;

	memset(k, 0, sizeof(*k));
	if (!strcmp(m->path, "[vdso]")) {
		k->dev = UINT64_MAX;
		return 0;
	}
	if (!m->path[0] || m->path[0] == '[')
		return -ENOENT; /* anonymous code: JIT, [vsyscall] */
	if (map_files_path(u, pid, m, p, sizeof(p)) && stat(p, &st) == 0) {
		*k = (struct file_key){st.st_dev, st.st_ino, (uint64_t)st.st_size,
				       (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
					   (uint64_t)st.st_mtim.tv_nsec};
		return 0;
	}
	k->dev = makedev(m->dev_major, m->dev_minor);
	k->ino = m->inode;
	return 0;
}

/* The file of an executable mapping, with its table loaded if it can be;
 * NULL for anonymous code or no memory. */
struct uw_file *uwfile_get(struct unwinder *u, int pid, const struct procmap *m)
{
	struct file_key k;
	struct uw_file *f;

	if (mapping_key(u, pid, m, &k))
		return NULL;
	f = file_find(u, &k);
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->path = strdup(m->path)) ||
		    hashmap_put(&u->files, key_hash(&k), (uint64_t)(uintptr_t)f)) {
			uwfile_free(f);
			return NULL;
		}
		f->key = k;
		f->id = ++u->next_file_id;
		f->state = FILE_EVICTED; /* i.e. not built yet */
	}
	f->last_used = ++u->clock;
	return f;
}

/* Not built yet, or wanted where there is room now: a table already
 * known not to fit is not rebuilt in vain. */
bool uwfile_needs_build(struct unwinder *u, const struct uw_file *f)
{
	return f->state == FILE_EVICTED || (uwfile_wanted(f) && uwfile_has_room(u, f->nslots));
}

void uwfile_unref(struct unwinder *u, struct uw_file *f)
{
	if (!f || --f->refs)
		return;
	f->unref_ns = clock_mono_ns();
	/* Keep a loaded table for the next process mapping the file; the
	 * others hold nothing worth keeping. */
	if (f->state != FILE_LOADED)
		file_forget(u, f);
}
