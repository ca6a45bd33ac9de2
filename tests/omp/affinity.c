/* Affinity display (OMP_AFFINITY_FORMAT's fields, widths and
 * justification; omp_capture_affinity's length and truncation; the
 * default format): compared with gcc's runtime by compare.sh. Fields whose
 * values differ between runtimes (host, process, thread id, CPU list) are
 * checked here and printed as "ok". omp_display_affinity writes to stderr,
 * which compare.sh does not compare; display_affinity.sh checks it. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FMT \
  "L%L n%n N%N a%a t%t T%T |%0.4n|%.3N|%5n|%{thread_num}|%{nesting_level}|%{num_threads}|%%"

int main(void) {
  char buf[4][256];
  size_t len[4] = {0};
#pragma omp parallel num_threads(3)
  {
    int n = omp_get_thread_num();
    if (n < 4) len[n] = omp_capture_affinity(buf[n], sizeof buf[n], FMT);
  }
  for (int i = 0; i < 3 && len[i]; i++) printf("%zu [%s]\n", len[i], buf[i]);
  char b[256], want[256];
  gethostname(want, sizeof want);
  want[sizeof want - 1] = 0;
  omp_capture_affinity(b, sizeof b, "%H");
  printf("host %s\n", strcmp(b, want) ? "wrong" : "ok");
  snprintf(want, sizeof want, "%d", (int)getpid());
  omp_capture_affinity(b, sizeof b, "%{process_id}");
  printf("pid %s\n", strcmp(b, want) ? "wrong" : "ok");
  omp_capture_affinity(b, sizeof b, "%A");
  printf("affinity %s\n", b[0] && strspn(b, "0123456789,-") == strlen(b) ? "ok" : "wrong");
  omp_capture_affinity(b, sizeof b, "%i");
  printf("thread id %s\n", b[0] ? "ok" : "empty");
  char small[4];
  size_t n = omp_capture_affinity(small, sizeof small, "abcdefgh");
  printf("truncated: %zu [%s]\n", n, small);
  printf("length only: %zu\n", omp_capture_affinity(NULL, 0, "xyz%n"));
  omp_set_affinity_format("F%n/%N");
  omp_capture_affinity(b, sizeof b, NULL);
  printf("default: [%s]\n", b);
  omp_capture_affinity(b, sizeof b, "");
  printf("empty: [%s]\n", b);
  return 0;
}
