/* profctl list: processes profd has samples for. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "duration.h"
#include "jsonw.h"
#include "protocol.h"

#define MIB (1024.0 * 1024.0)

/* One object a process, a line each: grep finds a pid with its fields. */
static int print_json(const struct ctl *ctl, const struct proto_list *l)
{
	struct jsonw w;
	size_t i;
	uint32_t j;

	jsonw_init(&w, 1);
	jsonw_array(&w);
	for (i = 0; i < l->n; i++) {
		const struct proto_proc *p = &l->procs[i];

		jsonw_object(&w);
		jsonw_key_u64(&w, "pid", p->pid);
		jsonw_key_u64(&w, "uid", p->uid);
		jsonw_key_u64(&w, "start_time", p->start_time);
		jsonw_key_u64(&w, "samples", p->samples);
		jsonw_key_u64(&w, "rss_bytes", p->rss_bytes);
		jsonw_key_bool(&w, "exited", p->flags & PROTO_PROC_EXITED);
		jsonw_key_str(&w, "comm", p->comm);
		jsonw_key_str(&w, "exe", p->exe);
		jsonw_key(&w, "rss_history");
		jsonw_array(&w);
		for (j = 0; j < p->nrss; j++) {
			jsonw_array(&w);
			jsonw_u64(&w, p->rss_history[2 * j]);
			jsonw_u64(&w, p->rss_history[2 * j + 1]);
			jsonw_end(&w);
		}
		jsonw_end(&w);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

static int by_samples(const void *a, const void *b)
{
	const struct proto_proc *x = a, *y = b;

	return (x->samples < y->samples) - (x->samples > y->samples);
}

/* "+80.3/50s": how the RSS moved (MiB) from its oldest point to its
 * newest, and over how long; "-" with fewer than two points. */
static void rss_change(const struct proto_proc *p, char *out, size_t size)
{
	uint64_t span_ns, s;
	char span[32];

	snprintf(out, size, "-");
	if (p->nrss < 2)
		return;
	span_ns = p->rss_history[2 * (p->nrss - 1)] - p->rss_history[0];
	s = (span_ns + 500000000ull) / 1000000000ull;
	snprintf(out, size, "%+.1f/%s",
		 ((double)p->rss_history[2 * p->nrss - 1] - (double)p->rss_history[1]) / MIB,
		 duration_format(s * 1000000000ull, span, sizeof(span)));
}

static void print_table(const struct proto_list *l)
{
	size_t i;

	printf("%8s %10s %9s %13s  %-16s %-7s %s\n", "PID", "SAMPLES", "RSS_MIB", "RSS_CHANGE", "COMM",
	       "STATE", "EXE");
	for (i = 0; i < l->n; i++) {
		const struct proto_proc *p = &l->procs[i];
		char rss[32] = "-", change[48]; /* exited, or not readable */

		if (p->rss_bytes)
			snprintf(rss, sizeof(rss), "%.1f", (double)p->rss_bytes / MIB);
		rss_change(p, change, sizeof(change));
		printf("%8u %10llu %9s %13s  %-16s %-7s %s\n", p->pid, (unsigned long long)p->samples, rss,
		       change, p->comm ? p->comm : "", p->flags & PROTO_PROC_EXITED ? "exited" : "running",
		       p->exe ? p->exe : "");
	}
}

void list_usage(FILE *out)
{
	fputs("usage: profctl [--json] list\n"
	      "Processes profd holds samples for, busiest first, with each live\n"
	      "one's resident memory now (RSS_MIB; rss_bytes in --json) and how\n"
	      "it moved over the points profd kept, one per bucket while the\n"
	      "process ran (RSS_CHANGE, MiB over that span; rss_history in\n"
	      "--json: [realtime ns, bytes] pairs, oldest first).\n",
	      out);
}

int cmd_list(const struct ctl *ctl, struct cli_args *a)
{
	struct proto_list l = { 0 };
	struct buf req, resp;
	int rc = 1;

	(void)a;
	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_LIST, &req, PROTO_RESP_LIST, &resp))
		goto out;
	if (proto_decode_list(resp.data, resp.len, &l)) {
		client_error(ctl, "malformed list reply from profd");
		goto out;
	}
	qsort(l.procs, l.n, sizeof(*l.procs), by_samples);
	if (ctl->json) {
		rc = print_json(ctl, &l);
	} else {
		print_table(&l);
		rc = 0;
	}
out:
	proto_list_free(&l);
	buf_free(&req);
	buf_free(&resp);
	return rc;
}
