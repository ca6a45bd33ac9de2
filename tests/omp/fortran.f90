! The Fortran API (libito-omp.so's fortran.c) through gfortran's omp_lib:
! every routine called by reference as gfortran does, 8-byte integer
! forms, locks and nest locks protecting counters, character arguments.
! Prints only what any conforming runtime prints at a given
! OMP_NUM_THREADS; compare.sh compares it with libgomp's output.
program fortran_api
  use omp_lib
  implicit none
  integer :: n, i, counter, ncount, failures, kind, chunk, lvl, got
  integer(8) :: chunk8, level8
  integer(omp_sched_kind) :: skind
  integer(omp_lock_kind) :: lck
  integer(omp_nest_lock_kind) :: nlck
  integer, allocatable :: seen(:)
  double precision :: t0, t1, tick
  logical :: flag
  character(len=64) :: fmt
  integer :: flen

  failures = 0
  n = omp_get_max_threads()
  print '(a,l1,a,i0)', 'in parallel: ', omp_in_parallel(), ', level ', omp_get_level()

  ! thread numbers: every member marks its slot once
  allocate(seen(0:n-1))
  seen = 0
  !$omp parallel shared(seen)
    !$omp atomic
    seen(omp_get_thread_num()) = seen(omp_get_thread_num()) + 1
    if (omp_get_num_threads() /= n) call fail('num_threads')
    if (.not. omp_in_parallel() .and. n > 1) call fail('in_parallel')
    if (omp_get_level() /= 1) call fail('level')
    if (omp_get_active_level() /= merge(1, 0, n > 1)) call fail('active_level')
    if (omp_get_ancestor_thread_num(1) /= omp_get_thread_num()) call fail('ancestor 1')
    if (omp_get_ancestor_thread_num(0) /= 0) call fail('ancestor 0')
    if (omp_get_team_size(1) /= n) call fail('team_size')
    level8 = 1
    if (omp_get_team_size(level8) /= n) call fail('team_size_8')
  !$omp end parallel
  print '(a,i0,a,i0)', 'team of ', n, ': members seen once: ', count(seen == 1)
  print '(a,i0,1x,i0)', 'outside: ancestor(0), team_size(0): ', &
      omp_get_ancestor_thread_num(0), omp_get_team_size(0)
  print '(a,i0,1x,i0)', 'outside: ancestor(1), team_size(1): ', &
      omp_get_ancestor_thread_num(1), omp_get_team_size(1)

  ! locks
  call omp_init_lock(lck)
  call omp_init_nest_lock(nlck)
  counter = 0
  ncount = 0
  !$omp parallel private(i)
    do i = 1, 1000
      call omp_set_lock(lck)
      counter = counter + 1
      call omp_unset_lock(lck)
      call omp_set_nest_lock(nlck)
      call omp_set_nest_lock(nlck)
      if (omp_test_nest_lock(nlck) /= 3) call fail('nest depth')
      ncount = ncount + 1
      call omp_unset_nest_lock(nlck)
      call omp_unset_nest_lock(nlck)
      call omp_unset_nest_lock(nlck)
    end do
  !$omp end parallel
  print '(a,i0,a,i0)', 'lock counter ', counter, ', nest lock counter ', ncount
  flag = omp_test_lock(lck)
  print '(a,l1)', 'test_lock on a free lock: ', flag
  !$omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) then
      if (omp_test_lock(lck)) call fail('test_lock on a held lock')
    end if
  !$omp end parallel
  call omp_unset_lock(lck)
  call omp_destroy_lock(lck)
  call omp_destroy_nest_lock(nlck)

  ! nesting
  call omp_set_max_active_levels(2)
  print '(a,i0)', 'max_active_levels: ', omp_get_max_active_levels()
  print '(a,l1)', 'nested: ', omp_get_nested()
  !$omp parallel num_threads(2)
    !$omp parallel num_threads(2)
      if (omp_get_level() /= 2) call fail('nested level')
      if (omp_get_active_level() /= 2) call fail('nested active level')
      if (omp_get_team_size(2) /= 2) call fail('nested team size')
      if (omp_get_team_size(1) /= 2) call fail('outer team size')
      lvl = omp_get_ancestor_thread_num(1)
      if (lvl < 0 .or. lvl > 1) call fail('ancestor in nested')
    !$omp end parallel
  !$omp end parallel
  level8 = 1
  call omp_set_max_active_levels(level8)
  print '(a,i0)', 'max_active_levels (8): ', omp_get_max_active_levels()
  call omp_set_nested(.false.)
  print '(a,l1,1x,i0)', 'nested off: ', omp_get_nested(), omp_get_max_active_levels()
  print '(a,l1)', 'supported levels > 0: ', omp_get_supported_active_levels() > 0

  ! schedules
  call omp_set_schedule(omp_sched_guided, 5)
  call omp_get_schedule(skind, chunk)
  print '(a,i0,1x,i0)', 'schedule guided,5: ', skind, chunk
  chunk8 = 7
  call omp_set_schedule(omp_sched_dynamic, chunk8)
  call omp_get_schedule(skind, chunk8)
  print '(a,i0,1x,i0)', 'schedule dynamic,7 (8): ', skind, chunk8
  call omp_set_schedule(omp_sched_static, 0)
  call omp_get_schedule(skind, chunk)
  print '(a,i0,1x,i0)', 'schedule static: ', skind, chunk
  kind = 0
  !$omp parallel do schedule(runtime) reduction(+:kind)
  do i = 1, 100
    kind = kind + i
  end do
  print '(a,i0)', 'runtime loop sum: ', kind

  ! dynamic, num_threads
  call omp_set_dynamic(.true.)
  print '(a,l1)', 'dynamic after set true: ', omp_get_dynamic()
  call omp_set_dynamic(.false.)
  print '(a,l1)', 'dynamic after set false: ', omp_get_dynamic()
  call omp_set_num_threads(3)
  print '(a,i0)', 'max_threads after set 3: ', omp_get_max_threads()
  got = 0
  !$omp parallel reduction(+:got)
    got = got + 1
  !$omp end parallel
  print '(a,i0)', 'team after set 3: ', got
  level8 = 2
  call omp_set_num_threads(int(level8))
  print '(a,i0)', 'max_threads after set 2: ', omp_get_max_threads()
  call omp_set_num_threads(n)

  ! tasks, final
  counter = 0
  !$omp parallel
    !$omp single
      do i = 1, 50
        !$omp task shared(counter)
          !$omp atomic
          counter = counter + 1
        !$omp end task
      end do
      !$omp task final(.true.) shared(flag)
        flag = omp_in_final()
      !$omp end task
      !$omp taskwait
    !$omp end single
  !$omp end parallel
  print '(a,i0,a,l1,a,l1)', 'tasks ran: ', counter, ', in_final in a final task: ', flag, &
      ', outside: ', omp_in_final()

  ! the rest of the ICVs and the host
  print '(a,i0)', 'max_task_priority: ', omp_get_max_task_priority()
  print '(a,l1)', 'cancellation: ', omp_get_cancellation()
  print '(a,l1,1x,i0,1x,i0)', 'initial device: ', omp_is_initial_device(), &
      omp_get_num_devices(), omp_get_initial_device()
  print '(a,i0,1x,i0)', 'team num / teams: ', omp_get_team_num(), omp_get_num_teams()
  print '(a,l1)', 'num_procs > 0: ', omp_get_num_procs() > 0
  print '(a,l1)', 'thread_limit >= max_threads: ', omp_get_thread_limit() >= omp_get_max_threads()
  print '(a,i0)', 'proc_bind: ', omp_get_proc_bind()
  print '(a,i0,a,i0)', 'pause soft: ', omp_pause_resource(omp_pause_soft, omp_get_initial_device()), &
      ', all hard: ', omp_pause_resource_all(omp_pause_hard)
  got = 0
  !$omp parallel reduction(+:got)
    got = got + 1
  !$omp end parallel
  print '(a,l1)', 'team after pause: ', got == omp_get_max_threads()

  ! character arguments
  call omp_set_affinity_format('thread %i of %N')
  flen = omp_get_affinity_format(fmt)
  print '(a,i0,3a)', 'affinity format (', flen, '): "', trim(fmt), '"'

  ! time
  t0 = omp_get_wtime()
  tick = omp_get_wtick()
  do while (omp_get_wtime() - t0 < 0.01d0)
  end do
  t1 = omp_get_wtime()
  print '(a,l1,1x,l1)', 'wtime advances, wtick in (0, 0.01]: ', t1 - t0 >= 0.01d0, &
      tick > 0 .and. tick <= 0.01d0

  deallocate(seen)
  if (failures /= 0) then
    print '(a,i0,a)', 'FAILED (', failures, ' checks)'
    stop 1
  end if
  print '(a)', 'fortran: ok'

contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    !$omp atomic
    failures = failures + 1
    write (0, '(2a)') 'CHECK failed: ', what
  end subroutine fail
end program fortran_api
