/* Stack overflow reports (overflow.c). */
#ifndef ITO_CORE_OVERFLOW_H
#define ITO_CORE_OVERFLOW_H

#include "base.h"

/* Installs the SIGSEGV and SIGBUS handler (keeping the program's, which
 * gets every fault that is not an overflow). */
HIDDEN void ito__install_segv(void);
/* Set once ito's handler holds SIGSEGV and SIGBUS: a program's handler for
 * them set later (signal.c) is chained behind it. */
extern int ito__segv_installed HIDDEN;
/* An alternate signal stack for the calling OS thread; NULL if none. */
HIDDEN char *ito__altstack_setup(void);

#endif
