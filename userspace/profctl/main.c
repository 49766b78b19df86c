/* profctl: ask profd for profiles and render them. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: profctl [--socket PATH] [--json] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  list                      processes with samples (pid, comm, exe, samples)\n"
		"  stats                     profd's counters: samples, drops, memory, CPU\n"
		"  dump (--pid N | --comm NAME | --exe PATH | --all) [--format FMT] [-o FILE]\n"
		"                            a profile; FMT: folded, svg, pprof, speedscope,\n"
		"                            pstats, json; --since/--until for a time window\n"
		"  record --pid N --duration 30s -o out.svg\n"
		"                            record from now for a while, then write the file\n"
		"  top [--pid N]             live view of the hottest functions\n"
		"  render -i FILE.folded [--format FMT] [-o FILE]\n"
		"                            render a saved folded profile offline\n"
		"  diff BEFORE.folded AFTER.folded [-o OUT.svg]\n"
		"  diff --pid N --before 10m..5m --after 5m.. [-o OUT.svg]\n"
		"                            differential flamegraph (red grew, blue shrank)\n"
		"  stacks --pid N [--json]   every thread's current stack, state and wait\n"
		"\n"
		"  -s, --socket PATH         profd's socket (default %s, or $PROFD_SOCKET)\n"
		"  -j, --json                machine-readable output (list, stats, errors)\n"
		"  -h, --help                this help; COMMAND --help for a command's\n",
		PROFCTL_DEFAULT_SOCKET);
}

struct command {
	const char *name;
	int (*fn)(const struct ctl *ctl, int argc, char **argv);
};

static int run_render(const struct ctl *ctl, int argc, char **argv)
{
	(void)ctl;
	return cmd_render(argc, argv);
}

static const struct command commands[] = {
	{ "list", cmd_list },
	{ "stats", cmd_stats },
	{ "dump", cmd_dump },
	{ "record", cmd_record },
	{ "top", cmd_top },
	{ "render", run_render },
	{ "diff", cmd_diff },
	{ "stacks", cmd_stacks },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl ctl = { .socket_path = getenv("PROFD_SOCKET") };
	size_t i;
	int opt;

	if (!ctl.socket_path || !*ctl.socket_path)
		ctl.socket_path = PROFCTL_DEFAULT_SOCKET;
	/* '+': stop at the command so its own options stay for it. */
	while ((opt = getopt_long(argc, argv, "+s:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 's': ctl.socket_path = optarg; break;
		case 'j': ctl.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[optind], commands[i].name) == 0) {
			char **sub = argv + optind;
			int subc = argc - optind;

			optind = 0; /* 0 fully re-initializes getopt for the subcommand */
			return commands[i].fn(&ctl, subc, sub);
		}
	}
	fprintf(stderr, "profctl: unknown command '%s' (try --help)\n", argv[optind]);
	return 2;
}
