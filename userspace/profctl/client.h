/* client: profctl's side of the control socket. */
#ifndef PROFCTL_CLIENT_H
#define PROFCTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PROFCTL_DEFAULT_SOCKET "/run/profd/profd.sock"

struct ctl {
	const char *socket_path;
	bool json;
	bool quiet; /* do not print errors (the caller handles them) */
};

/* Send one request and receive the reply.  A daemon error reply is
 * printed (JSON under --json) and returned as its negative code; the
 * caller handles only success.  *resp_type is the reply type. */
int client_call(const struct ctl *ctl, uint16_t req_type, const struct buf *req,
		uint16_t expect_type, struct buf *resp);
struct proto_dump_req;
struct stackset;
/* Ask for a profile; *out is the decoded stackset (caller frees).  Errors
 * are printed; returns 0 or -errno. */
int client_dump(const struct ctl *ctl, const struct proto_dump_req *req, struct stackset **out);

/* Parse a --pid argument and append it; prints "profctl CMD: ..." and
 * returns -EINVAL for anything that is not a process id. */
int client_add_pid(const char *cmd, const char *arg, uint32_t **pids, size_t *n);

/* Print an error the way the output mode wants. */
void client_error(const struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
