/* config: profd.conf -> "--key=value" arguments for the daemon's own
 * getopt_long table; good files, hostile files, and the --config scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "scratch.h"

enum { T_RETENTION = 256, T_COLOR, T_CONFIG };

/* Shaped like profd's table: flags, required and optional arguments. */
static const struct option opts[] = {
	{ "all-processes", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "socket", required_argument, NULL, 's' },
	{ "retention", required_argument, NULL, T_RETENTION },
	{ "color", optional_argument, NULL, T_COLOR },
	{ "config", required_argument, NULL, T_CONFIG },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};
#define SHORTOPTS "ap:r:s:vh"

static int setup(void **state)
{
	(void)state;
	return scratch_setup("test_config");
}

static int teardown(void **state)
{
	return scratch_teardown(state);
}

/* Writes a file of len bytes (text may hold NULs) and returns its path. */
static const char *write_file(const char *name, const char *text, size_t len, mode_t mode)
{
	static char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static const char *write_text(const char *name, const char *text)
{
	return write_file(name, text, strlen(text), 0644);
}

static char *cli0[] = { "profd", NULL };

static void test_good_file(void **state)
{
	static const char text[] = "\xef\xbb\xbf# profd.conf\n"
				   "\n"
				   "   # indented comment\n"
				   "rate = 199\n"
				   "\tpid=123\t\n"
				   "pid = 456   # inline comment\r\n"
				   "all-processes = yes\n"
				   "verbose = 2\n"
				   "retention = 1h\n"
				   "socket = /run/my dir/a#b.sock\n"
				   "color =\n"
				   "color = always\n"
				   "all-processes = off\n"
				   "pid = 789"; /* no final newline */
	static const char *want[] = {
		"--rate=199",	   "--pid=123",	   "--pid=456",	       "--all-processes",
		"--verbose",	   "--verbose",	   "--retention=1h",   "--socket=/run/my dir/a#b.sock",
		"--color",	   "--color=always", "--pid=789",
	};
	static const unsigned want_lines[] = { 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 14 };
	char *cli[] = { "/usr/sbin/profd", "--rate", "99", "-v", NULL };
	struct config_argv ca;
	const char *path = write_text("good.conf", text);
	size_t i, n = sizeof(want) / sizeof(want[0]);

	(void)state;
	assert_int_equal(config_to_argv(path, opts, 0, 4, cli, &ca), 0);
	assert_int_equal(ca.nfile, (int)n);
	assert_int_equal(ca.argc, 1 + (int)n + 3);
	assert_string_equal(ca.argv[0], "/usr/sbin/profd");
	for (i = 0; i < n; i++) {
		assert_string_equal(ca.argv[1 + i], want[i]);
		assert_int_equal(config_argv_line(&ca, (int)(1 + i)), want_lines[i]);
	}
	/* The command line comes last, untouched, and is not from the file. */
	assert_ptr_equal(ca.argv[1 + n], cli[1]);
	assert_ptr_equal(ca.argv[3 + n], cli[3]);
	assert_null(ca.argv[ca.argc]);
	assert_int_equal(config_argv_line(&ca, 1 + (int)n), 0);
	assert_int_equal(config_argv_line(&ca, 0), 0);
	assert_string_equal(ca.path, path);
	config_argv_free(&ca);
	assert_null(ca.argv);
}

/* One getopt_long pass over the result: the command line wins for
 * single values, repeated options add up. */
static void test_getopt_sees_file_then_cli(void **state)
{
	char *cli[] = { "profd", "-r", "20", "--pid=3", NULL };
	const char *path = write_text("order.conf", "rate = 10\npid = 1\npid = 2\nverbose = true\n");
	struct config_argv ca;
	const char *rate = NULL;
	int c, pids = 0, verbose = 0;

	(void)state;
	assert_int_equal(config_to_argv(path, opts, 0, 4, cli, &ca), 0);
	optind = 0;
	while ((c = getopt_long(ca.argc, ca.argv, SHORTOPTS, opts, NULL)) != -1) {
		if (c == 'r')
			rate = optarg;
		else if (c == 'p')
			pids++;
		else if (c == 'v')
			verbose++;
		else
			fail_msg("unexpected option %d", c);
	}
	assert_string_equal(rate, "20");
	assert_int_equal(pids, 3);
	assert_int_equal(verbose, 1);
	assert_int_equal(optind, ca.argc);
	optind = 0;
	config_argv_free(&ca);
}

static void test_missing_file(void **state)
{
	char path[600], want[700];
	struct config_argv ca;
	char *cli[] = { "profd", "--rate=5", NULL };

	(void)state;
	snprintf(path, sizeof(path), "%s/absent.conf", dir);
	/* The default path may be missing: the command line alone. */
	assert_int_equal(config_to_argv(path, opts, CONFIG_MISSING_OK, 2, cli, &ca), 0);
	assert_int_equal(ca.nfile, 0);
	assert_int_equal(ca.argc, 2);
	assert_string_equal(ca.argv[1], "--rate=5");
	assert_null(ca.path);
	config_argv_free(&ca);
	/* A path the user named must exist. */
	assert_int_equal(config_to_argv(path, opts, 0, 2, cli, &ca), -ENOENT);
	snprintf(want, sizeof(want), "config: %s: cannot open: No such file or directory", path);
	assert_string_equal(ca.error, want);
	assert_null(ca.argv);
	config_argv_free(&ca); /* safe after a failure */
	assert_int_equal(config_to_argv("", opts, 0, 2, cli, &ca), -EINVAL);
}

static void test_empty_and_devnull(void **state)
{
	struct config_argv ca;
	const char *path = write_text("empty.conf", "");

	(void)state;
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0);
	assert_int_equal(ca.argc, 1);
	assert_string_equal(ca.argv[0], "profd");
	config_argv_free(&ca);
	path = write_text("comments.conf", "# nothing\n\n   \n\t# here\n");
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0);
	assert_int_equal(ca.nfile, 0);
	config_argv_free(&ca);
	/* --config /dev/null: run with no configuration. */
	assert_int_equal(config_to_argv("/dev/null", opts, 0, 1, cli0, &ca), 0);
	assert_int_equal(ca.nfile, 0);
	config_argv_free(&ca);
	/* No argv at all still gives a program name. */
	assert_int_equal(config_to_argv("/dev/null", opts, 0, 0, NULL, &ca), 0);
	assert_int_equal(ca.argc, 1);
	assert_string_equal(ca.argv[0], "profd");
	config_argv_free(&ca);
}

