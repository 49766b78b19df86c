/* render_speedscope: speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json, written from
 * speedscope's src/lib/file-format-spec.ts), which the speedscope web app
 * opens directly.
 *
 * One "sampled" profile: every distinct stack once, root first, weighted
 * by its count (speedscope merges nothing and needs nothing sorted).
 * Shared frames: Python "qualname (path:line)" becomes {name: qualname,
 * file: path, line}; any other frame {name}.  Unit: "nanoseconds" for
 * nanosecond profiles, "bytes" for byte profiles, else "none" (weights
 * are sample or call counts).  startValue 0, endValue the total weight,
 * which is what speedscope takes as the profile's length. */
#ifndef PROFD_RENDER_SPEEDSCOPE_H
#define PROFD_RENDER_SPEEDSCOPE_H

#include "buf.h"
#include "stackset.h"

/* 0, -ENOMEM or -EOVERFLOW. */
int render_speedscope(const struct stackset *ss, struct buf *out);

#endif
