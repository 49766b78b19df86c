/* ingest + aggregate + proctable: feed sample events with a fake stack
 * source, symbolize against this very process, and check what a dump
 * returns: frames in order, counts, lost stacks accounted, time windows,
 * per-thread roots; stack records kept by ID across generations, samples
 * counted by the memo without symbolizing again, pid reuse told apart by
 * the sample's start time.  (Naming frames: test_ingest_frames.c.) */
#include "ingesttest.h"
#include "symload.h"

/* A stack's frames come once; later samples name it by ID, and the second
 * sample of the same stack in a process is counted without symbolizing. */
static void test_stack_record_kept_and_memo(void **state)
{
	struct fixture *f = *state;
	char *folded;

	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	send_sample(f, f->src.id, 0, 100);
	send_sample(f, f->src.id, 0, 101);
	assert_int_equal(f->in.c.stack_records, 1);
	assert_int_equal(f->in.c.samples, 3);
	assert_int_equal(f->in.c.aggregated, 3);
	assert_int_equal(f->in.c.symbolized, 1);
	assert_int_equal(f->in.c.memo_hits, 2);
	assert_int_equal(f->in.c.stack_lost, 0);
	folded = dump_folded(f, 0, 0);
	assert_string_equal(folded, "victim_caller;victim_leaf 3\n");
	free(folded);
}

/* A record that comes after its sample (sent on another CPU, or read in
 * the next pass of the rings) is waited for until the second batch end;
 * one that never comes is counted then, under "[stack lost]". */
static void test_late_record_and_lost_stack(void **state)
{
	struct fixture *f = *state;
	char *folded;

	prepare_stack(f);
	f->src.present = false;
	send_sample(f, f->src.id, 0, 100);
	assert_int_equal(f->in.c.deferred, 1);
	assert_int_equal(f->in.c.aggregated, 0);
	send_record(&f->in, &f->src);
	send_sample(f, 0x1234, 0, 100); /* never sent */
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.c.aggregated, 1);
	assert_int_equal(f->in.npending, 1); /* its record may be in the next pass */
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.c.stack_lost, 1);
	assert_int_equal(f->in.c.aggregated, 2);
	assert_int_equal(f->in.npending, 0);
	folded = dump_folded(f, 0, 0);
	assert_non_null(strstr(folded, "victim_caller;victim_leaf 1\n"));
	assert_non_null(strstr(folded, "[stack lost] 1\n"));
	free(folded);
}

/* Kept stacks are bounded by two generations: when the newer fills, the
 * older goes and BPF is told to send those stacks again. */
static void test_generations_bounded_and_told(void **state)
{
	struct fixture *f = *state;
	uint64_t first;
	int i;

	f->in.raw_max = 2;
	prepare_stack(f);
	first = f->src.id;
	for (i = 0; i < 2; i++) { /* fills generation 1: rotation to 2 */
		f->src.id = first + (uint64_t)i;
		send_record(&f->in, &f->src);
	}
	assert_int_equal(f->src.gens_told, 1);
	assert_int_equal(f->src.last_gen, 2);
	assert_non_null(ingest_resolve_stack(&f->in, first, PROFD_STACK_USER));
	for (i = 2; i < 4; i++) { /* fills generation 2: generation 1 goes */
		f->src.id = first + (uint64_t)i;
		send_record(&f->in, &f->src);
	}
	assert_int_equal(f->src.last_gen, 3);
	assert_null(ingest_resolve_stack(&f->in, first, PROFD_STACK_USER));
	assert_non_null(ingest_resolve_stack(&f->in, first + 3, PROFD_STACK_USER));
	/* A kind that does not match is a collision: refused. */
	assert_null(ingest_resolve_stack(&f->in, first + 3, PROFD_STACK_KERNEL));
}

/* A record that claims more frames than it carries is refused. */
static void test_short_record_refused(void **state)
{
	struct fixture *f = *state;

	prepare_stack(f);
	f->src.st.type = PROFD_EV_STACK;
	f->src.st.id = f->src.id;
	ingest_event(&f->in, &f->src.st, PROFD_STACK_REC_BYTES(1));
	assert_int_equal(f->in.c.bad_events, 1);
	assert_null(ingest_resolve_stack(&f->in, f->src.id, PROFD_STACK_USER));
}

static void test_by_thread_and_window(void **state)
{
	struct fixture *f = *state;
	char *folded;

	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	send_sample(f, f->src.id, 0, 101);
	folded = dump_folded(f, AGG_BY_THREAD, 0);
	assert_non_null(strstr(folded, "worker (100);victim_caller;victim_leaf 1\n"));
	assert_non_null(strstr(folded, "worker (101);victim_caller;victim_leaf 1\n"));
	free(folded);
	/* A window that starts an hour from now holds nothing. */
	folded = dump_folded(f, 0, ingest_realtime(&f->in, mono_now()) + 3600ull * 1000000000ull);
	assert_string_equal(folded, "");
	free(folded);
}

