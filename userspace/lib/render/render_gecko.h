/* render_gecko: a timeline (tlset.h) in the Gecko profile format, the
 * JSON the Firefox Profiler (profiler.firefox.com) loads and Perfetto's
 * UI imports: a track per thread with its CPU samples in time order, and
 * its off-CPU blocks, CUDA and GPU driver calls as interval markers.
 *
 * Written from the format's documentation (the Firefox Profiler's
 * docs-developer/gecko-profile-format.md and its gecko-profile types),
 * version GECKO_VERSION:
 *   meta        version, startTime (ms since the epoch: the first event or
 *               the window's start), interval (ms per CPU sample),
 *               categories (by frame kind), markerSchema, product
 *   threads[]   one per (pid, tid): name "comm (tid)", pid, tid,
 *               processName (the main thread's comm), and its own
 *               tables, each {schema, data}:
 *     samples     [stack, time ms after startTime, eventDelay 0]
 *     stackTable  [prefix stack or null, frame]: root first, as folded
 *     frameTable  [location string, relevantForJS false, innerWindowID 0,
 *                  implementation null, line or null, column null,
 *                  category, subcategory 0]
 *     markers     [name string, startTime, endTime, phase (1 interval,
 *                  0 instant), category, data]; data.type "OffCPU",
 *                  "CUDA", "GPUDriver" or "Memory", data.leaf the
 *                  stack's last frame, data.durationNs or data.bytes, and
 *                  data.stack: the event's whole stack as the format
 *                  gives a marker's, a one-sample "SyncProfile" thread
 *                  whose sample indexes this thread's stackTable (the
 *                  profiler turns it into the marker's cause)
 *     stringTable frame names ("qualname (path:line)" for Python, which
 *                  the profiler shows as function and file), then marker
 *                  names
 *   libs, pausedRanges, processes: empty (frames come symbolized). */
#ifndef PROFD_RENDER_GECKO_H
#define PROFD_RENDER_GECKO_H

#include "buf.h"
#include "tlset.h"

#define GECKO_VERSION 27

/* t's events must be in time order (tlset_sort).  0, -ENOMEM or -EPROTO. */
int render_gecko(const struct tlset *t, struct buf *out);

#endif
