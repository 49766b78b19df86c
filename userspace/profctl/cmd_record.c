/* profctl record: profile a process from now for a while, then write the
 * file (py-spy record's habit).  Exact window: the profile at the end
 * minus the profile at the start, so time-bucket edges do not leak in.
 * `record -- CMD ARGS` starts CMD itself (launch.c) and records it from
 * its first instruction until it exits, and passes its exit status on. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "commands.h"
#include "fileio.h"
#include "jobsel.h"
#include "launch.h"
#include "protocol.h"
#include "render.h"
#include "stackset.h"
#include "tlset.h"

/* After CMD exits: how long its last samples may take to be counted, and
 * how often profd is asked meanwhile. */
#define RECORD_SETTLE_MS 3000
#define RECORD_POLL_MS 200

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* One recording: the options, and the process it is of. */
struct record {
	const struct cli_args *a;
	uint32_t pid; /* --pid, or CMD's once started; 0 with by_workload */
	bool by_workload; /* --service, --unit, --container or --cgroup */
	bool by_pids;     /* --job ID: its members, in the request */
	uint32_t job;     /* --job: roots named per member of this job (0: none) */
	char **cmd;   /* record -- CMD ARGS: the command to start */
	uint64_t duration_ns;
	bool duration_set; /* with a command: stop recording early */
	const char *format;
};

void record_usage(FILE *out)
{
	fprintf(out, "usage: profctl record --pid PID [--duration 30s] [-o FILE] [--format FMT]\n"
		     "       profctl record --service NAME [--duration 30s] [-o FILE]\n"
		     "       profctl record [options] -- CMD [ARGS...]\n"
		     "  -p, --pid PID        process to record (profd must be running)\n"
		     "      --service NAME   the processes of a workload instead, a root frame\n"
		     "                       each; also --unit NAME, --container ID,\n"
		     "                       --cgroup PATH (as in profctl dump)\n"
		     "      --job ID         a distributed job's processes (profctl jobs), a root\n"
		     "                       frame each: \"rank 3 (pid N)\"\n"
		     "      --job -- CMD ARGS  start a launcher (torchrun, mpirun, srun ...) and\n"
		     "                       record its job from its start, a root frame each\n"
		     "                       (--job last, right before --)\n"
		     "  -- CMD ARGS          start CMD (as the user who ran profctl, also under\n"
		     "                       sudo) and record it from its first instruction until\n"
		     "                       it exits; profctl exits with CMD's status\n"
		     "  -d, --duration DUR   how long (default 10s; with CMD: until it exits);\n"
		     "                       Ctrl-C stops early\n"
		     "      --subprocesses   also every descendant (forks, multiprocessing and\n"
		     "                       DataLoader workers, subprocess.run), a root frame each\n"
		     "  -t, --type TYPE      cpu (default), off-cpu, wall, gil, gpu-driver, cuda...\n"
		     "  -o, --output FILE    where to write (default profile-PID.EXT)\n"
		     "  -f, --format FMT     %s (default svg)\n"
		     "      --by-thread      a root frame per thread\n"
		     "      --by-task        a frame per asyncio task (CPython 3.14+)\n"
		     "      --python-only    Python frames only\n"
		     "      --title TEXT     title of the flamegraph\n"
		     "  -j, --json           say what was written as JSON on stdout\n",
		render_formats());
}

static int check(const struct ctl *ctl, const struct cli_args *a, struct record *r)
{
	memset(r, 0, sizeof(*r));
	r->a = a;
	/* Several --pid: the last one, as the option has always read. */
	r->pid = a->req.npids ? a->req.pids[a->req.npids - 1] : 0;
	r->cmd = a->noperands ? a->operands : NULL;
	r->duration_ns = a->duration_ns ? a->duration_ns : 10ull * 1000000000ull;
	r->duration_set = a->duration_ns != 0;
	r->format = a->format ? a->format : "svg";
	r->by_workload = cli_selects(&a->req) && !r->pid;
	if (a->job_of_cmd && !r->cmd)
		return cli_usage_error(ctl, "--job --: give the launcher's command after it");
	if (a->job) { /* the members are the request's pids (jobsel_select) */
		r->pid = 0;
		r->by_workload = false;
		r->by_pids = true;
		r->job = a->job;
	}
	if ((r->pid || r->by_workload || r->by_pids) && r->cmd)
		return cli_usage_error(ctl, "--pid (or a workload) or a command, not both");
	if (r->pid && r->by_workload)
		return cli_usage_error(ctl, "--pid or a workload selector, not both");
	if (!r->pid && !r->cmd && !r->by_workload && !r->by_pids)
		return cli_usage_error(ctl, "say what to record: --pid PID, --service NAME or "
					    "-- CMD [ARGS]");
	if (!render_format_known(r->format))
		return cli_usage_error(ctl, "unknown format '%s' (%s)", r->format, render_formats());
	if (ctl->json && a->output && fileio_is_stdout(a->output))
		return cli_usage_error(ctl, "--json: stdout is for JSON; give -o FILE");
	return 0;
}

