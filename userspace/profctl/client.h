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
	const char *cmd; /* the command running, named in messages; NULL before one */
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
struct tlset;
/* The same for the selection's timeline (PROTO_DUMP_TIMELINE); *out is
 * sorted by time. */
int client_timeline(const struct ctl *ctl, const struct proto_dump_req *req, struct tlset **out);

/* Every error profctl reports goes through here, the way the output
 * mode wants it: "profctl CMD: message" on stderr, or under --json
 * {"error": "message", "command": "CMD"} on stdout, where a script reads
 * the rest of the answer. */
void client_error(const struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct jsonw;
/* Print a finished JSON document on stdout: 0, or 1 after reporting why
 * it could not be. */
int client_print_json(const struct ctl *ctl, struct jsonw *w);
/* A word for the person at the terminal ("profctl CMD: wrote x.svg"):
 * stderr, in either mode, so it never mixes with the data. */
void client_note(const struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
