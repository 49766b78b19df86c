#include "elffile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Header fields libelf uses to size its tables, decoded by hand. */
struct ehdr_info {
	uint64_t phoff, shoff;
	uint64_t phentsize, phnum, shentsize, shnum, shstrndx;
};

static int read_at(const struct elffile *f, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;

	if (off > f->size || len > f->size - off)
		return -EINVAL;
	if (f->image) {
		memcpy(buf, (const char *)f->image + off, len);
		return 0;
	}
	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EINVAL;
		done += (size_t)n;
	}
	return 0;
}

static uint64_t get_uint(const uint8_t *p, unsigned n, bool be)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[be ? n - 1 - i : i] << (8 * i);
	return v;
}

static int decode_ehdr(struct elffile *f, struct ehdr_info *h, bool is64)
{
	uint8_t b[64];
	bool be = f->big_endian;
	int err = read_at(f, 0, b, is64 ? 64 : 52);

	if (err)
		return err;
	if (is64) {
		h->phoff = get_uint(b + 32, 8, be);
		h->shoff = get_uint(b + 40, 8, be);
		h->phentsize = get_uint(b + 54, 2, be);
		h->phnum = get_uint(b + 56, 2, be);
		h->shentsize = get_uint(b + 58, 2, be);
		h->shnum = get_uint(b + 60, 2, be);
		h->shstrndx = get_uint(b + 62, 2, be);
	} else {
		h->phoff = get_uint(b + 28, 4, be);
		h->shoff = get_uint(b + 32, 4, be);
		h->phentsize = get_uint(b + 42, 2, be);
		h->phnum = get_uint(b + 44, 2, be);
		h->shentsize = get_uint(b + 46, 2, be);
		h->shnum = get_uint(b + 48, 2, be);
		h->shstrndx = get_uint(b + 50, 2, be);
	}
	return 0;
}

/* Extended numbering keeps the real counts in section header 0. */
static int decode_extended(struct elffile *f, struct ehdr_info *h, bool is64)
{
	uint8_t b[64];
	int err;

	if (h->shoff == 0 || (h->shnum && h->shstrndx != SHN_XINDEX && h->phnum != PN_XNUM))
		return 0;
	if (h->shentsize != (is64 ? 64u : 40u))
		return -EINVAL;
	err = read_at(f, h->shoff, b, (size_t)h->shentsize);
	if (err)
		return err;
	if (h->shnum == 0)
		h->shnum = get_uint(b + (is64 ? 32 : 20), is64 ? 8 : 4, f->big_endian);
	if (h->shstrndx == SHN_XINDEX)
		h->shstrndx = get_uint(b + (is64 ? 40 : 24), 4, f->big_endian);
	if (h->phnum == PN_XNUM)
		h->phnum = get_uint(b + (is64 ? 44 : 28), 4, f->big_endian);
	return 0;
}

static bool table_fits(const struct elffile *f, uint64_t off, uint64_t n, uint64_t entsize)
{
	return off <= f->size && n <= (f->size - off) / entsize;
}

static int precheck(struct elffile *f)
{
	unsigned char id[EI_NIDENT];
	struct ehdr_info h;
	bool is64;
	int err = read_at(f, 0, id, sizeof(id));

	if (err)
		return -EINVAL;
	if (memcmp(id, ELFMAG, SELFMAG) || id[EI_VERSION] != EV_CURRENT ||
	    (id[EI_CLASS] != ELFCLASS32 && id[EI_CLASS] != ELFCLASS64) ||
	    (id[EI_DATA] != ELFDATA2LSB && id[EI_DATA] != ELFDATA2MSB))
		return -EINVAL;
	is64 = id[EI_CLASS] == ELFCLASS64;
	f->big_endian = id[EI_DATA] == ELFDATA2MSB;
	if (decode_ehdr(f, &h, is64) || decode_extended(f, &h, is64))
		return -EINVAL;
	if (h.shoff == 0)
		h.shnum = 0;
	if (h.shnum > ELFFILE_MAX_SECTIONS || h.phnum > ELFFILE_MAX_SEGMENTS)
		return -EINVAL;
	if (h.shnum && (h.shentsize != (is64 ? 64u : 40u) ||
			!table_fits(f, h.shoff, h.shnum, h.shentsize) || h.shstrndx >= h.shnum))
		return -EINVAL;
	if (h.phnum && (h.phentsize != (is64 ? 56u : 32u) ||
			!table_fits(f, h.phoff, h.phnum, h.phentsize)))
		return -EINVAL;
	f->shnum = (size_t)h.shnum;
	f->shstrndx = (size_t)h.shstrndx;
	f->phnum = (size_t)h.phnum;
	return 0;
}

