/* daemon.h: state shared by profd's main loop and its control handlers. */
#ifndef PROFD_DAEMON_H
#define PROFD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "history.h"
#include "config.h"
#include "ingest.h"
#include "proctable.h"
#include "push.h"
#include "sampler.h"
#include "symbolize.h"

#define PROFD_DEFAULT_SOCKET "/run/profd/profd.sock"

struct daemon_config {
	uint32_t rate_hz;
	uint32_t *pids;
	size_t npids;
	const char *socket_path;
	uint64_t retention_ns;
	uint64_t bucket_ns;
	uint64_t duration_ns; /* 0 = run until signalled */
	size_t max_procs;
	uint32_t ringbuf_bytes;
	uint32_t stack_map_entries;
	int verbose;
	bool python_uprobe;
	uint64_t unwind_table_bytes;
	uint64_t max_stacks;
	const char *state_dir;     /* history database; NULL with no_history */
	bool no_history;
	uint64_t history_max_bytes;
	uint64_t flush_interval_ns;
	int gpu_mode;              /* enum gpu_mode */
	int gpu_hook;              /* enum gpu_hook: AUTO or TRACEPOINT */
	const char **gpu_devices;  /* --gpu-device PATH[=CLASS] */
	size_t ngpu_devices;
	const char *push_url;      /* NULL: no push */
	uint64_t push_interval_ns;
};

struct daemon {
	struct daemon_config cfg;
	/* The config file's and command line's arguments, parsed into cfg
	 * (whose strings point into them), kept for SIGHUP. */
	struct config_argv args;
	const char *config_path;
	unsigned config_flags;
	int argc;
	char **argv;
	struct sampler *sampler;
	struct gpu *gpu;             /* GPU driver and CUDA tracing (gpu.h) */
	struct symbolizer *sym;
	struct proctable pt;
	struct aggregate agg;
	struct ingest in;
	struct history *hist;     /* NULL: memory only */
	struct hashmap tables_pending; /* pids waiting for unwind tables */
	uint32_t *tables_queue;
	size_t tables_head, tables_n, tables_cap;
	uint64_t flush_next_mono_ns, prune_next_mono_ns;
	uint64_t flushes, flush_errors, flush_rows, flush_refused, flush_ns_last;
	int listen_fd;
	uint64_t start_mono_ns;
	uint64_t ready_mono_ns;
	uint64_t requests, request_errors;
	struct pusher *pusher;       /* --push, or NULL */
	struct push_window *push_win;
	uint64_t push_next_mono_ns;
};

/* tables.c: native unwind tables, built off the sample path */
void tables_request(struct daemon *d, uint32_t pid);
void tables_forget(struct daemon *d, uint32_t pid);
bool tables_pending(const struct daemon *d);
void tables_work(struct daemon *d);
void tables_prebuild(struct daemon *d);
void tables_free(struct daemon *d);

/* persist.c */
void persist_open(struct daemon *d);
void persist_flush(struct daemon *d);
void persist_tick(struct daemon *d);

/* control.c */
int control_listen(const char *path);
void control_handle(struct daemon *d, int listen_fd);

uint64_t daemon_mono_ns(void);
uint64_t daemon_realtime_ns(void);

#endif
