/* control_server.c: the control socket's own thread.  Every client is
 * non-blocking and costs nothing but its slot until it does something: a
 * request must arrive whole within REQUEST_DEADLINE_MS of connecting, an
 * answer must be taken by the client within ANSWER_DEADLINE_MS (with the
 * clock restarting whenever it reads), and connections are capped in total,
 * per uid, and for all users but root together, so root always gets in.  A silent client, or one that asks for a large dump and stops
 * reading, holds only its own connection and buffer; sampling and the other
 * clients go on.  Answers are built by control.c; a request that reads a
 * process's memory (stacks) is answered on a thread of its own, and this
 * one serves the others meanwhile: the process decides how long its
 * memory takes to read (memread.h bounds it). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "daemon.h"
#include "control.h"
#include "filekind.h"
#include "log.h"
#include "sockperm.h"

#define MAX_CLIENTS 64
#define MAX_CLIENTS_NON_ROOT 48 /* the rest is root's: an admin always gets in */
#define MAX_CLIENTS_PER_UID 16
#define REQUEST_DEADLINE_MS 2000
#define ANSWER_DEADLINE_MS 10000
#define TICK_MS 250
/* Stacks requests being answered at once; each takes at most
 * CONTROL_MEMREAD_TIMEOUT_MS and a job on the ingest thread. */
#define MAX_SLOW_ANSWERS 4

struct client {
	int fd;
	struct caller who;
	uint64_t deadline_ns;
	uint8_t hdr[PROTO_HDR_SIZE];
	size_t hdr_len;
	struct proto_hdr h;
	struct buf in;   /* the request's payload */
	struct buf out;  /* the answer, whole */
	size_t sent;
	bool answering;
	struct slow_answer *slow; /* its answer is being made on a thread */
};

/* A request answered on a thread of its own.  Its thread touches only
 * this (its own copies of the request and the answer) and slow_fd; the
 * control thread joins it when it says it is done. */
struct slow_answer {
	struct control *c;
	struct client *cl; /* NULL once the client went away */
	int slot;
	struct caller who;
	uint16_t type;
	struct buf in, out;
	uint64_t t0;
	pthread_t thread;
	atomic_bool done;
};

struct control {
	struct daemon *d;
	int listen_fd, ep, stop_fd, slow_fd;
	pthread_t thread;
	bool started;
	struct client *clients[MAX_CLIENTS];
	struct slow_answer *slow[MAX_SLOW_ANSWERS];
	/* Counters, read by `profctl stats` under mu. */
	pthread_mutex_t mu;
	uint64_t accepted, refused_busy, timed_out, bad_requests, answered, slow_refused;
	uint64_t answer_ns_max;
};

static int make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int socket_addr(const char *path, struct sockaddr_un *addr)
{
	if (strlen(path) >= sizeof(addr->sun_path)) {
		log_error("control: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	strcpy(addr->sun_path, path);
	return 0;
}

/* Only a socket at path may be replaced: profd runs as root, and a typo
 * in --socket or a unit file must not delete a file (or what a symbolic
 * link points to, or a FIFO someone reads). */
static int only_socket_at(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISSOCK(st.st_mode))
		return 0;
	log_error("control: %s exists and is %s, not a socket: not replaced (choose another "
		  "--socket, or remove it yourself)", path, filekind_name(st.st_mode));
	return -EEXIST;
}

void control_unlink_socket(const char *path)
{
	struct stat st;

	if (!lstat(path, &st) && S_ISSOCK(st.st_mode))
		unlink(path);
}

/* A socket at path that takes a connection (or whose queue is full)
 * belongs to a running daemon: replacing it would cut that daemon off from
 * its clients.  One that refuses is stale, left by a daemon that died. */
int control_check_free(const char *path)
{
	struct sockaddr_un addr;
	int fd, err = socket_addr(path, &addr);

	if (!err)
		err = only_socket_at(path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)) || errno == EAGAIN) {
		log_error("control: another profd listens on %s already", path);
		err = -EADDRINUSE;
	}
	close(fd);
	return err;
}

