/* options.c: profd's options, from its config file and command line
 * alike (config_to_argv): the help text, the option table, and one pass
 * that checks every value (optvalue.c) into a struct daemon_config. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "options.h"
#include "duration.h"
#include "bpfload.h"
#include "gpu.h"
#include "identity.h"
#include "optvalue.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: profd [--all-processes | --pid PID ...] [options]\n"
		"\n"
		"Samples every online CPU with BPF and keeps per-process profiles that\n"
		"profctl reads over a Unix socket.\n"
		"\n"
		"  -a, --all-processes      sample every process (the default)\n"
		"  -p, --pid PID            sample only PID and its threads (repeatable)\n"
		"  -r, --rate HZ            samples per second per CPU (default 99)\n"
		"  -s, --socket PATH        control socket (default %s)\n"
		"      --retention DUR      keep exited processes this long (default 24h)\n"
		"      --bucket DUR         time bucket width (default 10s)\n"
		"      --max-procs N        processes tracked at most (default 65536)\n"
		"      --max-stacks-per-process N  distinct stacks kept per process (200000)\n"
		"      --state-dir DIR      history database directory (default /var/lib/profd)\n"
		"      --history-max-size BYTES  cap on the history file (default 1G)\n"
		"      --flush-interval DUR write profiles to history this often (default 10s)\n"
		"      --no-history         keep profiles in memory only\n"
		"      --ringbuf-size BYTES sample ring size, power of two (default: 2 s of\n"
		"                           samples at the rate on every CPU, 1M-64M; 4M at\n"
		"                           least with --off-cpu, --memory or --mmap)\n"
		"      --stack-map-entries N stack IDs BPF remembers as sent (rounded up to a\n"
		"                           power of two >= 65536; default 262144)\n"
		"      --bpf-build auto|modern|legacy  which build of the BPF programs to load:\n"
		"                           auto probes the kernel (modern needs bpf_loop,\n"
		"                           5.17+; legacy runs on 5.10+ with shorter loops)\n"
		"      --python-uprobe      also find Python threads with a uprobe on the eval\n"
		"                           loop (costs the program ~1us per C->Python call)\n"
		"      --unwind-table-bytes BYTES most memory for .eh_frame unwind tables\n"
		"                           (default 64M), taken 2M at a time as needed\n"
		"      --gpu auto|on|off    GPU driver calls and CUDA entry points: auto traces\n"
		"                           the accelerator drivers loaded (CUDA with NVIDIA's),\n"
		"                           on also probes CUDA libraries without a driver\n"
		"      --cuda-launches      also trace kernel and graph launches (named by\n"
		"                           kernel; two uprobe traps each: +24%% on a\n"
		"                           training step launching ~13,000 a second)\n"
		"      --collectives, --no-collectives  time every blocking call of MPI,\n"
		"                           NCCL and PyTorch's c10d (comm and comm-calls\n"
		"                           profiles) by uprobes: ~16 us a call, +16%% CPU\n"
		"                           for a rank making 10,000 a second; off: the comm\n"
		"                           profile is read from samples in those calls\n"
		"      --gpu-device PATH[=CLASS] also watch this character device; CLASS\n"
		"                           (nvidia, uvm, kfd, drm) names its commands\n"
		"      --gpu-syscall-hook auto|uprobe|tracepoint  how ioctl and poll are\n"
		"                           traced: auto uses fentry/fexit on their kernel\n"
		"                           functions, else uprobe; uprobe probes the C\n"
		"                           library's ioctl/poll/ppoll (only their callers pay;\n"
		"                           static and Go binaries are not seen); tracepoint\n"
		"                           the raw syscall tracepoints (every syscall pays)\n"
		"      --off-cpu, --no-off-cpu  record where threads block and for how long\n"
		"                           (off-cpu and wall profiles, native frames in\n"
		"                           profctl stacks; off:\n"
		"                           it costs every context switch ~150 ns)\n"
		"      --off-cpu-threshold DUR  shortest block recorded (default 1ms)\n"
		"      --memory, --no-memory  record which stacks make memory resident (page\n"
		"                           faults, sampled by bytes: the memory profile\n"
		"                           type; off: every page fault pays ~85 ns)\n"
		"      --memory-sample-kib N  mean KiB made resident per memory event\n"
		"                           (default 2048, 4 to 1048576)\n"
		"      --mmap, --no-mmap    record mmap/munmap/mremap/brk sizes by stack (the\n"
		"                           mmap profile type; uprobes on the C libraries)\n"
		"      --push URL           send profiles to a Pyroscope server: URL/ingest,\n"
		"                           or its push API when URL ends with\n"
		"                           /push.v1.PusherService/Push\n"
		"      --push-protocol auto|ingest|push|otlp  what --push URL speaks: auto\n"
		"                           goes by the URL; ingest is /ingest (every\n"
		"                           Pyroscope), push the push.v1 API (Pyroscope\n"
		"                           1.0+), otlp OTLP profiles over HTTP\n"
		"      --push-interval DUR  how often to send them (default 10s)\n"
		"      --push-name TEMPLATE each series' application name from the process's\n"
		"                           workload: {service} (default), {unit}, {container},\n"
		"                           {pod}, {qos}, {runtime}, {script}, {comm}, {exe},\n"
		"                           {cgroup}, {rank}, {local_rank}, {world_size}, {job},\n"
		"                           with text between (\"{service}-{pod}\")\n"
		"      --duration DUR       exit after DUR (for scripts and benchmarks)\n"
		"      --config PATH        settings file (default %s)\n"
		"      --check              say what this kernel offers and which features\n"
		"                           can run, then exit (0 when CPU sampling can)\n"
		"  -v, --verbose            more logging (repeat for debug)\n"
		"  -h, --help               this help\n"
		"\n"
		"Durations take a unit: 500ms, 10s, 5m, 24h.\n",
		PROFD_DEFAULT_SOCKET, CONFIG_DEFAULT_PATH);
}

enum {
	OPT_RETENTION = 256,
	OPT_BUCKET,
	OPT_MAX_PROCS,
	OPT_RINGBUF,
	OPT_STACKMAP,
	OPT_DURATION,
	OPT_PY_UPROBE,
	OPT_UNWIND_BYTES,
	OPT_CONFIG,
	OPT_PUSH,
	OPT_PUSH_INTERVAL,
	OPT_PUSH_PROTOCOL,
	OPT_PUSH_NAME,
	OPT_MAX_STACKS,
	OPT_STATE_DIR,
	OPT_NO_HISTORY,
	OPT_HISTORY_MAX,
	OPT_FLUSH_INTERVAL,
	OPT_GPU,
	OPT_GPU_DEVICE,
	OPT_GPU_HOOK,
	OPT_OFFCPU,
	OPT_NO_OFFCPU,
	OPT_OFFCPU_MIN,
	OPT_MEMORY,
	OPT_NO_MEMORY,
	OPT_MEMORY_KIB,
	OPT_MMAP,
	OPT_NO_MMAP,
	OPT_BPF_BUILD,
	OPT_CUDA_LAUNCHES,
	OPT_COMM,
	OPT_NO_COMM,
	OPT_CHECK,
};

#define SHORT_OPTS "ap:r:s:vh"

static const struct option long_opts[] = {
	{ "all-processes", no_argument, NULL, 'a' },
	{ "pid", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "socket", required_argument, NULL, 's' },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "bucket", required_argument, NULL, OPT_BUCKET },
	{ "max-procs", required_argument, NULL, OPT_MAX_PROCS },
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
	{ "stack-map-entries", required_argument, NULL, OPT_STACKMAP },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "python-uprobe", no_argument, NULL, OPT_PY_UPROBE },
	{ "unwind-table-bytes", required_argument, NULL, OPT_UNWIND_BYTES },
	{ "max-stacks-per-process", required_argument, NULL, OPT_MAX_STACKS },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "no-history", no_argument, NULL, OPT_NO_HISTORY },
	{ "history-max-size", required_argument, NULL, OPT_HISTORY_MAX },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH_INTERVAL },
	{ "gpu", required_argument, NULL, OPT_GPU },
	{ "gpu-device", required_argument, NULL, OPT_GPU_DEVICE },
	{ "gpu-syscall-hook", required_argument, NULL, OPT_GPU_HOOK },
	{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
	{ "no-off-cpu", no_argument, NULL, OPT_NO_OFFCPU },
	{ "off-cpu-threshold", required_argument, NULL, OPT_OFFCPU_MIN },
	{ "memory", no_argument, NULL, OPT_MEMORY },
	{ "no-memory", no_argument, NULL, OPT_NO_MEMORY },
	{ "memory-sample-kib", required_argument, NULL, OPT_MEMORY_KIB },
	{ "mmap", no_argument, NULL, OPT_MMAP },
	{ "bpf-build", required_argument, NULL, OPT_BPF_BUILD },
	{ "cuda-launches", no_argument, NULL, OPT_CUDA_LAUNCHES },
	{ "collectives", no_argument, NULL, OPT_COMM },
	{ "no-collectives", no_argument, NULL, OPT_NO_COMM },
	{ "no-mmap", no_argument, NULL, OPT_NO_MMAP },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "push", required_argument, NULL, OPT_PUSH },
	{ "push-interval", required_argument, NULL, OPT_PUSH_INTERVAL },
	{ "push-protocol", required_argument, NULL, OPT_PUSH_PROTOCOL },
	{ "push-name", required_argument, NULL, OPT_PUSH_NAME },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int add_pid(struct daemon_config *c, const char *arg)
{
	uint64_t pid;
	uint32_t *p;
	char path[64];

	if (optvalue_u64(arg, 1, 0x3fffffff, &pid)) {
		fprintf(stderr, "profd: --pid: '%s' is not a process id\n", arg);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)pid);
	if (access(path, F_OK)) {
		fprintf(stderr, "profd: --pid %llu: no such process\n", (unsigned long long)pid);
		return -ESRCH;
	}
	p = realloc(c->pids, (c->npids + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->pids = p;
	c->pids[c->npids++] = (uint32_t)pid;
	return 0;
}

/* --bpf-build auto|modern|legacy */
static int opt_bpf_build(struct daemon_config *c, const char *arg)
{
	if (!strcmp(arg, "auto"))
		c->bpf_build = BPFLOAD_AUTO;
	else if (!strcmp(arg, "modern"))
		c->bpf_build = BPFLOAD_MODERN;
	else if (!strcmp(arg, "legacy"))
		c->bpf_build = BPFLOAD_LEGACY;
	else {
		fprintf(stderr, "profd: --bpf-build: '%s' must be auto, modern or legacy\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* --gpu MODE, --gpu-syscall-hook HOOK and --gpu-device PATH[=CLASS] (checked when GPU tracing
 * starts: the device must exist then). */
static int opt_gpu(struct daemon_config *c, int opt, const char *arg)
{
	static const char *const modes[] = { [GPU_MODE_AUTO] = "auto", [GPU_MODE_ON] = "on",
					     [GPU_MODE_OFF] = "off" };
	const char **devs;
	int i;

	if (opt == OPT_GPU_HOOK) {
		if (strcmp(arg, "auto") == 0)
			c->gpu_hook = GPU_HOOK_AUTO;
		else if (strcmp(arg, "uprobe") == 0)
			c->gpu_hook = GPU_HOOK_UPROBE;
		else if (strcmp(arg, "tracepoint") == 0)
			c->gpu_hook = GPU_HOOK_TRACEPOINT;
		else {
			fprintf(stderr,
				"profd: --gpu-syscall-hook: '%s' must be auto, uprobe or tracepoint\n",
				arg);
			return -EINVAL;
		}
		return 0;
	}
	if (opt == OPT_GPU_DEVICE) {
		devs = realloc(c->gpu_devices, (c->ngpu_devices + 1) * sizeof(*devs));
		if (!devs)
			return -ENOMEM;
		c->gpu_devices = devs;
		c->gpu_devices[c->ngpu_devices++] = arg;
		return 0;
	}
	for (i = 0; i < 3; i++) {
		if (strcmp(arg, modes[i]) == 0) {
			c->gpu_mode = i;
			return 0;
		}
	}
	fprintf(stderr, "profd: --gpu: '%s' must be auto, on or off\n", arg);
	return -EINVAL;
}

/* --push-protocol auto|ingest|push|otlp: a bare server URL says nothing
 * of which API to use, and asking the server would block start-up. */
static int opt_push_protocol(struct daemon_config *c, const char *arg)
{
	static const char *const names[] = { [PUSH_PROTO_AUTO] = "auto",
					     [PUSH_PROTO_INGEST] = "ingest",
					     [PUSH_PROTO_CONNECT] = "push",
					     [PUSH_PROTO_OTLP] = "otlp" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(arg, names[i])) {
			c->push_protocol = (enum push_protocol)i;
			return 0;
		}
	}
	fprintf(stderr, "profd: --push-protocol: '%s' must be auto, ingest, push or otlp\n", arg);
	return -EINVAL;
}

/* --push-name TEMPLATE: checked now, so a typo stops the start. */
static int opt_push_name(struct daemon_config *c, const char *arg)
{
	if (identity_check_template(arg) || strlen(arg) >= 128) {
		fprintf(stderr, "profd: --push-name: '%s' is not a template of {service}, {unit}, "
				"{container}, {pod}, {qos}, {runtime}, {script}, {comm}, {exe}, "
				"{cgroup}, {rank}, {local_rank}, {world_size}, {job} (under 128 bytes)\n",
			arg);
		return -EINVAL;
	}
	c->push_name = arg;
	return 0;
}

/* One getopt pass over the config file's options, then the command
 * line's (config_to_argv).  A --pid or --all-processes on the command
 * line replaces the file's pids rather than adding to them.
 * Returns 0 to run, 1 to exit successfully (--help), -1 on a usage error. */
int daemon_parse_args(const struct config_argv *ca, struct daemon_config *c)
{
	int argc = ca->argc, file_end = ca->nfile + 1, opt;
	char **argv = ca->argv;
	bool cli_pids = false;
	uint64_t v = 0;

	optind = 0; /* glibc: a full reset, also for a reload */
	c->rate_hz = 99;
	c->socket_path = PROFD_DEFAULT_SOCKET;
	c->retention_ns = 24ull * 3600 * 1000000000ull;
	c->bucket_ns = 10ull * 1000000000ull;
	/* As wide as the default bucket: a cell's rows are written about
	 * half as often as at 5 s, which cost a steady 2-thread process ~1 us
	 * more userspace CPU per sample at 99 Hz. */
	c->flush_interval_ns = 10ull * 1000000000ull;
	c->history_max_bytes = 1ull << 30;
	c->push_interval_ns = 10ull * 1000000000ull;
	c->offcpu = false; /* sched_switch costs every switch: docs/design/offcpu.md */
	c->comm = false;   /* ~16 us a call: bench/comm_cost.py, bench/RESULTS.md */
	c->offcpu_min_ns = 1000000ull;
	c->memory = false; /* every user page fault pays: docs/design/memory.md */
	c->memory_sample_kib = 2048;
	while ((opt = getopt_long(argc, argv, SHORT_OPTS, long_opts, NULL)) != -1) {
		int err = 0;

		if ((opt == 'a' || opt == 'p') && optind > file_end && !cli_pids) {
			c->npids = 0;
			cli_pids = true;
		}
		switch (opt) {
		case 'a': break;
		case 'p': err = add_pid(c, optarg); break;
		case 'r':
			err = optvalue_number("rate", optarg, 1, 100000, &v);
			c->rate_hz = (uint32_t)v;
			break;
		case 's': c->socket_path = optarg; break;
		case OPT_RETENTION: err = optvalue_duration("retention", optarg, &c->retention_ns); break;
		case OPT_BUCKET: err = optvalue_duration("bucket", optarg, &c->bucket_ns); break;
		case OPT_DURATION: err = optvalue_duration("duration", optarg, &c->duration_ns); break;
		case OPT_MAX_PROCS:
			err = optvalue_number("max-procs", optarg, 16, 10000000, &v);
			c->max_procs = (size_t)v;
			break;
		case OPT_RINGBUF:
			err = optvalue_size("ringbuf-size", optarg, 4096, 1u << 30, &v);
			if (!err && (v & (v - 1))) {
				fprintf(stderr, "profd: --ringbuf-size must be a power of two\n");
				err = -EINVAL;
			}
			c->ringbuf_bytes = (uint32_t)v;
			break;
		case OPT_STACKMAP:
			err = optvalue_number("stack-map-entries", optarg, 64, 1u << 22, &v);
			c->stack_map_entries = (uint32_t)v;
			break;
		case OPT_PY_UPROBE: c->python_uprobe = true; break;
		case OPT_STATE_DIR: c->state_dir = optarg; break;
		case OPT_NO_HISTORY: c->no_history = true; break;
		case OPT_HISTORY_MAX:
			err = optvalue_size("history-max-size", optarg, 1u << 20, 1ull << 44, &c->history_max_bytes);
			break;
		case OPT_FLUSH_INTERVAL: err = optvalue_duration("flush-interval", optarg, &c->flush_interval_ns); break;
		case OPT_MAX_STACKS:
			err = optvalue_number("max-stacks-per-process", optarg, 16, 100000000, &c->max_stacks);
			break;
		case OPT_UNWIND_BYTES:
			err = optvalue_size("unwind-table-bytes", optarg, 1u << 20, 1ull << 34, &v);
			c->unwind_table_bytes = v;
			break;
		case OPT_CONFIG: break; /* read already, by config_find_path */
		case OPT_CHECK:
			/* An action, not a setting: in the file it would stop the service. */
			if (optind <= file_end) {
				fprintf(stderr, "profd: check: belongs on the command line, not in the "
						"configuration file\n");
				err = -EINVAL;
			}
			c->check = true;
			break;
		case OPT_GPU:
		case OPT_GPU_DEVICE:
		case OPT_GPU_HOOK: err = opt_gpu(c, opt, optarg); break;
		case OPT_OFFCPU: c->offcpu = true; break;
		case OPT_NO_OFFCPU: c->offcpu = false; break;
		case OPT_OFFCPU_MIN:
			err = optvalue_duration("off-cpu-threshold", optarg, &c->offcpu_min_ns);
			break;
		case OPT_MEMORY: c->memory = true; break;
		case OPT_NO_MEMORY: c->memory = false; break;
		case OPT_MMAP: c->mmap = true; break;
		case OPT_BPF_BUILD: err = opt_bpf_build(c, optarg); break;
		case OPT_CUDA_LAUNCHES: c->cuda_launches = true; break;
		case OPT_COMM: c->comm = true; break;
		case OPT_NO_COMM: c->comm = false; break;
		case OPT_NO_MMAP: c->mmap = false; break;
		case OPT_MEMORY_KIB:
			err = optvalue_number("memory-sample-kib", optarg, 4, 1u << 20, &c->memory_sample_kib);
			break;
		case OPT_PUSH: c->push_url = optarg; break;
		case OPT_PUSH_INTERVAL:
			err = optvalue_duration("push-interval", optarg, &c->push_interval_ns);
			break;
		case OPT_PUSH_PROTOCOL: err = opt_push_protocol(c, optarg); break;
		case OPT_PUSH_NAME: err = opt_push_name(c, optarg); break;
		case 'v': c->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
		if (err) {
			optvalue_origin(ca, optind - 1);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "profd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (c->push_interval_ns < 1000000000ull) {
		fprintf(stderr, "profd: --push-interval must be at least 1s\n");
		return -1;
	}
	if (c->bucket_ns < 1000000000ull) {
		fprintf(stderr, "profd: --bucket must be at least 1s\n");
		return -1;
	}
	return 0;
}

int daemon_find_config(int argc, char **argv, const char **path)
{
	return config_find_path(argc, argv, SHORT_OPTS, long_opts, OPT_CONFIG, path);
}

int daemon_config_argv(const char *path, unsigned flags, int argc, char **argv, struct config_argv *out)
{
	return config_to_argv(path, long_opts, flags, argc, argv, out);
}
