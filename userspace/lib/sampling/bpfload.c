#include "bpfload.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kfeatures.h"
#include "log.h"
#include "sample.skel.h"
#include "sample_legacy.skel.h"

/* The helpers and map type only the modern object uses. */
enum bpfload_variant bpfload_variant_for(const struct kfeatures *k)
{
	return k->bpf_loop && k->task_pt_regs && k->current_task_btf && k->task_storage
		       ? BPFLOAD_MODERN
		       : BPFLOAD_LEGACY;
}

enum bpfload_variant bpfload_pick(void)
{
	static int picked = -1;
	struct kfeatures k;

	if (picked < 0)
		picked = kfeatures_probe_helpers(&k) ? BPFLOAD_MODERN : bpfload_variant_for(&k);
	return (enum bpfload_variant)picked;
}

const char *bpfload_variant_name(enum bpfload_variant v)
{
	return v == BPFLOAD_LEGACY ? "legacy (for 5.10-5.16: loops of global functions)"
				   : "modern (bpf_loop, 5.17+)";
}

bool bpfload_thread_pidfd(void)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), PIDFD_THREAD);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* sample.bpf.c's skeleton, its object bytes swapped for the legacy
 * build's before the object is opened: the skeleton finds maps,
 * programs and globals by name, and both builds have the same ones. */
struct sample_bpf *bpfload_open(enum bpfload_variant v)
{
	struct sample_bpf *obj;
	size_t sz;
	int err;

	if (v == BPFLOAD_MODERN)
		return sample_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = sample_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = sample_legacy_bpf__elf_bytes(&sz);
		obj->skeleton->data_sz = sz;
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		sample_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

static struct bpfload_culprit *watching;

/* "prog 'NAME': ..." or "map 'NAME': ...": the name, into out. */
static bool quoted_name(const char *msg, const char *kind, char *out, size_t len)
{
	size_t k = strlen(kind), n;
	const char *end;

	if (strncmp(msg, kind, k) || msg[k] != ' ' || msg[k + 1] != '\'')
		return false;
	msg += k + 2;
	end = strchr(msg, '\'');
	if (!end)
		return false;
	n = (size_t)(end - msg) < len - 1 ? (size_t)(end - msg) : len - 1;
	memcpy(out, msg, n);
	out[n] = '\0';
	return true;
}

/* Lines a verifier log ends with that say nothing of why. */
static bool stats_line(const char *line, size_t n)
{
	static const char *const skip[] = { "processed ", "verification time", "stack depth",
					    "Verifier analysis" };
	size_t i;

	for (i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (n >= strlen(skip[i]) && !strncmp(line, skip[i], strlen(skip[i])))
			return true;
	return false;
}

/* The last telling line of text before stop (or the end), into out. */
static void last_line(const char *text, const char *stop, char *out, size_t len)
{
	const char *end = stop ? stop : text + strlen(text), *start;
	size_t n;

	for (;;) {
		while (end > text && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		start = end;
		while (start > text && start[-1] != '\n')
			start--;
		if (start == text || !stats_line(start, (size_t)(end - start)))
			break;
		end = start;
	}
	n = (size_t)(end - start) < len - 1 ? (size_t)(end - start) : len - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

/* The first refusal names the culprit (libbpf stops there); its reason
 * is the verifier log's last line, or libbpf's own words. */
static void note(struct bpfload_culprit *c, const char *msg)
{
	const char *log = strstr(msg, "-- BEGIN PROG LOAD LOG --");
	char name[64];

	if (quoted_name(msg, "map", name, sizeof(name)) && !c->prog[0] && !c->map[0]) {
		snprintf(c->map, sizeof(c->map), "%s", name);
		last_line(msg, NULL, c->why, sizeof(c->why));
		return;
	}
	if (!quoted_name(msg, "prog", name, sizeof(name)) || c->map[0])
		return;
	if (!c->prog[0]) {
		snprintf(c->prog, sizeof(c->prog), "%s", name);
		last_line(msg, NULL, c->why, sizeof(c->why));
	}
	if (log && !strcmp(c->prog, name))
		last_line(log + strlen("-- BEGIN PROG LOAD LOG --"),
			  strstr(log, "-- END PROG LOAD LOG --"), c->why, sizeof(c->why));
}

/* A verifier log comes whole in one message, up to 16 MiB: its last
 * lines are the reason. */
static int watch_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vasprintf(&msg, fmt, aq);
	va_end(aq);
	if (n < 0)
		return 0;
	if (watching && level == LIBBPF_WARN)
		note(watching, strncmp(msg, "libbpf: ", 8) ? msg : msg + 8);
	if (log_get_level() >= LOG_DEBUG)
		fprintf(stderr, "profd libbpf: %s", msg);
	free(msg);
	return 0;
}

void bpfload_watch_begin(struct bpfload_culprit *c)
{
	memset(c, 0, sizeof(*c));
	watching = c;
	libbpf_set_print(watch_print);
}

void bpfload_watch_end(void)
{
	watching = NULL;
	log_route_libbpf();
}
