#include "bpfcount.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int sum_batch(int fd, uint32_t n, size_t ncpu, uint64_t *vals, uint32_t *keys,
		     uint64_t *out)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint32_t got = n, batch, k;
	size_t c;

	/* An array's last batch ends with ENOENT, all n entries filled. */
	if (bpf_map_lookup_batch(fd, NULL, &batch, keys, vals, &got, &opts) &&
	    (errno != ENOENT || got != n))
		return -errno;
	for (k = 0; k < got; k++)
		for (c = 0; c < ncpu && keys[k] < n; c++)
			out[keys[k]] += vals[k * ncpu + c];
	return 0;
}

static int sum_each(int fd, uint32_t n, size_t ncpu, uint64_t *vals, uint64_t *out)
{
	uint32_t k;
	size_t c;

	for (k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			return -errno;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	return 0;
}

int bpfcount_sum(int map_fd, uint32_t n, uint64_t *out)
{
	int possible = libbpf_num_possible_cpus(), err;
	size_t ncpu = possible > 0 ? (size_t)possible : 0;
	uint64_t *vals;
	uint32_t *keys;

	memset(out, 0, n * sizeof(*out));
	if (!ncpu)
		return possible ? possible : -EINVAL;
	vals = calloc((size_t)n * ncpu, sizeof(*vals));
	keys = calloc(n, sizeof(*keys));
	err = vals && keys ? sum_batch(map_fd, n, ncpu, vals, keys, out) : -ENOMEM;
	if (err && err != -ENOMEM) {
		memset(out, 0, n * sizeof(*out));
		err = sum_each(map_fd, n, ncpu, vals, out);
	}
	free(vals);
	free(keys);
	return err;
}

int bpfcount_sum_value(int map_fd, uint32_t n, uint64_t *out)
{
	int possible = libbpf_num_possible_cpus();
	size_t ncpu = possible > 0 ? (size_t)possible : 0, c;
	uint64_t *vals;
	uint32_t zero = 0, k;
	int err = 0;

	memset(out, 0, n * sizeof(*out));
	if (!ncpu)
		return possible ? possible : -EINVAL;
	vals = calloc((size_t)n * ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &zero, vals))
		err = -errno;
	for (c = 0; !err && c < ncpu; c++)
		for (k = 0; k < n; k++)
			out[k] += vals[c * n + k];
	free(vals);
	return err;
}
