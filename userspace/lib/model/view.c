/* view.c: which frames a dump shows (view.h). */
#include "view.h"

#include <string.h>

#include "stackset.h"

bool view_keeps(uint32_t flags, uint32_t kind)
{
	if (kind == FRAME_TASK)
		return flags & VIEW_BY_TASK;
	if (flags & VIEW_PYTHON_ONLY)
		return kind == FRAME_PYTHON || kind == FRAME_GPU || kind == FRAME_WAIT;
	return !(flags & VIEW_NO_KERNEL) || kind != FRAME_KERNEL;
}

bool view_before_exec(const char *name, size_t len)
{
	size_t n = sizeof(VIEW_BEFORE_EXEC) - 1;

	return len >= n && !memcmp(name + len - n, VIEW_BEFORE_EXEC, n);
}

bool view_keeps_thread(uint32_t flags, const char *name, size_t len)
{
	return !(flags & VIEW_PYTHON_ONLY) || !view_before_exec(name, len);
}
