/* elfsplit: the split-off part of a function in a stripped ELF file.
 *
 * GCC (-freorder-blocks-and-partition, on by default with profile
 * feedback) moves a function's rarely run blocks into a separate range,
 * "F.cold", named only in .symtab.  In a stripped file a return address
 * there has no symbol.  For _PyEval_EvalFrameDefault that loses the very
 * frames Python frames take the place of: Debian's CPython 3.14 and 3.15
 * call out of the eval loop's split part.  The part is found from the
 * function itself: the range of one FDE outside it (from .eh_frame_hdr's
 * table) that its code jumps into at least ELFSPLIT_MIN_JUMPS times.
 * x86-64 only.
 * Internal to the symbolizer (elfsym), which also checks that no symbol
 * covers the range. */
#ifndef PROFD_ELFSPLIT_H
#define PROFD_ELFSPLIT_H

#include <stdint.h>

#include "elffile.h"

/* One jump could be a byte pattern inside another instruction; a split
 * part is entered from many places. */
#define ELFSPLIT_MIN_JUMPS 2

/* For the function [start, end): 0 and the part's range, -ENOENT when it
 * has none (or the file does not say), -ENOMEM. */
int elfsplit_find(struct elffile *f, uint64_t start, uint64_t end, uint64_t *part_start,
		  uint64_t *part_end);

#endif
