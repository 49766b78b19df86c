/* test_daemon_control: the daemon's request handling (control.c's
 * control_answer, the code the control thread runs) against a daemon
 * whose profile state is filled by hand and whose ingest is a small
 * thread that only answers catch-ups and jobs, as main.c's loop does:
 * a dump returns the counts, a user sees only its own processes, a
 * request of an unknown type or a malformed one gets an error, a
 * timeline dump returns the events, and answers wait for no catch-up
 * timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "protocol.h"
#include "statelock.h"
#include "tlset.h"

#define BUCKET (10ull * 1000000000ull)

struct fixture {
	struct daemon d;
	pthread_t ingest;
	atomic_bool stop, ready;
};

/* main.c's loop reduced to what answers need: woken through the
 * catch-up descriptor, a numbered consume pass that runs the jobs. */
static void *ingest_main(void *arg)
{
	struct fixture *f = arg;
	struct pollfd pfd;
	uint64_t v, seq;

	assert_int_equal(daemon_statelock_init(&f->d), 0);
	pfd = (struct pollfd){ .fd = f->d.catchup_fd, .events = POLLIN };
	atomic_store(&f->ready, true);
	while (!atomic_load(&f->stop)) {
		if (poll(&pfd, 1, 10) > 0 && read(f->d.catchup_fd, &v, sizeof(v)) < 0)
			break;
		daemon_consume_started(&f->d, &seq);
		daemon_lock_ingest(&f->d);
		daemon_run_jobs(&f->d);
		daemon_unlock(&f->d);
		daemon_consume_done(&f->d, seq);
	}
	daemon_lock_ingest(&f->d);
	daemon_close_jobs(&f->d);
	daemon_unlock(&f->d);
	return NULL;
}

