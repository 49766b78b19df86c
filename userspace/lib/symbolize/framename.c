#include "framename.h"

#include <string.h>

#include "stackset.h"
#include "hexnum.h"

static bool parse_dec(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len || len > 19)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* Same grammar as folded_infer_kind: the last " (" opens the location,
 * the last ':' inside it separates path and line. */
bool framename_python(const char *name, struct framename_py *out)
{
	size_t len = strlen(name), open, colon;
	uint64_t line;

	if (len < 6 || name[len - 1] != ')')
		return false;
	for (open = len - 1; open > 0; open--)
		if (name[open] == '(' && name[open - 1] == ' ')
			break;
	if (open < 2)
		return false;
	for (colon = len - 2; colon > open; colon--)
		if (name[colon] == ':')
			break;
	if (colon <= open + 1 || !parse_dec(name + colon + 1, len - 2 - colon, &line))
		return false;
	out->func = name;
	out->func_len = open - 1;
	out->file = name + open + 1;
	out->file_len = colon - open - 1;
	out->line = line;
	return true;
}

bool framename_module(const char *name, struct framename_mod *out)
{
	size_t len = strlen(name), plus;
	const char *hex, *hex_end = name + len - 1;
	uint64_t off;

	if (len < 6 || name[0] != '[' || name[len - 1] != ']')
		return false;
	for (plus = len - 2; plus > 1; plus--)
		if (name[plus] == '+')
			break;
	hex = name + plus + 3;
	if (plus <= 1 || len - plus < 5 || name[plus + 1] != '0' || name[plus + 2] != 'x' ||
	    !hexnum_parse(&hex, hex_end, &off) || hex != hex_end)
		return false;
	out->module = name + 1;
	out->module_len = plus - 1;
	out->offset = off;
	return true;
}

const char *framename_kind(uint32_t kind)
{
	static const char *const names[FRAME_KIND_MAX] = {
		[FRAME_UNKNOWN] = "unknown", [FRAME_KERNEL] = "kernel", [FRAME_NATIVE] = "native",
		[FRAME_PYTHON] = "python",   [FRAME_ROOT] = "root",	[FRAME_GPU] = "gpu",
		[FRAME_WAIT] = "wait",	     [FRAME_TASK] = "task",	[FRAME_LOCAL] = "local",
	};

	return kind < FRAME_KIND_MAX ? names[kind] : "unknown";
}
