# Shared by the scripts/bench-* scripts (sourced, not run): the machine
# line, medians, trace sizes, building the tracer, the yield preload and
# a test program into a scratch directory, and the MPI they run under.

# The MPI: BENCH_MPI names it as crates/testkit does (mpich, the default;
# openmpi, mpich-abi, mpich5, openmpi5, impi: scripts/setup-mpis installs
# them). Sets $mpicc_cmd, $launcher (an array) and $env_style.
mpis_dir="${MPIGRAM_MPIS:-$HOME/.cache/mpigram/mpis}"
case "${BENCH_MPI:-mpich}" in
  mpich) mpicc_cmd=mpicc.mpich; launcher=(mpiexec.mpich); env_style=hydra ;;
  openmpi) mpicc_cmd=mpicc.openmpi; launcher=(mpirun.openmpi --oversubscribe --allow-run-as-root); env_style=openmpi ;;
  mpich-abi) mpicc_cmd=$mpis_dir/mpich5/bin/mpicc_abi; launcher=("$mpis_dir/mpich5/bin/mpiexec"); env_style=hydra ;;
  mpich5) mpicc_cmd=$mpis_dir/mpich5/bin/mpicc; launcher=("$mpis_dir/mpich5/bin/mpiexec"); env_style=hydra ;;
  openmpi5)
    export OPAL_PREFIX=$mpis_dir/openmpi5
    mpicc_cmd=$mpis_dir/openmpi5/bin/mpicc; launcher=("$mpis_dir/openmpi5/bin/mpirun" --oversubscribe --allow-run-as-root); env_style=openmpi ;;
  impi)
    export I_MPI_ROOT=$mpis_dir/impi I_MPI_CC=gcc
    mpicc_cmd=$mpis_dir/impi/bin/mpicc; launcher=("$mpis_dir/impi/bin/mpiexec"); env_style=hydra ;;
  *) echo "BENCH_MPI=$BENCH_MPI: not mpich, openmpi, mpich-abi, mpich5, openmpi5 or impi" >&2; exit 2 ;;
esac

# mpi_run N [VAR=VALUE ...] -- PROGRAM ARGS...: PROGRAM on N ranks with
# the variables set in the ranks only (Hydra's -genv, Open MPI's -x).
mpi_run() {
  local n=$1 args=()
  shift
  while [ "$1" != "--" ]; do
    if [ "$env_style" = hydra ]; then args+=(-genv "${1%%=*}" "${1#*=}"); else args+=(-x "$1"); fi
    shift
  done
  shift
  "${launcher[@]}" -n "$n" "${args[@]}" "$@"
}

# One line saying what the numbers were measured on.
bench_machine() {
  local os
  os=$(. /etc/os-release && echo "$PRETTY_NAME")
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "$(free -g | awk '/^Mem:/ {print $2}') GiB, $os, MPI ${BENCH_MPI:-mpich}," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# Median of the numbers on stdin, one a line.
median() {
  sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# Total bytes of the files in a trace directory (what `mpigram info` calls
# the trace's size).
trace_bytes() {
  find "$1" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'
}

# Builds the release tracer and, into directory $1, the yield preload and
# the tests/mpi programs named after it. Sets $tracer_lib and $yield_lib.
# MPICH busy-polls; with more ranks than cores the yield preload keeps runs
# short (tests/mpi/README.md), and the test kit preloads it too.
bench_build() {
  local out=$1
  shift
  cargo build --release --locked -q -p mpigram-tracer
  tracer_lib=$PWD/target/release/libmpigram.so
  yield_lib=$out/libucx_yield.so
  cc -O2 -shared -fPIC -o "$yield_lib" tests/mpi/yield/ucx_yield.c -ldl
  local p
  for p in "$@"; do
    "$mpicc_cmd" -O2 -Wno-stringop-overflow -o "$out/$p" "tests/mpi/$p.c"
  done
}
