/* unwinder_chunks.c: memory that follows what is held, not the cap.
 * unwind_rows (the packed tables) and unwind_mappings (every process's
 * executable mappings) are arrays of chunks (profd_abi_unwind.h): a
 * chunk is made (a BPF array, mmapped here, put in its slot) when a slice
 * first reaches into it, and the chunks above the last slice in use are
 * dropped again.  The allocators (first fit) fill the low chunks first,
 * so a machine running a few processes holds one chunk of each: 2 MiB of
 * rows and 192 KiB of mappings, not 64 and 3 MiB. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "unwinder_int.h"

static size_t chunk_bytes(const struct uw_chunks *c)
{
	return (size_t)c->value_size << c->shift;
}

int uwchunks_init(struct uw_chunks *c, struct bpf_map *slots, const char *name,
		  uint32_t value_size, uint32_t shift, uint64_t *bytes)
{
	memset(c, 0, sizeof(*c));
	c->slots = slots;
	c->name = name;
	c->value_size = value_size;
	c->shift = shift;
	c->bytes = bytes;
	c->n = bpf_map__max_entries(slots);
	c->mem = calloc(c->n, sizeof(*c->mem));
	return c->mem ? 0 : -ENOMEM;
}

static void chunk_drop(struct uw_chunks *c, uint32_t i)
{
	/* Out of the slot first: a walk running now keeps the map it
	 * looked up until it ends (the kernel frees it after RCU). */
	bpf_map_delete_elem(bpf_map__fd(c->slots), &i);
	munmap(c->mem[i], chunk_bytes(c));
	c->mem[i] = NULL;
	*c->bytes -= chunk_bytes(c);
}

void uwchunks_free(struct uw_chunks *c)
{
	uint32_t i;

	for (i = 0; c->mem && i < c->n; i++)
		if (c->mem[i])
			chunk_drop(c, i);
	free(c->mem);
	c->mem = NULL;
}

static int chunk_make(struct uw_chunks *c, uint32_t i)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd, err;
	void *p;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, c->name, sizeof(uint32_t), c->value_size,
			    1u << c->shift, &o);
	if (fd < 0)
		return fd;
	p = mmap(NULL, chunk_bytes(c), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = bpf_map_update_elem(bpf_map__fd(c->slots), &i, &fd, BPF_ANY) ? -errno : 0;
	/* The slot and the mapping hold the map now: no descriptor kept
	 * per chunk (a process's fds are bounded by its limit). */
	close(fd);
	if (err) {
		munmap(p, chunk_bytes(c));
		return err;
	}
	c->mem[i] = p;
	c->made++;
	*c->bytes += chunk_bytes(c);
	return 0;
}

int uwchunks_write(struct uw_chunks *c, uint32_t start, const void *src, size_t len)
{
	uint64_t off = (uint64_t)start * c->value_size, end = off + len;
	uint64_t cb = chunk_bytes(c), i;
	const char *from = src;
	int err;

	if (!len)
		return 0;
	if ((end - 1) / cb >= c->n)
		return -ERANGE;
	for (i = off / cb; i <= (end - 1) / cb; i++) {
		if (c->mem[i])
			continue;
		err = chunk_make(c, (uint32_t)i);
		if (err) {
			log_warn("unwinder: cannot make a %zu KiB chunk of %s: %s",
				 chunk_bytes(c) >> 10, c->name, strerror(-err));
			return err;
		}
	}
	/* Chunk by chunk: a slice may cross from one into the next. */
	while (off < end) {
		uint64_t in = off % cb, n = cb - in;

		if (n > end - off)
			n = end - off;
		memcpy((char *)c->mem[off / cb] + in, from, n);
		from += n;
		off += n;
	}
	return 0;
}

void uwchunks_trim(struct uw_chunks *c, struct rangealloc *a)
{
	uint32_t keep, i;

	rangealloc_reap(a, clock_mono_ns());
	keep = (uint32_t)(((uint64_t)rangealloc_free_tail(a) + (1u << c->shift) - 1) >> c->shift);
	for (i = c->n; i-- > keep;)
		if (c->mem[i])
			chunk_drop(c, i);
}
