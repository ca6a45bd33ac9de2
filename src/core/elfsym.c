/* Symbol lookup in the loaded objects' own tables, as the dynamic linker
 * does it, without the dynamic linker's dlsym: dlsym may allocate (its
 * error string, its per-thread result), and a program with its own
 * allocator then calls back into a library that is still setting itself
 * up (docs/dropin.md section 2). This walks the link map, reads each
 * object's dynamic section, and searches its GNU (or SysV) hash table; it
 * allocates nothing and calls nothing a library can interpose.
 *
 * Semantics: like dlsym(RTLD_NEXT) when `after` is an address inside an
 * object (the objects that follow it in the link map; for an object loaded
 * by dlopen after libc, then the ones before it), like
 * dlsym(RTLD_DEFAULT) when it is NULL (every object, the program first).
 * With a version, the definition of that version (as dlvsym); without,
 * the default one (the "@@" definition, never a hidden one). */
#define _GNU_SOURCE
#include "elfsym.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The dynamic linker relocates the address entries of most objects'
 * dynamic sections in place; the vDSO's and those of some ports stay
 * offsets. An address below the load base is such an offset. */
static uintptr_t dyn_ptr(const struct link_map *lm, uintptr_t p) {
  return p < lm->l_addr ? p + lm->l_addr : p;
}

struct elf_tables {
  const ElfW(Sym) * sym;
  const char *str;
  const uint32_t *gnu;  /* DT_GNU_HASH */
  const uint32_t *sysv; /* DT_HASH */
  const ElfW(Half) * versym;
  const ElfW(Verdef) * verdef;
};

static int tables_of(const struct link_map *lm, struct elf_tables *t) {
  memset(t, 0, sizeof *t);
  if (!lm->l_ld) return 0;
  for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    uintptr_t p = dyn_ptr(lm, (uintptr_t)d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB:
        t->sym = (const ElfW(Sym) *)p;
        break;
      case DT_STRTAB:
        t->str = (const char *)p;
        break;
      case DT_GNU_HASH:
        t->gnu = (const uint32_t *)p;
        break;
      case DT_HASH:
        t->sysv = (const uint32_t *)p;
        break;
      case DT_VERSYM:
        t->versym = (const ElfW(Half) *)p;
        break;
      case DT_VERDEF:
        t->verdef = (const ElfW(Verdef) *)p;
        break;
      default:
        break;
    }
  }
  return t->sym && t->str && (t->gnu || t->sysv);
}

/* The name of version index ndx in the object's definitions, or NULL. */
static const char *verdef_name(const struct elf_tables *t, unsigned ndx) {
  const ElfW(Verdef) *vd = t->verdef;
  while (vd) {
    if ((vd->vd_ndx & 0x7fff) == ndx) {
      const ElfW(Verdaux) *aux = (const ElfW(Verdaux) *)((const char *)vd + vd->vd_aux);
      return t->str + aux->vda_name;
    }
    if (!vd->vd_next) break;
    vd = (const ElfW(Verdef) *)((const char *)vd + vd->vd_next);
  }
  return NULL;
}

static int version_ok(const struct elf_tables *t, uint32_t i, const char *version) {
  if (!t->versym) return version == NULL;
  ElfW(Half) v = t->versym[i];
  if (!version) return (v & 0x8000) == 0; /* the default definition, never a hidden one */
  const char *n = verdef_name(t, v & 0x7fff);
  return n && !strcmp(n, version);
}

static int defines(const struct elf_tables *t, uint32_t i, const char *name, const char *version) {
  const ElfW(Sym) *s = &t->sym[i];
  if (s->st_shndx == SHN_UNDEF || (s->st_value == 0 && ELF64_ST_TYPE(s->st_info) != STT_TLS))
    return 0;
  unsigned bind = ELF64_ST_BIND(s->st_info);
  if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) return 0;
  return !strcmp(t->str + s->st_name, name) && version_ok(t, i, version);
}

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

