/* A module with thread-local storage for tests/dropin/tls.c, loaded with
 * dlopen after threads exist: TLSMOD_IE selects the initial-exec model
 * (static TLS, which the loader places in every thread's block at once),
 * else the default general-dynamic model (allocated per thread on first
 * use, through the dtv). */
#ifdef TLSMOD_IE
#define MODEL __attribute__((tls_model("initial-exec")))
#else
#define MODEL
#endif

static __thread int counter MODEL = 42;
static __thread char buf[64] MODEL;

int tlsmod_bump(int by) {
  counter += by;
  buf[0] = (char)counter;
  return counter;
}

void *tlsmod_where(void) { return &counter; }