/* The profile so far, or an empty one when profd has no samples yet. */
static int snapshot(const struct ctl *ctl, const struct proto_dump_req *req, struct stackset **ss)
{
	struct ctl quiet = *ctl;
	char path[32];
	int err;

	snprintf(path, sizeof(path), "/proc/%u", req->npids ? req->pids[0] : 0);
	quiet.quiet = true;
	err = client_dump(&quiet, req, ss);
	/* A workload with no samples yet (ENOENT) may get them meanwhile. */
	if (err == -ENODATA || (err == -ESRCH && access(path, F_OK) == 0) ||
	    (err == -ENOENT && !req->npids)) {
		*ss = stackset_new();
		return *ss ? 0 : -ENOMEM;
	}
	if (err)
		client_dump(ctl, req, ss); /* again, to print the error */
	return err;
}

static void progress(const struct record *o, uint64_t done, bool alive)
{
	char what[300];

	if (!isatty(STDERR_FILENO))
		return;
	if (o->by_workload)
		cli_selection(&o->a->req, what, sizeof(what));
	else
		snprintf(what, sizeof(what), "pid %u", o->pid);
	fprintf(stderr, "\rprofctl: recording %s: %llus of %llus%s ", what,
		(unsigned long long)(done / 1000000000ull),
		(unsigned long long)(o->duration_ns / 1000000000ull),
		alive ? "" : " (process exited)");
}

/* Sleep until the duration passes, the process exits or Ctrl-C. */
static void wait_window(const struct record *o)
{
	uint64_t start = clock_mono_ns(), now;
	char path[32];
	bool alive = true;

	snprintf(path, sizeof(path), "/proc/%u", o->pid);
	signal(SIGINT, on_sigint);
	while (!interrupted && alive && (now = clock_mono_ns()) - start < o->duration_ns) {
		progress(o, now - start, alive);
		usleep(200000);
		alive = o->by_workload || access(path, F_OK) == 0; /* a workload may come back */
	}
	progress(o, clock_mono_ns() - start, alive);
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	signal(SIGINT, SIG_DFL);
	if (!alive)
		usleep(300000); /* let profd take in the last samples */
}

/* The selector's value, as a file name part ('/' of a cgroup as '_'). */
static const char *workload_name(const struct record *o)
{
	const struct proto_dump_req *r = &o->a->req;
	static char name[64];
	const char *v = r->service ? r->service : r->unit ? r->unit : r->container ? r->container
				     : r->cgroup ? r->cgroup : r->comm ? r->comm : "workload";
	size_t i;

	snprintf(name, sizeof(name), "%s", v[0] == '/' && v[1] ? v + 1 : v);
	for (i = 0; name[i]; i++)
		if (name[i] == '/')
			name[i] = '_';
	return name;
}

/* --output, else profile-PID.EXT (profile-WORKLOAD.EXT) in defpath. */
static const char *output_path(const struct record *o, char *defpath, size_t n)
{
	if (o->a->output)
		return o->a->output;
	if (o->by_workload)
		snprintf(defpath, n, "profile-%.40s%s", workload_name(o), render_format_ext(o->format));
	else
		snprintf(defpath, n, "profile-%u%s", o->pid, render_format_ext(o->format));
	return defpath;
}

/* --job: each member's root named by its role, from profd's list now
 * (ranks and workers that came during the window included). */
