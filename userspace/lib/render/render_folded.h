/* render_folded: the folded-stack text format (flamegraph.pl's input,
 * also read by speedscope, inferno and Pyroscope), both ways.
 *
 *   root;child;leaf 42
 *
 * One line per stack, root first, frames joined by ';', one space, then
 * the count in decimal.  Frame kinds are not stored; folded_parse infers
 * them from the frame-name contract (DESIGN.md, "Frame names"). */
#ifndef PROFD_RENDER_FOLDED_H
#define PROFD_RENDER_FOLDED_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"

/* Limits on untrusted input; a line over any of them is rejected. */
#define FOLDED_MAX_LINE (1u << 20) /* bytes in one line */
#define FOLDED_MAX_DEPTH 4096u     /* frames in one stack */
#define FOLDED_MAX_NAME 4096u      /* bytes in one frame name */

/* Append ss to out, lines sorted by frame names.  Names are made safe for
 * the format: ';' becomes ':', control characters (newline included)
 * become '?', an empty name becomes "[unknown]", and a stack without
 * frames is written as "[unknown]".  Stacks that print the same are
 * merged; zero counts are left out.  0, -ENOMEM or -EOVERFLOW. */
int render_folded(const struct stackset *ss, struct buf *out);

/* Add the stacks in text[0..len) to ss (merging with what ss holds).
 * Blank lines and trailing whitespace (including '\r') are accepted; the
 * count is the last space- or tab-separated field.  A malformed line (no
 * count, bad or overflowing count, empty frame, control character, over
 * a limit) fails with -EINVAL and its line number is logged; the lines
 * before it stay in ss.  Lines with count 0 are checked, not added. */
int folded_parse(const char *text, size_t len, struct stackset *ss);

/* Frame kind of a name per the contract: "sym_[k]" kernel, "qualname
 * (path:line)" Python, "[...]" unknown, anything else native. */
uint32_t folded_infer_kind(const char *name, size_t len);

#endif
