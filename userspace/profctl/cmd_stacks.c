/* profctl stacks --pid N: every thread of a process, what state it is in,
 * what it waits on in the kernel, and its current Python and native stack
 * (py-spy dump's view, for a hung job).  The daemon answers with one stack
 * per thread whose root frame is the thread's header (protocol.h,
 * PROTO_RESP_STACKS); the listing is printed leaf first.
 *
 * --async: the process's asyncio tasks instead, each with the coroutine
 * chain it is suspended in (CPython 3.14+), and who awaits it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "framename.h"
#include "protocol.h"

#define HDR_FIELDS 6

/* One thread's header, split in place. */
struct thread_hdr {
	const char *tid, *name, *state, *wait, *source, *age_ns;
};

struct stacks_opts {
	uint32_t *pids;
	size_t npids;
	uint32_t flags; /* PROTO_STACKS_* for the request */
	bool json;
};

static const char *state_name(char s)
{
	switch (s) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	default: return "unknown";
	}
}

static int split_header(char *text, struct thread_hdr *h)
{
	const char **f[HDR_FIELDS] = { &h->tid, &h->name, &h->state, &h->wait, &h->source, &h->age_ns };
	int i;

	for (i = 0; i < HDR_FIELDS; i++) {
		*f[i] = text;
		text = strchr(text, '\t');
		if (!text && i < HDR_FIELDS - 1)
			return -1;
		if (text)
			*text++ = '\0';
	}
	return 0;
}

static void print_thread_text(const struct stackset *ss, const struct ss_stack *st,
			      const struct thread_hdr *h)
{
	double age = strtod(h->age_ns, NULL) / 1e9;
	uint32_t i;

	printf("Thread %s \"%s\" %s", h->tid, h->name, state_name(h->state[0]));
	if (*h->wait)
		printf(", waiting in %s", h->wait);
	printf(" (%s, %.3f s ago)\n", h->source, age);
	for (i = st->depth; i > 1; i--) {
		const struct ss_frame *f = &ss->frames[st->frames[i - 1]];

		printf("    %s\n", f->name);
	}
	if (st->depth <= 1)
		printf("    (no stack)\n");
	printf("\n");
}

static void print_thread_json(struct buf *b, const struct stackset *ss, const struct ss_stack *st,
			      const struct thread_hdr *h, bool first)
{
	uint32_t i;

	buf_printf(b, "%s\n  {\"tid\": %s, \"name\": ", first ? "" : ",", h->tid);
	buf_put_json_str(b, h->name);
	buf_printf(b, ", \"state\": \"%c\", \"state_name\": \"%s\", \"wait\": ", h->state[0],
		   state_name(h->state[0]));
	buf_put_json_str(b, h->wait);
	buf_puts(b, ", \"source\": ");
	buf_put_json_str(b, h->source);
	buf_printf(b, ", \"age_ns\": %s, \"frames\": [", h->age_ns);
	for (i = st->depth; i > 1; i--) { /* leaf first */
		const struct ss_frame *f = &ss->frames[st->frames[i - 1]];

		buf_puts(b, i == st->depth ? "{\"name\": " : ", {\"name\": ");
		buf_put_json_str(b, f->name);
		buf_printf(b, ", \"kind\": \"%s\"}", framename_kind(f->kind));
	}
	buf_puts(b, "]}");
}

/* One task's header (PROTO_STACKS_ASYNC), split in place. */
struct task_hdr {
	const char *addr, *name, *tid, *awaited_by;
};

static int split_task(char *text, struct task_hdr *h)
{
	const char **f[] = { &h->addr, &h->name, &h->tid, &h->awaited_by };
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		*f[i] = text;
		text = strchr(text, '\t');
		if (!text && i < sizeof(f) / sizeof(f[0]) - 1)
			return -1;
		if (text)
			*text++ = '\0';
	}
	return 0;
}

static void print_task_text(const struct stackset *ss, const struct ss_stack *st,
			    const struct task_hdr *h)
{
	uint32_t i;

	printf("Task \"%s\" (%s)", h->name, h->addr);
	if (strcmp(h->tid, "0"))
		printf(" running in thread %s", h->tid);
	if (*h->awaited_by)
		printf(", awaited by %s", h->awaited_by);
	printf("\n");
	for (i = st->depth; i > 1; i--)
		printf("    %s\n", ss->frames[st->frames[i - 1]].name);
	if (st->depth <= 1)
		printf("    (no coroutine: done or not started)\n");
	printf("\n");
}

