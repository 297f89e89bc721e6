/*
 * sym_zcache: compressed debug sections inflated once into a file on disk, to be mapped.
 *
 * Compressed DWARF (SHF_COMPRESSED, what `gcc -gz` and many distributions' debug files
 * have, or GNU's older .zdebug_* sections) cannot be mapped as it is: libelf inflates
 * each section into our memory, the whole of it, for as long as the handle lives. So the
 * first time an object with compressed debug sections is opened, its .debug_* sections
 * are inflated into a small ELF file of their own (the same class, machine and type;
 * the sections' names and data, nothing else) in the cache directory, named by the
 * object's build-id (else its dev, inode, size and mtime), written to a temporary name
 * and renamed into place; that file is then mapped like any other. Later opens (this
 * process or the next) map it directly.
 *
 * The directory (sym_opts.debug_cache_dir): $XDG_CACHE_HOME/hearth/dwarf, else
 * /var/cache/hearth/dwarf for root, else ~/.cache/hearth/dwarf. Its size is capped
 * (sym_opts.debug_cache_bytes, default SYM_ZCACHE_DEFAULT_BYTES): before a file is
 * written, the least recently used ones (by mtime, which a use refreshes) go until the
 * new one fits; an object whose inflated sections alone pass the cap is not cached (its
 * sections are inflated in memory, as before). Any failure (no directory, a full disk)
 * falls back the same way.
 */
#include "symbolize/sym_internal.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t zc_lock = PTHREAD_MUTEX_INITIALIZER;
static char zc_dir[PATH_MAX];
static bool zc_off;
static uint64_t zc_cap = SYM_ZCACHE_DEFAULT_BYTES, zc_made, zc_used;

void sym_zcache__config(const char *dir, uint64_t cap_bytes)
{
	pthread_mutex_lock(&zc_lock);
	if (dir && !strcmp(dir, "")) {
		zc_off = true;
	} else if (dir) {
		snprintf(zc_dir, sizeof(zc_dir), "%s", dir);
		zc_off = false;
	}
	if (cap_bytes)
		zc_cap = cap_bytes;
	pthread_mutex_unlock(&zc_lock);
}

void sym_zcache__stats(uint64_t *made, uint64_t *used)
{
	pthread_mutex_lock(&zc_lock);
	*made = zc_made;
	*used = zc_used;
	pthread_mutex_unlock(&zc_lock);
}

/* mkdir -p of zc_dir (0700). 0 or -errno. */
static int make_dir(void)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", zc_dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0700) != 0 && errno != EEXIST ? -errno : 0;
}

/* zc_dir, chosen on first use when not configured. false: no cache. */
static bool dir_ready(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (zc_off)
		return false;
	if (!zc_dir[0]) {
		if (x && x[0] == '/')
			snprintf(zc_dir, sizeof(zc_dir), "%s/hearth/dwarf", x);
		else if (geteuid() == 0)
			snprintf(zc_dir, sizeof(zc_dir), "/var/cache/hearth/dwarf");
		else if (home && home[0] == '/')
			snprintf(zc_dir, sizeof(zc_dir), "%s/.cache/hearth/dwarf", home);
		else
			return false;
	}
	return make_dir() == 0;
}

/* Frees room for need bytes in the directory: its oldest *.debug files go first. */
static bool make_room(uint64_t need)
{
	for (;;) {
		DIR *dir = opendir(zc_dir);
		struct dirent *de;
		uint64_t total = 0;
		struct timespec oldest = {0};
		char victim[NAME_MAX + 1] = "";

		if (!dir)
			return false;
		while ((de = readdir(dir))) {
			struct stat st;
			size_t n = strlen(de->d_name);

			if (n < 7 || strcmp(de->d_name + n - 6, ".debug") ||
			    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			total += (uint64_t)st.st_size;
			if (!victim[0] || st.st_mtim.tv_sec < oldest.tv_sec ||
			    (st.st_mtim.tv_sec == oldest.tv_sec &&
			     st.st_mtim.tv_nsec < oldest.tv_nsec)) {
				oldest = st.st_mtim;
				snprintf(victim, sizeof(victim), "%s", de->d_name);
			}
		}
		if (total + need <= zc_cap || !victim[0]) {
			closedir(dir);
			zc_used = total;
			return total + need <= zc_cap;
		}
		unlinkat(dirfd(dir), victim, 0);
		closedir(dir);
	}
}

/* What the inflated .debug_* sections need, and whether any is compressed. */
static uint64_t inflated_size(Elf *elf, size_t shstrndx, bool *compressed)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t sum = 0;

	*compressed = false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED) {
			*compressed = true;
			sum += gelf_getchdr(scn, &ch) ? ch.ch_size : sh.sh_size;
		} else if (!strncmp(name, ".zdebug_", 8)) {
			*compressed = true;
			sum += sh.sh_size * 4;
		} else if (!strncmp(name, ".debug_", 7)) {
			sum += sh.sh_size;
		}
	}
	return sum;
}

/*
 * Writes the inflated .debug_* sections of elf into fd as an ELF of their own. 0, or
 * -EIO. Reads elf's (mapped) sections: runs under the caller's guard.
 */
