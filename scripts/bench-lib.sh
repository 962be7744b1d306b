# Shared by the scripts/bench-* scripts (sourced, not run): the machine
# line, medians, trace sizes, and building the tracer, the yield preload and
# a test program into a scratch directory.

# One line saying what the numbers were measured on.
bench_machine() {
  local os
  os=$(. /etc/os-release && echo "$PRETTY_NAME")
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "$(free -g | awk '/^Mem:/ {print $2}') GiB, $os, MPICH $(mpichversion | awk '/Version:/ {print $3}')," \
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
    mpicc -O2 -Wno-stringop-overflow -o "$out/$p" "tests/mpi/$p.c"
  done
}
