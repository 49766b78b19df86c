/* render_diff: a differential flamegraph of two profiles of the same
 * program (before and after a change), as one self-contained SVG with the
 * same interaction as render_svg (zoom, search, invert, window.profd).
 *
 * Frame widths come from the "after" profile.  Colors show each frame's
 * change: red where it grew, blue where it shrank, grey where it stayed,
 * deeper the larger the change relative to the largest one.  By default
 * the change compares shares of each profile's total (so a longer or
 * busier "after" recording does not paint everything red); absolute mode
 * compares raw counts.  Each frame's tooltip (<title>) reads
 *
 *   name
 *   before: 300 (42.86%)  after: 400 (57.14%)  delta: +100 (+14.29 pp)
 *
 * (pp: percentage points of the total).  Paths that only the "before"
 * profile has cannot be drawn with after-widths; the largest of them are
 * listed under the graph ("Only in before"), with their counts. */
#ifndef PROFD_RENDER_DIFF_H
#define PROFD_RENDER_DIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"

/* How many vanished paths the summary lists by name. */
#define DIFF_GONE_LISTED 12

struct diff_options {
	const char *title;    /* NULL: "Differential flame graph" */
	const char *subtitle; /* optional second line */
	uint32_t width;       /* pixels; 0 = SVG_DEFAULT_WIDTH */
	bool absolute;        /* color by raw count change, not share */
	double min_frame_px;  /* as in svg_options */
};

/* What the diff found, for a command's summary line. */
struct diff_summary {
	uint64_t before_total, after_total;
	size_t grew, shrank, same; /* drawn frames by color */
	size_t gone;               /* paths only in before (topmost ones) */
	uint64_t gone_samples;     /* their before counts */
};

/* Append the differential flamegraph to out.  o and sum may be NULL.
 * 0, -EINVAL (width out of range), -ENOMEM or -EOVERFLOW. */
int render_diff(const struct stackset *before, const struct stackset *after,
		const struct diff_options *o, struct buf *out, struct diff_summary *sum);

#endif
