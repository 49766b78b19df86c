#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jsonw.h"
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

bool fileio_is_stdout(const char *path)
{
	return !path || !strcmp(path, "-");
}

int fileio_write(const char *path, const struct buf *b)
{
	int fd, err;

	if (fileio_is_stdout(path))
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

int fileio_load_folded(const struct ctl *ctl, const char *path, struct stackset *ss)
{
	const char *shown = strcmp(path, "-") ? path : "stdin";
	struct buf text;
	int err;

	buf_init(&text);
	err = fileio_read(path, &text, FILEIO_MAX_INPUT);
	if (err) {
		client_error(ctl, "cannot read %s: %s", shown, strerror(-err));
		buf_free(&text);
		return 1;
	}
	err = folded_parse(text.data ? text.data : "", text.len, ss);
	if (!err)
		err = describe(ss, path);
	buf_free(&text);
	if (err) {
		client_error(ctl, "%s: %s", shown,
			     err == -EINVAL ? "not valid folded stacks" : strerror(-err));
		return 1;
	}
	return 0;
}

int fileio_render(const struct ctl *ctl, const char *format, const struct stackset *ss,
		  const struct render_opts *ro, struct buf *out)
{
	int err = render_format(format, ss, ro, out);

	if (!err && out->failed)
		err = -ENOMEM;
	if (!err)
		return 0;
	client_error(ctl, "cannot render %s: %s", format,
		     err == -ENODATA ? "the profile has no Python frames, which pstats needs"
				     : strerror(-err));
	return 1;
}

int fileio_render_timeline(const struct ctl *ctl, const char *format, const struct tlset *t,
			   struct buf *out)
{
	int err = render_timeline(format, t, out);

	if (!err && out->failed)
		err = -ENOMEM;
	if (err)
		client_error(ctl, "cannot render %s: %s", format, strerror(-err));
	return err ? 1 : 0;
}

int fileio_save(const struct ctl *ctl, const char *path, const struct buf *b)
{
	int err = fileio_write(path, b);

	if (err)
		client_error(ctl, "cannot write %s: %s", path ? path : "stdout", strerror(-err));
	return err ? 1 : 0;
}

int fileio_report(const struct ctl *ctl, const char *path, const char *format,
		  const struct stackset *ss, size_t bytes, bool note)
{
	const char *unit = ss->unit && ss->unit[0] ? ss->unit : "samples";
	struct jsonw w;

	if (!ctl->json) {
		if (note)
			client_note(ctl, "wrote %s (%llu %s)", path, (unsigned long long)ss->total, unit);
		return 0;
	}
	jsonw_init(&w, 1);
	jsonw_object(&w);
	jsonw_key_str(&w, "output", path);
	jsonw_key_str(&w, "format", format);
	jsonw_key_u64(&w, "bytes", bytes);
	jsonw_key_u64(&w, "total", ss->total);
	jsonw_key_str(&w, "unit", unit);
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}
