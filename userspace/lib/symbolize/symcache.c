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

#include "hashmap.h"
#include "log.h"
#include "rootfs.h"

struct entry {
	uint32_t major, minor;
	uint64_t inode;
	struct elfsym *es;     /* NULL: a cached failure */
	int err;               /* its errno */
	uint64_t retry_ns;     /* failure: when to try again (0: never) */
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
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* Loads into e; returns 0 or -errno with e describing the failure.
 * -ESRCH: the process is gone, which says nothing about the file. */
static int load(struct symcache *c, struct entry *e, const char *proc_root, int pid,
		const struct procmap *m, const char *root)
{
	/* The path may now name another file (replaced, or a container's
	 * view differs): procfile_open_mapped checks it is the mapped one. */
	int fd = procfile_open_mapped(proc_root, pid, m);

	c->st.loads++;
	e->retry_ns = 0;
	if (fd < 0) {
		c->st.open_failures++;
		if (process_gone(root))
			return -ESRCH;
		e->err = -fd;
		e->retry_ns = now_ns() + SYMCACHE_RETRY_NS;
		log_debug("symbolize: cannot open %s of pid %d: %s", m->path, pid, strerror(-fd));
		return fd;
	}
	e->es = elfsym_open_fd(fd, m->path, root);
	e->err = e->es ? 0 : errno;
	close(fd);
	if (!e->es) {
		c->st.parse_failures++;
		if (e->err == ENOMEM)
			e->retry_ns = now_ns() + SYMCACHE_RETRY_NS;
		log_debug("symbolize: cannot read symbols of %s: %s", m->path, strerror(e->err));
		return -e->err;
	}
	return 0;
}

const struct elfsym *symcache_get(struct symcache *c, const char *proc_root, int pid,
				  const struct procmap *m)
{
	char root[PATH_MAX];
	struct entry *e;
	int n, err;

	if (!m || !m->inode || m->path[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	e = find(c, m);
	if (e) {
		lru_unlink(e);
		lru_push_front(c, e);
	}
	if (e && (e->es || !e->retry_ns || now_ns() < e->retry_ns)) {
		c->st.hits++;
		errno = e->err;
		return e->es;
	}
	n = snprintf(root, sizeof(root), "%s/%d/root", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(root)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (e)
		account(c, e, -1);
	else if (!(e = insert(c, m)))
		return NULL;
	if (c->io.begin)
		c->io.begin(c->io.ctx);
	err = load(c, e, proc_root, pid, m, root);
	if (c->io.end)
		c->io.end(c->io.ctx);
	if (err == -ESRCH) {
		account(c, e, 1);
		remove_entry(c, e);
		errno = ESRCH;
		return NULL;
	}
	account(c, e, 1);
	errno = e->err;
	return e->es;
}

void symcache_set_io(struct symcache *c, const struct symcache_io *io)
{
	c->io = *io;
}

void symcache_stats(const struct symcache *c, struct symcache_stats *out)
{
	*out = c->st;
}
