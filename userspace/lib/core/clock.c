#include "clock.h"

#include <time.h>

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t clock_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}