static int name_job(const struct ctl *ctl, const struct record *o, struct stackset *window)
{
	struct jobsel s;
	int err = jobsel_fetch(ctl, &s);

	if (!err)
		err = jobsel_label_roots(&s, o->job, window);
	jobsel_free(&s);
	if (err == -ENOENT) {
		client_note(ctl, "no job under pid %u (not a launcher, nor the parent of ranks): "
				 "its processes are named by pid", o->job);
		return 0;
	}
	if (err == -ENOMEM)
		client_error(ctl, "out of memory");
	return err;
}

/* Render window and write it to the output. */
static int write_window(const struct ctl *ctl, const struct record *o, struct stackset *window)
{
	char defpath[64];
	const char *path = output_path(o, defpath, sizeof(defpath));
	struct buf out;
	int rc;

	if (o->job && name_job(ctl, o, window))
		return 1;
	buf_init(&out);
	rc = fileio_render(ctl, o->format, window, &o->a->ro, &out);
	if (!rc)
		rc = fileio_save(ctl, path, &out);
	if (!rc)
		rc = fileio_report(ctl, path, o->format, window, out.len, true);
	buf_free(&out);
	return rc;
}

static void dump_req(struct record *o, struct proto_dump_req *req)
{
	const struct proto_dump_req *given = &o->a->req;

	memset(req, 0, sizeof(*req));
	req->flags = given->flags;
	req->type = given->type;
	if (o->by_workload) {
		req->service = given->service;
		req->unit = given->unit;
		req->container = given->container;
		req->cgroup = given->cgroup;
		return;
	}
	if (o->by_pids) {
		req->pids = given->pids;
		req->npids = given->npids;
		return;
	}
	req->pids = &o->pid;
	req->npids = 1;
}

/* --format gecko or trace: the timeline since the recording began, asked again
 * while a process that exited may still have events on their way
 * (RECORD_SETTLE_MS); the daemon's bound (timeline_events_per_process_max)
 * is the limit of what it holds. */
static int record_timeline(const struct ctl *ctl, struct record *o, uint64_t since_ns, bool exited)
{
	uint64_t deadline = clock_mono_ns() + (exited ? RECORD_SETTLE_MS * 1000000ull : 0);
	const char *path;
	struct proto_dump_req req;
	struct ctl quiet = *ctl;
	struct tlset *tl = NULL;
	char defpath[64];
	struct buf out;
	int err, rc;

	dump_req(o, &req);
	req.since_ns = since_ns;
	quiet.quiet = true;
	while ((err = client_timeline(&quiet, &req, &tl)) && (err == -ESRCH || err == -ENODATA) &&
	       clock_mono_ns() < deadline)
		usleep(RECORD_POLL_MS * 1000);
	if (err && client_timeline(ctl, &req, &tl)) /* again, to print the error */
		return 1;
	path = output_path(o, defpath, sizeof(defpath));
	buf_init(&out);
	rc = fileio_render_timeline(ctl, o->format, tl, &out);
	if (!rc)
		rc = fileio_save(ctl, path, &out);
	if (!rc)
		rc = fileio_report(ctl, path, o->format, tl->ss, out.len, true);
	buf_free(&out);
	tlset_free(tl);
	return rc;
}

/* Where a --by-thread dump keeps the thread's root: under the process's
 * root (two roots first) or first. */
static uint32_t thread_depth(const struct stackset *ss)
{
	const struct ss_stack *st = ss->nstacks ? &ss->stacks[0] : NULL;

	return st && st->depth > 1 && ss->frames[st->frames[0]].kind == FRAME_ROOT &&
		       ss->frames[st->frames[1]].kind == FRAME_ROOT
		   ? 1
		   : 0;
}

/* --by-thread: profd roots a live Python thread at its Python name and an
 * exited one at its OS name, so a thread that exited (or was renamed)
 * during the window is rooted apart at the start and at the end.  The
 * start's roots are renamed as the end's, by tid, for the subtraction to
 * meet them.  0 or -ENOMEM. */
