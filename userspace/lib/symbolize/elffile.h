/* elffile: a libelf handle on an untrusted ELF file (or memory image).
 * libelf trusts header fields when it sizes allocations, so the header
 * and every section we touch is checked against the real size first:
 * a hostile file gives -EINVAL, never a huge allocation or a crash.
 * Internal to the symbolizer (elfsym, debuginfo). */
#ifndef PROFD_ELFFILE_H
#define PROFD_ELFFILE_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* More sections than any linked program has; bounds libelf's tables. */
#define ELFFILE_MAX_SECTIONS 32768
#define ELFFILE_MAX_SEGMENTS 4096
#define ELFFILE_BUILD_ID_MAX 64
/* Sizes come from these limits, not from the file: a 1 TB sparse file
 * whose headers claim a huge section costs a refusal, not a read of it.
 * The largest .symtab/.strtab/.eh_frame of real programs are well below
 * (a browser's .strtab is ~100 MiB). */
#define ELFFILE_MAX_SECTION_BYTES (256ull << 20)
#define ELFFILE_MAX_NOTE_BYTES (1ull << 20)

struct elffile {
	Elf *elf;
	int fd;         /* not owned; -1 for a memory image */
	void *image;    /* owned copy for memory images */
	uint64_t size;  /* bytes in the file or image */
	size_t shnum;   /* section count (extended numbering resolved) */
	size_t shstrndx;
	size_t phnum;
	bool big_endian;
};

/* 0 or -errno (-EINVAL: not ELF or corrupt).  fd stays the caller's. */
int elffile_open_fd(struct elffile *f, int fd);
int elffile_open_mem(struct elffile *f, const void *image, size_t len);
void elffile_close(struct elffile *f);

/* Section header and data with bounds checked; NULL if unusable or over
 * ELFFILE_MAX_SECTION_BYTES (counted in elffile_too_big). */
Elf_Data *elffile_section_data(struct elffile *f, Elf_Scn *scn, GElf_Shdr *sh);
/* Section header by index with a sanity check; false if unusable. */
bool elffile_shdr(struct elffile *f, size_t idx, GElf_Shdr *sh);
/* Data of string-table section idx, checked; NULL if unusable. */
Elf_Data *elffile_strtab(struct elffile *f, size_t idx);
/* NUL-terminated string at off inside d, or NULL. */
const char *elffile_data_str(const Elf_Data *d, uint64_t off);
/* First section called name, or NULL. */
Elf_Scn *elffile_find_section(struct elffile *f, const char *name, GElf_Shdr *sh);
/* NT_GNU_BUILD_ID; returns the length (0 when absent). */
size_t elffile_build_id(struct elffile *f, uint8_t id[ELFFILE_BUILD_ID_MAX]);
/* .gnu_debuglink: 0, -ENOENT when absent, -EINVAL when malformed. */
int elffile_debuglink(struct elffile *f, char *name, size_t name_size, uint32_t *crc);

/* Whether every section whose name starts with prefix (".debug", libdw
 * reads them all in dwarf_begin_elf) is at most cap bytes, compressed
 * ones by their uncompressed size.  Counts a refusal. */
bool elffile_sections_fit(struct elffile *f, const char *prefix, uint64_t cap);

/* Refusals for size, process-wide: sections and debug files over their
 * caps (profctl stats: files_too_big). */
void elffile_count_too_big(void);
uint64_t elffile_too_big(void);

#endif
