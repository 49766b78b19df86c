/* Protocol framing and socket I/O: headers, deadlines, peers that stall,
 * vanish or lie about lengths.  Payload codecs are in test_protocol.c. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "protocol.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void raw_header(uint8_t *out, uint32_t magic, uint16_t version, uint16_t type,
		       uint32_t length, uint32_t flags)
{
	struct buf b;

	buf_init(&b);
	buf_put_u32(&b, magic);
	buf_put_u16(&b, version);
	buf_put_u16(&b, type);
	buf_put_u32(&b, length);
	buf_put_u32(&b, flags);
	assert_int_equal(b.len, PROTO_HDR_SIZE);
	memcpy(out, b.data, PROTO_HDR_SIZE);
	buf_free(&b);
}

/* ---- headers ---- */

static void test_header_roundtrip(void **state)
{
	const void *payload = NULL;
	struct proto_hdr h;
	struct buf b;

	(void)state;
	buf_init(&b);
	proto_put_header(&b, PROTO_REQ_DUMP, 3);
	assert_int_equal(b.len, PROTO_HDR_SIZE);
	assert_memory_equal(b.data, "PRFD", 4);
	assert_int_equal(proto_parse_header(b.data, b.len, PROTO_MAX_REQUEST, &h), 0);
	assert_int_equal(h.magic, PROTO_MAGIC);
	assert_int_equal(h.version, PROTO_VERSION);
	assert_int_equal(h.type, PROTO_REQ_DUMP);
	assert_int_equal(h.length, 3);
	assert_int_equal(h.flags, 0);
	buf_append(&b, "abc", 3);
	assert_int_equal(proto_parse_message(b.data, b.len, PROTO_MAX_REQUEST, &h, &payload), 0);
	assert_ptr_equal(payload, b.data + PROTO_HDR_SIZE);
	buf_put_u8(&b, 'd'); /* trailing byte */
	assert_int_equal(proto_parse_message(b.data, b.len, PROTO_MAX_REQUEST, &h, &payload),
			 -EPROTO);
	buf_free(&b);
}

static void test_header_errors(void **state)
{
	uint8_t raw[PROTO_HDR_SIZE];
	struct proto_hdr h;

	(void)state;
	raw_header(raw, 0x44465251u, PROTO_VERSION, 1, 0, 0);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, &h), -EPROTO);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION + 1, 1, 0, 0);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, &h), -EPROTO);
	assert_int_equal(h.version, PROTO_VERSION + 1); /* for the caller's message */
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, 1, 101, 0);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, &h), -EMSGSIZE);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, 1, 100, 0);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, &h), 0);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, 1, 0, 1);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, &h), -EPROTO);
	assert_int_equal(proto_parse_header(raw, PROTO_HDR_SIZE - 1, 100, &h), -EPROTO);
	assert_int_equal(proto_parse_header(NULL, 0, 100, &h), -EPROTO);
	assert_int_equal(proto_parse_header(raw, sizeof(raw), 100, NULL), -EINVAL);
}

static void test_strerror(void **state)
{
	static const int errs[] = { 0, EPROTO, EMSGSIZE, ETIMEDOUT, ECONNRESET, EPIPE,
				    EINVAL, ENOMEM, EACCES, 99999 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		assert_non_null(proto_strerror(-errs[i]));
		assert_string_equal(proto_strerror(-errs[i]), proto_strerror(errs[i]));
	}
	assert_string_not_equal(proto_strerror(-EPROTO), proto_strerror(-EMSGSIZE));
	assert_non_null(proto_strerror(-2147483647 - 1));
	assert_string_equal(proto_type_name(PROTO_RESP_DUMP), "RESP_DUMP");
	assert_string_equal(proto_type_name(77), "UNKNOWN");
}

/* ---- sockets ---- */

struct sender {
	int fd;
	uint16_t type;
	const struct buf *payload;
	int delay_ms;
	bool poke; /* signal `main_thread` before sending */
	pthread_t main_thread;
	int ret;
};

