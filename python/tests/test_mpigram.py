"""The Python package against the `mpigram` command on the same traces:
what Python returns is what the command prints."""

import json

import pandas as pd
import pytest

import mpigram
from conftest import cli_json, mpigram as run_mpigram


def decoded(trace, *args):
    out = run_mpigram("decode", trace, "--format", "jsonl", *args).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_calls_are_the_decoded_calls_with_their_times(halo):
    t = mpigram.open(halo)
    assert t.ranks == [0, 1, 2, 3]
    df = t.calls()
    expected = decoded(halo)
    assert len(df) == len(expected) == t.info()["calls"]
    assert list(df.columns) == ["rank", "seq", "func", "ret", "start_ns", "end_ns", "args"]
    for row, call in zip(df.itertuples(index=False), expected):
        assert (row.rank, row.seq, row.func) == (call["rank"], call["seq"], call["func"])
        assert row.args == call["args"]
        assert (row.start_ns, row.end_ns) == (call["start_ns"], call["end_ns"])
        assert row.ret == call.get("ret", 0)
    # 2x2 grid, 5 iterations: four Isends a rank an iteration.
    isends = df[df.func == "MPI_Isend"]
    assert len(isends) == 4 * 4 * 5
    assert (df.end_ns >= df.start_ns).all()


def test_one_rank_and_its_iterator_give_the_same_calls(halo):
    t = mpigram.open(halo)
    df = t.calls(rank=2)
    expected = decoded(halo, "--rank", "2")
    assert set(df["rank"]) == {2}
    assert list(df.seq) == [c["seq"] for c in expected]
    streamed = list(t.iter_calls(2))
    assert len(streamed) == len(df)
    for call, row in zip(streamed, df.to_dict("records")):
        assert call == row
    with pytest.raises(ValueError, match="rank 9 is not in the trace"):
        t.calls(rank=9)


def test_args_spread_into_columns(halo):
    df = mpigram.args_frame(mpigram.open(halo).calls(rank=0))
    sends = df[df.func == "MPI_Isend"]
    assert set(sends["arg.comm"]) == {"comm0"}
    assert set(sends["arg.tag"]) == {0, 1, 2, 3}
    assert "args" not in df.columns


def test_stats_and_matrix_are_the_commands_json(halo):
    t = mpigram.open(halo)
    cli = cli_json("stats", halo, "--json")
    assert t.stats_json() == cli
    stats = t.stats()
    assert list(stats.index) == list(cli["functions"])
    assert stats.loc["MPI_Isend", "calls"] == 80
    assert stats.loc["MPI_Isend", "bytes_sent"] == cli["functions"]["MPI_Isend"]["bytes_sent"]
    matrix = t.matrix()
    assert matrix.shape == (4, 4)
    pairs = {(p["from"], p["to"]): p["bytes"] for p in cli["matrix"]["pairs"]}
    for (a, b), n in pairs.items():
        assert matrix.loc[a, b] == n
    assert matrix.values.sum() == sum(pairs.values())
    # Neighbours on the 2x2 grid exchange; diagonal ranks do not.
    assert matrix.loc[0, 3] == 0 and matrix.loc[0, 1] > 0
    assert t.matrix("messages").loc[0, 1] == 5


def test_critical_path_profile_and_wait_states_are_the_commands_json(halo):
    t = mpigram.open(halo)
    assert t.critical_path() == cli_json("critical-path", halo, "--json")
    profile = cli_json("profile", halo, "--json")
    assert t.profile() == profile
    waits = t.wait_states()
    assert len(waits) == len(profile["wait_states"])
    if len(waits):
        assert {"kind", "rank", "peer", "func", "call_site", "severity_s"} <= set(waits.columns)
        assert list(waits.call_site) == [w["call_site"]["name"] for w in profile["wait_states"]]
    assert waits.attrs["findings"] == [f["text"] for f in profile["findings"]]


def test_arrow_table_has_the_calls(halo):
    pa = pytest.importorskip("pyarrow")
    t = mpigram.open(halo)
    table = t.calls_arrow(rank=1)
    df = t.calls(rank=1)
    assert isinstance(table, pa.Table)
    assert table.num_rows == len(df)
    assert table.column_names == list(df.columns)
    assert table.column("func").to_pylist() == list(df.func)
    assert [json.loads(a) for a in table.column("args").to_pylist()] == list(df.args)


def test_a_trace_without_per_call_times_has_calls_but_no_times(aggregated):
    t = mpigram.open(aggregated)
    assert "aggregated" in t.info()["timing"]
    df = t.calls()
    assert "start_ns" not in df.columns
    assert len(df) == len(decoded(aggregated))
    with pytest.raises(ValueError, match="aggregated timing only"):
        t.critical_path()
    assert t.stats_json() == cli_json("stats", aggregated, "--json")


def test_lint_findings_are_the_commands(lint_trace):
    out = run_mpigram("lint", lint_trace, "--json", check=False)
    assert out.returncode == 1
    cli = json.loads(out.stdout)["findings"]
    df = mpigram.open(lint_trace).lint()
    assert df.to_dict("records") == cli
    assert "send-cycle" in set(df.kind)


def test_a_missing_trace_is_an_error(tmp_path):
    with pytest.raises(OSError):
        mpigram.open(tmp_path / "nothing")