static void print_task_json(struct buf *b, const struct stackset *ss, const struct ss_stack *st,
			    const struct task_hdr *h, bool first)
{
	const char *p = h->awaited_by;
	uint32_t i;

	buf_printf(b, "%s\n  {\"task\": \"%s\", \"name\": ", first ? "" : ",", h->addr);
	buf_put_json_str(b, h->name);
	buf_printf(b, ", \"running_tid\": %s, \"awaited_by\": [", h->tid);
	while (*p) {
		size_t n = strcspn(p, ",");
		char one[256];

		snprintf(one, sizeof(one), "%.*s", (int)(n < 255 ? n : 255), p);
		if (p != h->awaited_by)
			buf_puts(b, ", ");
		buf_put_json_str(b, one);
		p += n + (p[n] == ',');
	}
	buf_puts(b, "], \"coroutines\": [");
	for (i = st->depth; i > 1; i--) { /* innermost first */
		if (i != st->depth)
			buf_puts(b, ", ");
		buf_put_json_str(b, ss->frames[st->frames[i - 1]].name);
	}
	buf_puts(b, "]}");
}

/* The thread (or task) listing, in the daemon's order. */
static int print_threads(const struct stackset *ss, bool json, bool tasks)
{
	struct buf b;
	size_t i, shown = 0;

	buf_init(&b);
	if (json)
		buf_puts(&b, "[");
	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];
		struct thread_hdr h;
		char *text;

		if (!st->depth || ss->frames[st->frames[0]].kind != FRAME_ROOT)
			continue;
		text = strdup(ss->frames[st->frames[0]].name);
		if (text && tasks) {
			struct task_hdr th;

			if (!split_task(text, &th)) {
				if (json)
					print_task_json(&b, ss, st, &th, !shown);
				else
					print_task_text(ss, st, &th);
				shown++;
			}
		} else if (text && !split_header(text, &h)) {
			if (json)
				print_thread_json(&b, ss, st, &h, !shown);
			else
				print_thread_text(ss, st, &h);
			shown++;
		}
		free(text);
	}
	if (!json && tasks && !shown)
		printf("no asyncio tasks\n");
	if (json) {
		buf_puts(&b, shown ? "\n]\n" : "]\n");
		if (buf_cstr(&b))
			fputs(b.data, stdout);
	}
	buf_free(&b);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: profctl stacks --pid PID [--async] [--json]\n"
		     "Every thread of PID: name, state, what it waits on in the kernel, and\n"
		     "its current Python and native stack (leaf first): for a blocked thread\n"
		     "the stack it blocked in, for a running one its latest CPU sample.\n"
		     "Needs profd with off-CPU tracing (the default).\n"
		     "  --async   PID's asyncio tasks instead (CPython 3.14+): each task's name,\n"
		     "            the coroutines it is suspended in (innermost first), the\n"
		     "            thread running it if one is, and the tasks awaiting it\n");
}

static int parse(int argc, char **argv, struct stacks_opts *o)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "async", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "p:jah", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (client_add_pid("stacks", optarg, &o->pids, &o->npids))
				return 2;
			break;
		case 'j': o->json = true; break;
		case 'a': o->flags |= PROTO_STACKS_ASYNC; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || o->npids != 1) {
		fprintf(stderr, "profctl stacks: give exactly one --pid\n");
		return 2;
	}
	return 0;
}

int cmd_stacks(const struct ctl *ctl, int argc, char **argv)
{
	struct stacks_opts o = { .json = ctl->json };
	struct proto_dump_req req = { 0 };
	struct stackset *ss = NULL;
	struct buf b, resp;
	int rc = parse(argc, argv, &o), err;

	if (rc) {
		free(o.pids);
		return rc == 1 ? 0 : rc;
	}
	req.pids = o.pids;
	req.npids = o.npids;
	req.flags = o.flags;
	buf_init(&b);
	buf_init(&resp);
	err = proto_encode_dump_req(&b, &req);
	if (!err)
		err = client_call(ctl, PROTO_REQ_STACKS, &b, PROTO_RESP_STACKS, &resp);
	if (!err) {
		ss = proto_decode_stackset(resp.data, resp.len, &err);
		if (!ss)
			client_error(ctl, "malformed stacks reply from profd: %s", strerror(-err));
	}
	rc = ss ? print_threads(ss, o.json, o.flags & PROTO_STACKS_ASYNC) : 1;
	stackset_free(ss);
	buf_free(&b);
	buf_free(&resp);
	free(o.pids);
	return rc;
}