static void *send_thread(void *arg)
{
	struct sender *s = arg;

	if (s->poke) {
		sleep_ms(s->delay_ms);
		pthread_kill(s->main_thread, SIGUSR1);
	}
	sleep_ms(s->delay_ms);
	s->ret = proto_send(s->fd, s->type, s->payload, 5000);
	return NULL;
}

static void test_send_recv(void **state)
{
	size_t sizes[] = { 0, 1, 3 * 1024 * 1024 + 7 };
	struct buf out, in;
	uint16_t type = 0;
	int sv[2];
	size_t i, k;

	(void)state;
	pair(sv);
	buf_init(&out);
	buf_init(&in);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct sender s = { .fd = sv[1], .type = PROTO_RESP_DUMP, .payload = &out };
		pthread_t t;

		buf_reset(&out);
		for (k = 0; k < sizes[i]; k++)
			buf_put_u8(&out, (uint8_t)(k * 31 + i));
		/* The payload is far bigger than the socket buffer: both sides
		 * must cope with partial transfers. */
		assert_int_equal(pthread_create(&t, NULL, send_thread, &s), 0);
		assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_RESPONSE, 5000), 0);
		pthread_join(t, NULL);
		assert_int_equal(s.ret, 0);
		assert_int_equal(type, PROTO_RESP_DUMP);
		assert_int_equal(in.len, out.len);
		if (out.len)
			assert_memory_equal(in.data, out.data, out.len);
	}
	/* NULL payload is an empty one. */
	assert_int_equal(proto_send(sv[1], PROTO_REQ_LIST, NULL, 1000), 0);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), 0);
	assert_int_equal(type, PROTO_REQ_LIST);
	assert_int_equal(in.len, 0);
	close(sv[0]);
	close(sv[1]);
	buf_free(&out);
	buf_free(&in);
}

static void test_recv_half_header_times_out(void **state)
{
	uint8_t raw[PROTO_HDR_SIZE];
	uint16_t type;
	struct buf in;
	int64_t t0, dt;
	int sv[2];

	(void)state;
	pair(sv);
	buf_init(&in);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, PROTO_REQ_LIST, 0, 0);
	assert_int_equal(write(sv[1], raw, 8), 8);
	t0 = now_ms();
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 200), -ETIMEDOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 190 && dt < 1500);

	/* A trickling peer cannot stretch the deadline either. */
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, PROTO_REQ_LIST, 1000, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	t0 = now_ms();
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 100), -ETIMEDOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 90 && dt < 1500);
	close(sv[0]);
	close(sv[1]);
	buf_free(&in);
}

static void test_recv_peer_closes(void **state)
{
	uint8_t raw[PROTO_HDR_SIZE];
	uint16_t type;
	struct buf in;
	int sv[2];

	(void)state;
	buf_init(&in);
	/* Mid-payload. */
	pair(sv);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, PROTO_REQ_DUMP, 100, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	assert_int_equal(write(sv[1], "0123456789", 10), 10);
	close(sv[1]);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -ECONNRESET);
	assert_int_equal(in.len, 0);
	close(sv[0]);
	/* Mid-header, and before anything. */
	pair(sv);
	assert_int_equal(write(sv[1], raw, 5), 5);
	close(sv[1]);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -ECONNRESET);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -ECONNRESET);
	close(sv[0]);
	buf_free(&in);
}

