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

/* Section header and data with bounds checked; NULL if unusable. */
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

#endif