/* libelf must agree with what we checked, or we do not trust it. */
static int begin(struct elffile *f)
{
	size_t n;

	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF)
		return -EINVAL;
	if (elf_getshdrnum(f->elf, &n) || n != f->shnum)
		return -EINVAL;
	if (elf_getphdrnum(f->elf, &n) || n != f->phnum)
		return -EINVAL;
	return 0;
}

int elffile_open_fd(struct elffile *f, int fd)
{
	struct stat st;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	f->size = (uint64_t)st.st_size;
	err = precheck(f);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	/* ELF_C_READ, not mmap: a file truncated under us must give a read
	 * error, not SIGBUS. */
	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	err = begin(f);
	if (err)
		elffile_close(f);
	return err;
}

int elffile_open_mem(struct elffile *f, const void *image, size_t len)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->image = malloc(len ? len : 1);
	if (!f->image)
		return -ENOMEM;
	memcpy(f->image, image, len);
	f->size = len;
	err = precheck(f);
	if (!err) {
		elf_version(EV_CURRENT);
		f->elf = elf_memory(f->image, len);
		err = begin(f);
	}
	if (err)
		elffile_close(f);
	return err;
}

void elffile_close(struct elffile *f)
{
	if (f->elf)
		elf_end(f->elf);
	free(f->image);
	f->elf = NULL;
	f->image = NULL;
}

static uint64_t too_big;

void elffile_count_too_big(void)
{
	__atomic_fetch_add(&too_big, 1, __ATOMIC_RELAXED);
}

uint64_t elffile_too_big(void)
{
	return __atomic_load_n(&too_big, __ATOMIC_RELAXED);
}

Elf_Data *elffile_section_data(struct elffile *f, Elf_Scn *scn, GElf_Shdr *sh)
{
	uint64_t cap = ELFFILE_MAX_SECTION_BYTES;

	if (!scn || !gelf_getshdr(scn, sh))
		return NULL;
	if (sh->sh_type == SHT_NOBITS || (sh->sh_flags & SHF_COMPRESSED))
		return NULL;
	if (sh->sh_offset > f->size || sh->sh_size > f->size - sh->sh_offset)
		return NULL;
	if (sh->sh_type == SHT_NOTE)
		cap = ELFFILE_MAX_NOTE_BYTES;
	if (sh->sh_size > cap) {
		elffile_count_too_big();
		return NULL;
	}
	return elf_getdata(scn, NULL);
}

/* The size a section has in memory: compressed ones say it in their
 * Elf*_Chdr, which libdw would decompress into. */
static bool section_mem_size(struct elffile *f, const GElf_Shdr *sh, uint64_t *size)
{
	uint8_t b[24];
	bool is64 = gelf_getclass(f->elf) == ELFCLASS64;

	*size = sh->sh_size;
	if (!(sh->sh_flags & SHF_COMPRESSED))
		return true;
	if (read_at(f, sh->sh_offset, b, is64 ? 24 : 12))
		return false;
	*size = is64 ? get_uint(b + 8, 8, f->big_endian) : get_uint(b + 4, 4, f->big_endian);
	return true;
}

bool elffile_sections_fit(struct elffile *f, const char *prefix, uint64_t cap)
{
	Elf_Data *names = elffile_strtab(f, f->shstrndx);
	size_t plen = strlen(prefix);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t size;

	if (!names)
		return false;
	while ((scn = elf_nextscn(f->elf, scn))) {
		const char *s;

		if (!gelf_getshdr(scn, &sh))
			return false;
		s = elffile_data_str(names, sh.sh_name);
		if (!s || strncmp(s, prefix, plen) || sh.sh_type == SHT_NOBITS)
			continue;
		if (!section_mem_size(f, &sh, &size) || size > cap) {
			elffile_count_too_big();
			return false;
		}
	}
	return true;
}

