/* container-unwind.c: remote unwinding of a process in another root, or
 * whose files were deleted or replaced since it mapped them (a library
 * upgraded under a running service). The stock libunwind-ptrace opens the
 * files named in /proc/PID/maps by path, in our own root, where they are
 * other files or none; here the unwind table (.eh_frame_hdr) of the very file
 * mapped is found through /proc/PID/map_files and searched in the process's
 * memory. */
#include "config.h"
#include "container.h"

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libunwind.h>
#include <libunwind-ptrace.h>

#if defined(__x86_64__)

/* Exported by libunwind (its own _UPT_find_proc_info ends in it), not declared
 * in its headers: look ip up in a binary-search table described by di. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

static int unwind_pid;
static unw_accessors_t accessors;

/* The file-backed mapping holding ip: its file's first mapping (offset 0),
 * as the name under map_files and its start; *deleted when its file is gone
 * from its path. 0, or -1. */
static int mapping_of(unw_word_t ip, char *name, size_t len, uint64_t *base, bool *deleted)
{
	char fn[64], line[PATH_MAX + 128];
	uint64_t lo, hi, off, ino, want_ino = 0;
	unsigned maj, min, want_maj = 0, want_min = 0;
	FILE *f;
	int found = -1;

	snprintf(fn, sizeof fn, "/proc/%d/maps", unwind_pid);
	if (!(f = fopen(fn, "re")))
		return -1;
	/* first the mapping of ip, then the offset-0 mapping of the same file */
	for (int pass = 0; pass < 2 && (pass == 0 || want_ino); pass++) {
		rewind(f);
		while (fgets(line, sizeof line, f)) {
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %x:%x %" SCNu64, &lo, &hi,
				   &off, &maj, &min, &ino) != 6 || ino == 0)
				continue;
			if (pass == 0 && ip >= lo && ip < hi) {
				*deleted = strstr(line, " (deleted)\n") != NULL;
				want_ino = ino;
				want_maj = maj;
				want_min = min;
				break;
			}
			if (pass == 1 && off == 0 && ino == want_ino && maj == want_maj && min == want_min) {
				snprintf(name, len, "%" PRIx64 "-%" PRIx64, lo, hi);
				*base = lo;
				found = 0;
				break;
			}
		}
	}
	fclose(f);
	return found;
}

/* Describe the .eh_frame_hdr search table of the file mapped at base for ip.
 * 0, or -1 (no table of the usual layout). */
static int table_of(const char *name, uint64_t base, unw_word_t ip, unw_dyn_info_t *di)
{
	char fn[128];
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	unsigned char hdr[12];
	uint64_t min_vaddr = UINT64_MAX, bias;
	const Elf64_Phdr *frame = NULL;
	int fd, r = -1;

	snprintf(fn, sizeof fn, "/proc/%d/map_files/%s", unwind_pid, name);
	if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof ph[0] || eh.e_phnum > 64 ||
	    pread(fd, ph, eh.e_phnum * sizeof ph[0], (off_t)eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof ph[0]))
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < min_vaddr)
			min_vaddr = ph[i].p_vaddr;
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			frame = &ph[i];
	}
	if (!frame || min_vaddr == UINT64_MAX)
		goto out;
	bias = base - (min_vaddr & ~(uint64_t)0xfff);
	/* the PT_LOAD holding ip bounds the table's use */
	di->start_ip = di->end_ip = 0;
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ip >= bias + ph[i].p_vaddr &&
		    ip < bias + ph[i].p_vaddr + ph[i].p_memsz) {
			di->start_ip = bias + ph[i].p_vaddr;
			di->end_ip = bias + ph[i].p_vaddr + ph[i].p_memsz;
		}
	/* version 1; eh_frame_ptr any 4-byte form; fde_count udata4; the table
	 * datarel sdata4 pairs: what every linker writes */
	if (!di->end_ip || pread(fd, hdr, sizeof hdr, (off_t)frame->p_offset) != (ssize_t)sizeof hdr ||
	    hdr[0] != 1 || (hdr[1] & 0x0f) != 0x0b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		goto out;
	uint32_t nfde;
	memcpy(&nfde, hdr + 8, sizeof nfde);
	di->format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di->gp = 0;
	di->u.rti.name_ptr = 0;
	di->u.rti.segbase = bias + frame->p_vaddr;
	di->u.rti.table_len = (uint64_t)nfde * 8 / sizeof(unw_word_t);
	di->u.rti.table_data = bias + frame->p_vaddr + sizeof hdr;
	r = 0;
out:
	close(fd);
	return r;
}

/* find_proc_info through map_files; libunwind-ptrace's own where that fails
 * (the vDSO, a file without .eh_frame_hdr), but for a deleted file: its path
 * names another file, or none. */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	char name[64];
	uint64_t base;
	unw_dyn_info_t di;
	bool deleted = false;

	memset(&di, 0, sizeof di);
	if (mapping_of(ip, name, sizeof name, &base, &deleted) == 0 && table_of(name, base, ip, &di) == 0)
		return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
	if (deleted)
		return -UNW_ENOINFO;
	return _UPT_find_proc_info(as, ip, pi, need_unwind_info, arg);
}

struct unw_accessors *container_unwind_accessors(int pid)
{
	unwind_pid = pid;
	accessors = _UPT_accessors;
	accessors.find_proc_info = find_proc_info;
	return &accessors;
}

#else

struct unw_accessors *container_unwind_accessors(int pid)
{
	(void)pid;
	return &_UPT_accessors;
}

#endif
