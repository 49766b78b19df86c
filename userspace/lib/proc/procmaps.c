#include "procmaps.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rootfs.h"
#include "hexnum.h"

/* vm.max_map_count defaults to 65530 lines of ~100 bytes; leave room. */
#define MAPS_MAX_BYTES (64u << 20)
#define DELETED_SUFFIX " (deleted)"

struct line_parser {
	const char *p, *end;
};

static bool parse_dec(struct line_parser *lp, uint64_t *v)
{
	uint64_t x = 0;
	int digits = 0;

	for (; lp->p < lp->end && *lp->p >= '0' && *lp->p <= '9'; lp->p++, digits++) {
		uint64_t d = (uint64_t)(*lp->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return digits > 0;
}

static bool hex(struct line_parser *lp, uint64_t *v)
{
	return hexnum_parse(&lp->p, lp->end, v);
}

static bool expect(struct line_parser *lp, char c)
{
	if (lp->p >= lp->end || *lp->p != c)
		return false;
	lp->p++;
	return true;
}

static bool parse_prot(struct line_parser *lp, uint32_t *prot)
{
	const char *s = lp->p;

	if (lp->end - s < 4)
		return false;
	*prot = 0;
	if (s[0] == 'r')
		*prot |= PROT_READ;
	else if (s[0] != '-')
		return false;
	if (s[1] == 'w')
		*prot |= PROT_WRITE;
	else if (s[1] != '-')
		return false;
	if (s[2] == 'x')
		*prot |= PROT_EXEC;
	else if (s[2] != '-')
		return false;
	if (s[3] != 'p' && s[3] != 's')
		return false;
	lp->p += 4;
	return true;
}

/* One line without its '\n'.  The path is copied to *strings. */
static int parse_line(const char *s, const char *end, struct procmap *m, char **strings)
{
	struct line_parser lp = { s, end };
	uint64_t major, minor;
	size_t plen, slen = strlen(DELETED_SUFFIX);

	memset(m, 0, sizeof(*m));
	if (!hex(&lp, &m->start) || !expect(&lp, '-') || !hex(&lp, &m->end) ||
	    !expect(&lp, ' ') || !parse_prot(&lp, &m->prot) || !expect(&lp, ' ') ||
	    !hex(&lp, &m->offset) || !expect(&lp, ' ') || !hex(&lp, &major) ||
	    !expect(&lp, ':') || !hex(&lp, &minor) || !expect(&lp, ' ') ||
	    !parse_dec(&lp, &m->inode))
		return -EINVAL;
	if (m->start >= m->end || major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (lp.p < lp.end && *lp.p != ' ')
		return -EINVAL;
	while (lp.p < lp.end && *lp.p == ' ')
		lp.p++;
	plen = (size_t)(lp.end - lp.p);
	if (plen > slen && !memcmp(lp.end - slen, DELETED_SUFFIX, slen)) {
		plen -= slen;
		m->deleted = true;
	}
	m->path = *strings;
	memcpy(*strings, lp.p, plen);
	(*strings)[plen] = '\0';
	*strings += plen + 1;
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 1, i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

static bool blank(const char *s, const char *end)
{
	for (; s < end; s++)
		if (*s != ' ' && *s != '\t' && *s != '\r')
			return false;
	return true;
}

int procmaps_parse(const char *text, size_t len, struct procmaps *out)
{
	size_t cap = count_lines(text, len), n = 0;
	const char *p = text, *end = text + len;
	struct procmap *maps;
	char *strings;

	out->maps = NULL;
	out->n = 0;
	if (cap > (SIZE_MAX - len) / (sizeof(*maps) + 1))
		return -ENOMEM;
	/* One block: the array, then every path (a line's path is never
	 * longer than the line, so len + cap bytes always suffice). */
	maps = malloc(cap * sizeof(*maps) + len + cap);
	if (!maps)
		return -ENOMEM;
	strings = (char *)(maps + cap);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (!blank(p, eol) && parse_line(p, eol, &maps[n++], &strings)) {
			free(maps);
			return -EINVAL;
		}
		p = nl ? nl + 1 : end;
	}
	qsort(maps, n, sizeof(*maps), cmp_start);
	out->maps = maps;
	out->n = n;
	return 0;
}

int procmaps_read_at(const char *proc_root, int pid, struct procmaps *out)
{
	char path[PATH_MAX];
	size_t len;
	char *text;
	int err, n;

	out->maps = NULL;
	out->n = 0;
	if (pid <= 0)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	err = rootfs_read_file(NULL, path, MAPS_MAX_BYTES, &text, &len);
	if (err == -ENOENT)
		return -ESRCH;
	if (err)
		return err;
	err = procmaps_parse(text, len, out);
	free(text);
	return err;
}

int procmaps_read(int pid, struct procmaps *out)
{
	return procmaps_read_at("/proc", pid, out);
}

const struct procmap *procmaps_find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	/* Find the last mapping that starts at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->maps[lo - 1].end)
		return NULL;
	return &m->maps[lo - 1];
}

int procmaps_copy(struct procmaps *dst, const struct procmaps *src)
{
	size_t i, bytes = src->n * sizeof(*src->maps);
	struct procmap *maps;
	char *strings;

	dst->maps = NULL;
	dst->n = 0;
	for (i = 0; i < src->n; i++)
		bytes += strlen(src->maps[i].path) + 1;
	if (!src->n)
		return 0;
	maps = malloc(bytes);
	if (!maps)
		return -ENOMEM;
	memcpy(maps, src->maps, src->n * sizeof(*maps));
	strings = (char *)(maps + src->n);
	for (i = 0; i < src->n; i++) { /* the paths move with the block */
		size_t len = strlen(src->maps[i].path) + 1;

		memcpy(strings, src->maps[i].path, len);
		maps[i].path = strings;
		strings += len;
	}
	dst->maps = maps;
	dst->n = src->n;
	return 0;
}

void procmaps_free(struct procmaps *m)
{
	if (!m)
		return;
	free(m->maps);
	m->maps = NULL;
	m->n = 0;
}

unsigned procmaps_libc_kind(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "ld-musl-", 8) || !strncmp(base, "libc.musl-", 10))
		return PROCMAPS_LIBC_C | PROCMAPS_LIBC_LOADER;
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5))
		return PROCMAPS_LIBC_C;
	if (!strncmp(base, "ld-linux", 8))
		return PROCMAPS_LIBC_LOADER;
	return 0;
}

int proc_for_each_pid(const char *proc_root, int (*fn)(void *ctx, uint32_t pid), void *ctx)
{
	DIR *d = opendir(proc_root);
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (err != -ENOMEM && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!*end && pid && pid <= UINT32_MAX)
			err = fn(ctx, (uint32_t)pid);
	}
	closedir(d);
	return err == -ENOMEM ? err : 0;
}
