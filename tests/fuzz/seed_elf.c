/* A small shared object whose ELF file seeds fuzz_elfsym and
 * fuzz_unwind_table: real .symtab, .dynsym, .eh_frame, build-id and PLT
 * entries for the mutations to start from. */
#include <stdio.h>
#include <string.h>

int seed_data = 42;
static char seed_buf[64];

static int __attribute__((noinline)) seed_leaf(int x)
{
	return x * 3 + seed_data;
}

int seed_entry(const char *s)
{
	snprintf(seed_buf, sizeof(seed_buf), "%s", s);
	return seed_leaf((int)strlen(seed_buf));
}
