/* jitdump: JIT code names from perf's jitdump files (jit-PID.dump), the
 * binary counterpart of perf maps (perfmap.h), into the same map. */
#ifndef PROFD_JITDUMP_H
#define PROFD_JITDUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "perfmap.h"

/* Records read at most from one file (a JVM's runs to a few million). */
#define JITDUMP_MAX_RECORDS (4u << 20)

struct jitdump_counts {
	uint32_t records, loads;
	bool truncated; /* max_records reached */
};

/* Add the code load records of the jitdump open on fd (size bytes, as
 * fstat says; pid: the writer's pid as its header must say it, 0 for
 * any) to pm.  A record cut short ends the read (a JIT appends as it
 * runs).  0; -EPROTO: not a jitdump of this byte order, or of another
 * pid; -ENOMEM, -EFBIG (perfmap_add). */
int jitdump_read(int fd, uint64_t size, uint32_t pid, uint32_t max_records, struct perfmap *pm,
		 struct jitdump_counts *c);

#endif
