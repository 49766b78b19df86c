/* backend.h: what ingest asks of the sampler and the worker, and the
 * symbolizer's hooks that send its file reads to the worker. */
#ifndef PROFD_BACKEND_H
#define PROFD_BACKEND_H

struct daemon;
struct ingest_backend;

void daemon_ingest_backend(struct daemon *d, struct ingest_backend *be);
void daemon_symbolizer_hooks(struct daemon *d);

#endif
