/* profctl list: processes profd has samples for. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "duration.h"
#include "protocol.h"

#define MIB (1024.0 * 1024.0)

static void print_json(const struct proto_list *l)
{
	struct buf b;
	size_t i;
	uint32_t j;

	buf_init(&b);
	buf_puts(&b, "[");
	for (i = 0; i < l->n; i++) {
		const struct proto_proc *p = &l->procs[i];

		buf_printf(&b, "%s\n  {\"pid\": %u, \"uid\": %u, \"start_time\": %llu, \"samples\": %llu, "
			       "\"rss_bytes\": %llu, \"exited\": %s, \"comm\": ",
			   i ? "," : "", p->pid, p->uid, (unsigned long long)p->start_time,
			   (unsigned long long)p->samples, (unsigned long long)p->rss_bytes,
			   p->flags & PROTO_PROC_EXITED ? "true" : "false");
		buf_put_json_str(&b, p->comm ? p->comm : "");
		buf_puts(&b, ", \"exe\": ");
		buf_put_json_str(&b, p->exe ? p->exe : "");
		buf_puts(&b, ", \"rss_history\": [");
		for (j = 0; j < p->nrss; j++)
			buf_printf(&b, "%s[%llu, %llu]", j ? ", " : "",
				   (unsigned long long)p->rss_history[2 * j],
				   (unsigned long long)p->rss_history[2 * j + 1]);
		buf_puts(&b, "]}");
	}
	buf_puts(&b, l->n ? "\n]\n" : "]\n");
	if (buf_cstr(&b))
		fputs(b.data, stdout);
	buf_free(&b);
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

int cmd_list(const struct ctl *ctl, int argc, char **argv)
{
	struct proto_list l = { 0 };
	struct buf req, resp;
	int rc = 1;

	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			printf("usage: profctl [--json] list\n"
			       "Processes profd holds samples for, busiest first, with each live\n"
			       "one's resident memory now (RSS_MIB; rss_bytes in --json) and how\n"
			       "it moved over the points profd kept, one per bucket while the\n"
			       "process ran (RSS_CHANGE, MiB over that span; rss_history in\n"
			       "--json: [realtime ns, bytes] pairs, oldest first).\n");
			return 0;
		}
		fprintf(stderr, "profctl list: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_LIST, &req, PROTO_RESP_LIST, &resp))
		goto out;
	if (proto_decode_list(resp.data, resp.len, &l)) {
		client_error(ctl, "malformed list reply from profd");
		goto out;
	}
	qsort(l.procs, l.n, sizeof(*l.procs), by_samples);
	if (ctl->json)
		print_json(&l);
	else
		print_table(&l);
	rc = 0;
out:
	proto_list_free(&l);
	buf_free(&req);
	buf_free(&resp);
	return rc;
}
