/* render: one entry point for every output format, so profctl's dump and
 * render (and anything else) accept the same formats with the same names:
 *
 *   folded      flamegraph.pl's folded stacks      .folded
 *   svg         interactive flamegraph             .svg
 *   pprof       gzipped profile.proto              .pb.gz
 *   speedscope  speedscope JSON                    .speedscope.json
 *   pstats      Python pstats/cProfile marshal     .pstats
 *   json        profd's JSON (docs/json-format.md) .json
 *   gecko       Firefox Profiler timeline          .gecko.json
 *   trace       Trace Event Format timeline        .trace.json
 *               (speedscope, Perfetto)
 *
 * gecko and trace are drawn from a timeline (tlset.h: events in time
 * order), not a profile: render_format refuses them, render_timeline
 * draws them.
 */
#ifndef PROFD_RENDER_H
#define PROFD_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"
#include "tlset.h"

struct render_opts {
	/* Profile name for every format that has one (svg title, speedscope
	 * and json name, pprof comment); NULL keeps ss->title. */
	const char *title;
	/* SVG only; zero values mean the render_svg defaults. */
	const char *subtitle;
	uint32_t width;
	bool inverted;
	bool flame; /* root at the bottom however deep (else icicle past a screen) */
	double min_frame_px;
};

/* Append ss rendered as format to out.  o may be NULL.  0, -EINVAL for
 * an unknown format or bad option, -ENODATA when the profile has nothing
 * the format can show (pstats without Python frames), -ENOMEM,
 * -EOVERFLOW or -EIO. */
int render_format(const char *format, const struct stackset *ss, const struct render_opts *o,
		  struct buf *out);

/* Whether format is drawn from a timeline (gecko, trace). */
bool render_format_timeline(const char *format);
/* Append t (sorted, tlset_sort) rendered as format to out: 0, -EINVAL for
 * a format that is not a timeline format, -ENOMEM. */
int render_timeline(const char *format, const struct tlset *t, struct buf *out);

/* "folded, svg, pprof, speedscope, pstats, json, gecko, trace": for usage
 * and errors. */
const char *render_formats(void);
bool render_format_known(const char *format);
/* Usual file name ending (".pb.gz"), or NULL for an unknown format. */
const char *render_format_ext(const char *format);
/* True for formats that are not text (pprof, pstats): not for a terminal. */
bool render_format_binary(const char *format);

#endif
