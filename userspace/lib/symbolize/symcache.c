#include "symcache.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hashmap.h"
#include "log.h"
#include "rootfs.h"

/* A file asked of the loader is asked again after this long without an
 * answer (lost to a full queue). */
#define SYMCACHE_LOAD_WAIT_NS (30ull * 1000000000ull)

struct entry {
	uint32_t major, minor;
	uint64_t inode;
	struct elfsym *es;     /* NULL: a cached failure */
	int err;               /* its errno */
	uint64_t retry_ns;     /* failure: when to try again (0: never) */
	bool loading;          /* asked of the loader, no answer yet */
	uint64_t seq;          /* which load of this identity es came from (symcache_seq) */
	struct entry *hnext;   /* hash bucket chain */
	struct entry *prev, *next; /* LRU list, most recent first */
};

struct symcache {
	struct entry **buckets;
	size_t nbuckets; /* power of two */
	size_t n, max;
	struct entry lru; /* sentinel */
	struct symcache_stats st;
	struct symcache_io io;
	struct symcache_loader loader;
	size_t loading;
	uint64_t seq; /* loads so far: the last one's number */
};

struct symcache *symcache_new(size_t max_files)
{
	struct symcache *c;
	size_t nb = 16;

	if (!max_files || max_files > SIZE_MAX / 4) {
		errno = EINVAL;
		return NULL;
	}
	while (nb < max_files * 2)
		nb *= 2;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buckets = calloc(nb, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->nbuckets = nb;
	c->max = max_files;
	c->lru.next = c->lru.prev = &c->lru;
	return c;
}

static size_t bucket_of(const struct symcache *c, uint32_t major, uint32_t minor, uint64_t inode)
{
	uint64_t h = hash64_mix(((uint64_t)major << 32 | minor) ^ hash64_mix(inode));

	return (size_t)h & (c->nbuckets - 1);
}

static void lru_unlink(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_push_front(struct symcache *c, struct entry *e)
{
	e->next = c->lru.next;
	e->prev = &c->lru;
	c->lru.next->prev = e;
	c->lru.next = e;
}

static struct entry *find(const struct symcache *c, const struct procmap *m)
{
	struct entry *e = c->buckets[bucket_of(c, m->dev_major, m->dev_minor, m->inode)];

	for (; e; e = e->hnext)
		if (e->inode == m->inode && e->major == m->dev_major && e->minor == m->dev_minor)
			return e;
	return NULL;
}

static void account(struct symcache *c, const struct entry *e, int sign)
{
	if (e->es)
		c->st.files += (uint64_t)sign;
	else
		c->st.failed += (uint64_t)sign;
}

static void remove_entry(struct symcache *c, struct entry *e)
{
	struct entry **pp = &c->buckets[bucket_of(c, e->major, e->minor, e->inode)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(e);
	if (e->loading) /* not counted while it loads */
		c->loading--;
	else
		account(c, e, -1);
	elfsym_free(e->es);
	free(e);
	c->n--;
}

void symcache_free(struct symcache *c)
{
	if (!c)
		return;
	while (c->lru.next != &c->lru)
		remove_entry(c, c->lru.next);
	free(c->buckets);
	free(c);
}

static struct entry *insert(struct symcache *c, const struct procmap *m)
{
	struct entry *e = calloc(1, sizeof(*e));
	size_t b;

	if (!e)
		return NULL;
	if (c->n >= c->max) {
		remove_entry(c, c->lru.prev);
		c->st.evictions++;
	}
	e->major = m->dev_major;
	e->minor = m->dev_minor;
	e->inode = m->inode;
	b = bucket_of(c, e->major, e->minor, e->inode);
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push_front(c, e);
	c->n++;
	return e;
}

static bool process_gone(const char *root)
{
	struct stat st;

	return stat(root, &st) != 0;
}

void symcache_load(const char *proc_root, int pid, const struct procmap *m,
		   struct symcache_loaded *out)
{
	symcache_load_debug(proc_root, pid, m, -1, out);
}

void symcache_load_debug(const char *proc_root, int pid, const struct procmap *m, int debug_fd,
			 struct symcache_loaded *out)
{
	char root[PATH_MAX];
	/* The path may now name another file (replaced, or a container's
	 * view differs): procfile_open_mapped checks it is the mapped one. */
	int fd = procfile_open_mapped(proc_root, pid, m);

	memset(out, 0, sizeof(*out));
	snprintf(root, sizeof(root), "%s/%d/root", proc_root, pid);
	if (fd < 0) {
		out->gone = process_gone(root);
		out->err = -fd;
		out->retry = true;
		log_debug("symbolize: cannot open %s of pid %d: %s", m->path, pid, strerror(-fd));
		return;
	}
	out->opened = true;
	out->es = elfsym_open_fd_debug(fd, m->path, root, debug_fd);
	out->err = out->es ? 0 : errno;
	close(fd);
	if (!out->es) {
		out->retry = out->err == ENOMEM;
		log_debug("symbolize: cannot read symbols of %s: %s", m->path, strerror(out->err));
	}
}

/* A load's result into e.  -ESRCH: the process is gone (e is dropped by
 * the caller). */
static int take(struct symcache *c, struct entry *e, struct symcache_loaded *r)
{
	c->st.loads++;
	if (!r->opened)
		c->st.open_failures++;
	else if (!r->es)
		c->st.parse_failures++;
	if (r->gone)
		return -ESRCH;
	e->es = r->es;
	e->seq = ++c->seq;
	e->err = r->err;
	e->retry_ns = r->retry ? clock_mono_ns() + SYMCACHE_RETRY_NS : 0;
	r->es = NULL;
	return e->es ? 0 : -e->err;
}

void symcache_set_loader(struct symcache *c, const struct symcache_loader *l)
{
	c->loader = *l;
}

size_t symcache_loading(const struct symcache *c)
{
	return c->loading;
}

void symcache_put(struct symcache *c, const struct procmap *m, struct symcache_loaded *r)
{
	struct entry *e = find(c, m);
	int err;

	if (!e || !e->loading || !r) { /* evicted meanwhile: the next lookup asks again */
		if (r)
			elfsym_free(r->es);
		return;
	}
	e->loading = false;
	c->loading--;
	err = take(c, e, r);
	account(c, e, 1);
	if (err == -ESRCH)
		remove_entry(c, e);
}

void symcache_upgrade(struct symcache *c, const struct procmap *m, struct symcache_loaded *r)
{
	struct entry *e = find(c, m);

	/* Evicted, or being loaded again: the next load asks anew. */
	if (!e || e->loading || !r->es || !e->es) {
		elfsym_free(r->es);
		r->es = NULL;
		return;
	}
	elfsym_free(e->es);
	e->es = r->es;
	e->seq = ++c->seq; /* names from the stripped load are made again */
	r->es = NULL;
}

const struct elfsym *symcache_get(struct symcache *c, const char *proc_root, int pid,
				  const struct procmap *m)
{
	struct symcache_loaded r;
	struct entry *e;
	int err;

	if (!m || !m->inode || m->path[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	e = find(c, m);
	if (e) {
		lru_unlink(e);
		lru_push_front(c, e);
	}
	if (e && e->loading && clock_mono_ns() < e->retry_ns) {
		errno = EINPROGRESS;
		return NULL;
	}
	if (e && e->loading) { /* the answer was lost (a full queue): ask again */
		e->retry_ns = clock_mono_ns() + SYMCACHE_LOAD_WAIT_NS;
		c->loader.load(c->loader.ctx, pid, m);
		errno = EINPROGRESS;
		return NULL;
	}
	if (e && (e->es || !e->retry_ns || clock_mono_ns() < e->retry_ns)) {
		c->st.hits++;
		errno = e->err;
		return e->es;
	}
	if (e)
		account(c, e, -1);
	else if (!(e = insert(c, m)))
		return NULL;
	if (c->loader.load) {
		/* Uncounted (account) until the answer comes. */
		e->loading = true;
		e->retry_ns = clock_mono_ns() + SYMCACHE_LOAD_WAIT_NS;
		c->loading++;
		c->loader.load(c->loader.ctx, pid, m);
		errno = EINPROGRESS;
		return NULL;
	}
	if (c->io.begin)
		c->io.begin(c->io.ctx);
	symcache_load(proc_root, pid, m, &r);
	if (c->io.end)
		c->io.end(c->io.ctx);
	err = take(c, e, &r);
	account(c, e, 1);
	if (err == -ESRCH) {
		remove_entry(c, e);
		errno = ESRCH;
		return NULL;
	}
	errno = e->err;
	return e->es;
}

uint64_t symcache_seq(const struct symcache *c, const struct procmap *m)
{
	const struct entry *e = m->inode && m->path[0] == '/' ? find(c, m) : NULL;

	return e && e->es ? e->seq : 0;
}

void symcache_set_io(struct symcache *c, const struct symcache_io *io)
{
	c->io = *io;
}

void symcache_stats(const struct symcache *c, struct symcache_stats *out)
{
	*out = c->st;
}
