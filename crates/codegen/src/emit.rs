//! The generated program's text: a header comment, tables, helpers,
//! one C function per grammar rule the ranks reach (runs with a count
//! above one are `for` loops), and `main`, which selects each rank's start
//! rule by rank conditions.

use crate::buffers::{SegmentSize, UNKNOWN_BUFFER, UNKNOWN_ELEMENT};
use crate::callbacks::{callback_name, callback_stub};
use crate::render::{CallCode, Context, Rendered};
use crate::timing::{Delays, Site};
use mpigram_grammar::{Grammar, RuleId, Symbol};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Gaps shorter than this are not reproduced: a busy-wait costs about as
/// much to start.
pub const MIN_DELAY_S: f64 = 2e-7;

/// Everything the program text is made from.
pub struct Program<'a> {
    pub grammar: &'a Grammar,
    /// Start rule of each world rank.
    pub starts: Vec<RuleId>,
    pub world_size: u32,
    /// The C of each terminal.
    pub calls: &'a FxHashMap<u32, Rendered>,
    pub ctx: &'a Context,
    pub delays: &'a Delays,
    pub segment_bytes: &'a [SegmentSize],
    /// Lines of the header comment.
    pub header: Vec<String>,
}

/// Ranks (or other numbers) as people read them: `0-3, 5, 8`.
pub fn rank_list(ranks: &[u32]) -> String {
    ranges(ranks)
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `rank 3` or `ranks 0-3, 5`.
pub fn ranks_phrase(ranks: &[u32]) -> String {
    match ranks {
        [one] => format!("rank {one}"),
        _ => format!("ranks {}", rank_list(ranks)),
    }
}

/// Ranks as a C condition on `world_rank`.
pub fn rank_condition(ranks: &[u32]) -> String {
    let parts: Vec<String> = ranges(ranks)
        .iter()
        .map(|&(a, b)| match b - a {
            0 => format!("world_rank == {a}"),
            _ => format!("(world_rank >= {a} && world_rank <= {b})"),
        })
        .collect();
    parts.join(" || ")
}

/// Sorted ranks as maximal ranges of consecutive ranks.
fn ranges(ranks: &[u32]) -> Vec<(u32, u32)> {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for r in sorted {
        match out.last_mut() {
            Some((_, b)) if *b + 1 == r => *b = r,
            _ => out.push((r, r)),
        }
    }
    out
}

impl Program<'_> {
    pub fn text(&self) -> String {
        let g = self.grammar;
        // Ranks grouped by start rule; which ranks reach each rule, how often.
        let mut groups: BTreeMap<RuleId, Vec<u32>> = BTreeMap::new();
        for (rank, &start) in self.starts.iter().enumerate() {
            groups.entry(start).or_default().push(rank as u32);
        }
        let mut users: Vec<Vec<u32>> = vec![Vec::new(); g.num_rules()];
        let mut calls_in_trace: Vec<u64> = vec![0; g.num_rules()];
        for (&start, ranks) in &groups {
            for (rule, uses) in g.rule_uses(start).into_iter().enumerate() {
                if uses > 0 {
                    users[rule].extend(ranks);
                    calls_in_trace[rule] = calls_in_trace[rule].saturating_add(
                        uses.saturating_mul(g.rule_len(rule as RuleId))
                            .saturating_mul(ranks.len() as u64),
                    );
                }
            }
        }
        let mut delay_tables = String::new();
        let mut rules = String::new();
        for rule in 0..g.num_rules() {
            if users[rule].is_empty() {
                continue;
            }
            let r = rule as RuleId;
            let _ = writeln!(
                rules,
                "/* rule {r}: {} calls; {}; {} calls in the trace */\nstatic void rule_{r}(void)\n{{",
                g.rule_len(r),
                ranks_phrase(&users[rule]),
                calls_in_trace[rule]
            );
            for (idx, run) in g.rule(r).iter().enumerate() {
                let body = match run.symbol {
                    Symbol::Rule(child) => format!("rule_{child}();"),
                    Symbol::Terminal(t) => {
                        let spin = self.spin((r, idx as u32), &mut delay_tables);
                        let call = self.call_text(t);
                        match (spin, call) {
                            (None, c) => c,
                            (Some(s), c) => format!("{s}\n{c}"),
                        }
                    }
                };
                if run.count == 1 {
                    let _ = writeln!(rules, "{}", indent(&body, 1));
                } else {
                    let what = match run.symbol {
                        Symbol::Rule(child) => format!(
                            "{} x rule {child} ({} calls each)",
                            run.count,
                            g.rule_len(child)
                        ),
                        Symbol::Terminal(_) => format!("{} calls", run.count),
                    };
                    let _ = writeln!(
                        rules,
                        "    for (long i = 0; i < {}L; i++) {{ /* {what} */\n{}\n    }}",
                        run.count,
                        indent(&body, 2)
                    );
                }
            }
            rules.push_str("}\n\n");
        }
        let mut out = String::new();
        out.push_str("/*\n");
        for line in &self.header {
            let _ = writeln!(out, " * {line}");
        }
        out.push_str(" */\n");
        out.push_str(PRELUDE);
        self.tables(&mut out);
        out.push_str(HELPERS);
        out.push_str(crate::peers::HELPERS);
        for (id, ty) in &self.ctx.callbacks {
            if let Some(stub) = callback_stub(ty, &callback_name(*id)) {
                let _ = writeln!(
                    out,
                    "/* stands in for the application's {ty} number {id} */\n{stub}\n"
                );
            }
        }
        for table in &self.ctx.sender_tables {
            let _ = writeln!(out, "{table}");
        }
        let cpu_share = self.cpu_share(&mut delay_tables);
        out.push_str(&delay_tables);
        if !delay_tables.is_empty() {
            out.push('\n');
        }
        out.push_str(&rules);
        self.main(&groups, cpu_share.as_deref(), &mut out);
        out
    }

    fn tables(&self, out: &mut String) {
        let ctx = self.ctx;
        let _ = writeln!(
            out,
            "/* The traced run's size; this rank; the program's arguments for MPI_Init. */\nstatic const int ranks = {};\nstatic int world_rank, world_size;\nstatic int program_argc;\nstatic char **program_argv;\n\n/* User objects by the ids the trace gives them. */",
            self.world_size
        );
        // Only tables some call uses (calls left as comments use none).
        let used = |name: &str| {
            let slot = format!("{name}[");
            self.calls.values().any(|c| match c {
                Rendered::Call(code) => {
                    code.call.contains(&slot)
                        || code.pre.iter().chain(&code.post).any(|l| l.contains(&slot))
                }
                Rendered::Skip(_) => false,
            })
        };
        for (kind, n) in &ctx.handles {
            if let Some((name, ty)) = crate::render::table(*kind) {
                if used(name) {
                    let _ = writeln!(out, "static {ty} {name}[{n}];");
                }
            }
        }
        let _ = writeln!(
            out,
            "/* Requests: one slot per (pool, index) of the trace. */\nstatic MPI_Request reqs[{}];",
            ctx.requests.len().max(1)
        );
        let n = self.segment_bytes.len().max(1);
        let bytes: Vec<String> = self
            .segment_bytes
            .iter()
            .map(|s| s.bytes.to_string())
            .collect();
        let _ = writeln!(
            out,
            "/* Memory segments, each its own allocation: the largest offset plus extent any call used (0: unused). */\nstatic char *segs[{n}], *seg_home[{n}];\nstatic const size_t seg_bytes[{n}] = {{{}}};",
            if bytes.is_empty() {
                "0".to_owned()
            } else {
                bytes.join(", ")
            }
        );
        let guessed: Vec<u32> = (0..self.segment_bytes.len() as u32)
            .filter(|&i| self.segment_bytes[i as usize].guessed)
            .collect();
        if !guessed.is_empty() {
            let _ = writeln!(
                out,
                "/* Sizes guessed, on the large side, for segments {}: a call passed them a buffer of a size the trace does not tell ({UNKNOWN_BUFFER} bytes assumed) or elements of an unknown datatype ({UNKNOWN_ELEMENT} bytes each assumed). */",
                rank_list(&guessed)
            );
        }
        let _ = writeln!(
            out,
            "/* Outputs nobody reads, by parameter position. */\nstatic _Alignas(64) unsigned char scratch[{}][{}];\n",
            ctx.scratch_slots.max(1),
            ctx.scratch_bytes
        );
    }

    fn main(&self, groups: &BTreeMap<RuleId, Vec<u32>>, cpu_share: Option<&str>, out: &mut String) {
        let _ = writeln!(
            out,
            "int main(int argc, char **argv)\n{{\n    program_argc = argc;\n    program_argv = argv;\n    world_rank = launcher_rank();"
        );
        if let Some(share) = cpu_share {
            let _ = writeln!(out, "    cpu_share = {share};");
        }
        let mut first = true;
        for (start, ranks) in groups {
            let cond = rank_condition(ranks);
            let _ = writeln!(
                out,
                "    {}if ({cond}) /* {}: {} calls{} */\n        rule_{start}();",
                if first { "" } else { "else " },
                ranks_phrase(ranks),
                self.grammar.rule_len(*start),
                if ranks.len() > 1 { " each" } else { "" }
            );
            first = false;
        }
        out.push_str("    finish();\n    return 0;\n}\n");
    }

    /// The C expression of this rank's share of a processor, where waits
    /// burn CPU time (`Delays::cpu_shares`; a table by rank, added to
    /// `tables`, where ranks differ; 1, wall time, on the others).
    fn cpu_share(&self, tables: &mut String) -> Option<String> {
        let shares = &self.delays.cpu_shares;
        if shares.iter().flatten().next().is_none() || self.delays.by_site.is_empty() {
            return None;
        }
        let values: Vec<Option<f64>> = shares.iter().map(|s| Some(s.unwrap_or(1.0))).collect();
        Some(per_rank(
            &values,
            "cpu_share_by_rank",
            "share of a processor between calls (CPU time over wall time), by rank",
            tables,
        ))
    }

    /// The busy-wait before call site `site`, if any.
    fn spin(&self, site: Site, tables: &mut String) -> Option<String> {
        let values = self.delays.by_site.get(&site)?;
        let first: Vec<Option<f64>> = values.iter().map(|v| v.map(|d| d.first)).collect();
        let rest: Vec<Option<f64>> = values.iter().map(|v| v.map(|d| d.rest)).collect();
        let largest = values
            .iter()
            .flatten()
            .map(|d| d.first.max(d.rest))
            .fold(0.0, f64::max);
        if largest < MIN_DELAY_S {
            return None;
        }
        let (r, i) = site;
        let what = format!("rule {r} call {i}");
        let rest_expr = seconds(&rest, &format!("delay_{r}_{i}"), &what, tables);
        if first == rest {
            return Some(format!("spin({rest_expr});"));
        }
        let first_expr = seconds(
            &first,
            &format!("first_delay_{r}_{i}"),
            &format!("the first call of {what}"),
            tables,
        );
        let _ = writeln!(
            tables,
            "/* the first call of {what} follows other computation than the later ones (start-up) */\nstatic int first_{r}_{i} = 1;"
        );
        Some(format!(
            "spin(first_{r}_{i} ? (first_{r}_{i} = 0, {first_expr}) : {rest_expr});"
        ))
    }

    fn call_text(&self, t: u32) -> String {
        match self.calls.get(&t) {
            Some(Rendered::Call(code)) => call_statement(code),
            Some(Rendered::Skip(why)) => {
                format!("/* not reproduced: {} */", why.replace("*/", "* /"))
            }
            None => format!("/* terminal {t} has no signature */"),
        }
    }
}