static uint32_t sysv_hash(const char *s) {
  uint32_t h = 0;
  for (; *s; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

static const ElfW(Sym) * find(const struct elf_tables *t, const char *name, const char *version) {
  if (t->gnu) {
    uint32_t nbuckets = t->gnu[0], symoffset = t->gnu[1], bloom_size = t->gnu[2];
    if (!nbuckets) return NULL;
    const uint32_t *buckets = t->gnu + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return NULL;
    for (;; i++) {
      uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1) && defines(t, i, name, version)) return &t->sym[i];
      if (h2 & 1) return NULL;
    }
  }
  uint32_t nbucket = t->sysv[0];
  const uint32_t *bucket = t->sysv + 2, *chain = bucket + nbucket;
  if (!nbucket) return NULL;
  for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i])
    if (defines(t, i, name, version)) return &t->sym[i];
  return NULL;
}

typedef void *(*ifunc_resolver)(uint64_t, void *);

static void *address_of(const struct link_map *lm, const ElfW(Sym) * s) {
  void *p = (void *)(lm->l_addr + s->st_value);
  if (ELF64_ST_TYPE(s->st_info) != STT_GNU_IFUNC) return p;
    /* An indirect function: its resolver gives the implementation, as the
     * dynamic linker calls it (AArch64 passes the hardware capabilities). */
#if defined(__aarch64__)
  struct {
    unsigned long size, hwcap, hwcap2;
  } caps = {sizeof caps, getauxval(AT_HWCAP), getauxval(AT_HWCAP2)};
  return ((ifunc_resolver)p)(getauxval(AT_HWCAP) | (1ULL << 62), &caps);
#else
  return ((void *(*)(void))p)();
#endif
}

/* The vDSO is in the link map but not in the dynamic linker's search
 * list: its gettimeofday is not the one dlsym finds. */
static bool is_vdso(const struct link_map *lm) {
  return lm->l_name && !strncmp(lm->l_name, "linux-", 6) && strstr(lm->l_name, ".so.1");
}

static void *search(struct link_map *lm, const struct link_map *skip, const char *name,
                    const char *version) {
  for (; lm; lm = lm->l_next) {
    struct elf_tables t;
    if (lm == skip || is_vdso(lm) || !tables_of(lm, &t)) continue;
    const ElfW(Sym) *s = find(&t, name, version);
    if (s) return address_of(lm, s);
  }
  return NULL;
}

