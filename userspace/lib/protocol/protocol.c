/* protocol: message framing and socket I/O.  The payload encoders live
 * in protocol_msg.c and protocol_stackset.c. */
#include "protocol.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "clock.h"
#include "log.h"

/* Payloads are read in pieces of this size so memory follows the bytes
 * that actually arrived, not the length a peer claims. */
#define PROTO_RECV_CHUNK (64u * 1024)

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void fill_header(uint8_t *out, uint16_t type, uint32_t length)
{
	put_le32(out, PROTO_MAGIC);
	put_le16(out + 4, PROTO_VERSION);
	put_le16(out + 6, type);
	put_le32(out + 8, length);
	put_le32(out + 12, 0);
}

void proto_put_header(struct buf *b, uint16_t type, uint32_t length)
{
	uint8_t hdr[PROTO_HDR_SIZE];

	fill_header(hdr, type, length);
	buf_append(b, hdr, sizeof(hdr));
}

int proto_parse_header(const void *data, size_t len, uint32_t max_payload, struct proto_hdr *out)
{
	struct cursor c;

	if (!out || (!data && len))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (len < PROTO_HDR_SIZE)
		return -EPROTO;
	cursor_init(&c, data, PROTO_HDR_SIZE);
	out->magic = cursor_u32(&c);
	out->version = cursor_u16(&c);
	out->type = cursor_u16(&c);
	out->length = cursor_u32(&c);
	out->flags = cursor_u32(&c);
	if (out->magic != PROTO_MAGIC)
		return -EPROTO;
	if (out->version != PROTO_VERSION) {
		/* The one mismatch a user can fix: say which side is which. */
		log_warn("protocol: peer speaks version %u, this build speaks version %u",
			 out->version, PROTO_VERSION);
		return -EPROTO;
	}
	/* No flags are defined; a peer setting one expects something we
	 * cannot do. */
	if (out->flags)
		return -EPROTO;
	if (out->length > max_payload)
		return -EMSGSIZE;
	return 0;
}

int proto_parse_message(const void *data, size_t len, uint32_t max_payload, struct proto_hdr *hdr,
			const void **payload)
{
	int ret = proto_parse_header(data, len, max_payload, hdr);

	if (ret)
		return ret;
	if (len - PROTO_HDR_SIZE != hdr->length)
		return -EPROTO; /* truncated, or trailing bytes */
	if (payload)
		*payload = (const uint8_t *)data + PROTO_HDR_SIZE;
	return 0;
}

static int64_t now_ms(void)
{
	return (int64_t)(clock_mono_ns() / 1000000);
}

/* Absolute deadline in monotonic ms, or -1 for none. */
static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

static int wait_ready(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int ms = -1, n;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		n = poll(&p, 1, ms);
		/* Readiness includes HUP and errors: the next call reports them. */
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* MSG_DONTWAIT keeps a blocking socket from sleeping past the deadline. */
static int recv_exact(int fd, void *dst, size_t len, int64_t deadline)
{
	size_t off = 0;
	int ret;

	while (off < len) {
		ssize_t n = recv(fd, (char *)dst + off, len - off, MSG_DONTWAIT);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = wait_ready(fd, POLLIN, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

static void iov_advance(struct msghdr *m, size_t n)
{
	while (m->msg_iovlen && n >= m->msg_iov->iov_len) {
		n -= m->msg_iov->iov_len;
		m->msg_iov++;
		m->msg_iovlen--;
	}
	if (m->msg_iovlen) {
		m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + n;
		m->msg_iov->iov_len -= n;
	}
}

static int send_all(int fd, struct iovec *iov, int iovcnt, int64_t deadline)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
	int ret;

	while (m.msg_iovlen) {
		ssize_t n = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n >= 0) {
			iov_advance(&m, (size_t)n);
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = wait_ready(fd, POLLOUT, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

int proto_send(int fd, uint16_t type, const struct buf *payload, int timeout_ms)
{
	uint32_t max = type < PROTO_RESP_BASE ? PROTO_MAX_REQUEST : PROTO_MAX_RESPONSE;
	size_t len = payload ? payload->len : 0;
	uint8_t hdr[PROTO_HDR_SIZE];
	struct iovec iov[2];

	if (payload && payload->failed)
		return -ENOMEM;
	if (len > max)
		return -EMSGSIZE;
	fill_header(hdr, type, (uint32_t)len);
	iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	iov[1] = (struct iovec){ .iov_base = len ? payload->data : NULL, .iov_len = len };
	return send_all(fd, iov, len ? 2 : 1, deadline_after(timeout_ms));
}

static int recv_payload(int fd, struct buf *payload, uint32_t length, int64_t deadline)
{
	while (payload->len < length) {
		size_t chunk = length - payload->len;
		int ret;

		if (chunk > PROTO_RECV_CHUNK)
			chunk = PROTO_RECV_CHUNK;
		if (!buf_reserve(payload, chunk))
			return -ENOMEM;
		ret = recv_exact(fd, payload->data + payload->len, chunk, deadline);
		if (ret)
			return ret;
		payload->len += chunk;
	}
	return 0;
}

int proto_recv(int fd, uint16_t *type, struct buf *payload, uint32_t max_payload, int timeout_ms)
{
	int64_t deadline = deadline_after(timeout_ms);
	uint8_t raw[PROTO_HDR_SIZE];
	struct proto_hdr h;
	int ret;

	if (!type || !payload)
		return -EINVAL;
	buf_reset(payload);
	ret = recv_exact(fd, raw, sizeof(raw), deadline);
	if (!ret)
		ret = proto_parse_header(raw, sizeof(raw), max_payload, &h);
	if (!ret)
		ret = recv_payload(fd, payload, h.length, deadline);
	if (ret) {
		buf_reset(payload);
		return ret;
	}
	*type = h.type;
	return 0;
}

const char *proto_strerror(int err)
{
	/* Via unsigned so INT_MIN cannot overflow. */
	int e = (int)(err < 0 ? 0u - (unsigned int)err : (unsigned int)err);

	switch (e) {
	case 0:
		return "success";
	case EPROTO:
		return "malformed message or protocol version mismatch";
	case EMSGSIZE:
		return "message too large";
	case ETIMEDOUT:
		return "timed out waiting for the peer";
	case ECONNRESET:
	case EPIPE:
		return "peer closed the connection";
	case EINVAL:
		return "invalid argument";
	case ENOMEM:
		return "out of memory";
	default: {
		const char *s = strerrordesc_np(e);

		return s ? s : "unknown error";
	}
	}
}

const char *proto_type_name(uint16_t type)
{
	switch (type) {
	case PROTO_REQ_LIST: return "LIST";
	case PROTO_REQ_STATS: return "STATS";
	case PROTO_REQ_DUMP: return "DUMP";
	case PROTO_REQ_STACKS: return "STACKS";
	case PROTO_RESP_ERROR: return "RESP_ERROR";
	case PROTO_RESP_LIST: return "RESP_LIST";
	case PROTO_RESP_STATS: return "RESP_STATS";
	case PROTO_RESP_DUMP: return "RESP_DUMP";
	case PROTO_RESP_STACKS: return "RESP_STACKS";
	case PROTO_RESP_TIMELINE: return "RESP_TIMELINE";
	default: return "UNKNOWN";
	}
}
