/* render_trace: a timeline (tlset.h) in Chrome's Trace Event Format, the
 * JSON object {"traceEvents": [...]} that speedscope imports (a profile
 * per thread, drawn as a flame chart in time order) and Perfetto's UI
 * opens (a track per thread).
 *
 * Written from the format's documentation ("Trace Event Format", Google)
 * and what speedscope's importer reads (src/import/trace-event.ts):
 *   metadata   per process "M" process_name (its main thread's comm), per
 *              thread "M" thread_name (its comm) and thread_sort_index
 *   frames     per thread, "B"/"E" pairs, well nested, named as the frame
 *              contract says ("qualname (path:line)", symbols, "x_[k]"),
 *              cat the frame kind ("python", "native", "kernel", "wait"..).
 *              Each moment of the thread shows one stack: the CPU sample's
 *              (lasting until the next sample when that comes within
 *              TRACE_GAP_PERIODS sample periods, else one period: a longer
 *              gap ends every open frame) or the off-CPU block's (its
 *              stack ends in the wait frame).  A CUDA or driver call holds
 *              its stack open for its whole length with a frame
 *              "[CUDA call]" or "[GPU driver call]" on top, under which
 *              the samples and blocks within it nest; consecutive moments
 *              share the frames of their common prefix, so a function that
 *              ran for many samples is one bar.
 *   memory     "i" instant events (thread scope) named "memory", args
 *              bytes and leaf frame
 *   ts         microseconds after the file's start (the window's start or
 *              the first event), to the nanosecond; otherData.startTimeNs
 *              is that start as CLOCK_REALTIME ns.
 * B and E carry no args: speedscope keys a frame by its name and args. */
#ifndef PROFD_RENDER_TRACE_H
#define PROFD_RENDER_TRACE_H

#include "buf.h"
#include "tlset.h"

/* A sample stands until the next one within this many periods. */
#define TRACE_GAP_PERIODS 1.5

/* t's events must be in time order (tlset_sort).  0 or -ENOMEM. */
int render_trace(const struct tlset *t, struct buf *out);

#endif
