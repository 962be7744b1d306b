! ranks: 1-4
! Fortran bindings through mpif.h: MPI_INIT, MPI_COMM_RANK/SIZE, a ring
! MPI_SEND/MPI_RECV (even ranks send first), the ring again with MPI_IRECV,
! MPI_SEND and MPI_WAIT of a status (which Open MPI's binding converts with
! PMPI_Status_c2f), MPI_ALLREDUCE, MPI_BARRIER, MPI_FINALIZE. A wrong result
! prints one line and stops with MPI_ABORT.
program fortran_basic
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, right, left, sum, request
  integer :: outbuf(4), inbuf(4), i
  integer :: status(MPI_STATUS_SIZE)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)

  do i = 1, 4
     outbuf(i) = 100 * rank + i
  end do
  inbuf = -1
  if (nprocs == 1) then
     call MPI_SENDRECV(outbuf, 4, MPI_INTEGER, right, 7, inbuf, 4, MPI_INTEGER, left, 7, &
                       MPI_COMM_WORLD, status, ierr)
  else if (mod(rank, 2) == 0) then
     call MPI_SEND(outbuf, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, ierr)
     call MPI_RECV(inbuf, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, status, ierr)
  else
     call MPI_RECV(inbuf, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, status, ierr)
     call MPI_SEND(outbuf, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, ierr)
  end if
  if (status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 7) call fail('bad status')
  do i = 1, 4
     if (inbuf(i) /= 100 * left + i) call fail('bad data from left neighbour')
  end do

  inbuf = -1
  call MPI_IRECV(inbuf, 4, MPI_INTEGER, left, 8, MPI_COMM_WORLD, request, ierr)
  call MPI_SEND(outbuf, 4, MPI_INTEGER, right, 8, MPI_COMM_WORLD, ierr)
  call MPI_WAIT(request, status, ierr)
  if (status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 8) call fail('bad status of a wait')
  if (inbuf(1) /= 100 * left + 1) call fail('bad data from a wait')

  call MPI_ALLREDUCE(rank, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (sum /= nprocs * (nprocs - 1) / 2) call fail('bad allreduce sum')

  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)

contains

  subroutine fail(reason)
    character(len=*), intent(in) :: reason
    integer :: ignored
    write (0, '(A,I0,A,A)') 'fortran_basic.f90: rank ', rank, ': ', reason
    call MPI_ABORT(MPI_COMM_WORLD, 1, ignored)
  end subroutine fail

end program fortran_basic
