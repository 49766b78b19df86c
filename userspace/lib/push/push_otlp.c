/* push_otlp: OTLP profiles over HTTP (not yet). */
#include <errno.h>

#include "push_int.h"

int push_encode_otlp(const struct push_target *t, const struct push_item *it,
		     struct push_request *out)
{
	(void)t;
	(void)it;
	(void)out;
	return -EPROTONOSUPPORT;
}
