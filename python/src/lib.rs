//! `mpigram._native`: the Python package's view of a trace, through the
//! library code the `mpigram` command uses, so that Python sees what the
//! command prints: decoded calls (`mpigram decode`), and the JSON of
//! `mpigram stats`, `critical-path`, `profile` and `lint`, produced by the
//! same functions. The Python layer (`mpigram/__init__.py`) turns them
//! into pandas DataFrames.

use mpigram_analysis::decode::{DecodedCall, RankDecoder};
use mpigram_analysis::summary::TraceSummary;
use mpigram_analysis::timeline::{self, Source, Span};
use mpigram_analysis::{critical_path, lint, profile, stats};
use mpigram_trace::Trace as TraceFiles;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::sync::Arc;

/// A JSON value as the Python value `json.loads` would give.
fn to_py<'py>(py: Python<'py>, v: &Json) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Json::String(s) => s.into_pyobject(py)?.into_any(),
        Json::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Json::Object(o) => {
            let dict = PyDict::new(py);
            for (k, v) in o {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An mpigram trace directory, opened.
#[pyclass(unsendable, module = "mpigram._native")]
struct Trace {
    trace: Arc<TraceFiles>,
}

impl Trace {
    /// Each call of `rank`'s times, if the trace has per-call timing.
    fn spans(&self, rank: u32) -> Option<Vec<Span>> {
        let part = self.trace.rank(rank)?;
        let start = self.trace.run_start_ns();
        timeline::rank_times(&self.trace, part, Source::Best, start).ok()
    }

    fn ranks_or(&self, rank: Option<u32>) -> PyResult<Vec<u32>> {
        let all: Vec<u32> = self.trace.ranks.iter().map(|r| r.meta.rank).collect();
        match rank {
            None => Ok(all),
            Some(r) if all.contains(&r) => Ok(vec![r]),
            Some(r) => Err(value_error(format!("rank {r} is not in the trace"))),
        }
    }
}

#[pymethods]
impl Trace {
    #[new]
    fn new(path: PathBuf) -> PyResult<Trace> {
        let trace = TraceFiles::open(&path).map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(Trace {
            trace: Arc::new(trace),
        })
    }

    /// The ranks the trace holds, ascending.
    fn ranks(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = self.trace.ranks.iter().map(|r| r.meta.rank).collect();
        ranks.sort_unstable();
        ranks
    }

    /// What `mpigram info` prints: ranks, calls, timing, completeness.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = TraceSummary::of(&self.trace);
        let d = PyDict::new(py);
        d.set_item("ranks", s.ranks.len())?;
        d.set_item("calls", s.calls())?;
        d.set_item("signatures", s.signatures)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("timing", s.timing.to_string())?;
        d.set_item("mpi_library", s.mpi_library.to_string())?;
        d.set_item("complete", s.is_complete())?;
        Ok(d)
    }

    /// Every call of `rank` (or of every rank, rank by rank), as columns:
    /// `rank`, `seq`, `func`, `ret`, `args` (a dict per call, as `mpigram
    /// decode --format jsonl` prints it), and `start_ns`/`end_ns` (None for
    /// a call without a time) when the trace has per-call timing.
    #[pyo3(signature = (rank=None))]
    fn calls_columns<'py>(
        &self,
        py: Python<'py>,
        rank: Option<u32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (ranks, seqs, funcs, rets, args) = (
            PyList::empty(py),
            PyList::empty(py),
            PyList::empty(py),
            PyList::empty(py),
            PyList::empty(py),
        );
        let (starts, ends) = (PyList::empty(py), PyList::empty(py));
        let mut timed = false;
        for r in self.ranks_or(rank)? {
            let part = self.trace.rank(r).expect("a rank of the trace");
            let spans = self.spans(r);
            timed |= spans.is_some();
            for call in RankDecoder::new(&self.trace, part) {
                let call = call.map_err(value_error)?;
                ranks.append(call.rank)?;
                seqs.append(call.seq)?;
                funcs.append(call.func)?;
                rets.append(call.ret)?;
                args.append(to_py(py, &Json::Object((*call.args).clone()))?)?;
                let span = spans.as_ref().and_then(|s| s.get(call.seq as usize));
                starts.append(span.map(|s| s.start_ns))?;
                ends.append(span.map(|s| s.end_ns))?;
            }
        }
        let d = PyDict::new(py);
        d.set_item("rank", ranks)?;
        d.set_item("seq", seqs)?;
        d.set_item("func", funcs)?;
        d.set_item("ret", rets)?;
        if timed {
            d.set_item("start_ns", starts)?;
            d.set_item("end_ns", ends)?;
        }
        d.set_item("args", args)?;
        Ok(d)
    }

    /// The calls of `rank` one at a time, decoded as they are asked for.
    fn iter_calls(&self, rank: u32) -> PyResult<CallIter> {
        self.ranks_or(Some(rank))?;
        let spans = self.spans(rank);
        let cell = DecoderCell::new(Arc::clone(&self.trace), |trace| {
            let part = trace.rank(rank).expect("checked above");
            RankDecoder::new(trace, part)
        });
        Ok(CallIter { cell, spans })
    }

    /// `mpigram stats --json`.
    fn stats_json(&self) -> PyResult<String> {
        let s = stats::Stats::of(&self.trace).map_err(value_error)?;
        Ok(s.to_json().to_string())
    }

    /// `mpigram critical-path --json`.
    fn critical_path_json(&self) -> PyResult<String> {
        let a = critical_path::analyse(&self.trace, Source::Best, false).map_err(value_error)?;
        let mut out = Vec::new();
        a.write_json(&mut out).map_err(value_error)?;
        String::from_utf8(out).map_err(value_error)
    }

    /// `mpigram profile --json` (with its default options).
    fn profile_json(&self) -> PyResult<String> {
        let p = profile::profile(&self.trace, &profile::Options::default()).map_err(value_error)?;
        let mut out = Vec::new();
        p.write_json(&mut out).map_err(value_error)?;
        String::from_utf8(out).map_err(value_error)
    }

    /// `mpigram lint --json`.
    fn lint_json(&self) -> PyResult<String> {
        let report = lint::lint(&self.trace).map_err(value_error)?;
        Ok(report.to_json().to_string())
    }
}

type Decoder<'t> = RankDecoder<'t>;

self_cell::self_cell!(
    /// A rank's decoder with the trace it reads.
    struct DecoderCell {
        owner: Arc<TraceFiles>,
        #[not_covariant]
        dependent: Decoder,
    }
);

/// The calls of one rank, one dict each.
#[pyclass(unsendable, module = "mpigram._native")]
struct CallIter {
    cell: DecoderCell,
    spans: Option<Vec<Span>>,
}

#[pymethods]
impl CallIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let next: Option<Result<DecodedCall, _>> = self.cell.with_dependent_mut(|_, d| d.next());
        let Some(call) = next else {
            return Ok(None);
        };
        let call = call.map_err(value_error)?;
        let d = PyDict::new(py);
        d.set_item("rank", call.rank)?;
        d.set_item("seq", call.seq)?;
        d.set_item("func", call.func)?;
        d.set_item("ret", call.ret)?;
        if let Some(spans) = &self.spans {
            let span = spans.get(call.seq as usize);
            d.set_item("start_ns", span.map(|s| s.start_ns))?;
            d.set_item("end_ns", span.map(|s| s.end_ns))?;
        }
        d.set_item("args", to_py(py, &Json::Object((*call.args).clone()))?)?;
        Ok(Some(d))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Trace>()?;
    m.add_class::<CallIter>()?;
    Ok(())
}
