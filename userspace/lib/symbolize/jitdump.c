/* jitdump.c: JIT code names from a jitdump file, the binary format perf
 * defined for JITs (tools/perf/Documentation/jitdump-specification.txt),
 * which CPython's -X perf_jit and the JVM's and Node's perf agents write:
 * a header, then records; each JIT_CODE_LOAD names the code at
 * [code_addr, code_addr + code_size).  The other records (code moved,
 * debug and unwinding information, close) are stepped over.
 *
 * The file is another user's and may change while it is read: read with
 * pread through a window, never mapped (a file truncated under a mapping
 * would kill the daemon with SIGBUS), every length checked against the
 * record and the file, names bounded by perfmap_add. */
#include "jitdump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" in the writer's byte order */
#define JITDUMP_HEADER_MIN 40u	  /* magic .. flags */
#define JITDUMP_PREFIX 16u	  /* id, total_size, timestamp */
#define JITDUMP_LOAD_FIXED 40u	  /* pid, tid, vma, code_addr, code_size, code_index */
#define JITDUMP_CODE_LOAD 0u
#define JITDUMP_NAME_MAX 4096u	  /* longer names are cut */
#define JITDUMP_WINDOW (256u << 10)

/* A window of the file: buf holds [off, off + len). */
struct window {
	int fd;
	uint64_t size; /* the file's, as fstat said */
	uint64_t off;
	size_t len;
	unsigned char *buf;
};

/* Make [at, at + need) readable in w->buf: 0, or -EIO when the file
 * ends before it (or the read fails). */
static int window_at(struct window *w, uint64_t at, size_t need)
{
	ssize_t n;

	if (at >= w->off && at + need <= w->off + w->len)
		return 0;
	if (need > JITDUMP_WINDOW || at + need > w->size)
		return -EIO;
	n = pread(w->fd, w->buf, JITDUMP_WINDOW, (off_t)at);
	if (n < 0 || (size_t)n < need)
		return -EIO;
	w->off = at;
	w->len = (size_t)n;
	return 0;
}

static uint32_t u32_at(const struct window *w, uint64_t at)
{
	uint32_t v;

	memcpy(&v, w->buf + (at - w->off), sizeof(v));
	return v;
}

static uint64_t u64_at(const struct window *w, uint64_t at)
{
	uint64_t v;

	memcpy(&v, w->buf + (at - w->off), sizeof(v));
	return v;
}

/* A JIT_CODE_LOAD record of total bytes at at into pm. */
static int add_load(struct window *w, uint64_t at, uint32_t total, struct perfmap *pm)
{
	uint64_t body = at + JITDUMP_PREFIX, name_at = body + JITDUMP_LOAD_FIXED;
	size_t room = total - JITDUMP_PREFIX - JITDUMP_LOAD_FIXED, len;
	const unsigned char *name, *nul;
	int err;

	if (room > JITDUMP_NAME_MAX)
		room = JITDUMP_NAME_MAX;
	if (name_at + room > w->size)
		room = (size_t)(w->size - name_at);
	if ((err = window_at(w, body, JITDUMP_LOAD_FIXED + room)))
		return err;
	name = w->buf + (name_at - w->off);
	nul = memchr(name, '\0', room);
	len = nul ? (size_t)(nul - name) : room;
	err = perfmap_add(pm, u64_at(w, body + 16), u64_at(w, body + 24), (const char *)name, len);
	return err == -EINVAL ? 0 : err; /* an empty or wrapping entry is skipped */
}

int jitdump_read(int fd, uint64_t size, uint32_t pid, uint32_t max_records, struct perfmap *pm,
		 struct jitdump_counts *c)
{
	struct window w = { .fd = fd, .size = size };
	uint64_t at;
	uint32_t header, n;
	int err = 0;

	memset(c, 0, sizeof(*c));
	w.buf = malloc(JITDUMP_WINDOW);
	if (!w.buf)
		return -ENOMEM;
	if (window_at(&w, 0, JITDUMP_HEADER_MIN) || u32_at(&w, 0) != JITDUMP_MAGIC ||
	    (header = u32_at(&w, 8)) < JITDUMP_HEADER_MIN || (pid && u32_at(&w, 20) != pid)) {
		free(w.buf);
		return -EPROTO; /* not a jitdump, another byte order's or pid's */
	}
	for (at = header, n = 0; n < max_records && !err; n++) {
		uint32_t id, total;

		if (window_at(&w, at, JITDUMP_PREFIX))
			break; /* the end, or a record still being written */
		id = u32_at(&w, at);
		total = u32_at(&w, at + 4);
		if (total < JITDUMP_PREFIX || at + total > size)
			break;
		if (id == JITDUMP_CODE_LOAD) {
			if (total <= JITDUMP_PREFIX + JITDUMP_LOAD_FIXED)
				break;
			err = add_load(&w, at, total, pm);
			c->loads += !err;
		}
		c->records++;
		at += total;
	}
	c->truncated = n == max_records;
	free(w.buf);
	return err == -EIO ? 0 : err;
}
