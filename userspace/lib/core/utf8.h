/* utf8: keep untrusted frame names valid UTF-8 in text formats.  Names
 * come from other processes' memory and from files; one stray byte would
 * make a whole JSON, speedscope or pstats file unreadable, so writers
 * replace each invalid byte with U+FFFD instead. */
#ifndef PROFD_UTF8_H
#define PROFD_UTF8_H

#include <stddef.h>

#include "buf.h"

/* Length (1..4) of the well-formed UTF-8 sequence at s, or 0 when the
 * byte at s does not start one (overlong, surrogate, truncated, > U+10FFFF).
 * s must be NUL-terminated; the NUL itself is not a sequence. */
size_t utf8_seq_len(const char *s);

/* Append s[0..len) with every invalid byte replaced by U+FFFD. */
void utf8_put_clean(struct buf *b, const char *s, size_t len);
/* Bytes utf8_put_clean would append. */
size_t utf8_clean_len(const char *s, size_t len);

/* Append s as a JSON string literal (quotes included), escaping '"', '\\'
 * and control characters, invalid bytes replaced by U+FFFD. */
void utf8_put_json(struct buf *b, const char *s);
/* The same for the first len bytes of s (which need not end in NUL). */
void utf8_put_json_n(struct buf *b, const char *s, size_t len);

/* Write s as XML text to out, at most max characters (the last two then
 * ".."), invalid UTF-8 as '?': names come from untrusted processes and
 * files, and one bad byte would make a whole SVG unreadable.  scratch is
 * a work buffer the caller keeps. */
void utf8_put_xml_cut(struct buf *out, struct buf *scratch, const char *s, size_t max);

#endif