struct bad_case {
	const char *text;
	size_t len; /* 0: strlen */
	unsigned line;
	const char *msg;
};

static void test_bad_lines(void **state)
{
	static const struct bad_case cases[] = {
		{ "rate = 5\n\n# x\nfoo = 1\n", 0, 4, "unknown key 'foo'" },
		{ "ret = 1h\n", 0, 1, "unknown key 'ret'" }, /* no abbreviations */
		{ "RATE = 5\n", 0, 1, "unknown key 'RATE'" },
		{ "--rate = 5\n", 0, 1, "unknown key '--rate'" },
		{ "rate 5\n", 0, 1, "bad line 'rate 5' (expected 'key = value')" },
		{ "all-processes\n", 0, 1, "bad line 'all-processes' (expected 'key = value')" },
		{ "[section]\n", 0, 1, "bad line '[section]' (expected 'key = value')" },
		{ " = 5\n", 0, 1, "bad line: no key before '='" },
		{ "rate =\n", 0, 1, "'rate' needs a value" },
		{ "rate = # nothing\n", 0, 1, "'rate' needs a value" },
		{ "all-processes = maybe\n", 0, 1, "'all-processes' takes true or false, not 'maybe'" },
		{ "verbose = 10\n", 0, 1, "'verbose' takes true or false, not '10'" },
		{ "help = true\n", 0, 1, "'help' only works on the command line" },
		{ "config = /etc/other.conf\n", 0, 1, "'config' only works on the command line" },
		{ "socket = /tmp/a\x1b[31m\n", 0, 1, "control character in the value of 'socket'" },
		{ "socket = /tmp/a\tb\n", 0, 1, "control character in the value of 'socket'" },
		/* Hostile bytes in a key come back quoted, never raw. */
		{ "\x1b]0;owned\x07 = 1\n", 0, 1, "unknown key '?]0;owned?'" },
		{ "r\xc3\xa4te = 1\n", 0, 1, "unknown key 'r??te'" },
		{ "rate = 5\nrate\0 = 6\n", 19, 2, "NUL byte (not a text file?)" },
	};
	char want[1024];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *bc = &cases[i];
		size_t len = bc->len ? bc->len : strlen(bc->text);
		const char *path = write_file("bad.conf", bc->text, len, 0644);
		struct config_argv ca;

		assert_int_equal(config_to_argv(path, opts, CONFIG_MISSING_OK, 1, cli0, &ca),
				 -EINVAL);
		snprintf(want, sizeof(want), "config: %s:%u: %s", path, bc->line, bc->msg);
		if (strcmp(ca.error, want))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, ca.error, want);
		assert_null(ca.argv);
		config_argv_free(&ca);
	}
}

