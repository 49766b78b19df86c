#include "client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "jsonw.h"
#include "protocol.h"

#define CALL_TIMEOUT_MS 30000

static void json_error(const struct ctl *ctl, const char *msg)
{
	struct jsonw w;

	jsonw_init(&w, 0);
	jsonw_object(&w);
	jsonw_key_str(&w, "error", msg);
	if (ctl->cmd)
		jsonw_key_str(&w, "command", ctl->cmd);
	jsonw_end(&w);
	if (jsonw_print(&w, stdout))
		fputs("{\"error\": \"out of memory\"}\n", stdout);
}

static void say(const struct ctl *ctl, bool error, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (error && ctl->json)
		json_error(ctl, msg);
	else
		fprintf(stderr, "profctl%s%s: %s\n", ctl->cmd ? " " : "", ctl->cmd ? ctl->cmd : "", msg);
}

void client_error(const struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	if (ctl->quiet)
		return;
	va_start(ap, fmt);
	say(ctl, true, fmt, ap);
	va_end(ap);
}

void client_note(const struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(ctl, false, fmt, ap);
	va_end(ap);
}

int client_print_json(const struct ctl *ctl, struct jsonw *w)
{
	int err = jsonw_print(w, stdout);

	if (err)
		client_error(ctl, "writing JSON: %s", strerror(-err));
	return err ? 1 : 0;
}

static int connect_to(const struct ctl *ctl)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(ctl->socket_path) >= sizeof(addr.sun_path)) {
		client_error(ctl, "socket path too long: %s", ctl->socket_path);
		return -ENAMETOOLONG;
	}
	strcpy(addr.sun_path, ctl->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		client_error(ctl, "cannot reach profd at %s: %s%s", ctl->socket_path, strerror(errno),
			     errno == ENOENT || errno == ECONNREFUSED ? " (is profd running?)" : "");
		close(fd);
		return err;
	}
	return fd;
}

int client_call(const struct ctl *ctl, uint16_t req_type, const struct buf *req,
		uint16_t expect_type, struct buf *resp)
{
	struct proto_error pe;
	uint16_t type;
	int fd, err;

	fd = connect_to(ctl);
	if (fd < 0)
		return fd;
	err = proto_send(fd, req_type, req, CALL_TIMEOUT_MS);
	if (!err)
		err = proto_recv(fd, &type, resp, PROTO_MAX_RESPONSE, CALL_TIMEOUT_MS);
	close(fd);
	if (err) {
		client_error(ctl, "talking to profd: %s", proto_strerror(err));
		return err;
	}
	if (type == PROTO_RESP_ERROR) {
		if (proto_decode_error(resp->data, resp->len, &pe)) {
			client_error(ctl, "profd sent a malformed error reply");
			return -EPROTO;
		}
		client_error(ctl, "%s", pe.message ? pe.message : "error");
		err = pe.code > 0 ? -pe.code : -EIO;
		proto_error_free(&pe);
		return err;
	}
	if (type != expect_type) {
		client_error(ctl, "unexpected reply type %u from profd", type);
		return -EPROTO;
	}
	return 0;
}

int client_dump(const struct ctl *ctl, const struct proto_dump_req *req, struct stackset **out)
{
	struct buf b, resp;
	int err;

	*out = NULL;
	buf_init(&b);
	buf_init(&resp);
	err = proto_encode_dump_req(&b, req);
	if (!err)
		err = client_call(ctl, PROTO_REQ_DUMP, &b, PROTO_RESP_DUMP, &resp);
	if (!err) {
		*out = proto_decode_stackset(resp.data, resp.len, &err);
		if (!*out)
			client_error(ctl, "malformed profile from profd: %s", strerror(-err));
	}
	buf_free(&b);
	buf_free(&resp);
	return err;
}

int client_timeline(const struct ctl *ctl, const struct proto_dump_req *req, struct tlset **out)
{
	struct proto_dump_req r = *req;
	struct buf b, resp;
	int err;

	*out = NULL;
	r.flags |= PROTO_DUMP_TIMELINE;
	buf_init(&b);
	buf_init(&resp);
	err = proto_encode_dump_req(&b, &r);
	if (!err)
		err = client_call(ctl, PROTO_REQ_DUMP, &b, PROTO_RESP_TIMELINE, &resp);
	if (!err) {
		*out = proto_decode_timeline(resp.data, resp.len, &err);
		if (!*out)
			client_error(ctl, "malformed timeline from profd: %s", strerror(-err));
	}
	buf_free(&b);
	buf_free(&resp);
	return err;
}