/// Seconds of computation per rank as C: one literal where the ranks
/// agree (within 5%, or 1 µs), else a table `name` by rank.
fn seconds(values: &[Option<f64>], name: &str, what: &str, tables: &mut String) -> String {
    let comment = format!("seconds of computation before {what}, by rank");
    per_rank(values, name, &comment, tables)
}

/// A number per rank as C: one literal where the ranks agree (within 5%,
/// or 1e-6), else a table `name` by rank under the comment `comment`.
fn per_rank(values: &[Option<f64>], name: &str, comment: &str, tables: &mut String) -> String {
    let used: Vec<f64> = values.iter().flatten().copied().collect();
    let max = used.iter().copied().fold(0.0, f64::max);
    let min = used.iter().copied().fold(f64::INFINITY, f64::min);
    if max - min <= 0.05 * max || max - min < 1e-6 {
        let mean = used.iter().sum::<f64>() / used.len().max(1) as f64;
        return format!("{mean:.3e}");
    }
    let row: Vec<String> = values
        .iter()
        .map(|v| format!("{:.3e}", v.unwrap_or(0.0)))
        .collect();
    let _ = writeln!(
        tables,
        "/* {comment} */\nstatic const double {name}[{}] = {{{}}};",
        values.len(),
        row.join(", ")
    );
    format!("{name}[world_rank]")
}