bool elffile_shdr(struct elffile *f, size_t idx, GElf_Shdr *sh)
{
	Elf_Scn *scn;

	if (idx == 0 || idx >= f->shnum)
		return false;
	scn = elf_getscn(f->elf, idx);
	return scn && gelf_getshdr(scn, sh);
}

Elf_Data *elffile_strtab(struct elffile *f, size_t idx)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (idx == 0 || idx >= f->shnum)
		return NULL;
	d = elffile_section_data(f, elf_getscn(f->elf, idx), &sh);
	if (!d || sh.sh_type != SHT_STRTAB || !d->d_buf)
		return NULL;
	return d;
}

const char *elffile_data_str(const Elf_Data *d, uint64_t off)
{
	const char *s;

	if (!d || off >= d->d_size)
		return NULL;
	s = (const char *)d->d_buf + off;
	return memchr(s, '\0', d->d_size - off) ? s : NULL;
}

Elf_Scn *elffile_find_section(struct elffile *f, const char *name, GElf_Shdr *sh)
{
	Elf_Data *names = elffile_strtab(f, f->shstrndx);
	Elf_Scn *scn = NULL;

	if (!names)
		return NULL;
	while ((scn = elf_nextscn(f->elf, scn))) {
		const char *s;

		if (!gelf_getshdr(scn, sh))
			return NULL;
		s = elffile_data_str(names, sh->sh_name);
		if (s && !strcmp(s, name))
			return scn;
	}
	return NULL;
}

static size_t note_build_id(const Elf_Data *d, uint8_t id[ELFFILE_BUILD_ID_MAX])
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf || (d->d_type != ELF_T_NHDR && d->d_type != ELF_T_NHDR8))
		return 0;
	while (off < d->d_size && (next = gelf_getnote((Elf_Data *)d, off, &nh, &name_off, &desc_off))) {
		const char *name = (const char *)d->d_buf + name_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    nh.n_descsz > 0 && nh.n_descsz <= ELFFILE_BUILD_ID_MAX) {
			memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

/* Files without section headers still have their notes in PT_NOTE. */
static size_t segment_build_id(struct elffile *f, uint8_t id[ELFFILE_BUILD_ID_MAX])
{
	size_t i, len;

	for (i = 0; i < f->phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (ph.p_offset > f->size || ph.p_filesz > f->size - ph.p_offset)
			continue;
		if (ph.p_filesz > ELFFILE_MAX_NOTE_BYTES) {
			elffile_count_too_big();
			continue;
		}
		d = elf_getdata_rawchunk(f->elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		len = note_build_id(d, id);
		if (len)
			return len;
	}
	return 0;
}

size_t elffile_build_id(struct elffile *f, uint8_t id[ELFFILE_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	size_t len;

	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		len = note_build_id(elffile_section_data(f, scn, &sh), id);
		if (len)
			return len;
	}
	return segment_build_id(f, id);
}

int elffile_debuglink(struct elffile *f, char *name, size_t name_size, uint32_t *crc)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *d;
	const char *s;
	size_t len, crc_off;

	scn = elffile_find_section(f, ".gnu_debuglink", &sh);
	if (!scn)
		return -ENOENT;
	d = elffile_section_data(f, scn, &sh);
	s = elffile_data_str(d, 0);
	if (!s)
		return -EINVAL;
	len = strlen(s);
	crc_off = (len + 4) & ~(size_t)3; /* NUL, then pad to 4 */
	/* A bare file name: the search directories are ours to choose. */
	if (!len || len >= name_size || strchr(s, '/') || crc_off + 4 > d->d_size ||
	    !strcmp(s, ".") || !strcmp(s, ".."))
		return -EINVAL;
	memcpy(name, s, len + 1);
	*crc = (uint32_t)get_uint((const uint8_t *)d->d_buf + crc_off, 4, f->big_endian);
	return 0;
}