static void send_offcpu(struct fixture *f, uint64_t ustack, uint32_t flags, uint32_t state,
			uint64_t ns)
{
	struct profd_offcpu_event e;

	memset(&e, 0, sizeof(e));
	e.type = PROFD_EV_OFFCPU;
	e.pid = (uint32_t)getpid();
	e.tid = 100;
	e.state = state;
	e.time_ns = mono_now();
	e.duration_ns = ns;
	e.ustack_id = ustack;
	e.flags = flags;
	strcpy(e.comm, "worker");
	ingest_event(&f->in, &e, sizeof(e));
}

/* Off-CPU events count their time under the stack the thread blocked in;
 * a preempted thread's gets a "waiting for a CPU" leaf, an unwalked
 * block a leaf saying so, a stack through take_gil "[GIL wait]".  Wall
 * is the cpu profile scaled to time plus the off-cpu one (control.c does
 * the adding; the scale is the aggregate's). */
static void test_offcpu_events(void **state)
{
	struct fixture *f = *state;
	char *folded;

	prepare_stack(f);
	send_record(&f->in, &f->src);
	f->src.present = false;
	send_offcpu(f, f->src.id, 0, 1, 3000000);
	send_offcpu(f, f->src.id, 0, 1, 2000000);
	send_offcpu(f, f->src.id, 0, 0, 700000);
	send_offcpu(f, 0, PROFD_OFFCPU_UNCAPTURED, 1, 1000000);
	f->src.id = 0x5151;
	f->src.st.ips[0] = (uint64_t)(uintptr_t)&take_gil + 2;
	send_record(&f->in, &f->src);
	send_offcpu(f, f->src.id, 0, 1, 4000000);
	send_sample(f, 0xabcdef, 0, 100);
	assert_int_equal(f->in.c.offcpu_events, 5);
	assert_int_equal(f->in.c.offcpu_aggregated, 5);
	assert_int_equal(f->in.c.offcpu_gil_waits, 1);
	folded = dump_type(f, AGG_OFFCPU, 0);
	assert_non_null(strstr(folded, "victim_caller;victim_leaf 5000000\n"));
	assert_non_null(strstr(folded, "victim_caller;victim_leaf;[runnable: waiting for a CPU] 700000\n"));
	assert_non_null(strstr(folded, "[off-cpu: stack not walked] 1000000\n"));
	assert_non_null(strstr(folded, "victim_caller;take_gil;[GIL wait] 4000000\n"));
	free(folded);
	folded = dump_type(f, AGG_CPU, 10101010);
	assert_string_equal(folded, "victim_caller;victim_leaf 10101010\n");
	free(folded);
}

static void send_cuda_call(struct fixture *f, uint64_t ustack, uint32_t fn, uint64_t ns)
{
	struct profd_gpu_event e;

	memset(&e, 0, sizeof(e));
	e.type = PROFD_EV_GPU;
	e.source = PROFD_GPU_SRC_CUDA;
	e.pid = (uint32_t)getpid();
	e.tid = 100;
	e.nr = fn;
	e.time_ns = mono_now();
	e.duration_ns = ns;
	e.ustack_id = ustack;
	strcpy(e.comm, "worker");
	ingest_event(&f->in, &e, sizeof(e));
}

/* While the worker reads the stack's file, a CPU sample and an off-CPU
 * block are named by offset after 300 ms; a CUDA call is still held then
 * (up to 2 s: a launch's kernel is named from its stub's symbol), and
 * named by symbol when the file's symbols come. */
static void test_gpu_event_waits_longer_for_symbols(void **state)
{
	struct fixture *f = *state;
	struct load_req req = { 0 };
	struct symcache_loaded res;
	char *folded;

	symbolizer_set_loader(f->sym, &(struct symcache_loader){ record_load, &req });
	prepare_stack(f);
	send_record(&f->in, &f->src);
	send_sample(f, f->src.id, 0, 100);
	send_offcpu(f, f->src.id, 0, 1, 3000000);
	send_cuda_call(f, f->src.id, PROFD_CUDA_cudaDeviceSynchronize, 5000000);
	assert_int_equal(req.n, 1);
	ingest_end_batch(&f->in);
	usleep(350 * 1000); /* past a CPU sample's hold, not a GPU event's */
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.npending, 1);
	assert_int_equal(f->in.c.offcpu_aggregated, 1);
	folded = dump_type(f, AGG_CUDA, 0);
	assert_string_equal(folded, "");
	free(folded);
	symcache_load("/proc", req.pid, &req.map, &res);
	assert_non_null(res.es);
	symbolizer_file_loaded(f->sym, &req.map, &res);
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.npending, 0);
	folded = dump_type(f, AGG_CUDA, 0);
	assert_string_equal(folded, "victim_caller;victim_leaf;cudaDeviceSynchronize 5000000\n");
	free(folded);
}

