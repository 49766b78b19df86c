/* render_svg: a self-contained interactive flamegraph (one SVG file with
 * its CSS and JavaScript embedded, no external resources).
 *
 * Interaction: hover shows name, count and percent in the status line
 * (and the native tooltip); click zooms into a frame (ancestors dimmed);
 * "Search" or Ctrl-F highlights frames matching a regular expression and
 * shows "Matched: N%" of all samples (nested matches counted once); Esc
 * resets; "Invert" flips between flame and icicle views.  A browser test
 * or the console can drive the same through window.profd:
 * search(re) -> percent, matched(), zoom(index|element), resetZoom(),
 * resetSearch(), reset(), invert([bool]), count(), find(name) -> index,
 * info(index) -> {name, start, count, depth, x, width, hidden, dimmed}. */
#ifndef PROFD_RENDER_SVG_H
#define PROFD_RENDER_SVG_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"

#define SVG_DEFAULT_WIDTH 1200u
#define SVG_MIN_WIDTH 200u
#define SVG_MAX_WIDTH 100000u
#define SVG_DEFAULT_MIN_FRAME_PX 0.1

struct svg_options {
	const char *title;    /* NULL: ss->title, else "Flame Graph" */
	const char *subtitle; /* optional second line */
	uint32_t width;       /* pixels; 0 = SVG_DEFAULT_WIDTH */
	bool inverted;        /* start as an icicle graph (root on top) */
	bool flame;           /* keep the root at the bottom even when the plot
			       * is taller than a first screen (else inverted) */
	/* Frames narrower than this are not drawn (their parent still
	 * covers their width), which keeps huge profiles responsive.
	 * 0 = SVG_DEFAULT_MIN_FRAME_PX; negative draws every frame. */
	double min_frame_px;
};

/* Append the flamegraph of ss to out.  o may be NULL (defaults).
 * 0, -EINVAL (width out of range), -ENOMEM or -EOVERFLOW. */
int render_svg(const struct stackset *ss, const struct svg_options *o, struct buf *out);

#endif