/// A call as a statement, in a block when it needs temporaries.
pub fn call_statement(code: &CallCode) -> String {
    let call = if code.poll {
        format!("do\n    {};\nwhile (!flag);", code.call)
    } else {
        format!("{};", code.call)
    };
    if code.pre.is_empty() && code.post.is_empty() && !code.poll {
        return call;
    }
    let mut s = String::from("{\n");
    if code.poll {
        s.push_str("    int flag = 0;\n");
    }
    for line in &code.pre {
        let _ = writeln!(s, "    {line}");
    }
    let _ = writeln!(s, "{}", indent(&call, 1));
    for line in &code.post {
        let _ = writeln!(s, "    {line}");
    }
    s.push('}');
    s
}

fn indent(text: &str, levels: usize) -> String {
    let pad = "    ".repeat(levels);
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const PRELUDE: &str = r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* MPICH's MPI_STATUSES_IGNORE is a null pointer cast to MPI_Status *, which
 * GCC's -Wstringop-overflow takes for an array of size 0. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

"#;

const HELPERS: &str = r#"
/* The benchmark's own bookkeeping (its rank, statuses to pass in) must not
 * show up in a trace of it, and a tracer intercepts MPI_ and PMPI_ names
 * alike. So the helpers call the MPI library's functions directly: the
 * last loaded library that defines each one, leaving out preloaded
 * tracers (mpigram's libmpigram.so). */
static struct {
    int (*comm_rank)(MPI_Comm, int *);
    int (*comm_size)(MPI_Comm, int *);
    int (*win_get_group)(MPI_Win, MPI_Group *);
    int (*group_rank)(MPI_Group, int *);
    int (*group_free)(MPI_Group *);
    int (*status_set_elements_x)(MPI_Status *, MPI_Datatype, MPI_Count);
    int (*status_set_cancelled)(MPI_Status *, int);
    int (*request_get_status)(MPI_Request, int *, MPI_Status *);
    int (*cart_get)(MPI_Comm, int, int *, int *, int *);
    int (*cart_rank)(MPI_Comm, const int *, int *);
    int (*dims_create)(int, int, int *);
    int (*abort)(MPI_Comm, int);
    int (*finalized)(int *);
    int (*finalize)(void);
} real;

struct lookup {
    const char *name;
    void *found;
};

static int look_in(struct dl_phdr_info *info, size_t size, void *data)
{
    struct lookup *l = data;
    (void)size;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
        return 0;
    /* The tracer by its file name: an MPI may live under a directory
     * called mpigram (scripts/setup-mpis puts them in ~/.cache/mpigram). */
    const char *file = strrchr(info->dlpi_name, '/');
    if (strncmp(file ? file + 1 : info->dlpi_name, "libmpigram", 10) == 0)
        return 0;
    void *lib = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (lib != NULL) {
        void *f = dlsym(lib, l->name);
        if (f != NULL)
            l->found = f;
        dlclose(lib);
    }
    return 0;
}

static void *mpi_function(const char *name)
{
    struct lookup l = {name, NULL};
    dl_iterate_phdr(look_in, &l);
    if (l.found == NULL)
        l.found = dlsym(RTLD_DEFAULT, name);
    if (l.found == NULL) {
        fprintf(stderr, "benchmark: %s not found\n", name);
        exit(3);
    }
    return l.found;
}

static void find_mpi(void)
{
    *(void **)&real.comm_rank = mpi_function("PMPI_Comm_rank");
    *(void **)&real.comm_size = mpi_function("PMPI_Comm_size");
    *(void **)&real.win_get_group = mpi_function("PMPI_Win_get_group");
    *(void **)&real.group_rank = mpi_function("PMPI_Group_rank");
    *(void **)&real.group_free = mpi_function("PMPI_Group_free");
    *(void **)&real.status_set_elements_x = mpi_function("PMPI_Status_set_elements_x");
    *(void **)&real.status_set_cancelled = mpi_function("PMPI_Status_set_cancelled");
    *(void **)&real.request_get_status = mpi_function("PMPI_Request_get_status");
    *(void **)&real.cart_get = mpi_function("PMPI_Cart_get");
    *(void **)&real.cart_rank = mpi_function("PMPI_Cart_rank");
    *(void **)&real.dims_create = mpi_function("PMPI_Dims_create");
    *(void **)&real.abort = mpi_function("PMPI_Abort");
    *(void **)&real.finalized = mpi_function("PMPI_Finalized");
    *(void **)&real.finalize = mpi_function("PMPI_Finalize");
}

/* The caller's rank in a communicator. */
static inline int rank_in(MPI_Comm comm)
{
    int rank = MPI_UNDEFINED;
    real.comm_rank(comm, &rank);
    return rank;
}

/* The size of a communicator. */
static inline int size_in(MPI_Comm comm)
{
    int size = 0;
    real.comm_size(comm, &size);
    return size;
}

/* The caller's rank in a window's group. */
static inline int rank_in_win(MPI_Win win)
{
    MPI_Group group;
    int rank = MPI_UNDEFINED;
    real.win_get_group(win, &group);
    real.group_rank(group, &rank);
    real.group_free(&group);
    return rank;
}

/* A status as the trace recorded it, for calls that read one. */
static inline MPI_Status *make_status(int slot, int source, int tag, MPI_Count bytes,
                                      int cancelled, int error)
{
    MPI_Status *status = (MPI_Status *)scratch[slot];
    real.status_set_elements_x(status, MPI_BYTE, bytes);
    real.status_set_cancelled(status, cancelled);
    status->MPI_SOURCE = source;
    status->MPI_TAG = tag;
    status->MPI_ERROR = error;
    return status;
}

/* Waits until requests[indices[0..n]] are complete, without completing
 * them: a Waitany, Waitsome, Testany or Testsome then finds the requests
 * the trace says it found. */
static inline void await_requests(MPI_Request *requests, const int *indices, int n)
{
    for (int i = 0; i < n; i++) {
        int done = 0;
        while (!done)
            real.request_get_status(requests[indices[i]], &done, MPI_STATUS_IGNORE);
    }
}

/* This rank's share of a processor between its calls in the traced run,
 * where its host had more ranks than processors (else 1; set by main). */
static double cpu_share = 1;

/* Computation: busy-waits for `seconds` of recorded wall time (a spin
 * keeps the core busy as the application did; sleeping would not).
 * Where the traced rank shared its processors with other ranks
 * (cpu_share < 1), part of that time it waited for a processor: the spin
 * burns the computation's CPU time only, the seconds times the share, on
 * the thread's CPU clock, and waits for a processor as the application
 * did. Else it spins on the monotonic clock; while more than 1 ms
 * remains, it lets other processes have the core when they want it
 * (sched_yield returns at once otherwise), and takes no more of a shared
 * core than the application did. The last millisecond is a plain spin,
 * exact. */
static inline void spin(double seconds)
{
    struct timespec t;
    if (cpu_share < 1) {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        double used = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec, until = used + seconds * cpu_share;
        while (used < until) {
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
            used = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
        }
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    double now = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec, until = now + seconds;
    while (now < until) {
        if (until - now > 1e-3)
            sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        now = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
}

/* The rank the launcher gave this process, before MPI_Init (calls made
 * before it are per rank too); checked against MPI by setup(). */
static int launcher_rank(void)
{
    const char *vars[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK",
                          "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *value = getenv(vars[i]);
        if (value != NULL)
            return atoi(value);
    }
    return 0;
}

/* Right after MPI_Init: checks the rank and size, allocates every memory
 * segment, empties the request table. */
static void setup(void)
{
    int rank;
    find_mpi();
    real.comm_rank(MPI_COMM_WORLD, &rank);
    real.comm_size(MPI_COMM_WORLD, &world_size);
    if (world_size != ranks || rank != world_rank) {
        if (rank == 0)
            fprintf(stderr, "this benchmark runs on %d ranks, not %d (or the launcher's rank %d is not MPI's %d)\n",
                    ranks, world_size, world_rank, rank);
        real.abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < sizeof seg_bytes / sizeof seg_bytes[0]; i++) {
        if (seg_bytes[i] == 0)
            continue;
        segs[i] = seg_home[i] = calloc(seg_bytes[i], 1);
        if (segs[i] == NULL) {
            fprintf(stderr, "rank %d: cannot allocate segment %zu (%zu bytes)\n", world_rank, i,
                    seg_bytes[i]);
            real.abort(MPI_COMM_WORLD, 3);
        }
    }
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        reqs[i] = MPI_REQUEST_NULL;
}

/* Finalizes MPI if the trace did not (a rank that ended early). */
static void finish(void)
{
    int finalized = 0;
    if (real.finalized == NULL)
        return; /* MPI was never initialised */
    real.finalized(&finalized);
    if (!finalized)
        real.finalize();
}

"#;
