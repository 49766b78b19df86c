/* render_pprof: the profile.proto format of github.com/google/pprof,
 * gzip-compressed, as `go tool pprof`, Pyroscope, Parca and Grafana read.
 *
 * Mapping from a stackset:
 *  - sample_type: ("samples","count") for sample counts, plus
 *    ("cpu","nanoseconds") = count * period when rate_hz is known for a
 *    cpu profile; ("<type>","nanoseconds") for time units; ("<unit>",
 *    "count") otherwise.  period_type/period from rate_hz (1e9/rate_hz ns).
 *  - time_nanos/duration_nanos from start_ns/end_ns; the title and type
 *    go to the comments.
 *  - no sample labels, unless the caller gives numeric ones
 *    (render_pprof_labeled): push sends the pid so.
 *  - one Location per frame, leaf first in each Sample, one Line each:
 *    Python "qualname (path:line)" -> Function{qualname, path} at line;
 *    any other frame -> Function{the frame's name} (kernel frames keep
 *    their "_[k]" suffix so kinds stay visible in every view).
 *  - Mappings, all marked has_functions so pprof never tries to
 *    re-symbolize: one per binary (path and build-id) that frames of the
 *    stackset are in, else per module of "[module+0xOFF]" frames, and
 *    "[kernel.kallsyms]" for kernel frames without one, after a first one
 *    named after the title (no range, no locations), which pprof shows as
 *    "File:".  A Location points at its frame's mapping; only
 *    "[module+0xOFF]" frames have an address (OFF), symbolized ones have
 *    none.  Python frames have no mapping. */
#ifndef PROFD_RENDER_PPROF_H
#define PROFD_RENDER_PPROF_H

#include "buf.h"
#include "stackset.h"

/* Append the gzipped profile to out.  0, -ENOMEM or -EIO (zlib). */
int render_pprof(const struct stackset *ss, struct buf *out);

/* The same, uncompressed (for tests and for callers that compress). */
int render_pprof_raw(const struct stackset *ss, struct buf *out);

/* A numeric label on every sample, such as ("pid", 1234): `go tool pprof
 * -tagfocus pid=1234` selects by it, and Pyroscope, which turns string
 * sample labels into series labels, leaves numeric ones out of the series
 * (so a pid carried this way never splits one). */
struct pprof_num_label {
	const char *key;
	int64_t num;
};

/* render_pprof and render_pprof_raw with labels[0..n) on every sample. */
int render_pprof_labeled(const struct stackset *ss, const struct pprof_num_label *labels,
			 size_t n, struct buf *out);
int render_pprof_raw_labeled(const struct stackset *ss, const struct pprof_num_label *labels,
			     size_t n, struct buf *out);

/* Append in[0..len) gzip-compressed (zlib, windowBits 31).  0, -ENOMEM
 * or -EIO. */
int pprof_gzip(const void *in, size_t len, struct buf *out);

#endif
