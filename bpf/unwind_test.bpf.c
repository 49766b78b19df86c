// SPDX-License-Identifier: GPL-2.0
/* unwind_test.bpf.c: the .eh_frame unwinder on its own, for
 * tests/bpf/test_unwind.c.  A perf_event program on every CPU walks the
 * user stack of one target process with unwind_user() and sends each walk
 * to a ringbuf, with the frame-pointer walk of the same sample beside it.
 * unwind_lookup runs one table lookup on demand (BPF_PROG_TEST_RUN). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} unwind_events SEC(".maps");

/* The event is built here, not on the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profd_unwind_test_event);
} unwind_scratch SEC(".maps");

__u64 lost = 0;

SEC("perf_event")
int on_unwind_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profd_unwind_test_event *e;
	struct unwind_regs regs;
	__u32 zero = 0, flags = 0;
	int user_mode;
	long n;

	if (id >> 32 != target_tgid || (__u32)id == 0)
		return 0;
	e = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!e)
		return 0;
	user_mode = unwind_regs_from_perf(ctx, &regs);
	if (user_mode < 0)
		return 0;
	e->tid = (__u32)id;
	e->user_mode = user_mode;
	e->nr = unwind_user(&regs, target_tgid, e->ips, PROFD_UNWIND_MAX_FRAMES, &flags,
			    PYROT_SLOT_SAMPLE);
	e->flags = flags;
	n = bpf_get_stack(ctx, e->fp_ips, sizeof(e->fp_ips), BPF_F_USER_STACK);
	e->fp_nr = n > 0 ? (__u32)n / sizeof(__u64) : 0;
	if (bpf_ringbuf_output(&unwind_events, e, sizeof(*e), 0))
		__sync_fetch_and_add(&lost, 1);
	return 0;
}

SEC("syscall")
int unwind_lookup(struct profd_unwind_lookup_test *a)
{
	struct profd_unwind_mapping *m;
	struct profd_unwind_rule rule = {};
	__u32 idx = a->mapping;
	__s64 w = -1;

	m = unwind_mapping_at(idx);
	if (m)
		w = unwind_rule_cached((__u64)m->file_id << 32 | a->tpc, m->pages, m->npages,
				       m->rows);
	a->rc = w < 0 || !m || unwind_rule_read(m->rules, (__u32)w, &rule) ? -1 : 0;
	a->cache_hit = a->rc ? 0 : (__u32)(w >> 32);
	a->rule = rule;
	return 0;
}
