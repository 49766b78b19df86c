/* push_connect: Pyroscope's push.v1.PusherService/Push (not yet). */
#include <errno.h>

#include "push_int.h"

int push_encode_connect(const struct push_target *t, const struct push_item *it,
			struct push_request *out)
{
	(void)t;
	(void)it;
	(void)out;
	return -EPROTONOSUPPORT;
}