static void test_bad_events_counted(void **state)
{
	struct fixture *f = *state;
	uint8_t junk[7] = { 1, 0, 0, 0, 9, 9, 9 };
	uint32_t unknown = 99;

	ingest_event(&f->in, junk, sizeof(junk));   /* sample type, too short */
	ingest_event(&f->in, &unknown, sizeof(unknown));
	ingest_event(&f->in, junk, 2);
	assert_int_equal(f->in.c.bad_events, 3);
	assert_int_equal(f->in.c.samples, 0);
}

/* RSS points: asked for a live process that was active since its last
 * point and a bucket after it, from /proc (this very process), in the
 * ring; an idle process or one asked too soon gets none; the ring keeps
 * the newest PROC_RSS_POINTS. */
static void test_rss_points(void **state)
{
	struct fixture *f = *state;
	uint64_t now = mono_now(), t, bytes, want;
	const uint64_t bucket = 1000000000ull;
	struct proc *p;
	uint32_t i;

	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	p = proctable_find_live(&f->pt, (uint32_t)getpid());
	assert_non_null(p);
	assert_null(p->rss);
	ingest_rss_step(&f->in, now, bucket, 64);
	assert_non_null(p->rss);
	assert_int_equal(p->rss->n, 1);
	proctable_rss_point(p, 0, &t, &bytes);
	assert_int_equal(proc_read_rss("/proc", p->pid, p->start_time, &want), 0);
	assert_true(bytes > 0 && bytes <= want + (16u << 20) && want <= bytes + (16u << 20));
	/* Idle since: nothing more, however late. */
	ingest_rss_step(&f->in, now + 5 * bucket, bucket, 64);
	assert_int_equal(p->rss->n, 1);
	/* Active again, but asked too soon; then a bucket later. */
	send_sample(f, f->src.id, 0, 100);
	ingest_rss_step(&f->in, now + bucket / 2, bucket, 64);
	assert_int_equal(p->rss->n, 1);
	ingest_rss_step(&f->in, now + 7 * bucket, bucket, 64);
	assert_int_equal(p->rss->n, 2);
	/* The ring: the oldest give way. */
	for (i = 0; i < PROC_RSS_POINTS + 3; i++)
		assert_int_equal(proctable_add_rss(p, 1000 + i, i), 0);
	assert_int_equal(p->rss->n, PROC_RSS_POINTS);
	proctable_rss_point(p, 0, &t, &bytes);
	assert_true(t == 1003 && bytes == 3);
	proctable_rss_point(p, PROC_RSS_POINTS - 1, &t, &bytes);
	assert_true(t == 1000 + PROC_RSS_POINTS + 2 && bytes == PROC_RSS_POINTS + 2);
}

static void test_exit_keeps_profile(void **state)
{
	struct fixture *f = *state;
	struct profd_proc_event ev;
	struct proc *p;

	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	memset(&ev, 0, sizeof(ev));
	ev.type = PROFD_EV_EXIT;
	ev.pid = (uint32_t)getpid();
	ev.time_ns = mono_now();
	ingest_event(&f->in, &ev, sizeof(ev));
	assert_null(proctable_find_live(&f->pt, (uint32_t)getpid()));
	assert_int_equal(f->pt.n, 1);
	p = f->pt.all[0];
	assert_true(p->exited);
	assert_int_equal(p->samples, 1);
	/* A late sample of the same process (same start time in /proc: a
	 * zombie, or taken on another CPU before the exit) joins the exited
	 * entry instead of starting a live one. */
	send_sample(f, f->src.id, 0, 100);
	assert_int_equal(f->pt.n, 1);
	assert_int_equal(p->samples, 2);
	assert_null(proctable_find_live(&f->pt, (uint32_t)getpid()));
	/* A new process with the pid (another start time) is a new entry. */
	p->start_time--;
	send_sample(f, f->src.id, 0, 100);
	assert_int_equal(f->pt.n, 2);
	assert_non_null(proctable_find_live(&f->pt, (uint32_t)getpid()));
	assert_int_equal(p->samples, 2);
	/* Retention: the exited one goes once it is old enough. */
	proctable_expire(&f->pt, p->exit_ns + 10, 5);
	assert_int_equal(f->pt.n, 1);
	assert_int_equal(f->pt.expired, 1);
}

