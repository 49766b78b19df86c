/* kfeatures: what this kernel offers profd, probed at start and shown by
 * `profd --check`.  Each probe costs a few ms: a map or a two-instruction
 * program made and dropped, a file read.  A probe that cannot run (no
 * privilege, no BTF) answers "no" and says why. */
#ifndef PROFD_KFEATURES_H
#define PROFD_KFEATURES_H

#include <fcntl.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdio.h>

/* The facts with a reason of their own, in kfeatures.why. */
enum kfeature {
	KF_BTF,
	KF_RINGBUF,
	KF_TASK_STORAGE,
	KF_BPF_LOOP,
	KF_TASK_PT_REGS,
	KF_CURRENT_TASK_BTF,
	KF_COPY_FROM_USER_TASK,
	KF_ATTACH_COOKIE,
	KF_TP_BTF,
	KF_TRAMPOLINES,
	KF_KPROBES,
	KF_UPROBES,
	KF_TRACEFS,
	KF_PERF_EVENTS,
	KF_PID_NS,
	KF_CGROUP2,
	KF_COUNT,
};

#define KF_WHY_LEN 112

struct kfeatures {
	char release[65];          /* uname -r */
	int major, minor, patch;   /* parsed from release */
	bool btf;                  /* /sys/kernel/btf/vmlinux readable */
	bool ringbuf;              /* BPF_MAP_TYPE_RINGBUF */
	bool task_storage;         /* BPF_MAP_TYPE_TASK_STORAGE (5.11+) */
	bool bpf_loop;             /* helper bpf_loop in perf_event programs (5.17+) */
	bool task_pt_regs;         /* helper bpf_task_pt_regs (5.15+) */
	bool current_task_btf;     /* helper bpf_get_current_task_btf (5.11+) */
	bool copy_from_user_task;  /* helper bpf_copy_from_user_task (5.18+) */
	bool attach_cookie;        /* helper bpf_get_attach_cookie (5.15+): which CUDA or
				    * mmap function a shared uprobe program runs for */
	bool tp_btf;               /* BTF raw tracepoints attach (try sched_process_exec) */
	bool trampolines;          /* fentry attach really works (load AND attach a tiny
				    * fentry program) */
	bool kprobes;              /* a kprobe can be created (perf_event_open on the kprobe PMU) */
	bool uprobes;              /* /sys/bus/event_source/devices/uprobe/type exists */
	bool tracefs;              /* tracefs mounted (/sys/kernel/tracing or
				    * /sys/kernel/debug/tracing) */
	int perf_event_paranoid;   /* /proc/sys/kernel/perf_event_paranoid, -99 unknown */
	int unprivileged_bpf_disabled; /* /proc/sys/kernel/unprivileged_bpf_disabled,
					* -1 unknown */
	char lockdown[32];         /* the [selected] word of /sys/kernel/security/lockdown,
				    * "" if absent */
	bool pid_ns_init;          /* profd runs in the initial pid namespace */
	bool cgroup2;              /* cgroup v2 mounted somewhere (unified or hybrid) */
	/* Added beyond the facts above: */
	bool perf_events;          /* a cpu-clock perf event opens (what sampling needs) */
	bool root;                 /* probed with euid 0: a "no" without it may be privilege */
	char why[KF_COUNT][KF_WHY_LEN]; /* how each fact was found, or why it is "no" */
};

/* Fills f.  0, or -errno only if nothing could be probed. */
/* Load a two-instruction tracing program (fentry, fexit, tp_btf) for the
 * BTF id and attach it for a moment.  0 or -errno; *step names the step
 * that failed ("load", "attach"). */
/* pidfd_open's flag for a pidfd of any thread, not only a leader (6.9+). */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

int kfeatures_tracing_attaches(int btf_id, enum bpf_attach_type type, const char **step);
int kfeatures_probe(struct kfeatures *f);
/* Only the map types and helpers (each a two-instruction program load):
 * what picking the BPF build needs, without attaching anything. */
int kfeatures_probe_helpers(struct kfeatures *f);

/* One line per fact for --check: writes to f, "name: value (why)" */
void kfeatures_print(const struct kfeatures *k, FILE *out);

/* The pure parts, for the tests. */
/* "6.1.0-18-amd64" -> 6, 1, 0; missing parts are 0.  0, or -EINVAL when
 * release does not start with a number. */
int kfeatures_parse_release(const char *release, int *major, int *minor, int *patch);
/* "none [integrity] confidentiality" -> "integrity" into out ("" when
 * no word is selected).  0, -EINVAL or -ENAMETOOLONG (out too small). */
int kfeatures_parse_lockdown(const char *text, char *out, size_t len);
/* Whether the kernel is at least major.minor. */
bool kfeatures_at_least(const struct kfeatures *k, int major, int minor);

#endif