int ito__elf_each(const char *name, void (*fn)(void *addr, void *arg), void *arg) {
  struct link_map *lm = NULL;
  Dl_info info;
  if (!dladdr1((const void *)&ito__elf_each, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return 0;
  while (lm->l_prev) lm = lm->l_prev;
  int n = 0;
  for (; lm; lm = lm->l_next) {
    struct elf_tables t;
    if (is_vdso(lm) || !tables_of(lm, &t)) continue;
    const ElfW(Sym) *s = find(&t, name, NULL);
    if (!s || ELF64_ST_TYPE(s->st_info) != STT_FUNC) continue;
    fn(address_of(lm, s), arg);
    n++;
  }
  return n;
}

const char *ito__elf_tls(const char *name, const char *version, size_t *offset) {
  struct link_map *lm = NULL;
  Dl_info info;
  if (!dladdr1((const void *)&ito__elf_tls, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
    return NULL;
  while (lm->l_prev) lm = lm->l_prev;
  for (; lm; lm = lm->l_next) {
    struct elf_tables t;
    if (is_vdso(lm) || !tables_of(lm, &t)) continue;
    const ElfW(Sym) *s = find(&t, name, version);
    if (s && ELF64_ST_TYPE(s->st_info) == STT_TLS) {
      *offset = s->st_value;
      return lm->l_name;
    }
  }
  return NULL;
}

void *ito__elf_sym(const void *after, const char *name, const char *version) {
  struct link_map *self = NULL, *head;
  Dl_info info;
  if (!dladdr1(after ? after : (const void *)&ito__elf_sym, &info, (void **)&self,
               RTLD_DL_LINKMAP) ||
      !self)
    return NULL;
  for (head = self; head->l_prev; head = head->l_prev) {
  }
  if (!after) return search(head, NULL, name, version);
  /* the objects loaded after the caller's, as RTLD_NEXT; a library the
   * program loaded with dlopen comes after libc, whose definitions it
   * then finds among the objects before it */
  void *p = search(self->l_next, NULL, name, version);
  return p ? p : search(head, self, name, version);
}

/* ---- names of addresses ------------------------------------------------------------------ */

/* The function of object file `path` (loaded at bias) that holds address
 * a, from the file's full symbol table (.symtab, which also names the
 * static functions the dynamic table leaves out): copied into out; false
 * when the file has none that holds it (stripped, or not readable). Only
 * system calls: fit for a fault handler. */
static bool symtab_name(const char *path, uintptr_t bias, uintptr_t a, char *out, size_t len) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool found = false;
  if (syscall(SYS_fstat, fd, &st) == 0 && (size_t)st.st_size >= sizeof(ElfW(Ehdr))) {
    size_t size = (size_t)st.st_size;
    void *m = (void *)syscall(SYS_mmap, NULL, size, PROT_READ, MAP_PRIVATE, fd, 0L);
    if (m != MAP_FAILED) {
      const ElfW(Ehdr) *eh = m;
      const char *base = m;
      if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
          eh->e_shoff && eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= size) {
        const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
        uintptr_t off = a - bias;
        for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
          if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
          const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
          if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size)
            continue;
          const ElfW(Sym) *s = (const ElfW(Sym) *)(base + sh[i].sh_offset);
          size_t n = sh[i].sh_size / sizeof *s;
          for (size_t k = 0; k < n; k++) {
            if (ELF64_ST_TYPE(s[k].st_info) != STT_FUNC || s[k].st_shndx == SHN_UNDEF) continue;
            if (off < s[k].st_value || off >= s[k].st_value + (s[k].st_size ? s[k].st_size : 1))
              continue;
            if (s[k].st_name >= strs->sh_size) break;
            const char *nm = base + strs->sh_offset + s[k].st_name;
            size_t l = strnlen(nm, strs->sh_size - s[k].st_name);
            if (l >= len) l = len - 1;
            memcpy(out, nm, l);
            out[l] = 0;
            found = true;
            break;
          }
        }
      }
      syscall(SYS_munmap, m, size);
    }
  }
  syscall(SYS_close, fd);
  return found;
}

void ito__elf_name(const void *addr, char *out, size_t len) {
  if (!len) return;
  Dl_info info;
  const ElfW(Sym) *s = NULL;
  struct link_map *lm = NULL;
  uintptr_t a = (uintptr_t)addr;
  if (!dladdr1(addr, &info, (void **)&s, RTLD_DL_SYMENT) || !info.dli_fname) {
    snprintf(out, len, "%#lx", (unsigned long)a);
    return;
  }
  if (info.dli_sname && s && a >= (uintptr_t)info.dli_saddr &&
      a < (uintptr_t)info.dli_saddr + (s->st_size ? s->st_size : 1)) {
    snprintf(out, len, "%s", info.dli_sname);
    return;
  }
  /* not in the dynamic table: the file's own, where the link map names it
   * (the program's entry has no name: /proc/self/exe is its file) */
  if (dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
    const char *path = lm->l_name && *lm->l_name ? lm->l_name : "/proc/self/exe";
    if (symtab_name(path, lm->l_addr, a, out, len)) return;
  }
  const char *slash = strrchr(info.dli_fname, '/');
  snprintf(out, len, "%s+%#lx", slash ? slash + 1 : info.dli_fname,
           (unsigned long)(a - (uintptr_t)info.dli_fbase));
}
