! ranks: 1-4
! Fortran 2008 bindings (use mpi_f08): MPI_Init, MPI_Comm_rank/size,
! MPI_Comm_dup, a ring MPI_Isend/MPI_Irecv completed by MPI_Waitall,
! MPI_Allreduce, MPI_Barrier, MPI_Comm_free, MPI_Finalize. MPICH's
! mpi_f08 bindings without choice buffers (MPI_Barrier, MPI_Waitall,
! MPI_Comm_dup, ...) call PMPI directly; the tracer must see them anyway.
! A wrong result prints one line and stops with MPI_Abort.
program fortran_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, right, left, total, i
  integer :: outbuf(4), inbuf(4)
  type(MPI_Comm) :: ring
  type(MPI_Request) :: reqs(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call MPI_Comm_dup(MPI_COMM_WORLD, ring)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  do i = 1, 4
     outbuf(i) = 100 * rank + i
  end do
  inbuf = -1
  call MPI_Irecv(inbuf, 4, MPI_INTEGER, left, 7, ring, reqs(1))
  call MPI_Isend(outbuf, 4, MPI_INTEGER, right, 7, ring, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  do i = 1, 4
     if (inbuf(i) /= 100 * left + i) then
        print '(a,i0,a,i0)', 'fortran_f08.f90: rank ', rank, ': wrong value from ', left
        call MPI_Abort(MPI_COMM_WORLD, 1)
     end if
  end do
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, ring)
  if (total /= nprocs * (nprocs - 1) / 2) then
     print '(a,i0,a)', 'fortran_f08.f90: rank ', rank, ': wrong sum'
     call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  call MPI_Barrier(ring)
  call MPI_Comm_free(ring)
  call MPI_Finalize()
end program fortran_f08
