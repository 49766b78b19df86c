#include "fileframes.h"

#include <stdlib.h>
#include <string.h>

struct ff_file {
	uint32_t major, minor;
	uint64_t inode;
	uint64_t seq;        /* the symbol cache's load the names came from */
	char *path;
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
		free(f->path);
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

static bool same_file(const struct ff_file *f, const struct procmap *m)
{
	return f->inode == m->inode && f->major == m->dev_major && f->minor == m->dev_minor &&
	       !strcmp(f->path, m->path);
}

/* The file of m, found by probing from its identity's hash (a collision
 * of two files' hashes must not share names); *key: where it is, or the
 * first free key for it. */
static struct ff_file *find_file(const struct fileframes *ff, const struct procmap *m,
				 uint64_t *key)
{
	uint64_t v;

	*key = hash64_mix(((uint64_t)m->dev_major << 32 | m->dev_minor) ^
			  hash64_mix(m->inode ^ hash64_str(m->path)));
	for (; hashmap_get(&ff->files, *key, &v); (*key)++) {
		struct ff_file *f = (struct ff_file *)(uintptr_t)v;

		if (same_file(f, m))
			return f;
	}
	return NULL;
}

bool fileframes_get(const struct fileframes *ff, const struct procmap *m, uint64_t addr,
		    uint64_t seq, uint64_t *val)
{
	struct ff_file *f;
	uint64_t key;

	if (!seq || !has_identity(m) || !(f = find_file(ff, m, &key)) || f->seq != seq)
		return false;
	return hashmap_get(&f->offs, addr - m->start + m->offset, val);
}

static struct ff_file *add_file(struct fileframes *ff, const struct procmap *m, uint64_t key)
{
	struct ff_file *f = calloc(1, sizeof(*f));

	if (!f || !(f->path = strdup(m->path))) {
		free(f);
		return NULL;
	}
	f->major = m->dev_major;
	f->minor = m->dev_minor;
	f->inode = m->inode;
	hashmap_init(&f->offs);
	if (hashmap_put(&ff->files, key, (uint64_t)(uintptr_t)f)) {
		free(f->path);
		free(f);
		return NULL;
	}
	ff->entries += FF_FILE_COST;
	return f;
}

void fileframes_put(struct fileframes *ff, const struct procmap *m, uint64_t addr, uint64_t seq,
		    uint64_t val)
{
	uint64_t key, off;
	struct ff_file *f;

	if (!seq || !has_identity(m))
		return;
	off = addr - m->start + m->offset;
	f = find_file(ff, m, &key);
	if (f && f->seq == seq && hashmap_get(&f->offs, off, NULL))
		return;
	if (ff->entries + 1 + (f ? 0 : FF_FILE_COST) > ff->max) {
		drop_files(ff);
		ff->resets++;
		f = find_file(ff, m, &key);
	}
	if (!f && !(f = add_file(ff, m, key)))
		return;
	if (f->seq != seq) { /* names of an older load of the file: not these */
		ff->entries -= f->offs.len;
		hashmap_free(&f->offs);
		f->seq = seq;
	}
	if (!hashmap_put(&f->offs, off, val))
		ff->entries++;
}
