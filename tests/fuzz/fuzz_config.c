/* libFuzzer target: the configuration file parser.  The file is a memfd
 * (mode 0600, ours) opened by its /proc/self/fd path, as a real file
 * would be.  The option table has profd's shapes: flags, values and
 * the command-line-only options. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "config.h"
#include "fuzz.h"
#include "log.h"

static const struct option opts[] = {
	{ "all-processes", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "socket", required_argument, NULL, 's' },
	{ "retention", required_argument, NULL, 1 },
	{ "color", optional_argument, NULL, 2 },
	{ "config", required_argument, NULL, 3 },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	memfd = memfd_create("fuzz_config", MFD_CLOEXEC);
	if (memfd < 0 || fchmod(memfd, 0600)) {
		perror("fuzz_config: memfd");
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *const argv[] = { "profd", "--rate=99", NULL };
	struct config_argv ca;
	int err, i;

	if (fuzz_fill_fd(memfd, data, size))
		return 0;
	err = config_to_argv(path, opts, 0, 2, argv, &ca);
	if (err) {
		CHECK(err < 0 && ca.error[0] && !ca.argv && !ca.argc);
		config_argv_free(&ca);
		return 0;
	}
	CHECK(size <= CONFIG_MAX_BYTES);
	CHECK(ca.argc == 1 + ca.nfile + 1 && ca.nfile <= CONFIG_MAX_ENTRIES);
	CHECK(ca.argv[ca.argc] == NULL && ca.argv[0] == argv[0] && ca.argv[ca.argc - 1] == argv[1]);
	for (i = 1; i <= ca.nfile; i++) {
		CHECK(!strncmp(ca.argv[i], "--", 2) && strlen(ca.argv[i]) <= CONFIG_MAX_LINE + 2);
		CHECK(config_argv_line(&ca, i) >= 1 && config_argv_line(&ca, i) <= size + 1);
		CHECK(i == 1 || config_argv_line(&ca, i) >= config_argv_line(&ca, i - 1));
	}
	CHECK(config_argv_line(&ca, ca.argc - 1) == 0);
	config_argv_free(&ca);
	return 0;
}