static int same_thread_roots(struct stackset *before, const struct stackset *after)
{
	uint32_t depth = thread_depth(after), tid;
	struct hashmap by_tid, map;
	size_t i, nlen;
	uint64_t f;
	int err = 0;

	hashmap_init(&by_tid);
	hashmap_init(&map);
	for (i = 0; i < after->nstacks && !err; i++) {
		const struct ss_stack *st = &after->stacks[i];

		if (st->depth > depth && after->frames[st->frames[depth]].kind == FRAME_ROOT &&
		    stackset_root_tid(after->frames[st->frames[depth]].name, &nlen, &tid))
			err = hashmap_put(&by_tid, tid, st->frames[depth]);
	}
	for (i = 0; i < before->nframes && !err; i++) {
		int64_t id;

		if (before->frames[i].kind != FRAME_ROOT ||
		    !stackset_root_tid(before->frames[i].name, &nlen, &tid) ||
		    !hashmap_get(&by_tid, tid, &f) ||
		    !strcmp(before->frames[i].name, after->frames[f].name))
			continue;
		id = stackset_intern(before, FRAME_ROOT, after->frames[f].name);
		err = id < 0 ? (int)id : hashmap_put(&map, i, (uint64_t)id);
	}
	if (!err && map.len)
		err = stackset_replace_at(before, depth, &map);
	hashmap_free(&by_tid);
	hashmap_free(&map);
	return err;
}

/* record --pid (or a workload): the profile at the end minus the profile
 * at the start. */
static int record_pid(const struct ctl *ctl, struct record *o)
{
	struct stackset *before = NULL, *after = NULL, *window = NULL;
	struct proto_dump_req req;
	char path[32];
	int rc = 1;

	dump_req(o, &req);
	snprintf(path, sizeof(path), "/proc/%u", o->pid);
	if (!o->by_workload && !o->by_pids && access(path, F_OK)) {
		client_error(ctl, "no such process: %u", o->pid);
		return 1;
	}
	if (render_format_timeline(o->format)) {
		uint64_t since = clock_realtime_ns();

		wait_window(o);
		return record_timeline(ctl, o, since,
				       !o->by_workload && !o->by_pids && access(path, F_OK) != 0);
	}
	if (snapshot(ctl, &req, &before))
		goto out;
	wait_window(o);
	if (client_dump(ctl, &req, &after))
		goto out;
	if ((req.flags & PROTO_DUMP_BY_THREAD) && same_thread_roots(before, after)) {
		client_error(ctl, "out of memory");
		goto out;
	}
	window = stackset_subtract(after, before);
	if (!window) {
		client_error(ctl, "out of memory");
		goto out;
	}
	rc = write_window(ctl, o, window);
out:
	stackset_free(before);
	stackset_free(after);
	stackset_free(window);
	return rc;
}

/* profd answers: checked before a command is started for nothing. */
static int daemon_answers(const struct ctl *ctl)
{
	struct buf req, resp;
	int err;

	buf_init(&req);
	buf_init(&resp);
	err = client_call(ctl, PROTO_REQ_STATS, &req, PROTO_RESP_STATS, &resp);
	buf_free(&req);
	buf_free(&resp);
	return err;
}

/* Until CMD exits, the duration (when given) passes, or Ctrl-C: 1 when
 * CMD exited (*code set), 0 when it still runs, -errno. */
static int wait_command(struct launch *l, const struct record *o, int *code)
{
	uint64_t start = clock_mono_ns();
	int done;

	while (!(done = launch_poll(l, false, code)) && !interrupted &&
	       (!o->duration_set || clock_mono_ns() - start < o->duration_ns))
		usleep(20000);
	return done;
}

/* profd's samples waiting for maps or names (stats' samples_pending), or
 * -errno. */
static int64_t samples_pending(const struct ctl *ctl)
{
	struct proto_stats s = { 0 };
	struct buf req, resp;
	int64_t n = -ENOENT;
	size_t i;

	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_STATS, &req, PROTO_RESP_STATS, &resp))
		n = -EIO;
	else if (proto_decode_stats(resp.data, resp.len, &s))
		n = -EPROTO;
	for (i = 0; n == -ENOENT && i < s.n; i++)
		if (!strcmp(s.items[i].name, "samples_pending"))
			n = (int64_t)s.items[i].value;
	proto_stats_free(&s);
	buf_free(&req);
	buf_free(&resp);
	return n;
}

/* A command's last samples, and its children's (a child's wake-up from a
 * long sleep is its only wall sample, sent as it exits), may wait in
 * profd for the maps or names of processes that have just exited: give
 * them until none waits, or RECORD_SETTLE_MS. */