static void test_stack_cap_counts_overflow(void **state)
{
	struct fixture *f = *state;
	struct proc *p;
	uint32_t frames[2];
	int64_t a, b, c, d;

	f->agg.max_stacks_per_proc = 2;
	p = proctable_get(&f->pt, (uint32_t)getpid(), "me");
	assert_non_null(p);
	frames[0] = (uint32_t)aggregate_frame(&f->agg, FRAME_NATIVE, "x");
	frames[1] = (uint32_t)aggregate_frame(&f->agg, FRAME_NATIVE, "y");
	a = aggregate_stack(&f->agg, p, frames, 1);
	b = aggregate_stack(&f->agg, p, frames, 2);
	/* Past the cap: a third and fourth distinct stack share one entry. */
	c = aggregate_stack(&f->agg, p, frames + 1, 1);
	frames[0] = frames[1];
	d = aggregate_stack(&f->agg, p, frames, 2);
	assert_true(a >= 0 && b >= 0 && a != b);
	assert_true(c >= 0 && c == d && c != a && c != b);
	assert_int_equal(f->agg.stacks_overflow, 2);
	/* Known stacks still resolve to themselves. */
	frames[0] = (uint32_t)aggregate_frame(&f->agg, FRAME_NATIVE, "x");
	assert_int_equal(aggregate_stack(&f->agg, p, frames, 1), a);
}

/* A fake /proc/PID/stat with the given start time (field 22). */
static void write_fake_stat(const char *root, uint32_t pid, uint64_t start)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "%u (fake) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid,
		(unsigned long long)start);
	fclose(fp);
}

static void remove_fake_pid(const char *root, uint32_t pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u", root, pid);
	rmdir(path);
}

/* Identity is (pid, start time): late samples of an exited process stay
 * with it, whether /proc still shows it (zombie) or not, and neither a
 * process gone before it was seen nor a reused pid merges into another. */
static void test_late_samples_and_pid_reuse(void **state)
{
	char root[] = "/tmp/profd-fakeproc.XXXXXX";
	struct proctable pt;
	struct proc *p, *q;

	(void)state;
	assert_non_null(mkdtemp(root));
	proctable_init(&pt, 0, root);
	write_fake_stat(root, 777, 1000);
	p = proctable_get(&pt, 777, "fake");
	assert_non_null(p);
	assert_int_equal(p->start_time, 1000);
	p->samples = 1;
	proctable_exit(&pt, 777, 5);
	assert_true(p->exited);
	assert_ptr_equal(proctable_get(&pt, 777, "fake"), p); /* zombie */
	remove_fake_pid(root, 777);
	assert_ptr_equal(proctable_get(&pt, 777, "fake"), p); /* reaped */
	q = proctable_get(&pt, 777, "other"); /* another program, gone already */
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_true(q->exited);
	assert_null(proctable_find_live(&pt, 777));
	write_fake_stat(root, 777, 2000); /* the pid reused */
	q = proctable_get(&pt, 777, "fake");
	assert_non_null(q);
	assert_false(q->exited);
	assert_int_equal(q->start_time, 2000);
	assert_int_equal(pt.n, 3);
	/* Expiring the exited entries leaves the live one findable. */
	proctable_expire(&pt, 1ull << 62, 1);
	assert_int_equal(pt.n, 1);
	assert_ptr_equal(proctable_get(&pt, 777, "fake"), q);
	proctable_free(&pt);
	remove_fake_pid(root, 777);
	rmdir(root);
}

/* An exited process keeps its maps for PROC_LINGER_NS, for its samples
 * still in the ring; then the maps go, and the entry too if it never got
 * a sample (an exec storm must not fill the table).  Before the linger a
 * sampleless one went at its exit, and its late samples made a new entry
 * listed as running. */
