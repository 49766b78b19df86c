/* profctl stats: profd's counters, memory and CPU. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "protocol.h"

static void print_json(const struct proto_stats *s)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	buf_puts(&b, "{");
	for (i = 0; i < s->n; i++) {
		buf_puts(&b, i ? ",\n  " : "\n  ");
		buf_put_json_str(&b, s->items[i].name);
		buf_printf(&b, ": %llu", (unsigned long long)s->items[i].value);
	}
	buf_puts(&b, "\n}\n");
	if (buf_cstr(&b))
		fputs(b.data, stdout);
	buf_free(&b);
}

int cmd_stats(const struct ctl *ctl, int argc, char **argv)
{
	struct proto_stats s = { 0 };
	struct buf req, resp;
	size_t i;
	int rc = 1;

	if (argc > 1) {
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			printf("usage: profctl [--json] stats\n"
			       "Samples received, delivered and dropped (by reason), memory, CPU.\n");
			return 0;
		}
		fprintf(stderr, "profctl stats: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	buf_init(&req);
	buf_init(&resp);
	if (client_call(ctl, PROTO_REQ_STATS, &req, PROTO_RESP_STATS, &resp))
		goto out;
	if (proto_decode_stats(resp.data, resp.len, &s)) {
		client_error(ctl, "malformed stats reply from profd");
		goto out;
	}
	if (ctl->json)
		print_json(&s);
	else
		for (i = 0; i < s.n; i++)
			printf("%-40s %llu\n", s.items[i].name, (unsigned long long)s.items[i].value);
	rc = 0;
out:
	proto_stats_free(&s);
	buf_free(&req);
	buf_free(&resp);
	return rc;
}
