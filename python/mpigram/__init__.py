"""Read mpigram MPI traces in Python.

>>> import mpigram
>>> t = mpigram.open("trace")             # a trace directory `mpigram run` wrote
>>> calls = t.calls(rank=0)               # pandas DataFrame, a row per call
>>> t.stats()                             # per MPI function, as `mpigram stats --json`
>>> t.matrix()                            # bytes between world ranks
>>> t.critical_path()                     # `mpigram critical-path --json`, as a dict
>>> t.wait_states()                       # every wait state `mpigram profile` found
>>> for call in t.iter_calls(0): ...      # one call at a time, for long traces

Everything is computed by mpigram's own Rust library (the native module
`mpigram._native`), the code behind the `mpigram` command: the DataFrames
hold what the command's JSON holds.
"""

import json
from os import PathLike
from typing import Any, Dict, Iterator, Optional, Union

import pandas as pd

from . import _native

__all__ = ["open", "Trace", "args_frame"]


def open(path: Union[str, PathLike]) -> "Trace":  # noqa: A001 - the natural name
    """Opens the trace directory `path`."""
    return Trace(path)


class Trace:
    """An mpigram trace: its calls and what mpigram's analyses make of them."""

    def __init__(self, path: Union[str, PathLike]):
        self.path = str(path)
        self._native = _native.Trace(self.path)

    def __repr__(self) -> str:
        info = self.info()
        return f"<mpigram.Trace {self.path!r}: {info['ranks']} ranks, {info['calls']} calls, {info['timing']} timing>"

    @property
    def ranks(self):
        """The ranks the trace holds, ascending."""
        return self._native.ranks()

    def info(self) -> Dict[str, Any]:
        """What `mpigram info` prints: ranks, calls, signatures, bytes, timing, MPI, complete."""
        return self._native.info()

    def calls(self, rank: Optional[int] = None) -> pd.DataFrame:
        """Every call of `rank` (default: every rank), a row per call.

        Columns: `rank`, `seq` (the call's index on its rank), `func`, `ret`
        (0 is MPI_SUCCESS), `start_ns` and `end_ns` (nanoseconds from the
        run's start; only with per-call timing, and missing for the last
        calls of a killed rank) and `args`: the call's arguments as a dict,
        keyed by the MPI standard's parameter names, as `mpigram decode
        --format jsonl` prints them. `args_frame(df)` spreads them into
        columns."""
        columns = self._native.calls_columns(rank)
        df = pd.DataFrame(columns)
        for c in ("start_ns", "end_ns"):
            if c in df:
                df[c] = df[c].astype("Int64")
        return df

    def calls_arrow(self, rank: Optional[int] = None):
        """The calls as a pyarrow Table (needs pyarrow): the columns of
        `calls()`, with `args` as JSON text (arguments mix numbers and
        names, `dest` may be 3 or "MPI_PROC_NULL", which Arrow columns do
        not)."""
        import pyarrow as pa

        columns = self._native.calls_columns(rank)
        columns["args"] = [json.dumps(a) for a in columns["args"]]
        return pa.table(columns)

    def iter_calls(self, rank: int) -> Iterator[Dict[str, Any]]:
        """The calls of `rank` one at a time, each a dict with the keys of
        `calls()`'s columns: memory does not grow with the trace."""
        return self._native.iter_calls(rank)

    def stats_json(self) -> Dict[str, Any]:
        """`mpigram stats --json`, as a dict."""
        return json.loads(self._native.stats_json())

    def stats(self) -> pd.DataFrame:
        """Per MPI function: calls, total/mean/max seconds, bytes sent and
        received, calls of unknown size (the `functions` of `mpigram stats
        --json`, in its order: by total time). The whole JSON is in
        `.attrs["stats"]`."""
        s = self.stats_json()
        df = pd.DataFrame.from_dict(s["functions"], orient="index")
        df.index.name = "func"
        df.attrs["stats"] = s
        return df

    def matrix(self, values: str = "bytes") -> pd.DataFrame:
        """Point-to-point traffic between world ranks: `values` ("bytes"
        or "messages") sent from the row's rank to the column's (the
        `matrix` of `mpigram stats --json`), every rank a row and a column."""
        m = self.stats_json()["matrix"]
        ranks = range(m["ranks"])
        df = pd.DataFrame(0, index=ranks, columns=ranks, dtype="int64")
        for p in m["pairs"]:
            df.loc[p["from"], p["to"]] = p[values]
        df.index.name = "from"
        df.columns.name = "to"
        return df

    def critical_path(self) -> Dict[str, Any]:
        """`mpigram critical-path --json`, as a dict (needs per-call timing)."""
        return json.loads(self._native.critical_path_json())

    def profile(self) -> Dict[str, Any]:
        """`mpigram profile --json`, as a dict (needs per-call timing)."""
        return json.loads(self._native.profile_json())

    def wait_states(self) -> pd.DataFrame:
        """Every wait state `mpigram profile` diagnosed (its `wait_states`):
        kind, rank, peer, func, call site, seq, start and severity in
        seconds. The profile's findings, one line each, are in
        `.attrs["findings"]`."""
        p = self.profile()
        df = pd.DataFrame(p["wait_states"])
        if "call_site" in df:
            df["call_site"] = [c["name"] for c in df["call_site"]]
        df.attrs["findings"] = [f["text"] for f in p["findings"]]
        return df

    def lint(self) -> pd.DataFrame:
        """`mpigram lint --json`'s findings, a row each: kind, ranks, func,
        site, count, message."""
        findings = json.loads(self._native.lint_json())["findings"]
        return pd.DataFrame(findings, columns=["kind", "ranks", "func", "site", "count", "message"])


def args_frame(calls: pd.DataFrame) -> pd.DataFrame:
    """`calls` with its `args` spread into a column per parameter name
    (`arg.count`, `arg.dest`, ...; None where a call has no such parameter)."""
    args = pd.json_normalize(list(calls["args"]), max_level=0).add_prefix("arg.")
    args.index = calls.index
    return pd.concat([calls.drop(columns="args"), args], axis=1)