static void test_recv_oversized(void **state)
{
	uint8_t raw[PROTO_HDR_SIZE];
	char tail[4];
	uint16_t type;
	struct buf in;
	int sv[2];

	(void)state;
	pair(sv);
	buf_init(&in);
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, PROTO_REQ_DUMP, PROTO_MAX_REQUEST + 1, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	assert_int_equal(write(sv[1], "tail", 4), 4);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -EMSGSIZE);
	assert_null(in.data); /* nothing allocated */
	assert_int_equal(in.cap, 0);
	/* Nothing read past the header. */
	assert_int_equal(recv(sv[0], tail, sizeof(tail), MSG_DONTWAIT), 4);
	assert_memory_equal(tail, "tail", 4);

	/* A huge declared length within the limit: memory follows the
	 * bytes that came, not the claim. */
	raw_header(raw, PROTO_MAGIC, PROTO_VERSION, PROTO_RESP_DUMP, PROTO_MAX_RESPONSE, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	assert_int_equal(write(sv[1], "tail", 4), 4);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_RESPONSE, 100), -ETIMEDOUT);
	assert_true(in.cap <= 256 * 1024);

	/* Bad magic and version through the socket. */
	raw_header(raw, 0x12345678u, PROTO_VERSION, PROTO_REQ_DUMP, 0, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -EPROTO);
	raw_header(raw, PROTO_MAGIC, 7, PROTO_REQ_DUMP, 0, 0);
	assert_int_equal(write(sv[1], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_REQUEST, 1000), -EPROTO);
	close(sv[0]);
	close(sv[1]);
	buf_free(&in);
}

static void test_send_limits(void **state)
{
	struct buf big;
	int64_t t0;
	int sv[2];

	(void)state;
	pair(sv);
	buf_init(&big);
	assert_true(buf_reserve(&big, 4 * 1024 * 1024));
	memset(big.data, 'x', 4 * 1024 * 1024);
	big.len = PROTO_MAX_REQUEST + 1;
	assert_int_equal(proto_send(sv[0], PROTO_REQ_DUMP, &big, 1000), -EMSGSIZE);
	/* Nobody reads: the deadline ends the send. */
	big.len = 4 * 1024 * 1024;
	t0 = now_ms();
	assert_int_equal(proto_send(sv[0], PROTO_RESP_DUMP, &big, 100), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 1500);
	close(sv[0]);
	close(sv[1]);
	/* A vanished peer is an error, not a SIGPIPE. */
	pair(sv);
	close(sv[1]);
	assert_int_equal(proto_send(sv[0], PROTO_REQ_LIST, NULL, 1000), -EPIPE);
	close(sv[0]);
	big.failed = true;
	assert_int_equal(proto_send(sv[0], PROTO_REQ_LIST, &big, 1000), -ENOMEM);
	buf_free(&big);
}

static volatile sig_atomic_t pokes;

static void on_usr1(int sig)
{
	(void)sig;
	pokes++;
}

static void test_recv_survives_eintr(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	struct buf out, in;
	struct sender s;
	uint16_t type;
	pthread_t t;
	int sv[2];

	(void)state;
	/* No SA_RESTART: poll() really returns EINTR. */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	pair(sv);
	buf_init(&out);
	buf_init(&in);
	buf_puts(&out, "hello");
	s = (struct sender){ .fd = sv[1], .type = PROTO_RESP_STATS, .payload = &out,
			     .delay_ms = 50, .poke = true, .main_thread = pthread_self() };
	assert_int_equal(pthread_create(&t, NULL, send_thread, &s), 0);
	assert_int_equal(proto_recv(sv[0], &type, &in, PROTO_MAX_RESPONSE, 5000), 0);
	pthread_join(t, NULL);
	assert_int_equal(pokes, 1);
	assert_int_equal(s.ret, 0);
	assert_int_equal(in.len, 5);
	assert_memory_equal(in.data, "hello", 5);
	sigaction(SIGUSR1, &old, NULL);
	close(sv[0]);
	close(sv[1]);
	buf_free(&out);
	buf_free(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_roundtrip),
		cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_recv_half_header_times_out),
		cmocka_unit_test(test_recv_peer_closes),
		cmocka_unit_test(test_recv_oversized),
		cmocka_unit_test(test_send_limits),
		cmocka_unit_test(test_recv_survives_eintr),
	};

	/* Version-mismatch warnings are expected here. */
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
