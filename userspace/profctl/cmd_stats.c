/* profctl stats: profd's counters, memory and CPU. */
#include <stdio.h>

#include "commands.h"
#include "jsonw.h"
#include "protocol.h"

/* A counter a line, as in the text form: grep finds one with its value. */
static int print_json(const struct ctl *ctl, const struct proto_stats *s)
{
	struct jsonw w;
	size_t i;

	jsonw_init(&w, 1);
	jsonw_object(&w);
	for (i = 0; i < s->n; i++)
		jsonw_key_u64(&w, s->items[i].name, s->items[i].value);
	jsonw_end(&w);
	return client_print_json(ctl, &w);
}

static void print_text(const struct proto_stats *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		printf("%-40s %llu\n", s->items[i].name, (unsigned long long)s->items[i].value);
}

void stats_usage(FILE *out)
{
	fputs("usage: profctl [--json] stats\n"
	      "Samples received, delivered and dropped (by reason), memory, CPU.\n",
	      out);
}

int cmd_stats(const struct ctl *ctl, struct cli_args *a)
{
	struct proto_stats s = { 0 };
	struct buf req, resp;
	int rc = 1;

	(void)a;
	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_STATS, &req, PROTO_RESP_STATS, &resp))
		goto out;
	if (proto_decode_stats(resp.data, resp.len, &s)) {
		client_error(ctl, "malformed stats reply from profd");
		goto out;
	}
	if (ctl->json) {
		rc = print_json(ctl, &s);
	} else {
		print_text(&s);
		rc = 0;
	}
out:
	proto_stats_free(&s);
	buf_free(&req);
	buf_free(&resp);
	return rc;
}
