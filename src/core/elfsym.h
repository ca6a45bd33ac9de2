/* Symbol lookup without the dynamic linker's dlsym (src/core/elfsym.c):
 * allocates nothing and calls nothing a library can interpose, so a
 * library may resolve libc's functions while the program's own allocator
 * is not yet usable. */
#ifndef ITO_CORE_ELFSYM_H
#define ITO_CORE_ELFSYM_H

#include "base.h"

/* The address of name (of that version when version is not NULL, else its
 * default definition) in the objects after the one that holds address
 * `after` (dlsym(RTLD_NEXT)), or in all of them when after is NULL
 * (dlsym(RTLD_DEFAULT)); NULL when none defines it. */
HIDDEN void *ito__elf_sym(const void *after, const char *name, const char *version);

/* Calls fn(address, arg) for each loaded object (the program first, in
 * the link map's order) that defines name as a function of its own (its
 * default definition); returns how many did. */
HIDDEN int ito__elf_each(const char *name, void (*fn)(void *addr, void *arg), void *arg);

/* A thread-local symbol: its offset in its module's TLS block in
 * *offset, and the name of the object that defines it (the link map's, as
 * dl_iterate_phdr reports it), or NULL when none does. */
HIDDEN const char *ito__elf_tls(const char *name, const char *version, size_t *offset);

/* The name of the function that holds addr, into out: its name in the
 * dynamic symbol table, else in its file's full symbol table (static
 * functions of an unstripped object), else OBJECT+0xOFFSET. For reports
 * of faults: allocates nothing. */
HIDDEN void ito__elf_name(const void *addr, char *out, size_t len);

#endif
