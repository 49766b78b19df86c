#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "render_folded.h"

static int read_all(int fd, struct buf *b, size_t max)
{
	ssize_t n;

	for (;;) {
		if (!buf_reserve(b, 1 << 16))
			return -ENOMEM;
		n = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return 0;
		b->len += (size_t)n;
		if (b->len > max)
			return -EFBIG;
	}
}

int fileio_read(const char *path, struct buf *b, size_t max)
{
	bool is_stdin = !strcmp(path, "-");
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	err = read_all(fd, b, max);
	if (!is_stdin)
		close(fd);
	return err;
}

int fileio_write(const char *path, const struct buf *b)
{
	int fd, err;

	if (!path || !strcmp(path, "-"))
		return buf_write_fd(b, STDOUT_FILENO);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = buf_write_fd(b, fd);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* Folded files carry no metadata: name the profile after its file.  A
 * signed one (negative counts: the mmap profile) keeps the type the
 * parser gave it, which says how to read its counts. */
static int describe(struct stackset *ss, const char *path)
{
	const char *slash = strrchr(path, '/');
	int err = 0;

	if (!stackset_signed(ss))
		err = stackset_set_str(&ss->type, NULL);
	if (!err && strcmp(path, "-"))
		err = stackset_set_str(&ss->title, slash ? slash + 1 : path);
	return err;
}

int fileio_load_folded(const char *cmd, const char *path, struct stackset *ss)
{
	const char *shown = strcmp(path, "-") ? path : "stdin";
	struct buf text;
	int err;

	buf_init(&text);
	err = fileio_read(path, &text, FILEIO_MAX_INPUT);
	if (err) {
		fprintf(stderr, "profctl %s: cannot read %s: %s\n", cmd, shown, strerror(-err));
		buf_free(&text);
		return 1;
	}
	err = folded_parse(text.data ? text.data : "", text.len, ss);
	if (!err)
		err = describe(ss, path);
	buf_free(&text);
	if (err) {
		fprintf(stderr, "profctl %s: %s: %s\n", cmd, shown,
			err == -EINVAL ? "not valid folded stacks" : strerror(-err));
		return 1;
	}
	return 0;
}
