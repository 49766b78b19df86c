/* unwinder_rows.c: the memory of the packed tables.  unwind_rows is an
 * array of chunks (profd_abi_unwind.h); a chunk is made (a BPF array,
 * mmapped here, put in its slot) when a table is first placed in it, and
 * the chunks above the last table in use are dropped again.  The
 * allocator (u->rows, first fit) fills the low chunks first, so profd's
 * memory follows the tables it holds, not the cap (--unwind-table-bytes):
 * 2 MiB on a machine running a few processes, not 64. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "unwinder_int.h"

#define CHUNK_BYTES ((size_t)PROFD_UNWIND_CHUNK_VALUES * sizeof(struct profd_unwind_words))

int uwrows_init(struct unwinder *u)
{
	u->nchunks = bpf_map__max_entries(u->maps.rows);
	u->chunks = calloc(u->nchunks, sizeof(*u->chunks));
	return u->chunks ? 0 : -ENOMEM;
}

static void chunk_drop(struct unwinder *u, uint32_t i)
{
	struct uw_chunk *c = &u->chunks[i];

	/* Out of the slot first: a walk running now keeps the map it
	 * looked up until it ends (the kernel frees it after RCU). */
	bpf_map_delete_elem(bpf_map__fd(u->maps.rows), &i);
	munmap(c->mem, CHUNK_BYTES);
	c->mem = NULL;
	u->st.table_bytes_allocated -= CHUNK_BYTES;
}

void uwrows_free(struct unwinder *u)
{
	uint32_t i;

	for (i = 0; u->chunks && i < u->nchunks; i++)
		if (u->chunks[i].mem)
			chunk_drop(u, i);
	free(u->chunks);
	u->chunks = NULL;
}

static int chunk_make(struct unwinder *u, uint32_t i)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	struct uw_chunk *c = &u->chunks[i];
	int fd, err;
	void *p;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "profd_uw_chunk", sizeof(uint32_t),
			    sizeof(struct profd_unwind_words), PROFD_UNWIND_CHUNK_VALUES, &o);
	if (fd < 0)
		return fd;
	p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = bpf_map_update_elem(bpf_map__fd(u->maps.rows), &i, &fd, BPF_ANY) ? -errno : 0;
	/* The slot and the mapping hold the map now: no descriptor kept
	 * per chunk (a process's fds are bounded by its limit). */
	close(fd);
	if (err) {
		munmap(p, CHUNK_BYTES);
		return err;
	}
	c->mem = p;
	u->st.table_bytes_allocated += CHUNK_BYTES;
	return 0;
}

int uwrows_write(struct unwinder *u, uint32_t start, const uint32_t *words, uint32_t nwords)
{
	uint32_t nvalues = (nwords + 1) / 2, i, first = start >> PROFD_UNWIND_CHUNK_SHIFT;
	uint32_t last = (start + nvalues - 1) >> PROFD_UNWIND_CHUNK_SHIFT;
	uint64_t w = (uint64_t)start * 2, end = w + nwords;
	int err;

	if (!nwords)
		return 0;
	if (last >= u->nchunks)
		return -ERANGE;
	for (i = first; i <= last; i++) {
		if (u->chunks[i].mem)
			continue;
		err = chunk_make(u, i);
		if (err) {
			log_warn("unwinder: cannot make a %zu MiB chunk of the unwind tables: %s",
				 CHUNK_BYTES >> 20, strerror(-err));
			return err;
		}
	}
	/* Chunk by chunk: a table may cross from one into the next. */
	while (w < end) {
		uint64_t chunk_words = 2ull * PROFD_UNWIND_CHUNK_VALUES;
		uint64_t off = w % chunk_words, n = chunk_words - off;
		uint32_t *dst = (uint32_t *)u->chunks[w / chunk_words].mem + off;

		if (n > end - w)
			n = end - w;
		memcpy(dst, words, n * sizeof(uint32_t));
		words += n;
		w += n;
	}
	return 0;
}

void uwrows_trim(struct unwinder *u)
{
	uint32_t keep, i;

	rangealloc_reap(&u->rows, clock_mono_ns());
	keep = (rangealloc_free_tail(&u->rows) + PROFD_UNWIND_CHUNK_VALUES - 1) >>
	       PROFD_UNWIND_CHUNK_SHIFT;
	for (i = u->nchunks; i-- > keep;)
		if (u->chunks[i].mem)
			chunk_drop(u, i);
}