int control_listen(const char *path)
{
	struct sockaddr_un addr;
	int fd, err = control_check_free(path);

	if (err)
		return err;
	socket_addr(path, &addr);
	err = make_parent_dir(path);
	if (err) {
		log_error("control: cannot create the directory of %s: %s", path, strerror(-err));
		return err;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	err = only_socket_at(path); /* again: the BPF load took seconds */
	if (err) {
		close(fd);
		return err;
	}
	control_unlink_socket(path); /* a stale socket from a previous run */
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 128)) {
		err = -errno;
		log_error("control: cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	/* Group profd where it exists; SO_PEERCRED limits what each caller
	 * sees.  On failure it is left root-only, and said so. */
	control_socket_perms(path);
	return fd;
}

static void count(struct control *c, uint64_t *what)
{
	pthread_mutex_lock(&c->mu);
	(*what)++;
	pthread_mutex_unlock(&c->mu);
}

static void drop_client(struct control *c, int slot)
{
	struct client *cl = c->clients[slot];

	if (cl->slow) /* its thread goes on; its answer is thrown away */
		cl->slow->cl = NULL;
	epoll_ctl(c->ep, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	buf_free(&cl->in);
	buf_free(&cl->out);
	free(cl);
	c->clients[slot] = NULL;
}

/* Whether uid may open one more connection; *slot is a free one. */
static const char *admit(const struct control *c, uid_t uid, int *slot)
{
	int i, same = 0, others = 0;

	*slot = -1;
	for (i = 0; i < MAX_CLIENTS; i++) {
		if (!c->clients[i])
			*slot = *slot < 0 ? i : *slot;
		else if (c->clients[i]->who.uid == uid)
			same++;
		else if (c->clients[i]->who.uid != 0)
			others++;
	}
	if (*slot < 0)
		return "in total";
	if (uid == 0)
		return NULL;
	if (same >= MAX_CLIENTS_PER_UID)
		return "for this user";
	return same + others >= MAX_CLIENTS_NON_ROOT ? "for users other than root" : NULL;
}

/* Full: the newcomer is told so and closed at once, never queued. */
static void refuse(struct control *c, int fd, const char *why)
{
	struct buf payload, msg;
	char text[128];

	count(c, &c->refused_busy);
	snprintf(text, sizeof(text), "profd is serving too many connections (%s); try again", why);
	buf_init(&payload);
	buf_init(&msg);
	proto_encode_error(&payload, EBUSY, text);
	proto_put_header(&msg, PROTO_RESP_ERROR, (uint32_t)payload.len);
	buf_append(&msg, payload.data, payload.len);
	if (!msg.failed && send(fd, msg.data, msg.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("control: refusing a client: %s", strerror(errno));
	buf_free(&payload);
	buf_free(&msg);
	close(fd);
}

static void accept_one(struct control *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct epoll_event ev = { .events = EPOLLIN };
	struct client *cl;
	const char *why;
	int slot;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		close(fd);
		return;
	}
	why = admit(c, cred.uid, &slot);
	if (why) {
		refuse(c, fd, why);
		return;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl) {
		close(fd);
		return;
	}
	cl->fd = fd;
	cl->who.uid = cred.uid;
	cl->who.pid = cred.pid;
	cl->deadline_ns = clock_mono_ns() + REQUEST_DEADLINE_MS * 1000000ull;
	buf_init(&cl->in);
	buf_init(&cl->out);
	ev.data.u64 = (uint64_t)slot;
	if (epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		free(cl);
		return;
	}
	c->clients[slot] = cl;
	count(c, &c->accepted);
}

static void accept_all(struct control *c)
{
	int fd;

	while ((fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
		accept_one(c, fd);
}

/* Bytes of the request so far; 1 when it is whole, 0 to wait, <0 to drop. */
static int read_request(struct client *cl)
{
	ssize_t n;

	while (cl->hdr_len < PROTO_HDR_SIZE) {
		n = recv(cl->fd, cl->hdr + cl->hdr_len, PROTO_HDR_SIZE - cl->hdr_len, 0);
		if (n <= 0)
			return n == 0 ? -ECONNRESET : (errno == EAGAIN ? 0 : -errno);
		cl->hdr_len += (size_t)n;
		if (cl->hdr_len == PROTO_HDR_SIZE &&
		    proto_parse_header(cl->hdr, PROTO_HDR_SIZE, PROTO_MAX_REQUEST, &cl->h))
			return -EPROTO;
	}
	while (cl->in.len < cl->h.length) {
		size_t want = cl->h.length - cl->in.len;

		if (!buf_reserve(&cl->in, want))
			return -ENOMEM;
		n = recv(cl->fd, cl->in.data + cl->in.len, want, 0);
		if (n <= 0)
			return n == 0 ? -ECONNRESET : (errno == EAGAIN ? 0 : -errno);
		cl->in.len += (size_t)n;
	}
	return 1;
}

/* Send what the socket takes now; 1 when all is sent. */
static int write_answer(struct client *cl)
{
	while (cl->sent < cl->out.len) {
		ssize_t n = send(cl->fd, cl->out.data + cl->sent, cl->out.len - cl->sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		cl->sent += (size_t)n;
		cl->deadline_ns = clock_mono_ns() + ANSWER_DEADLINE_MS * 1000000ull;
	}
	return 1;
}

static void answered(struct control *c, int slot, uint64_t took)
{
	struct client *cl = c->clients[slot];
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = (uint64_t)slot };

	pthread_mutex_lock(&c->mu);
	c->answered++;
	if (took > c->answer_ns_max)
		c->answer_ns_max = took;
	pthread_mutex_unlock(&c->mu);
	buf_free(&cl->in);
	cl->answering = true;
	cl->deadline_ns = clock_mono_ns() + ANSWER_DEADLINE_MS * 1000000ull;
	epoll_ctl(c->ep, EPOLL_CTL_MOD, cl->fd, &ev);
}

static void *slow_main(void *arg)
{
	struct slow_answer *s = arg;
	uint64_t one = 1;

	pthread_setname_np(pthread_self(), "profd-answer");
	control_answer(s->c->d, &s->who, s->type, &s->in, &s->out);
	atomic_store(&s->done, true);
	if (write(s->c->slow_fd, &one, sizeof(one)) < 0)
		log_warn("control: cannot wake the control thread: %s", strerror(errno));
	return NULL;
}

/* The request handed to a thread of its own: 0, or -EBUSY when
 * MAX_SLOW_ANSWERS are under way (or -errno: no thread). */
static int answer_slowly(struct control *c, int slot)
{
	struct client *cl = c->clients[slot];
	struct epoll_event ev = { .events = 0, .data.u64 = (uint64_t)slot };
	struct slow_answer *s;
	int i, err;

	for (i = 0; i < MAX_SLOW_ANSWERS && c->slow[i]; i++)
		;
	if (i == MAX_SLOW_ANSWERS)
		return -EBUSY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->cl = cl;
	s->slot = slot;
	s->who = cl->who;
	s->type = cl->h.type;
	s->in = cl->in; /* the request is the thread's now */
	buf_init(&cl->in);
	buf_init(&s->out);
	s->t0 = clock_mono_ns();
	err = pthread_create(&s->thread, NULL, slow_main, s);
	if (err) {
		cl->in = s->in;
		free(s);
		return -err;
	}
	c->slow[i] = s;
	cl->slow = s;
	cl->deadline_ns = s->t0 + ANSWER_DEADLINE_MS * 1000000ull;
	/* Until its answer is made only a hang-up or an error counts. */
	epoll_ctl(c->ep, EPOLL_CTL_MOD, cl->fd, &ev);
	return 0;
}

static void refuse_slow(struct client *cl, int err)
{
	struct buf payload;
	char text[160];

	if (err == -EBUSY)
		snprintf(text, sizeof(text), "profd is answering %d stacks requests already; "
					     "try again", MAX_SLOW_ANSWERS);
	else
		snprintf(text, sizeof(text), "cannot answer: %s", strerror(-err));
	buf_init(&payload);
	buf_free(&cl->out);
	proto_encode_error(&payload, -err, text);
	proto_put_header(&cl->out, PROTO_RESP_ERROR, (uint32_t)payload.len);
	buf_append(&cl->out, payload.data, payload.len);
	buf_free(&payload);
}

/* 1: answered now; 0: on a thread, answered when it is done. */
static int answer(struct control *c, int slot)
{
	struct client *cl = c->clients[slot];
	uint64_t t0 = clock_mono_ns();
	int err;

	if (cl->h.type == PROTO_REQ_STACKS) {
		err = answer_slowly(c, slot);
		if (!err)
			return 0;
		count(c, &c->slow_refused);
		refuse_slow(cl, err);
	} else {
		control_answer(c->d, &cl->who, cl->h.type, &cl->in, &cl->out);
	}
	answered(c, slot, clock_mono_ns() - t0);
	return 1;
}

/* Send what the socket takes now; drop the client when all is sent or
 * it went away. */
static void send_answer(struct control *c, int slot)
{
	if (write_answer(c->clients[slot]) != 0)
		drop_client(c, slot);
}

/* The answers made on threads that are done go to their clients. */
static void reap_slow(struct control *c)
{
	uint64_t n;
	int i;

	if (read(c->slow_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("control: slow answers: %s", strerror(errno));
	for (i = 0; i < MAX_SLOW_ANSWERS; i++) {
		struct slow_answer *s = c->slow[i];

		if (!s || !atomic_load(&s->done))
			continue;
		pthread_join(s->thread, NULL);
		c->slow[i] = NULL;
		if (s->cl) {
			s->cl->slow = NULL;
			buf_free(&s->cl->out);
			s->cl->out = s->out;
			buf_init(&s->out);
			answered(c, s->slot, clock_mono_ns() - s->t0);
			send_answer(c, s->slot);
		}
		buf_free(&s->in);
		buf_free(&s->out);
		free(s);
	}
}

static void on_client(struct control *c, int slot)
{
	struct client *cl = c->clients[slot];
	int r;

	if (!cl)
		return;
	if (cl->slow) { /* only a hang-up or an error wakes it now */
		drop_client(c, slot);
		return;
	}
	if (!cl->answering) {
		r = read_request(cl);
		if (r < 0) {
			if (r != -ECONNRESET)
				count(c, &c->bad_requests);
			drop_client(c, slot);
			return;
		}
		if (r == 0 || !answer(c, slot))
			return;
	}
	send_answer(c, slot);
}

static void expire_clients(struct control *c)
{
	uint64_t now = clock_mono_ns();
	int i;

	for (i = 0; i < MAX_CLIENTS; i++) {
		if (c->clients[i] && now >= c->clients[i]->deadline_ns) {
			count(c, &c->timed_out);
			drop_client(c, i);
		}
	}
}

static bool any_client(const struct control *c)
{
	int i;

	for (i = 0; i < MAX_CLIENTS; i++)
		if (c->clients[i])
			return true;
	return false;
}

#define STOP_SLOT (1ull << 32)
#define LISTEN_SLOT (1ull << 33)
#define SLOW_SLOT (1ull << 34)

static void *control_main(void *arg)
{
	struct control *c = arg;
	struct epoll_event evs[16];
	int n, i;

	pthread_setname_np(pthread_self(), "profd-control");
	daemon_raise_priority("control");
	for (;;) {
		/* Idle: no timer at all; with clients, their deadlines. */
		n = epoll_wait(c->ep, evs, 16, any_client(c) ? TICK_MS : -1);
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 == STOP_SLOT)
				return NULL;
			if (evs[i].data.u64 == LISTEN_SLOT)
				accept_all(c);
			else if (evs[i].data.u64 == SLOW_SLOT)
				reap_slow(c);
			else
				on_client(c, (int)evs[i].data.u64);
		}
		expire_clients(c);
	}
}

struct control *control_start(struct daemon *d, int listen_fd)
{
	struct control *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->d = d;
	c->listen_fd = listen_fd;
	c->ep = epoll_create1(EPOLL_CLOEXEC);
	c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->slow_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->ep < 0 || c->stop_fd < 0 || c->slow_fd < 0)
		goto fail;
	ev.data.u64 = LISTEN_SLOT;
	if (epoll_ctl(c->ep, EPOLL_CTL_ADD, listen_fd, &ev))
		goto fail;
	ev.data.u64 = STOP_SLOT;
	if (epoll_ctl(c->ep, EPOLL_CTL_ADD, c->stop_fd, &ev))
		goto fail;
	ev.data.u64 = SLOW_SLOT;
	if (epoll_ctl(c->ep, EPOLL_CTL_ADD, c->slow_fd, &ev))
		goto fail;
	if (pthread_create(&c->thread, NULL, control_main, c))
		goto fail;
	c->started = true;
	return c;
fail:
	control_stop(c);
	return NULL;
}

void control_stop(struct control *c)
{
	uint64_t one = 1;
	int i;

	if (!c)
		return;
	if (c->started) {
		if (write(c->stop_fd, &one, sizeof(one)) < 0)
			log_warn("control: cannot stop the thread: %s", strerror(errno));
		pthread_join(c->thread, NULL);
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		if (c->clients[i])
			drop_client(c, i);
	/* Each is done within the memory read's deadline and a job that
	 * ingest, closed to jobs by now, refuses. */
	for (i = 0; i < MAX_SLOW_ANSWERS; i++) {
		if (!c->slow[i])
			continue;
		pthread_join(c->slow[i]->thread, NULL);
		buf_free(&c->slow[i]->in);
		buf_free(&c->slow[i]->out);
		free(c->slow[i]);
	}
	if (c->ep >= 0)
		close(c->ep);
	if (c->stop_fd >= 0)
		close(c->stop_fd);
	if (c->slow_fd >= 0)
		close(c->slow_fd);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void control_stats(struct control *c, struct proto_stats *s)
{
	int i, open = 0;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < MAX_CLIENTS; i++)
		open += c->clients[i] != NULL;
	proto_stats_add(s, "control_connections_open", (uint64_t)open);
	proto_stats_add(s, "control_connections_accepted", c->accepted);
	proto_stats_add(s, "control_connections_refused_busy", c->refused_busy);
	proto_stats_add(s, "control_connections_timed_out", c->timed_out);
	proto_stats_add(s, "control_bad_requests", c->bad_requests);
	proto_stats_add(s, "requests", c->answered);
	proto_stats_add(s, "control_answer_ns_max", c->answer_ns_max);
	proto_stats_add(s, "control_stacks_refused_busy", c->slow_refused);
	pthread_mutex_unlock(&c->mu);
}