static int write_debug(Elf *elf, size_t shstrndx, int fd)
{
	Elf *o = elf_begin(fd, ELF_C_WRITE, NULL);
	GElf_Ehdr ieh, oeh;
	Elf_Scn *scn = NULL, *os;
	char *names = NULL;
	size_t len = 1, cap = 256;
	int err = -EIO;
	Elf_Data *od;
	GElf_Shdr sh, osh;

	if (!o || !gelf_getehdr(elf, &ieh) || !gelf_newehdr(o, gelf_getclass(elf)) ||
	    !gelf_getehdr(o, &oeh) || !(names = calloc(1, cap)))
		goto cleanup;
	memcpy(oeh.e_ident, ieh.e_ident, EI_NIDENT);
	oeh.e_type = ieh.e_type;
	oeh.e_machine = ieh.e_machine;
	oeh.e_version = ieh.e_version;
	oeh.e_flags = ieh.e_flags;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			goto cleanup;
		if (!strncmp(name, ".zdebug_", 8) && elf_compress_gnu(scn, 0, 0) < 0)
			goto cleanup;
		if (!strncmp(name, ".zdebug_", 8))
			name++; /* ".debug_..." */
		if (!gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)))
			goto cleanup;
		n = strlen(name) + 1;
		if (base_grow((void **)&names, &cap, len + n, 1))
			goto cleanup;
		if (!(os = elf_newscn(o)) || !gelf_getshdr(os, &osh) || !(od = elf_newdata(os)))
			goto cleanup;
		memcpy(names + len, name, n);
		osh.sh_name = (Elf64_Word)len;
		len += n;
		osh.sh_type = SHT_PROGBITS;
		osh.sh_flags = sh.sh_flags & ~(uint64_t)SHF_COMPRESSED;
		osh.sh_entsize = sh.sh_entsize;
		osh.sh_addralign = 1;
		od->d_buf = d->d_buf;
		od->d_size = d->d_size;
		od->d_type = ELF_T_BYTE;
		od->d_align = 1;
		if (!gelf_update_shdr(os, &osh))
			goto cleanup;
	}
	/* the section names */
	if (base_grow((void **)&names, &cap, len + 10, 1))
		goto cleanup;
	memcpy(names + len, ".shstrtab", 10);
	if (!(os = elf_newscn(o)) || !gelf_getshdr(os, &osh) || !(od = elf_newdata(os)))
		goto cleanup;
	osh.sh_name = (Elf64_Word)len;
	len += 10;
	osh.sh_type = SHT_STRTAB;
	osh.sh_addralign = 1;
	od->d_buf = names;
	od->d_size = len;
	od->d_type = ELF_T_BYTE;
	od->d_align = 1;
	oeh.e_shstrndx = (Elf64_Half)elf_ndxscn(os);
	if (gelf_update_shdr(os, &osh) && gelf_update_ehdr(o, &oeh) &&
	    elf_update(o, ELF_C_WRITE) >= 0)
		err = 0;
cleanup:
	if (o)
		elf_end(o);
	free(names);
	return err;
}

/* The cache file's name for the object (build-id, else identity): into out. */
static void key_of(Elf *elf, int fd, char *out, size_t len)
{
	char bid[OBJECT_BUILD_ID_HEX];
	struct stat st;

	if (fstat(fd, &st) != 0)
		memset(&st, 0, sizeof(st));
	object_elf_build_id(elf, (uint64_t)st.st_size, bid, sizeof(bid));
	if (bid[0])
		snprintf(out, len, "%s/%s.debug", zc_dir, bid);
	else
		snprintf(out, len, "%s/id-%llx-%llx-%llx-%llx.debug", zc_dir,
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			 (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec);
}

int sym_zcache__path(Elf *elf, int fd, char *out, size_t len)
{
	size_t shstrndx;
	bool compressed;
	uint64_t need;
	char tmp[PATH_MAX + 32];
	struct sym_guard g;
	volatile int err = -ENOENT;
	int tfd;

	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOENT;
	pthread_mutex_lock(&zc_lock);
	sym_guard_push(&g);
	if (sigsetjmp(g.jb, 0) == 0) {
		need = inflated_size(elf, shstrndx, &compressed);
		if (!compressed)
			goto done;
		/* inflating needs it all in memory at once, here or in libelf: not past the
		 * memory ledger's budget (never without a limit) */
		if (mem_budget__would_pass(need)) {
			err = -EFBIG;
			goto done;
		}
		if (!dir_ready())
			goto done;
		key_of(elf, fd, out, len);
		if (access(out, R_OK) == 0) { /* made before: a use makes it recent */
			utimensat(AT_FDCWD, out, NULL, 0);
			err = 0;
			goto done;
		}
		if (!make_room(need))
			goto done;
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", out, (int)getpid());
		if ((tfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
			goto done;
		err = write_debug(elf, shstrndx, tfd);
		if (close(tfd) != 0 && !err)
			err = -EIO;
		if (!err && rename(tmp, out) != 0)
			err = -errno;
		if (err)
			unlink(tmp);
		else
			zc_made++;
	}
done:
	sym_guard_pop(&g);
	if (g.faulted)
		err = -EIO; /* the file shrank: a temporary file may stay, the next open retries */
	pthread_mutex_unlock(&zc_lock);
	return err;
}
