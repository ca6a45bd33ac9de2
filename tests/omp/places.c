/* Places under OMP_PLACES / OMP_PROC_BIND (docs/numa.md): the place list,
 * each place's CPUs, bind-var, and every thread of a team on a place of
 * the list. Run by compare.sh with OMP_PLACES and OMP_PROC_BIND set (see
 * tests/omp/CMakeLists.txt): gcc's runtime and libito-omp.so must print
 * the same. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = omp_get_num_places();
  printf("places: %d, partition: %d\n", n, omp_get_partition_num_places());
  for (int p = 0; p < n; p++) {
    int ids[256];
    int m = omp_get_place_num_procs(p);
    omp_get_place_proc_ids(p, ids);
    printf("place %d:", p);
    for (int i = 0; i < m && i < 256; i++) printf(" %d", ids[i]);
    printf("\n");
  }
  int nums[256];
  if (n <= 256) {
    omp_get_partition_place_nums(nums);
    for (int i = 0; i < n; i++)
      if (nums[i] != i) printf("partition place %d is %d\n", i, nums[i]);
  }
  printf("proc_bind: %d\n", (int)omp_get_proc_bind());
  int bad = 0;
#pragma omp parallel reduction(+ : bad)
  {
    int pl = omp_get_place_num();
    if (n > 0 ? pl < 0 || pl >= n : pl != -1) bad++;
  }
  printf("threads off their places: %d\n", bad);
  return 0;
}