static void test_exit_linger(void **state)
{
	char root[] = "/tmp/profd-fakeproc.XXXXXX";
	const uint64_t t = 1000000000000ull, forever = 1ull << 62;
	struct proctable pt;
	struct proc *idle, *busy;

	(void)state;
	assert_non_null(mkdtemp(root));
	proctable_init(&pt, 0, root);
	write_fake_stat(root, 888, 1000);
	write_fake_stat(root, 889, 1001);
	idle = proctable_get(&pt, 888, "idle");
	busy = proctable_get(&pt, 889, "busy");
	assert_true(idle && busy);
	idle->maps_loaded = busy->maps_loaded = true;
	busy->samples = 1;
	proctable_exit(&pt, 888, t);
	proctable_exit(&pt, 889, t + 10);
	assert_ptr_equal(proctable_find_exited(&pt, 888, 1000), idle);
	assert_true(idle->maps_loaded);

	proctable_expire(&pt, t + PROC_LINGER_NS - 1, forever); /* still lingering */
	assert_ptr_equal(proctable_find_exited(&pt, 888, 1000), idle);
	assert_true(idle->maps_loaded && busy->maps_loaded);
	assert_int_equal(pt.n, 2);

	proctable_expire(&pt, t + PROC_LINGER_NS + 1, forever); /* idle's linger over */
	assert_null(proctable_find_exited(&pt, 888, 1000));
	assert_int_equal(pt.n, 1);
	assert_true(busy->maps_loaded);
	proctable_expire(&pt, t + PROC_LINGER_NS + 11, forever); /* busy's too: kept, no maps */
	assert_ptr_equal(proctable_find_exited(&pt, 889, 1001), busy);
	assert_false(busy->maps_loaded);
	assert_int_equal(pt.expired, 0);
	proctable_free(&pt);
	remove_fake_pid(root, 888);
	remove_fake_pid(root, 889);
	rmdir(root);
}

/* A full table evicts the process that exited first, found without a
 * scan; removals in between (expiry) leave the order intact. */
static void test_eviction_order(void **state)
{
	char root[] = "/tmp/profd-fakeproc.XXXXXX";
	struct proctable pt;
	uint32_t pid;

	(void)state;
	assert_non_null(mkdtemp(root));
	proctable_init(&pt, 16, root);
	for (pid = 1001; pid <= 1016; pid++) {
		write_fake_stat(root, pid, pid);
		assert_non_null(proctable_get(&pt, pid, "fake"));
		proctable_find_live(&pt, pid)->samples = 1; /* kept once exited */
	}
	proctable_exit(&pt, 1002, 10);
	proctable_exit(&pt, 1004, 20);
	proctable_exit(&pt, 1001, 30);
	write_fake_stat(root, 1017, 1017);
	assert_non_null(proctable_get(&pt, 1017, "fake")); /* evicts 1002 */
	assert_int_equal(pt.evicted, 1);
	assert_null(proctable_find_exited(&pt, 1002, 1002));
	assert_non_null(proctable_find_exited(&pt, 1004, 1004));
	write_fake_stat(root, 1018, 1018);
	assert_non_null(proctable_get(&pt, 1018, "fake")); /* evicts 1004 */
	assert_null(proctable_find_exited(&pt, 1004, 1004));
	assert_non_null(proctable_find_exited(&pt, 1001, 1001));
	assert_int_equal(pt.n, 16);
	proctable_free(&pt);
	for (pid = 1001; pid <= 1018; pid++)
		remove_fake_pid(root, pid);
	rmdir(root);
}

static void send_sample_at(struct ingest *in, uint32_t pid, uint64_t start_ticks)
{
	struct profd_sample e;

	memset(&e, 0, sizeof(e));
	e.type = PROFD_EV_SAMPLE;
	e.pid = pid;
	e.tid = pid;
	e.time_ns = mono_now();
	e.start_ns = start_ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	strcpy(e.comm, "fake");
	ingest_event(in, &e, sizeof(e));
}

static void send_proc_event_at(struct ingest *in, uint32_t type, uint32_t pid,
			       uint64_t start_ticks)
{
	struct profd_proc_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.pid = pid;
	ev.time_ns = mono_now();
	ev.start_ns = start_ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	strcpy(ev.comm, "fake");
	ingest_event(in, &ev, sizeof(ev));
}

static void send_exec_at(struct ingest *in, uint32_t pid, uint64_t start_ticks)
{
	send_proc_event_at(in, PROFD_EV_EXEC, pid, start_ticks);
}

static void send_exit_at(struct ingest *in, uint32_t pid, uint64_t start_ticks)
{
	send_proc_event_at(in, PROFD_EV_EXIT, pid, start_ticks);
}

/* An ingest stage over a private, fake /proc (no backend but be). */
struct fake_root {
	char root[32];
	struct symbolizer *sym;
	struct aggregate agg;
	struct proctable pt;
	struct ingest in;
};

