/* persist.h: history: opened, flushed when due and at exit, pruned. */
#ifndef PROFD_PERSIST_H
#define PROFD_PERSIST_H

#include <stdbool.h>

struct daemon;
struct history_stats;

void persist_open(struct daemon *d);
void persist_flush(struct daemon *d);
/* Under both locks: the flush, when due. */
void persist_tick(struct daemon *d);
/* Under the history lock only (a prune is slow, and touches no profile):
 * true when one ran, with the database's figures for stats in *hs. */
bool persist_prune_due(struct daemon *d, struct history_stats *hs, bool *hs_ok);
void persist_snap_stats(struct daemon *d);

#endif