static void test_long_key_is_truncated_in_error(void **state)
{
	char text[900], want[1024];
	struct config_argv ca;
	const char *path;

	(void)state;
	memset(text, 'k', 800);
	strcpy(text + 800, " = 1\n");
	path = write_text("longkey.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EINVAL);
	/* 76 characters of the key then "...": bounded whatever the input. */
	snprintf(want, sizeof(want), "config: %s:1: unknown key '%.76s...'", path, text);
	assert_string_equal(ca.error, want);
}

static void test_limits(void **state)
{
	static const char pad[] = "# padding padding padding padding padding padding\n";
	size_t big = CONFIG_MAX_BYTES + 1, i, o;
	char *text = malloc(big + CONFIG_MAX_LINE * 2 + 64), want[700];
	struct config_argv ca;
	const char *path;

	(void)state;
	assert_non_null(text);
	/* A line just at the limit is fine, one byte more is not. */
	memset(text, '#', CONFIG_MAX_LINE);
	strcpy(text + CONFIG_MAX_LINE, "\nrate = 1\n");
	path = write_text("maxline.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0);
	assert_int_equal(ca.nfile, 1);
	config_argv_free(&ca);
	memset(text, '#', CONFIG_MAX_LINE + 1);
	strcpy(text + CONFIG_MAX_LINE + 1, "\n");
	path = write_text("longline.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EINVAL);
	snprintf(want, sizeof(want), "config: %s:1: line longer than %d bytes", path,
		 CONFIG_MAX_LINE);
	assert_string_equal(ca.error, want);

	/* Too large, even though every line is a harmless comment. */
	for (o = 0; o < big; o += strlen(pad))
		memcpy(text + o, pad, strlen(pad));
	path = write_file("large.conf", text, o, 0644);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EFBIG);
	snprintf(want, sizeof(want), "config: %s: larger than %d bytes", path, CONFIG_MAX_BYTES);
	assert_string_equal(ca.error, want);

	/* Too many settings: by lines, and by a flag's count adding up. */
	for (o = 0, i = 0; i <= CONFIG_MAX_ENTRIES; i++)
		o += (size_t)sprintf(text + o, "pid = %zu\n", i + 1);
	path = write_text("many.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -E2BIG);
	snprintf(want, sizeof(want), "config: %s:%d: more than %d settings", path,
		 CONFIG_MAX_ENTRIES + 1, CONFIG_MAX_ENTRIES);
	assert_string_equal(ca.error, want);
	for (o = 0, i = 0; i < 40; i++)
		o += (size_t)sprintf(text + o, "verbose = 9\n");
	path = write_text("flags.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -E2BIG);
	/* Exactly the limit is accepted. */
	for (o = 0, i = 0; i < CONFIG_MAX_ENTRIES; i++)
		o += (size_t)sprintf(text + o, "pid = %zu\n", i + 1);
	path = write_text("limit.conf", text);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0);
	assert_int_equal(ca.nfile, CONFIG_MAX_ENTRIES);
	config_argv_free(&ca);
	free(text);
}

static void test_not_a_file(void **state)
{
	char path[600], want[700];
	struct config_argv ca;
	int fd;

	(void)state;
	assert_int_equal(config_to_argv(dir, opts, 0, 1, cli0, &ca), -EISDIR);
	snprintf(want, sizeof(want), "config: %s: is a directory", dir);
	assert_string_equal(ca.error, want);
	/* A FIFO with no writer must be refused, not waited on. */
	snprintf(path, sizeof(path), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EINVAL);
	snprintf(want, sizeof(want), "config: %s: not a regular file", path);
	assert_string_equal(ca.error, want);
	/* Nor may a writer feed it endlessly. */
	fd = open(path, O_RDWR | O_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "rate = 1\n", 9), 9);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EINVAL);
	close(fd);
}

static void test_permissions(void **state)
{
	char want[700];
	struct config_argv ca;
	const char *path;

	(void)state;
	path = write_file("world.conf", "rate = 1\n", 9, 0666);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EPERM);
	snprintf(want, sizeof(want),
		 "config: %s: writable by every user; refusing it (chmod o-w %s)", path, path);
	assert_string_equal(ca.error, want);
	path = write_file("private.conf", "rate = 1\n", 9, 0600);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0);
	config_argv_free(&ca);
	if (geteuid() != 0) {
		/* Owner and group checks need files owned by others. */
		return;
	}
	path = write_file("group.conf", "rate = 1\n", 9, 0664);
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), 0); /* group root: fine */
	config_argv_free(&ca);
	assert_int_equal(chown(path, 0, 4), 0);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EPERM);
	snprintf(want, sizeof(want), "config: %s: writable by group 4; refusing it (chmod g-w %s)",
		 path, path);
	assert_string_equal(ca.error, want);
	path = write_file("owner.conf", "rate = 1\n", 9, 0644);
	assert_int_equal(chown(path, 65534, 0), 0);
	assert_int_equal(config_to_argv(path, opts, 0, 1, cli0, &ca), -EPERM);
	snprintf(want, sizeof(want), "config: %s: owned by uid 65534, neither root nor us; refusing it",
		 path);
	assert_string_equal(ca.error, want);
}