static void fake_root_open(struct fake_root *fr, const struct ingest_backend *be)
{
	struct symbolizer_opts so = { .kallsyms_path = "/nonexistent" };

	strcpy(fr->root, "/tmp/profd-fakeproc.XXXXXX");
	assert_non_null(mkdtemp(fr->root));
	fr->sym = symbolizer_new(&so);
	assert_non_null(fr->sym);
	proctable_init(&fr->pt, 0, fr->root);
	assert_int_equal(aggregate_own_procs(&fr->pt), 0);
	assert_int_equal(aggregate_init(&fr->agg, 0), 0);
	assert_int_equal(ingest_init(&fr->in, be, fr->sym, &fr->pt, &fr->agg), 0);
}

static void fake_root_close(struct fake_root *fr)
{
	ingest_free(&fr->in);
	proctable_free(&fr->pt);
	aggregate_free(&fr->agg);
	symbolizer_free(fr->sym);
	rmdir(fr->root);
}

/* A lost exit event: the pid's next program is told apart by the start
 * time every sample carries, without waiting for /proc to be read again;
 * a late sample of the old program still goes to the old entry. */
static void test_lost_exit_repaired_by_start_time(void **state)
{
	struct ingest_backend be = { 0 };
	struct fake_root fr;
	struct ingest *in = &fr.in;
	struct proctable *pt = &fr.pt;
	const char *root;
	struct proc *old, *cur;
	size_t n;

	(void)state;
	fake_root_open(&fr, &be);
	root = fr.root;
	write_fake_stat(root, 777, 1000);
	send_sample_at(in, 777, 1000);
	old = proctable_find_live(pt, 777);
	assert_non_null(old);
	write_fake_stat(root, 777, 2000); /* exited, pid reused: no exit event seen */
	send_sample_at(in, 777, 2000);
	cur = proctable_find_live(pt, 777);
	assert_non_null(cur);
	assert_ptr_not_equal(cur, old);
	assert_true(old->exited);
	assert_int_equal(cur->start_time, 2000);
	assert_int_equal(in->c.proc_exits_repaired, 1);
	send_sample_at(in, 777, 1000); /* late, from the old program */
	assert_int_equal(old->samples, 2);
	assert_int_equal(cur->samples, 1);
	/* The old program's exit event, read only now, ends nothing live. */
	send_exit_at(in, 777, 1000);
	assert_ptr_equal(proctable_find_live(pt, 777), cur);
	/* Its exit lost too, and no sample to tell: the sweep ends it from
	 * /proc; a live process /proc still shows stays. */
	write_fake_stat(root, 778, 3000);
	send_sample_at(in, 778, 3000);
	remove_fake_pid(root, 777);
	ingest_sweep_start(in);
	n = pt->n;
	assert_int_equal(ingest_sweep_step(in, mono_now(), 1), n - 1); /* in steps */
	assert_int_equal(ingest_sweep_step(in, mono_now(), 100), 0);
	assert_true(cur->exited);
	assert_non_null(proctable_find_live(pt, 778));
	assert_int_equal(in->c.proc_exits_repaired, 2);
	remove_fake_pid(root, 777);
	remove_fake_pid(root, 778);
	fake_root_close(&fr);
}

/* What the identity backend was asked, for the deferral test. */
struct ident_calls {
	unsigned n;
	uint32_t pid, req;
	uint64_t start_time;
};

static void record_identify(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	struct ident_calls *c = ctx;

	c->n++;
	c->pid = pid;
	c->start_time = start_time;
	c->req = req;
}

/* A new process's first sample is counted at once, under the start time
 * it carries, with no read of /proc on the sample path (the proc root here
 * is empty: reading it would have ended the process as gone); uid and exe
 * come later from the backend, an outdated answer is ignored, and an
 * answer that finds the pid gone or reused ends the process. */
static void test_identity_read_off_sample_path(void **state)
{
	struct ident_calls calls = { 0 };
	struct ingest_backend be = { .identify = record_identify, .ctx = &calls };
	struct ingest_identity id = { 0 };
	struct fake_root fr;
	struct ingest *in = &fr.in;
	struct proctable *pt = &fr.pt;
	struct proc *p;
	uint32_t req;

	(void)state;
	fake_root_open(&fr, &be);
	send_sample_at(in, 901, 5000);
	p = proctable_find_live(pt, 901);
	assert_non_null(p);
	assert_false(p->exited);
	assert_int_equal(p->start_time, 5000);
	assert_int_equal(p->samples, 1);
	assert_true(p->identity_pending);
	assert_int_equal(p->uid, PROC_UID_UNKNOWN);
	assert_int_equal(calls.n, 1);
	assert_int_equal(calls.pid, 901);
	assert_int_equal(calls.start_time, 5000);
	send_sample_at(in, 901, 5000); /* asked once */
	assert_int_equal(calls.n, 1);
	assert_int_equal(p->samples, 2);
	/* An exec asks again; the first answer is outdated then. */
	req = calls.req;
	send_exec_at(in, 901, 5000);
	assert_int_equal(calls.n, 2);
	id.read_start = 5000;
	id.uid = 1234;
	id.exe = strdup("/old/exe");
	ingest_identity_found(in, 901, 5000, req, &id);
	assert_int_equal(p->uid, PROC_UID_UNKNOWN);
	id.exe = strdup("/new/exe");
	ingest_identity_found(in, 901, 5000, calls.req, &id);
	assert_false(p->identity_pending);
	assert_int_equal(p->uid, 1234);
	assert_string_equal(p->exe, "/new/exe");
	/* Another process, gone before its identity was read. */
	send_sample_at(in, 902, 6000);
	p = proctable_find_live(pt, 902);
	assert_non_null(p);
	memset(&id, 0, sizeof(id));
	id.err = -ESRCH;
	ingest_identity_found(in, 902, 6000, calls.req, &id);
	assert_true(p->exited);
	assert_int_equal(p->samples, 1);
	assert_null(proctable_find_live(pt, 902));
	fake_root_close(&fr);
}

