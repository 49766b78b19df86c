/* control_timeline.c: the answer to a dump request with
 * PROTO_DUMP_TIMELINE: the selected processes' timeline rings (aggregate's
 * timeline.h) copied under d->lock, sorted by time outside it. */
#include <errno.h>

#include "control.h"
#include "daemon.h"
#include "protocol.h"
#include "tlset.h"

int control_timeline_collect(struct daemon *d, struct proc **sel, size_t nsel,
			     const struct agg_query *q, struct tlset *out)
{
	size_t i;
	int err = 0;

	out->start_ns = q->since_ns;
	out->end_ns = q->until_ns;
	out->rate_hz = daemon_rate_hz(d);
	for (i = 0; i < nsel && !err; i++)
		err = aggregate_timeline(&d->agg, sel[i], q, out);
	return err;
}

int control_timeline_encode(struct tlset *t, struct buf *payload)
{
	tlset_sort(t);
	/* Its stacks count events, of every type. */
	if (stackset_set_str(&t->ss->unit, "events") || stackset_set_str(&t->ss->type, "timeline"))
		return -ENOMEM;
	return proto_encode_timeline(payload, t);
}