static void test_find_path(void **state)
{
	char *a1[] = { "profd", "--rate", "5", "--config", "/a.conf", NULL };
	char *a2[] = { "profd", "--config=/b.conf", "-v", NULL };
	char *a3[] = { "profd", "--conf=/c.conf", NULL }; /* getopt's abbreviation */
	char *a4[] = { "profd", "--config=/1", "--config", "/2", NULL };
	char *a5[] = { "profd", "--", "--config=/x", NULL };
	char *a6[] = { "profd", "-s", "--config", "x", NULL }; /* the socket's argument */
	char *a7[] = { "profd", "--rate", "5", "--bogus", "stray", NULL };
	char *a8[] = { "profd", "--config", NULL }; /* the real parse reports it */
	const char *p = NULL;

	(void)state;
	assert_int_equal(config_find_path(5, a1, SHORTOPTS, opts, T_CONFIG, &p), 1);
	assert_string_equal(p, "/a.conf");
	/* argv is not reordered and getopt starts afresh afterwards. */
	assert_string_equal(a1[1], "--rate");
	assert_string_equal(a1[3], "--config");
	assert_int_equal(optind, 0);
	assert_int_equal(config_find_path(3, a2, SHORTOPTS, opts, T_CONFIG, &p), 1);
	assert_string_equal(p, "/b.conf");
	assert_int_equal(config_find_path(2, a3, SHORTOPTS, opts, T_CONFIG, &p), 1);
	assert_string_equal(p, "/c.conf");
	assert_int_equal(config_find_path(4, a4, SHORTOPTS, opts, T_CONFIG, &p), 1);
	assert_string_equal(p, "/2");
	p = NULL;
	assert_int_equal(config_find_path(3, a5, SHORTOPTS, opts, T_CONFIG, &p), 0);
	assert_int_equal(config_find_path(4, a6, SHORTOPTS, opts, T_CONFIG, &p), 0);
	assert_int_equal(config_find_path(5, a7, SHORTOPTS, opts, T_CONFIG, &p), 0);
	assert_int_equal(config_find_path(2, a8, SHORTOPTS, opts, T_CONFIG, &p), 0);
	assert_int_equal(config_find_path(1, cli0, SHORTOPTS, opts, T_CONFIG, &p), 0);
	assert_null(p);
	assert_string_equal(a7[4], "stray");
	assert_int_equal(opterr, 1); /* restored */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_getopt_sees_file_then_cli),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_empty_and_devnull),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_long_key_is_truncated_in_error),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_not_a_file),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_find_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
