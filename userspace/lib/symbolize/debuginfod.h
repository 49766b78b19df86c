/* debuginfod: a stripped file's separate debug file fetched by build-id
 * from the servers in DEBUGINFOD_URLS, through elfutils' client library
 * loaded at run time (dlopen: no build dependency, and a machine without
 * the library, the release's on a bare host, has debuginfod off with one
 * line saying so).  Off unless DEBUGINFOD_URLS is set in the daemon's
 * environment.  A fetch is slow (a network round trip, a download of up
 * to DEBUGINFOD_MAX_BYTES): call it only where nothing waits on it
 * (the worker's fetch lane). */
#ifndef PROFD_DEBUGINFOD_H
#define PROFD_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A debug file over 1 GiB is not downloaded (checked as it comes).
 * Defaults profd sets where the environment does not: a fetch over 2
 * minutes is given up, a server silent for 10 s is given up on; the
 * client's cache (libdebuginfod keeps misses there too, so a file is not
 * asked again for 10 minutes) under cache_dir. */
#define DEBUGINFOD_MAX_BYTES (1l << 30)
#define DEBUGINFOD_DEFAULT_MAXTIME "120"
#define DEBUGINFOD_DEFAULT_TIMEOUT "10"

/* Once, before any fetch (single-threaded start-up): 1 on, 0 off
 * (DEBUGINFOD_URLS unset or empty), -errno where it is set but the
 * library cannot be used (logged: one line why). */
int debuginfod_init(const char *cache_dir);
bool debuginfod_on(void);
/* The debug file of build-id id: an fd (the caller's to close) or -errno
 * (-ENOENT: no server has it).  Thread-safe: a client per call. */
int debuginfod_fetch(const uint8_t *id, size_t len);
/* Fetches under way end (-ECANCELED), later ones do not start: the
 * daemon is stopping. */
void debuginfod_cancel(void);

#endif
