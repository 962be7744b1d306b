"""Traces for the tests, made as the Rust test suite makes them: a test
program of tests/mpi built with mpicc and run under `mpigram run`.

MPIGRAM is the mpigram command to use (default: target/debug/mpigram of
this checkout, which `cargo build` makes)."""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MPIGRAM = os.environ.get("MPIGRAM", str(REPO / "target" / "debug" / "mpigram"))


def mpigram(*args, check=True):
    """Runs the mpigram command; returns its completed process."""
    return subprocess.run([MPIGRAM, *map(str, args)], capture_output=True, text=True, check=check)


def cli_json(*args):
    return json.loads(mpigram(*args).stdout)


def make_trace(tmp, program, ranks, args=(), timing="lossless"):
    exe = tmp / program
    subprocess.run(
        ["mpicc", "-O2", "-pthread", "-o", exe, REPO / "tests" / "mpi" / f"{program}.c"],
        check=True,
    )
    out = tmp / f"{program}-{timing}"
    mpigram("run", "-o", out, "-n", ranks, "--timing", timing, "--", exe, *args)
    return out


@pytest.fixture(scope="session")
def halo(tmp_path_factory):
    """A 4-rank 2D halo exchange, 5 iterations, every call timed."""
    return make_trace(tmp_path_factory.mktemp("halo"), "halo2d", 4, ["5"])


@pytest.fixture(scope="session")
def aggregated(tmp_path_factory):
    """Blocking point-to-point on 2 ranks, without per-call times."""
    return make_trace(tmp_path_factory.mktemp("p2p"), "p2p_blocking", 2, timing="aggregated")


@pytest.fixture(scope="session")
def lint_trace(tmp_path_factory):
    """One of each lint finding (tests/mpi/lint_findings.c), 2 ranks."""
    return make_trace(tmp_path_factory.mktemp("lint"), "lint_findings", 2, timing="aggregated")
