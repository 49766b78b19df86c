#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Options that act on the command line itself, never from a file. */
static const char *const cli_only[] = { "help", "config", "version" };

struct entries {
	char **v;
	unsigned *lines;
	int n;
};

static void set_error(struct config_argv *ca, const char *path, unsigned line, const char *fmt,
		      ...) __attribute__((format(printf, 4, 5)));

static void set_error(struct config_argv *ca, const char *path, unsigned line, const char *fmt,
		      ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(ca->error, sizeof(ca->error), "config: %s:%u: %s", path, line, msg);
	else
		snprintf(ca->error, sizeof(ca->error), "config: %s: %s", path, msg);
	log_error("%s", ca->error);
}

/* User text quoted in an error: bounded, control and non-ASCII bytes as
 * '?', so a hostile file cannot write escape sequences to a terminal. */
static const char *quote(const char *s, size_t n, char *buf, size_t size)
{
	size_t i, o = 0, max = size > 4 ? size - 4 : 0;

	for (i = 0; i < n && o < max; i++)
		buf[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (i < n && size >= 4) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static char *trim(char *s)
{
	size_t n;

	while (is_blank(*s))
		s++;
	n = strlen(s);
	while (n && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static const struct option *find_option(const struct option *opts, const char *key)
{
	for (; opts && opts->name; opts++)
		if (strcmp(opts->name, key) == 0)
			return opts;
	return NULL;
}

static bool is_cli_only(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(cli_only) / sizeof(cli_only[0]); i++)
		if (strcmp(key, cli_only[i]) == 0)
			return true;
	return false;
}

/* true/yes/on -> 1, false/no/off -> 0, a count 0..9 -> itself, else -1. */
static int flag_count(const char *v)
{
	static const char *const yes[] = { "true", "yes", "on" };
	static const char *const no[] = { "false", "no", "off" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcmp(v, yes[i]) == 0)
			return 1;
		if (strcmp(v, no[i]) == 0)
			return 0;
	}
	if (v[0] >= '0' && v[0] <= '9' && v[1] == '\0')
		return v[0] - '0';
	return -1;
}

static int add_entry(struct entries *e, unsigned line, const char *key, const char *value)
{
	char **v;
	unsigned *l;
	size_t len;

	if (e->n >= CONFIG_MAX_ENTRIES)
		return -E2BIG;
	v = realloc(e->v, (size_t)(e->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->v = v;
	l = realloc(e->lines, (size_t)(e->n + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	e->lines = l;
	len = strlen(key) + (value ? strlen(value) + 1 : 0) + 3;
	e->v[e->n] = malloc(len);
	if (!e->v[e->n])
		return -ENOMEM;
	if (value)
		snprintf(e->v[e->n], len, "--%s=%s", key, value);
	else
		snprintf(e->v[e->n], len, "--%s", key);
	e->lines[e->n++] = line;
	return 0;
}

/* One line, already without its newline.  0 or -errno (error set). */
static int parse_line(struct config_argv *ca, const char *path, unsigned line, char *s,
		      const struct option *opts, struct entries *e)
{
	char q[80], *key, *value, *eq, *hash;
	const struct option *o;
	int n, err = 0;

	for (hash = s; (hash = strchr(hash, '#')); hash++) {
		if (hash == s || is_blank(hash[-1])) {
			*hash = '\0';
			break;
		}
	}
	s = trim(s);
	if (!*s)
		return 0;
	eq = strchr(s, '=');
	if (!eq) {
		set_error(ca, path, line, "bad line '%s' (expected 'key = value')",
			  quote(s, strlen(s), q, sizeof(q)));
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(s);
	value = trim(eq + 1);
	if (!*key) {
		set_error(ca, path, line, "bad line: no key before '='");
		return -EINVAL;
	}
	if (is_cli_only(key)) {
		set_error(ca, path, line, "'%s' only works on the command line", key);
		return -EINVAL;
	}
	o = find_option(opts, key);
	if (!o) {
		set_error(ca, path, line, "unknown key '%s'", quote(key, strlen(key), q, sizeof(q)));
		return -EINVAL;
	}
	for (eq = value; *eq; eq++) {
		if ((unsigned char)*eq < 0x20 || *eq == 0x7f) {
			set_error(ca, path, line, "control character in the value of '%s'", key);
			return -EINVAL;
		}
	}
	switch (o->has_arg) {
	case no_argument:
		n = flag_count(value);
		if (n < 0) {
			set_error(ca, path, line, "'%s' takes true or false, not '%s'", key,
				  quote(value, strlen(value), q, sizeof(q)));
			return -EINVAL;
		}
		while (n-- > 0 && !err)
			err = add_entry(e, line, key, NULL);
		break;
	case required_argument:
		if (!*value) {
			set_error(ca, path, line, "'%s' needs a value", key);
			return -EINVAL;
		}
		err = add_entry(e, line, key, value);
		break;
	default: /* optional_argument */
		err = add_entry(e, line, key, *value ? value : NULL);
		break;
	}
	if (err == -E2BIG)
		set_error(ca, path, line, "more than %d settings", CONFIG_MAX_ENTRIES);
	else if (err)
		set_error(ca, path, line, "%s", strerror(-err));
	return err;
}

static int parse_text(struct config_argv *ca, const char *path, char *text, size_t len,
		      const struct option *opts, struct entries *e)
{
	char *p = text, *end = text + len;
	unsigned line = 0;
	int err;

	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3; /* a UTF-8 byte order mark some editors write */
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *le = nl ? nl : end;

		line++;
		if (memchr(p, '\0', (size_t)(le - p))) {
			set_error(ca, path, line, "NUL byte (not a text file?)");
			return -EINVAL;
		}
		if (le - p > CONFIG_MAX_LINE) {
			set_error(ca, path, line, "line longer than %d bytes", CONFIG_MAX_LINE);
			return -EINVAL;
		}
		*le = '\0';
		if (le > p && le[-1] == '\r')
			le[-1] = '\0';
		err = parse_line(ca, path, line, p, opts, e);
		if (err)
			return err;
		p = le + 1;
	}
	return 0;
}

/* Whoever can write the file controls a root daemon. */
static int check_file(struct config_argv *ca, const char *path, const struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		set_error(ca, path, 0, "is a directory");
		return -EISDIR;
	}
	if (S_ISCHR(st->st_mode))
		return 0; /* /dev/null: "no configuration"; reads are bounded */
	if (!S_ISREG(st->st_mode)) {
		set_error(ca, path, 0, "not a regular file");
		return -EINVAL;
	}
	if (st->st_mode & S_IWOTH) {
		set_error(ca, path, 0, "writable by every user; refusing it (chmod o-w %s)", path);
		return -EPERM;
	}
	if ((st->st_mode & S_IWGRP) && st->st_gid != 0) {
		set_error(ca, path, 0, "writable by group %u; refusing it (chmod g-w %s)",
			  (unsigned)st->st_gid, path);
		return -EPERM;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		set_error(ca, path, 0, "owned by uid %u, neither root nor us; refusing it",
			  (unsigned)st->st_uid);
		return -EPERM;
	}
	return 0;
}

/* Reads at most CONFIG_MAX_BYTES + 1 to tell "too large" apart. */
static int read_bounded(int fd, char *buf, size_t size, size_t *len)
{
	size_t n = 0;

	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return 0;
}

/* 0 with *text NULL when the file is missing and that is fine. */
static int load_file(struct config_argv *ca, const char *path, unsigned flags, char **text,
		     size_t *len)
{
	struct stat st;
	char *buf = NULL;
	int fd, err;

	*text = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT && (flags & CONFIG_MISSING_OK)) {
			log_debug("config: %s: not found, using the defaults", path);
			return 0;
		}
		set_error(ca, path, 0, "cannot open: %s", strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		set_error(ca, path, 0, "cannot stat: %s", strerror(-err));
		goto out;
	}
	err = check_file(ca, path, &st);
	if (err)
		goto out;
	buf = malloc(CONFIG_MAX_BYTES + 2);
	if (!buf) {
		err = -ENOMEM;
		set_error(ca, path, 0, "out of memory");
		goto out;
	}
	err = read_bounded(fd, buf, CONFIG_MAX_BYTES + 1, len);
	if (err) {
		set_error(ca, path, 0, "cannot read: %s", strerror(-err));
		goto out;
	}
	if (*len > CONFIG_MAX_BYTES) {
		err = -EFBIG;
		set_error(ca, path, 0, "larger than %d bytes", CONFIG_MAX_BYTES);
		goto out;
	}
	buf[*len] = '\0';
	*text = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

static void free_entries(struct entries *e)
{
	int i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	free(e->v);
	free(e->lines);
}

static int assemble(struct config_argv *ca, struct entries *e, int argc, char *const argv[])
{
	int ncli = argc > 1 ? argc - 1 : 0, i;

	ca->argv = calloc((size_t)(1 + e->n + ncli + 1), sizeof(*ca->argv));
	ca->lines = calloc((size_t)(1 + e->n), sizeof(*ca->lines));
	if (!ca->argv || !ca->lines)
		return -ENOMEM;
	ca->argv[0] = argc > 0 && argv[0] ? argv[0] : (char *)"profd";
	for (i = 0; i < e->n; i++) {
		ca->argv[1 + i] = e->v[i];
		ca->lines[1 + i] = e->lines[i];
	}
	ca->nfile = e->n;
	for (i = 0; i < ncli; i++)
		ca->argv[1 + e->n + i] = argv[1 + i];
	ca->argc = 1 + e->n + ncli;
	/* The strings now belong to ca. */
	free(e->v);
	free(e->lines);
	memset(e, 0, sizeof(*e));
	return 0;
}

int config_to_argv(const char *path, const struct option *opts, unsigned flags, int argc,
		   char *const argv[], struct config_argv *out)
{
	struct entries e = { 0 };
	char *text = NULL;
	size_t len = 0;
	bool found;
	int err;

	memset(out, 0, sizeof(*out));
	if (!path || !*path) {
		set_error(out, "(none)", 0, "empty path");
		return -EINVAL;
	}
	err = load_file(out, path, flags, &text, &len);
	found = text != NULL;
	if (!err && found)
		err = parse_text(out, path, text, len, opts, &e);
	free(text);
	if (!err && found) {
		out->path = strdup(path);
		if (!out->path)
			err = -ENOMEM;
	}
	if (!err)
		err = assemble(out, &e, argc, argv);
	if (err) {
		char saved[sizeof(out->error)];

		free_entries(&e);
		memcpy(saved, out->error, sizeof(saved));
		config_argv_free(out);
		memcpy(out->error, saved, sizeof(saved));
		if (!out->error[0])
			snprintf(out->error, sizeof(out->error), "config: %s: %s", path,
				 strerror(-err));
	}
	return err;
}

unsigned config_argv_line(const struct config_argv *ca, int index)
{
	if (!ca->lines || index < 1 || index > ca->nfile)
		return 0;
	return ca->lines[index];
}

void config_argv_free(struct config_argv *ca)
{
	int i;

	if (!ca)
		return;
	for (i = 1; ca->argv && i <= ca->nfile; i++)
		free(ca->argv[i]);
	free(ca->argv);
	free(ca->lines);
	free(ca->path);
	memset(ca, 0, sizeof(*ca));
}

int config_find_path(int argc, char *const argv[], const char *shortopts,
		     const struct option *opts, int config_val, const char **path)
{
	struct option *table;
	char **copy;
	size_t n = 0;
	int saved_opterr = opterr, found = 0, c;

	if (argc < 2)
		return 0;
	while (opts[n].name)
		n++;
	/* Copies: getopt permutes argv, and a table's flag pointers would
	 * be written through. */
	table = calloc(n + 1, sizeof(*table));
	copy = calloc((size_t)argc + 1, sizeof(*copy));
	if (!table || !copy) {
		free(table);
		free(copy);
		return -ENOMEM;
	}
	memcpy(table, opts, n * sizeof(*table));
	for (size_t i = 0; i < n; i++)
		table[i].flag = NULL;
	memcpy(copy, argv, (size_t)argc * sizeof(*copy));
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, copy, shortopts, table, NULL)) != -1) {
		if (c == config_val && optarg) {
			*path = optarg;
			found = 1;
		}
	}
	opterr = saved_opterr;
	optind = 0;
	free(table);
	free(copy);
	return found;
}