static struct ident_calls maps_calls;

static void record_maps(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req)
{
	(void)ctx;
	record_identify(&maps_calls, pid, start_time, req);
}

/* A sample whose address is outside the process's known maps (here: none
 * read yet) does not read /proc/PID/maps on the sample path: the read is
 * asked of the backend once, the samples wait to the end of the batch,
 * and are counted under their real names once the maps come. */
static void test_maps_read_off_sample_path(void **state)
{
	struct fixture *f = *state;
	struct procmaps m = { 0 };
	struct proc *p;
	char *folded;

	memset(&maps_calls, 0, sizeof(maps_calls));
	f->in.be.maps = record_maps;
	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100);
	send_sample(f, f->src.id, 0, 100);
	p = proctable_find_live(&f->pt, (uint32_t)getpid());
	assert_non_null(p);
	assert_int_equal(maps_calls.n, 1);
	assert_true(p->maps_pending);
	assert_false(p->maps_loaded);
	assert_int_equal(f->in.c.aggregated, 0);
	assert_int_equal(f->in.c.deferred, 2);
	ingest_end_batch(&f->in); /* still waiting */
	assert_int_equal(f->in.c.aggregated, 0);
	assert_int_equal(procmaps_read(getpid(), &m), 0);
	ingest_maps_found(&f->in, p->pid, p->start_time, maps_calls.req, 0, &m);
	assert_true(p->maps_loaded);
	ingest_end_batch(&f->in);
	assert_int_equal(f->in.c.aggregated, 2);
	assert_int_equal(maps_calls.n, 1);
	folded = dump_folded(f, 0, 0);
	assert_non_null(strstr(folded, "victim_caller;victim_leaf 2\n"));
	free(folded);
}

/* A forked child (a real one: a copy of this process) takes its parent's
 * maps and identity at its fork event: its first sample is named at once,
 * with no read of /proc asked for (a multiprocessing worker's first
 * second would otherwise be "[unknown]").  A fork event whose parent
 * started at another time than the live entry with the parent's pid (that
 * one's exit lost, the pid reused) takes nothing from it. */