static void settle(const struct ctl *ctl)
{
	uint64_t deadline = clock_mono_ns() + RECORD_SETTLE_MS * 1000000ull;

	while (samples_pending(ctl) > 0 && clock_mono_ns() < deadline)
		usleep(RECORD_POLL_MS * 1000 / 4);
}

/* The profile of a command that exited.  Its last samples may still wait
 * in profd for its maps or names (a busy machine takes a while), and a
 * command shorter than a sample period may have none: profd then knows
 * no such process, which is no error here but an empty profile, said. */
static int dump_exited(const struct ctl *ctl, const struct record *o,
		       const struct proto_dump_req *req, uint64_t ran_ns, struct stackset **window)
{
	uint64_t deadline = clock_mono_ns() + RECORD_SETTLE_MS * 1000000ull;
	struct ctl quiet = *ctl;
	int err;

	quiet.quiet = true;
	settle(&quiet);
	do {
		usleep(RECORD_POLL_MS * 1000);
		err = client_dump(&quiet, req, window);
	} while ((err == -ESRCH || err == -ENODATA) && clock_mono_ns() < deadline);
	if (err != -ESRCH && err != -ENODATA)
		return err ? client_dump(ctl, req, window) : 0; /* again, to print the error */
	client_note(ctl, "%s (pid %u) ran %llu ms and was never sampled: profd samples "
			 "on-CPU time at its --rate (99 Hz unless set)",
		    o->cmd[0], o->pid, (unsigned long long)(ran_ns / 1000000));
	*window = stackset_new();
	if (*window)
		return 0;
	client_error(ctl, "out of memory");
	return -ENOMEM;
}

/* record -- CMD: everything CMD (and with --subprocesses its descendants)
 * did, from its first instruction; profctl exits with CMD's status. */
static int record_command(const struct ctl *ctl, struct record *o)
{
	struct stackset *window = NULL;
	struct proto_dump_req req;
	struct launch l;
	uint64_t started, started_rt;
	int err = 0, done, code = 0, rc = 1;

	if (daemon_answers(ctl))
		return 1;
	err = launch_held(o->cmd, &l);
	if (err) {
		client_error(ctl, "cannot start %s: %s", o->cmd[0], strerror(-err));
		return 1;
	}
	o->pid = (uint32_t)l.pid;
	if (o->a->job_of_cmd)
		o->job = o->pid; /* a job's id is its launcher's pid */
	started = clock_mono_ns();
	started_rt = clock_realtime_ns();
	/* Ctrl-C reaches CMD too (same terminal): stop and write what we have. */
	signal(SIGINT, on_sigint);
	err = launch_release(&l);
	if (err) {
		signal(SIGINT, SIG_DFL);
		client_error(ctl, "cannot run %s: %s", o->cmd[0], strerror(-err));
		return 127;
	}
	done = wait_command(&l, o, &code);
	dump_req(o, &req);
	if (render_format_timeline(o->format))
		rc = record_timeline(ctl, o, started_rt, done == 1);
	else if (done == 1)
		err = dump_exited(ctl, o, &req, clock_mono_ns() - started, &window);
	else
		err = client_dump(ctl, &req, &window);
	if (!err && window)
		rc = write_window(ctl, o, window);
	stackset_free(window);
	signal(SIGINT, SIG_DFL);
	if (done == 0) {
		client_note(ctl, "%s (pid %u) still runs; waiting for it to exit", o->cmd[0], o->pid);
		done = launch_poll(&l, true, &code);
	}
	if (done < 0)
		return 1;
	return code ? code : rc;
}

int cmd_record(const struct ctl *ctl, struct cli_args *a)
{
	struct record o;
	struct jobsel s = { 0 }; /* holds the default title */
	int rc;

	if (a->job_of_cmd)
		a->req.flags |= PROTO_DUMP_SUBPROCESSES; /* the ranks are CMD's descendants */
	rc = a->job ? jobsel_select(ctl, a, &s) : 0;
	if (!rc)
		rc = check(ctl, a, &o);
	if (!rc)
		rc = o.cmd ? record_command(ctl, &o) : record_pid(ctl, &o);
	jobsel_free(&s);
	return rc;
}
