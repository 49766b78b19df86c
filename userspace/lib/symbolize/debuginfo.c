#include "debuginfo.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rootfs.h"

struct wanted {
	struct stat self;
	uint8_t id[ELFFILE_BUILD_ID_MAX];
	size_t id_len;     /* nonzero: candidate's build-id must match */
	bool check_crc;
	uint32_t crc;
};

/* Reads at most DEBUGINFO_MAX_CRC_BYTES (the file may grow under us). */
static int file_crc32(int fd, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;

	for (;;) {
		ssize_t n;

		if ((uint64_t)off > DEBUGINFO_MAX_CRC_BYTES)
			return -EFBIG;
		n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	*out = (uint32_t)crc;
	return 0;
}

static bool candidate_ok(int fd, struct elffile *f, const struct wanted *w)
{
	uint8_t id[ELFFILE_BUILD_ID_MAX];
	struct stat st;
	uint32_t crc;

	if (fstat(fd, &st) || (st.st_dev == w->self.st_dev && st.st_ino == w->self.st_ino))
		return false;
	if (w->check_crc && (uint64_t)st.st_size > DEBUGINFO_MAX_CRC_BYTES) {
		elffile_count_too_big();
		return false;
	}
	if (w->check_crc && (file_crc32(fd, &crc) || crc != w->crc))
		return false;
	if (elffile_open_fd(f, fd))
		return false;
	if (w->id_len && (elffile_build_id(f, id) != w->id_len || memcmp(id, w->id, w->id_len))) {
		elffile_close(f);
		return false;
	}
	return true;
}

static int try_path(const char *root, const char *path, const struct wanted *w, struct elffile *out,
		    int *out_fd)
{
	int fd = rootfs_open(root, path);

	if (fd < 0)
		return fd;
	if (!candidate_ok(fd, out, w)) {
		close(fd);
		return -ENOENT;
	}
	*out_fd = fd;
	return 0;
}

static int by_build_id(const char *root, struct wanted *w, struct elffile *out, int *out_fd)
{
	char path[PATH_MAX], *p = path;
	size_t i;

	if (w->id_len < 2)
		return -ENOENT;
	p += sprintf(p, "%s/.build-id/%02x/", DEBUGINFO_DIR, w->id[0]);
	for (i = 1; i < w->id_len; i++)
		p += sprintf(p, "%02x", w->id[i]);
	strcpy(p, ".debug");
	return try_path(root, path, w, out, out_fd);
}

static int by_debuglink(struct elffile *main, const char *root, const char *path_in_root,
			struct wanted *w, struct elffile *out, int *out_fd)
{
	static const char *const fmts[] = { "%.*s/%s", "%.*s/.debug/%s", DEBUGINFO_DIR "%.*s/%s" };
	char link[NAME_MAX + 1], path[PATH_MAX];
	const char *slash;
	size_t i;
	int dirlen, n;

	if (!path_in_root || path_in_root[0] != '/' || elffile_debuglink(main, link, sizeof(link), &w->crc))
		return -ENOENT;
	slash = strrchr(path_in_root, '/');
	dirlen = (int)(slash - path_in_root);
	w->check_crc = true;
	w->id_len = 0;
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		n = snprintf(path, sizeof(path), fmts[i], dirlen, path_in_root, link);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		if (!try_path(root, path, w, out, out_fd))
			return 0;
	}
	return -ENOENT;
}

int debuginfo_open(struct elffile *main, int main_fd, const char *root, const char *path_in_root,
		   struct elffile *out, int *out_fd)
{
	struct wanted w = { 0 };

	if (main_fd >= 0 && fstat(main_fd, &w.self))
		return -ENOENT;
	w.id_len = elffile_build_id(main, w.id);
	if (!by_build_id(root, &w, out, out_fd))
		return 0;
	return by_debuglink(main, root, path_in_root, &w, out, out_fd);
}

int debuginfo_open_given(struct elffile *main, int fd, struct elffile *out)
{
	struct wanted w = { 0 };

	w.id_len = elffile_build_id(main, w.id);
	if (!w.id_len || !candidate_ok(fd, out, &w))
		return -ENOENT;
	return 0;
}
