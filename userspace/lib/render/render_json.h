/* render_json: profd's own JSON profile, for scripts and other tools.
 * Documented in docs/json-format.md; the short form:
 *
 *   {
 *     "format": "profd-profile",
 *     "version": 1,
 *     "metadata": {
 *       "title": string|null, "type": string|null, "unit": string|null,
 *       "start_ns": int, "end_ns": int,   (CLOCK_REALTIME, 0 = unknown)
 *       "rate_hz": int,                   (0 = unknown)
 *       "total": int                      (sum of the stacks' counts)
 *     },
 *     "frames": [ { "name": string, "kind": KIND, ...details }, ... ],
 *     "stacks": [ { "frames": [frame index, ...root first], "count": int }, ... ]
 *   }
 *
 * KIND is one of "unknown", "kernel", "native", "python", "root", "gpu".
 * Details, present only when the name has that shape: Python frames add
 * "function", "file", "line"; "[module+0xOFF]" frames add "module" and
 * "offset" (a number).  Stable ordering: stacks sorted by frame names
 * root first (the folded order), frames numbered by first use walking the
 * stacks in that order, so equal profiles give byte-identical files.
 * Stacks with count 0 and frames no stack uses are left out.  Counts are
 * integers that may exceed 2^53.  Strings are valid UTF-8: bytes that are
 * not become U+FFFD. */
#ifndef PROFD_RENDER_JSON_H
#define PROFD_RENDER_JSON_H

#include "buf.h"
#include "stackset.h"

#define RENDER_JSON_VERSION 1

/* 0, -ENOMEM or -EOVERFLOW. */
int render_json(const struct stackset *ss, struct buf *out);

#endif
