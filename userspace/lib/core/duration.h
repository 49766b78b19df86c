/* duration: "500ms", "10s", "5m", "24h", "2d" <-> nanoseconds. */
#ifndef PROFD_DURATION_H
#define PROFD_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* A bare number means seconds.  0 or -EINVAL (also on overflow). */
int duration_parse(const char *s, uint64_t *ns);
/* "1h2m3s"-style, shortest exact form; returns buf. */
char *duration_format(uint64_t ns, char *buf, size_t size);

#endif