static void test_fork_inherits_parent(void **state)
{
	struct fixture *f = *state;
	uint64_t start, ns_per_tick = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	struct profd_proc_event ev;
	struct proc *parent, *child, *child2;
	struct profd_sample e;
	uint32_t uid, ppid;
	char comm[16], *exe = NULL, *folded;
	pid_t pid, pid2;

	prepare_stack(f);
	send_sample(f, f->src.id, PROFD_SAMPLE_USTACK_NEW, 100); /* maps read inline */
	parent = proctable_find_live(&f->pt, (uint32_t)getpid());
	assert_non_null(parent);
	assert_true(parent->maps_loaded);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
		pause();
		_exit(0);
	}
	assert_int_equal(proc_read_identity("/proc", (uint32_t)pid, &start, &uid, &ppid, comm, &exe), 0);
	free(exe);
	memset(&maps_calls, 0, sizeof(maps_calls));
	f->in.be.maps = record_maps; /* a read of the child's maps would show here */
	memset(&ev, 0, sizeof(ev));
	ev.type = PROFD_EV_FORK;
	ev.pid = (uint32_t)pid;
	ev.ppid = (uint32_t)getpid();
	ev.time_ns = mono_now();
	ev.start_ns = start * ns_per_tick;
	ev.parent_start_ns = parent->start_time * ns_per_tick;
	strcpy(ev.comm, "worker");
	ingest_event(&f->in, &ev, sizeof(ev));
	child = proctable_find_live(&f->pt, (uint32_t)pid);
	assert_non_null(child);
	assert_int_equal(child->ppid, getpid());
	assert_true(child->maps_loaded);
	assert_int_equal(child->maps.n, parent->maps.n);
	assert_string_equal(child->maps.maps[0].path, parent->maps.maps[0].path);
	assert_ptr_not_equal(child->maps.maps, parent->maps.maps);
	assert_int_equal(child->uid, parent->uid);
	assert_int_equal(f->in.c.forks_inherited, 1);
	memset(&e, 0, sizeof(e));
	e.type = PROFD_EV_SAMPLE;
	e.pid = e.tid = (uint32_t)pid;
	e.time_ns = mono_now();
	e.start_ns = start * ns_per_tick;
	e.ustack_id = f->src.id;
	strcpy(e.comm, "worker");
	ingest_event(&f->in, &e, sizeof(e));
	assert_int_equal(maps_calls.n, 0);
	assert_int_equal(child->samples, 1); /* counted now, not deferred */
	/* The parent's pid with another start time (its exit lost, the pid
	 * reused): not the parent, nothing taken from it. */
	pid2 = fork();
	assert_true(pid2 >= 0);
	if (pid2 == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	assert_int_equal(proc_read_identity("/proc", (uint32_t)pid2, &start, &uid, &ppid, comm, &exe),
			 0);
	free(exe);
	ev.pid = (uint32_t)pid2;
	ev.start_ns = start * ns_per_tick;
	ev.parent_start_ns = (parent->start_time + 5) * ns_per_tick;
	ingest_event(&f->in, &ev, sizeof(ev));
	child2 = proctable_find_live(&f->pt, (uint32_t)pid2);
	assert_non_null(child2);
	assert_false(child2->maps_loaded);
	assert_int_equal(maps_calls.n, 1); /* its maps asked of /proc instead */
	assert_int_equal(f->in.c.forks_inherited, 1);
	kill(pid2, SIGKILL);
	waitpid(pid2, NULL, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	folded = dump_proc_folded(f, child);
	assert_string_equal(folded, "victim_caller;victim_leaf 1\n");
	free(folded);
}

/* The parent pid, for --subprocesses: counted from the last ')', since a
 * process names itself (comm may hold spaces and parentheses). */
static void test_stat_ppid(void **state)
{
	(void)state;
	assert_int_equal(proc_stat_ppid("42 (python3) S 7 42 42 0 -1"), 7);
	assert_int_equal(proc_stat_ppid("43 (a) (b) R 1234 43 43 0"), 1234);
	assert_int_equal(proc_stat_ppid("44 (x"), 0);
	assert_int_equal(proc_stat_ppid("45 (x) S"), 0);
}

/* RSS for `list`: field 24 (pages) of a stat line whose comm has spaces
 * and parentheses, checked against the start time (field 22). */
static void test_stat_rss(void **state)
{
	const char *line = "46 (a) (b c) S 1 46 46 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 "
			   "123456 1000000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0";
	uint64_t start = 0, rss = 0, self_start, self_rss;
	char text[1024];
	FILE *f;

	(void)state;
	assert_int_equal(proc_stat_rss(line, &start, &rss), 0);
	assert_int_equal(start, 123456);
	assert_int_equal(rss, 2500ull * (uint64_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(proc_stat_rss("47 (x) S 1 47", &start, &rss), -EINVAL);
	/* This process: the start time must match, else it is another one. */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_int_equal(proc_stat_rss(text, &self_start, &self_rss), 0);
	assert_int_equal(proc_read_rss("/proc", (uint32_t)getpid(), self_start, &rss), 0);
	assert_true(rss > 0);
	assert_int_equal(proc_read_rss("/proc", (uint32_t)getpid(), self_start + 1, &rss), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stack_record_kept_and_memo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_record_and_lost_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generations_bounded_and_told, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_record_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_by_thread_and_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_events_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rss_points, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_keeps_profile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stack_cap_counts_overflow, setup, teardown),
		cmocka_unit_test(test_late_samples_and_pid_reuse),
		cmocka_unit_test(test_lost_exit_repaired_by_start_time),
		cmocka_unit_test(test_eviction_order),
		cmocka_unit_test(test_exit_linger),
		cmocka_unit_test(test_stat_ppid),
		cmocka_unit_test(test_stat_rss),
		cmocka_unit_test_setup_teardown(test_offcpu_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_event_waits_longer_for_symbols, setup, teardown),
		cmocka_unit_test(test_identity_read_off_sample_path),
		cmocka_unit_test_setup_teardown(test_maps_read_off_sample_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_inherits_parent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
