/* profctl stacks --pid N: every thread of a process, what state it is in,
 * what it waits on in the kernel, and its current Python and native stack
 * (py-spy dump's view, for a hung job).  The daemon answers with one stack
 * per thread whose root frame is the thread's header (protocol.h,
 * PROTO_RESP_STACKS); the listing is printed leaf first.
 *
 * --async: the process's asyncio tasks instead, each with the coroutine
 * chain it is suspended in (CPython 3.14+), and who awaits it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "framename.h"
#include "jsonw.h"
#include "protocol.h"

/* One thread's header, split in place.  from: "switch-out",
 * "cpu-sample", "read-now" or "" (no stack); pyname: Python's name of the
 * thread or ""; each "" from a daemon that does not send it. */
struct thread_hdr {
	const char *tid, *name, *state, *wait, *source, *age_ns, *from, *pyname;
};

/* One task's header (PROTO_STACKS_ASYNC), split in place. */
struct task_hdr {
	const char *addr, *name, *tid, *awaited_by;
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

/* Cut text at its tabs into n fields: 0, or -1 with fewer.  *rest: what
 * follows the n-th field's tab ("" when nothing does). */
static int split_fields(char *text, const char **f[], size_t n, char **rest)
{
	size_t i;

	*rest = "";
	for (i = 0; i < n; i++) {
		*f[i] = text;
		text = strchr(text, '\t');
		if (!text && i < n - 1)
			return -1;
		if (text)
			*text++ = '\0';
	}
	if (text)
		*rest = text;
	return 0;
}

static int split_thread(char *text, struct thread_hdr *h)
{
	const char **f[] = { &h->tid, &h->name, &h->state, &h->wait, &h->source, &h->age_ns };
	char *from, *pyname; /* the seventh and eighth fields, where sent */

	if (split_fields(text, f, sizeof(f) / sizeof(f[0]), &from))
		return -1;
	pyname = strchr(from, '\t');
	if (pyname)
		*pyname++ = '\0';
	if (pyname && strchr(pyname, '\t')) /* fields a later daemon may add */
		*strchr(pyname, '\t') = '\0';
	h->from = from;
	h->pyname = pyname ? pyname : "";
	return 0;
}

static int split_task(char *text, struct task_hdr *h)
{
	const char **f[] = { &h->addr, &h->name, &h->tid, &h->awaited_by };
	char *rest;

	return split_fields(text, f, sizeof(f) / sizeof(f[0]), &rest);
}

/* Numbers in a header are the daemon's decimal text. */
static uint64_t number(const char *s)
{
	return strtoull(s, NULL, 10);
}

/* A FRAME_LOCAL frame's "flags<TAB>name<TAB>repr" (protocol.h,
 * PROTO_STACKS_LOCALS), pointed into: 0, or -1 for one that does not
 * split. */
struct local_view {
	const char *flags, *name, *repr;
	int nflags, nname;
};

static int split_local(const char *text, struct local_view *v)
{
	const char *t1 = strchr(text, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;

	if (!t2)
		return -1;
	v->flags = text;
	v->nflags = (int)(t1 - text);
	v->name = t1 + 1;
	v->nname = (int)(t2 - t1 - 1);
	v->repr = t2 + 1;
	return 0;
}

static bool has_flag(const struct local_view *v, char c)
{
	return memchr(v->flags, c, (size_t)v->nflags) != NULL;
}

/* The variables that follow frame index i (root first), each indented
 * under it: "name = repr", then what it is besides a plain local. */
static void print_locals_text(const struct stackset *ss, const struct ss_stack *st, uint32_t i)
{
	struct local_view v;

	for (; i < st->depth && ss->frames[st->frames[i]].kind == FRAME_LOCAL; i++) {
		if (split_local(ss->frames[st->frames[i]].name, &v))
			continue;
		printf("        %.*s = %s", v.nname, v.name, v.repr);
		if (has_flag(&v, 'a') || has_flag(&v, 'c') || has_flag(&v, 'f'))
			printf("  [%s%s%s]", has_flag(&v, 'a') ? "arg" : "",
			       has_flag(&v, 'a') && v.nflags > 1 ? ", " : "",
			       has_flag(&v, 'c') ? "cell" : has_flag(&v, 'f') ? "free" : "");
		printf("\n");
	}
}

static void print_locals_json(struct jsonw *w, const struct stackset *ss,
			      const struct ss_stack *st, uint32_t i)
{
	struct local_view v;

	jsonw_key(w, "locals");
	jsonw_array(w);
	for (; i < st->depth && ss->frames[st->frames[i]].kind == FRAME_LOCAL; i++) {
		if (split_local(ss->frames[st->frames[i]].name, &v))
			continue;
		jsonw_object(w);
		jsonw_key(w, "name");
		jsonw_str_n(w, v.name, (size_t)v.nname);
		jsonw_key_str(w, "repr", v.repr);
		jsonw_key_bool(w, "arg", has_flag(&v, 'a'));
		jsonw_key_str(w, "scope", has_flag(&v, 'c') ? "cell" : has_flag(&v, 'f') ? "free"
											     : "local");
		jsonw_end(w);
	}
	jsonw_end(w);
}

static void print_thread_text(const struct stackset *ss, const struct ss_stack *st,
			      const struct thread_hdr *h)
{
	double age = strtod(h->age_ns, NULL) / 1e9;
	uint32_t i;

	/* Python's name where it has one, as py-spy shows it; the OS's else. */
	printf("Thread %s \"%s\" %s", h->tid, *h->pyname ? h->pyname : h->name,
	       state_name(h->state[0]));
	if (*h->wait)
		printf(", waiting in %s", h->wait);
	if (!strcmp(h->from, "read-now") || !number(h->age_ns)) /* read now, or no stack */
		printf(" (%s)\n", h->source);
	else
		printf(" (%s, %.3f s ago)\n", h->source, age);
	for (i = st->depth; i > 1; i--) {
		if (ss->frames[st->frames[i - 1]].kind == FRAME_LOCAL)
			continue; /* under its frame */
		printf("    %s\n", ss->frames[st->frames[i - 1]].name);
		print_locals_text(ss, st, i);
	}
	if (st->depth <= 1)
		printf("    (no stack)\n");
	printf("\n");
}

static void print_thread_json(struct jsonw *w, const struct stackset *ss, const struct ss_stack *st,
			      const struct thread_hdr *h, bool locals)
{
	char state[2] = { h->state[0], '\0' };
	uint32_t i;

	jsonw_object(w);
	jsonw_key_u64(w, "tid", number(h->tid));
	jsonw_key_str(w, "name", h->name);
	jsonw_key_str(w, "python_name", h->pyname);
	jsonw_key_str(w, "state", state);
	jsonw_key_str(w, "state_name", state_name(h->state[0]));
	jsonw_key_str(w, "wait", h->wait);
	jsonw_key_str(w, "source", h->source);
	jsonw_key_str(w, "stack_from", *h->from ? h->from : "none");
	jsonw_key_u64(w, "age_ns", number(h->age_ns));
	jsonw_key(w, "frames");
	jsonw_array(w);
	for (i = st->depth; i > 1; i--) { /* leaf first */
		const struct ss_frame *f = &ss->frames[st->frames[i - 1]];

		if (f->kind == FRAME_LOCAL)
			continue; /* in its frame's "locals" */
		jsonw_object(w);
		jsonw_key_str(w, "name", f->name);
		jsonw_key_str(w, "kind", framename_kind(f->kind));
		if (locals && f->kind == FRAME_PYTHON)
			print_locals_json(w, ss, st, i);
		jsonw_end(w);
	}
	jsonw_end(w);
	jsonw_end(w);
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

static void print_task_json(struct jsonw *w, const struct stackset *ss, const struct ss_stack *st,
			    const struct task_hdr *h)
{
	const char *p = h->awaited_by;
	uint32_t i;

	jsonw_object(w);
	jsonw_key_str(w, "task", h->addr);
	jsonw_key_str(w, "name", h->name);
	jsonw_key_u64(w, "running_tid", number(h->tid));
	jsonw_key(w, "awaited_by");
	jsonw_array(w);
	while (*p) {
		size_t n = strcspn(p, ",");

		jsonw_str_n(w, p, n);
		p += n + (p[n] == ',');
	}
	jsonw_end(w);
	jsonw_key(w, "coroutines");
	jsonw_array(w);
	for (i = st->depth; i > 1; i--) /* innermost first */
		jsonw_str(w, ss->frames[st->frames[i - 1]].name);
	jsonw_end(w);
	jsonw_end(w);
}

/* One thread or task from its header (split in place): as text, or as
 * JSON into w.  False for a header that does not split. */
static bool print_entry(struct jsonw *w, const struct stackset *ss, const struct ss_stack *st,
			char *header, bool tasks, bool locals)
{
	struct thread_hdr h;
	struct task_hdr t;

	if (tasks ? split_task(header, &t) : split_thread(header, &h))
		return false;
	if (tasks && w)
		print_task_json(w, ss, st, &t);
	else if (tasks)
		print_task_text(ss, st, &t);
	else if (w)
		print_thread_json(w, ss, st, &h, locals);
	else
		print_thread_text(ss, st, &h);
	return true;
}

/* The threads (or tasks) in the daemon's order, w NULL for text; how many. */
static size_t print_entries(struct jsonw *w, const struct stackset *ss, bool tasks, bool locals)
{
	size_t i, shown = 0;

	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];
		char *header;

		if (!st->depth || ss->frames[st->frames[0]].kind != FRAME_ROOT)
			continue;
		header = strdup(ss->frames[st->frames[0]].name);
		if (header && print_entry(w, ss, st, header, tasks, locals))
			shown++;
		free(header);
	}
	return shown;
}

static int print_listing(const struct ctl *ctl, const struct stackset *ss, bool tasks,
			 bool locals)
{
	struct jsonw w;

	if (!ctl->json) {
		if (!print_entries(NULL, ss, tasks, locals) && tasks)
			printf("no asyncio tasks\n");
		return 0;
	}
	jsonw_init(&w, 1);
	jsonw_array(&w);
	print_entries(&w, ss, tasks, locals);
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

void stacks_usage(FILE *out)
{
	fputs("usage: profctl stacks --pid PID [--locals | --async] [--json]\n"
	      "Every thread of PID: name, state, what it waits on in the kernel, and\n"
	      "its current stack (leaf first).  Python frames and the kernel's are\n"
	      "read from the process now, whenever it started; with profd --off-cpu\n"
	      "a thread BPF has seen shows its native stack too: for a blocked thread\n"
	      "the stack it blocked in, for a running one its latest CPU sample.\n"
	      "  --async   PID's asyncio tasks instead (CPython 3.14+): each task's name,\n"
	      "            the coroutines it is suspended in (innermost first), the\n"
	      "            thread running it if one is, and the tasks awaiting it\n"
	      "  --locals  under each Python frame read now, its arguments (first,\n"
	      "            marked [arg]) and local variables as \"name = repr\": ints,\n"
	      "            floats, str, bytes, None, bools and short lists and tuples\n"
	      "            of them; anything else as <TYPE at 0xADDR>\n",
	      out);
}

int cmd_stacks(const struct ctl *ctl, struct cli_args *a)
{
	struct proto_dump_req req = { .pids = a->req.pids, .npids = a->req.npids };
	struct stackset *ss = NULL;
	struct buf b, resp;
	int rc, err;

	if (a->req.npids != 1)
		return cli_usage_error(ctl, "give exactly one --pid");
	if (a->async && a->locals)
		return cli_usage_error(ctl, "--locals and --async do not go together");
	req.flags = a->async ? PROTO_STACKS_ASYNC : a->locals ? PROTO_STACKS_LOCALS : 0;
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
	rc = ss ? print_listing(ctl, ss, a->async, a->locals) : 1;
	stackset_free(ss);
	buf_free(&b);
	buf_free(&resp);
	return rc;
}
