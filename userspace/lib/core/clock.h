/* clock.h: the one clock helper.  Monotonic time for intervals, deadlines
 * and rate limits; realtime for stamps a user or the history reads. */
#ifndef PROFD_CLOCK_H
#define PROFD_CLOCK_H

#include <stdint.h>

uint64_t clock_mono_ns(void);
uint64_t clock_realtime_ns(void);

#endif
