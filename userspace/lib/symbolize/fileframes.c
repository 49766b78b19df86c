#include "fileframes.h"

#include <stdlib.h>

struct ff_file {
	uint32_t major, minor;
	uint64_t inode;
	struct hashmap offs; /* file offset -> value */
};

void fileframes_init(struct fileframes *ff, size_t max)
{
	hashmap_init(&ff->files);
	ff->entries = 0;
	ff->max = max;
	ff->resets = 0;
}

static void drop_files(struct fileframes *ff)
{
	size_t it = 0;
	uint64_t v;

	while (hashmap_next(&ff->files, &it, NULL, &v)) {
		struct ff_file *f = (struct ff_file *)(uintptr_t)v;

		hashmap_free(&f->offs);
		free(f);
	}
	hashmap_free(&ff->files);
	ff->entries = 0;
}

void fileframes_free(struct fileframes *ff)
{
	drop_files(ff);
}

static bool has_identity(const struct procmap *m)
{
	return m && m->path[0] == '/' && m->inode;
}

/* The file of m, found by probing from its identity's hash (a collision
 * of two files' hashes must not share names); *key: where it is, or the
 * first free key for it. */
static struct ff_file *find_file(const struct fileframes *ff, const struct procmap *m,
				 uint64_t *key)
{
	uint64_t v;

	*key = hash64_mix(((uint64_t)m->dev_major << 32 | m->dev_minor) ^ hash64_mix(m->inode));
	for (; hashmap_get(&ff->files, *key, &v); (*key)++) {
		struct ff_file *f = (struct ff_file *)(uintptr_t)v;

		if (f->inode == m->inode && f->major == m->dev_major && f->minor == m->dev_minor)
			return f;
	}
	return NULL;
}

bool fileframes_get(const struct fileframes *ff, const struct procmap *m, uint64_t addr,
		    uint64_t *val)
{
	struct ff_file *f;
	uint64_t key;

	if (!has_identity(m) || !(f = find_file(ff, m, &key)))
		return false;
	return hashmap_get(&f->offs, addr - m->start + m->offset, val);
}

void fileframes_put(struct fileframes *ff, const struct procmap *m, uint64_t addr, uint64_t val)
{
	uint64_t key, off;
	struct ff_file *f;

	if (!has_identity(m))
		return;
	off = addr - m->start + m->offset;
	f = find_file(ff, m, &key);
	if (f && hashmap_get(&f->offs, off, NULL))
		return;
	if (ff->entries >= ff->max) {
		drop_files(ff);
		ff->resets++;
		f = find_file(ff, m, &key);
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return;
		f->major = m->dev_major;
		f->minor = m->dev_minor;
		f->inode = m->inode;
		hashmap_init(&f->offs);
		if (hashmap_put(&ff->files, key, (uint64_t)(uintptr_t)f)) {
			free(f);
			return;
		}
	}
	if (!hashmap_put(&f->offs, off, val))
		ff->entries++;
}