/* A process of uid with w samples on "_start;main;work". */
static void add_proc(struct fixture *f, uint32_t pid, uint32_t uid, const char *comm, uint64_t w)
{
	struct proc *p = proctable_add(&f->d.pt, pid, 1000 + pid, comm);
	uint32_t frames[3];
	int64_t idx;

	assert_non_null(p);
	proctable_set_identity(p, uid, strdup("/usr/bin/job"));
	frames[0] = (uint32_t)aggregate_frame(&f->d.agg, FRAME_NATIVE, "_start");
	frames[1] = (uint32_t)aggregate_frame(&f->d.agg, FRAME_NATIVE, "main");
	frames[2] = (uint32_t)aggregate_frame(&f->d.agg, FRAME_NATIVE, "work");
	idx = aggregate_stack(&f->d.agg, p, frames, 3);
	assert_true(idx >= 0);
	assert_int_equal(aggregate_count(&f->d.agg, p, (uint32_t)idx, pid, comm, clock_realtime_ns(),
					 w),
			 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	log_set_level(LOG_ERROR);
	f->d.cfg.rate_hz = 99;
	f->d.listen_fd = -1;
	pthread_mutex_init(&f->d.stats_mu, NULL);
	pthread_mutex_init(&f->d.hist_lock, NULL);
	proctable_init(&f->d.pt, 0, "/nonexistent");
	if (aggregate_own_procs(&f->d.pt) || aggregate_init(&f->d.agg, BUCKET))
		return -1;
	add_proc(f, 100, 0, "root_job", 5);
	add_proc(f, 200, 1000, "user_job", 7);
	if (pthread_create(&f->ingest, NULL, ingest_main, f))
		return -1;
	while (!atomic_load(&f->ready))
		usleep(1000);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	atomic_store(&f->stop, true);
	pthread_join(f->ingest, NULL);
	proctable_free(&f->d.pt);
	aggregate_free(&f->d.agg);
	close(f->d.catchup_fd);
	free(f);
	return 0;
}

/* One request answered; the response's type and payload (into out). */
static uint16_t ask(struct fixture *f, uid_t uid, uint16_t type, const struct buf *req,
		    struct buf *resp, const void **payload, uint32_t *len)
{
	struct caller c = { .uid = uid, .pid = 1 };
	struct proto_hdr h;

	buf_init(resp);
	control_answer(&f->d, &c, type, req, resp);
	assert_int_equal(proto_parse_message(resp->data, resp->len, PROTO_MAX_RESPONSE, &h,
					     payload),
			 0);
	*len = h.length;
	return h.type;
}

static uint64_t dump_total(struct fixture *f, uid_t uid, uint32_t pid, int *err_code)
{
	struct proto_dump_req r = { .pids = &pid, .npids = 1 };
	struct buf req, resp;
	const void *payload;
	struct stackset *ss;
	uint32_t len;
	uint64_t total = 0;
	int err = 0;

	buf_init(&req);
	assert_int_equal(proto_encode_dump_req(&req, &r), 0);
	*err_code = 0;
	if (ask(f, uid, PROTO_REQ_DUMP, &req, &resp, &payload, &len) == PROTO_RESP_DUMP) {
		ss = proto_decode_stackset(payload, len, &err);
		assert_non_null(ss);
		total = ss->total;
		stackset_free(ss);
	} else {
		struct proto_error e;

		assert_int_equal(proto_decode_error(payload, len, &e), 0);
		*err_code = e.code;
		proto_error_free(&e);
	}
	buf_free(&req);
	buf_free(&resp);
	return total;
}

static void test_dump_counts(void **state)
{
	struct fixture *f = *state;
	uint64_t t0 = clock_mono_ns();
	int code;

	assert_int_equal(dump_total(f, 0, 200, &code), 7);
	assert_int_equal(code, 0);
	assert_int_equal(dump_total(f, 1000, 200, &code), 7); /* its owner */
	/* The catch-up was answered by the pass it asked for, not its 200 ms
	 * timeout (twice). */
	assert_true(clock_mono_ns() - t0 < 350ull * 1000000);
}

static void test_other_users_process(void **state)
{
	struct fixture *f = *state;
	int code;

	assert_int_equal(dump_total(f, 1000, 100, &code), 0);
	assert_true(code == EACCES || code == ESRCH || code == ENOENT);
}

static void test_list_by_user(void **state)
{
	struct fixture *f = *state;
	struct buf req, resp;
	struct proto_list l;
	const void *payload;
	uint32_t len;

	buf_init(&req);
	assert_int_equal(ask(f, 1000, PROTO_REQ_LIST, &req, &resp, &payload, &len),
			 PROTO_RESP_LIST);
	assert_int_equal(proto_decode_list(payload, len, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.procs[0].pid, 200);
	assert_int_equal(l.procs[0].samples, 7);
	proto_list_free(&l);
	buf_free(&resp);
	assert_int_equal(ask(f, 0, PROTO_REQ_LIST, &req, &resp, &payload, &len), PROTO_RESP_LIST);
	assert_int_equal(proto_decode_list(payload, len, &l), 0);
	assert_int_equal(l.n, 2);
	proto_list_free(&l);
	buf_free(&resp);
	buf_free(&req);
}

/* The list entry of pid, decoded into l. */
static const struct proto_proc *listed(struct fixture *f, uint32_t pid, struct proto_list *l)
{
	struct buf req, resp;
	const void *payload;
	uint32_t len;
	size_t i;

	buf_init(&req);
	assert_int_equal(ask(f, 0, PROTO_REQ_LIST, &req, &resp, &payload, &len), PROTO_RESP_LIST);
	assert_int_equal(proto_decode_list(payload, len, l), 0);
	buf_free(&resp);
	for (i = 0; i < l->n; i++)
		if (l->procs[i].pid == pid)
			return &l->procs[i];
	fail_msg("pid %u not listed", pid);
	return NULL;
}

/* p's weight of the list type named name. */
static uint64_t total_named(const struct proto_list *l, const struct proto_proc *p,
			    const char *name, const char *unit)
{
	size_t i;

	for (i = 0; i < l->ntypes; i++) {
		if (strcmp(l->types[i].name, name))
			continue;
		assert_string_equal(l->types[i].unit, unit);
		assert_true(i < p->ntotals);
		return p->totals[i];
	}
	fail_msg("type %s not listed", name);
	return 0;
}

/* On ingest, as its events would: 3 s blocked and 1 MiB made resident
 * for pid 200. */
static int add_other_weights(struct daemon *d, void *arg)
{
	struct proc *p = proctable_find_live(&d->pt, 200);

	(void)arg;
	assert_non_null(p);
	assert_int_equal(aggregate_add(&d->agg, p, AGG_OFFCPU, 0, 200, "user_job",
				       clock_realtime_ns(), 3000000000ull), 0);
	return aggregate_add(&d->agg, p, AGG_MEMORY, 0, 200, "user_job", clock_realtime_ns(),
			     1 << 20);
}

/* A process's off-CPU nanoseconds and bytes made resident are listed
 * apart, in their units; samples stays its CPU samples. */
static void test_list_units(void **state)
{
	struct fixture *f = *state;
	const struct proto_proc *e;
	struct proto_list l;

	assert_int_equal(daemon_on_ingest(&f->d, add_other_weights, NULL), 0);
	e = listed(f, 200, &l);
	assert_int_equal(e->samples, 7);
	assert_int_equal(total_named(&l, e, "cpu", "samples"), 7);
	assert_int_equal(total_named(&l, e, "off-cpu", "nanoseconds"), 3000000000ull);
	assert_int_equal(total_named(&l, e, "memory", "bytes"), 1 << 20);
	/* wall: the CPU samples at 99 Hz, then the blocked time. */
	assert_int_equal(total_named(&l, e, "wall", "nanoseconds"),
			 7 * (1000000000ull / 99) + 3000000000ull);
	assert_int_equal(total_named(&l, e, "gil", "samples"), 0);
	assert_int_equal(e->flags & PROTO_PROC_EXITED, 0);
	assert_int_equal(e->exit_ns, 0);
	proto_list_free(&l);
}

/* A dump request asking for the timeline: the answer's type, and its
 * timeline (decoded) or error code. */
static uint16_t ask_timeline(struct fixture *f, uid_t uid, uint32_t pid, uint64_t since_ns,
			     struct tlset **tl, int *code)
{
	struct proto_dump_req r = { .pids = &pid, .npids = 1, .since_ns = since_ns,
				    .flags = PROTO_DUMP_TIMELINE };
	struct buf req, resp;
	const void *payload;
	struct proto_error e;
	uint32_t len;
	uint16_t type;

	buf_init(&req);
	assert_int_equal(proto_encode_dump_req(&req, &r), 0);
	*tl = NULL;
	*code = 0;
	type = ask(f, uid, PROTO_REQ_DUMP, &req, &resp, &payload, &len);
	if (type == PROTO_RESP_TIMELINE) {
		*tl = proto_decode_timeline(payload, len, NULL);
		assert_non_null(*tl);
	} else {
		assert_int_equal(proto_decode_error(payload, len, &e), 0);
		*code = e.code;
		proto_error_free(&e);
	}
	buf_free(&req);
	buf_free(&resp);
	return type;
}

/* The timeline of a process: its event, its thread, for its owner only;
 * a window past every event is said to be empty. */
static void test_timeline(void **state)
{
	struct fixture *f = *state;
	struct tlset *tl;
	int code;

	assert_int_equal(ask_timeline(f, 1000, 200, 0, &tl, &code), PROTO_RESP_TIMELINE);
	assert_int_equal(tl->nevents, 1);
	assert_int_equal(tl->events[0].weight, 7);
	assert_int_equal(tl->nthreads, 1);
	assert_int_equal(tl->threads[0].tid, 200);
	assert_string_equal(tl->threads[0].name, "user_job");
	assert_string_equal(tl->types[tl->events[0].type], "cpu");
	assert_int_equal(tl->rate_hz, 99);
	assert_int_equal(tl->ss->stacks[tl->events[0].stack].depth, 3);
	tlset_free(tl);
	assert_int_equal(ask_timeline(f, 1000, 100, 0, &tl, &code), PROTO_RESP_ERROR);
	assert_int_equal(code, EACCES);
	assert_int_equal(ask_timeline(f, 0, 100, clock_realtime_ns() + 3600ull * 1000000000ull, &tl,
				      &code),
			 PROTO_RESP_ERROR);
	assert_int_equal(code, ENODATA);
}

static void test_bad_requests(void **state)
{
	struct fixture *f = *state;
	struct buf req, resp;
	const void *payload;
	struct proto_error e;
	uint32_t len;

	buf_init(&req);
	assert_int_equal(ask(f, 0, 77, &req, &resp, &payload, &len), PROTO_RESP_ERROR);
	assert_int_equal(proto_decode_error(payload, len, &e), 0);
	assert_int_equal(e.code, EPROTO);
	proto_error_free(&e);
	buf_free(&resp);
	buf_put_u32(&req, 0xffffffffu); /* not a dump request */
	assert_int_equal(ask(f, 0, PROTO_REQ_DUMP, &req, &resp, &payload, &len), PROTO_RESP_ERROR);
	assert_int_equal(proto_decode_error(payload, len, &e), 0);
	assert_int_equal(e.code, EINVAL);
	proto_error_free(&e);
	buf_free(&resp);
	buf_free(&req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dump_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_users_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_by_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_units, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
