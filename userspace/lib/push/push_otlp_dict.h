/* push_otlp_dict: the ProfilesDictionary of an OTLP profiles request
 * (opentelemetry-proto v1.11.0, profiles v1development; see
 * tests/data/otlp/profiles.proto): one string, function, location,
 * mapping, stack, link and attribute table shared by every profile of
 * the request, each with the zero value at index 0 and no duplicates.
 *
 * What a stackset becomes:
 *  - a Function per (name, file): Python "qualname (path:line)" gives
 *    Function{qualname, path} and a Line at that line; any other frame
 *    Function{its name} (kernel frames keep "_[k]", as in every output);
 *  - a Mapping per binary a native frame is in (path; its GNU build id as
 *    the attribute process.executable.build_id.gnu), else per module of an
 *    "[module+0xOFF]" frame (address OFF), "[kernel.kallsyms]" for kernel
 *    frames; Python and synthetic frames have none;
 *  - a Location per frame, with the attribute profile.frame.type (native,
 *    kernel, cpython) where the frame is code;
 *  - a Stack per stack, leaf first. */
#ifndef PROFD_PUSH_OTLP_DICT_H
#define PROFD_PUSH_OTLP_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "stackset.h"

struct otlp_dict;

/* NULL with errno ENOMEM. */
struct otlp_dict *otlp_dict_new(void);
void otlp_dict_free(struct otlp_dict *d);

/* Index of s in the string table (made valid UTF-8), or -ENOMEM. */
int32_t otlp_dict_string(struct otlp_dict *d, const char *s);

/* Index of the attribute key = string value, or -ENOMEM. */
int32_t otlp_dict_attr(struct otlp_dict *d, const char *key, const char *value);

/* Index of the attribute key = int value, or -ENOMEM. */
int32_t otlp_dict_attr_int(struct otlp_dict *d, const char *key, int64_t value);

/* The stack table index of every stack of ss, in stack_of[0..nstacks).
 * 0 or -ENOMEM. */
int otlp_dict_add_stacks(struct otlp_dict *d, const struct stackset *ss, int32_t *stack_of);

/* Append the ProfilesDictionary message (without its key and length). */
void otlp_dict_encode(const struct otlp_dict *d, struct buf *out);

#endif
