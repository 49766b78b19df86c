/* jobsel: a job as profctl sees it, from profd's process list (the
 * members found by jobs.h), for jobs, and dump and top's --job. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobsel.h"
#include "stackset.h"

void jobsel_free(struct jobsel *s)
{
	jobs_free(s->jobs, s->njobs);
	free(s->procs);
	proto_list_free(&s->list);
	memset(s, 0, sizeof(*s));
}

int jobsel_fetch(const struct ctl *ctl, struct jobsel *s)
{
	struct buf req, resp;
	size_t i;
	int err;

	memset(s, 0, sizeof(*s));
	buf_init(&req);
	buf_init(&resp);
	err = client_call(ctl, PROTO_REQ_LIST, &req, PROTO_RESP_LIST, &resp);
	if (!err && proto_decode_list(resp.data, resp.len, &s->list)) {
		client_error(ctl, "malformed list reply from profd");
		err = -EPROTO;
	}
	buf_free(&req);
	buf_free(&resp);
	if (err)
		return err;
	s->procs = calloc(s->list.n + 1, sizeof(*s->procs));
	if (!s->procs)
		return -ENOMEM;
	for (i = 0; i < s->list.n; i++) {
		const struct proto_proc *p = &s->list.procs[i];

		s->procs[i] = (struct job_proc){ .pid = p->pid, .ppid = p->ppid,
						  .start_time = p->start_time, .comm = p->comm,
						  .script = p->ident[PROTO_IDENT_SCRIPT],
						  .rank = jobs_rank_value(p->ident[PROTO_IDENT_RANK]) };
	}
	s->t_cpu = proto_list_type_index(&s->list, "cpu");
	s->t_offcpu = proto_list_type_index(&s->list, "off-cpu");
	s->t_comm = proto_list_type_index(&s->list, "comm");
	s->t_comm_calls = proto_list_type_index(&s->list, "comm-calls");
	return jobs_find(s->procs, s->list.n, &s->jobs, &s->njobs);
}

const struct job *jobsel_job(const struct jobsel *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->njobs; i++)
		if (s->jobs[i].id == id)
			return &s->jobs[i];
	return NULL;
}

void jobsel_label(const struct jobsel *s, const struct job_member *m, char *out, size_t len)
{
	const struct proto_proc *p = &s->list.procs[m->proc];

	switch (m->role) {
	case JOB_RANK: snprintf(out, len, "rank %d (pid %u)", m->rank, p->pid); break;
	case JOB_WORKER: snprintf(out, len, "rank %d worker (pid %u)", m->rank, p->pid); break;
	case JOB_LAUNCHER:
		snprintf(out, len, "launcher %s (pid %u)", p->comm ? p->comm : "?", p->pid);
		break;
	default: snprintf(out, len, "%s (pid %u)", p->comm ? p->comm : "?", p->pid); break;
	}
}

static bool has_weights(const struct proto_proc *p)
{
	uint32_t i;

	for (i = 0; i < p->ntotals; i++)
		if (p->totals[i])
			return true;
	return p->samples != 0;
}

int jobsel_select(const struct ctl *ctl, struct cli_args *a, struct jobsel *s)
{
	const struct job *j;
	size_t i;

	if (cli_selects(&a->req) || (a->req.flags & PROTO_DUMP_ALL))
		return cli_usage_error(ctl, "--job selects the job's processes: no other selector");
	if (jobsel_fetch(ctl, s))
		return 1;
	j = jobsel_job(s, a->job);
	if (!j) {
		client_error(ctl, "no job %u (profctl jobs lists them)", a->job);
		return 1;
	}
	a->req.pids = calloc(j->n, sizeof(*a->req.pids));
	if (!a->req.pids) {
		client_error(ctl, "out of memory");
		return 1;
	}
	/* A member without samples (a launcher that only waits) has no
	 * profile to ask for: profd would refuse the whole request. */
	for (i = 0; i < j->n; i++)
		if (has_weights(&s->list.procs[j->m[i].proc]))
			a->req.pids[a->req.npids++] = s->list.procs[j->m[i].proc].pid;
	if (!a->req.npids) {
		client_error(ctl, "job %u: nothing sampled in its processes yet", a->job);
		return 1;
	}
	a->req.flags |= PROTO_DUMP_SUBPROCESSES;
	if (!a->ro.title) {
		snprintf(s->title, sizeof(s->title), "job %u (%s, %zu ranks)", j->id,
			 j->launcher[0] ? j->launcher : "ranks set by hand", j->nranks);
		a->ro.title = s->title;
	}
	return 0;
}

/* The pid in a process root "comm (pid)", or 0. */
static uint32_t root_pid(const char *name)
{
	const char *open = strrchr(name, '(');
	unsigned long v;
	char *end;

	if (!open)
		return 0;
	v = strtoul(open + 1, &end, 10);
	return *end == ')' && !end[1] && v <= UINT32_MAX ? (uint32_t)v : 0;
}

int jobsel_label_roots(const struct jobsel *s, uint32_t id, struct stackset *ss)
{
	const struct job *j = jobsel_job(s, id);
	char label[96];
	size_t f, i;

	if (!j)
		return -ENOENT;
	for (f = 0; f < ss->nframes; f++) {
		uint32_t pid = ss->frames[f].kind == FRAME_ROOT ? root_pid(ss->frames[f].name) : 0;
		char *name;

		for (i = 0; pid && i < j->n; i++) {
			if (s->list.procs[j->m[i].proc].pid != pid)
				continue;
			jobsel_label(s, &j->m[i], label, sizeof(label));
			if (!(name = strdup(label)))
				return -ENOMEM;
			free(ss->frames[f].name); /* nothing is interned after this */
			ss->frames[f].name = name;
			break;
		}
	}
	return 0;
}
