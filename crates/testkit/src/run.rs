//! Running a program under hydra's `mpiexec` with extra environment, extra
//! preloaded libraries, the yield preload, captured output and a hard timeout.
//!
//! Preloads and environment variables go to the ranks only, through
//! `-genv`: mpiexec and its proxies never load the libraries. A timed-out run
//! is killed as a whole tree: hydra starts each rank in its own session and
//! process group, so killing mpiexec (or its process group) alone would leave
//! the ranks spinning.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::mpis::{Launch, Mpi};

/// Default limit for one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long to wait for the output pipes to close once mpiexec is gone.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// A prepared `mpiexec -n N exe args...`; see [`mpiexec`].
#[derive(Debug, Clone)]
pub struct Mpiexec {
    /// The executables: one, or more for an MPMD job.
    contexts: Vec<Context>,
    env: Vec<(OsString, OsString)>,
    preloads: Vec<PathBuf>,
    with_yield: bool,
    timeout: Duration,
    current_dir: Option<PathBuf>,
    mpi: Mpi,
}

/// One executable of the job, with what only its ranks get.
#[derive(Debug, Clone)]
struct Context {
    ranks: u32,
    exe: PathBuf,
    args: Vec<OsString>,
    /// `-env`: for this executable's ranks only.
    env: Vec<(OsString, OsString)>,
    preloads: Vec<PathBuf>,
}

impl Context {
    fn new<I, S>(ranks: u32, exe: &Path, args: I) -> Context
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Context {
            ranks,
            exe: exe.to_path_buf(),
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            env: Vec::new(),
            preloads: Vec::new(),
        }
    }
}

/// Starts describing a run of `exe` with `ranks` ranks. Defaults: the yield
/// preload on, a timeout of [`DEFAULT_TIMEOUT`], the caller's environment.
pub fn mpiexec<I, S>(ranks: u32, exe: impl AsRef<Path>, args: I) -> Mpiexec
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Mpiexec {
        contexts: vec![Context::new(ranks, exe.as_ref(), args)],
        env: Vec::new(),
        preloads: Vec::new(),
        with_yield: true,
        timeout: DEFAULT_TIMEOUT,
        current_dir: None,
        mpi: Mpi::selected().clone(),
    }
}

/// What a finished run left behind.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The command, for messages.
    pub command: String,
    /// mpiexec's exit status: hydra passes on the first failing rank's exit
    /// code, or the number of the signal that killed it.
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Mpiexec {
    /// Sets an environment variable in every rank. `LD_PRELOAD` is split on
    /// `:` and added to the preloads instead.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        if key.as_ref() == "LD_PRELOAD" {
            for lib in std::env::split_paths(value.as_ref()) {
                self.preloads.push(lib);
            }
        } else {
            self.env
                .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        }
        self
    }

    /// Adds another executable to the job (MPMD: `mpiexec -n N exe args :
    /// -n ranks exe2 args2`); [`Mpiexec::env_here`] then applies to it.
    pub fn then<I, S>(&mut self, ranks: u32, exe: impl AsRef<Path>, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.contexts.push(Context::new(ranks, exe.as_ref(), args));
        self
    }

    /// Sets an environment variable for the last executable's ranks only
    /// (hydra's `-env`). `LD_PRELOAD` adds to its preloads, in front of
    /// the job's.
    pub fn env_here(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        let context = self.contexts.last_mut().expect("a job has an executable");
        if key.as_ref() == "LD_PRELOAD" {
            context
                .preloads
                .extend(std::env::split_paths(value.as_ref()));
        } else {
            context
                .env
                .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        }
        self
    }

    /// Ranks of the whole job.
    fn ranks(&self) -> u32 {
        self.contexts.iter().map(|c| c.ranks).sum()
    }

    /// Preloads a shared library into every rank (and nothing else), in
    /// front of the yield preload.
    pub fn preload(&mut self, lib: impl AsRef<Path>) -> &mut Self {
        self.preloads.push(lib.as_ref().to_path_buf());
        self
    }

    /// Leaves out the yield preload, which otherwise makes an idle rank give
    /// its core away whenever UCX's progress poll found nothing to do (it
    /// keeps runs with more ranks than cores fast, see
    /// `tests/mpi/yield/ucx_yield.c`).
    pub fn without_yield(&mut self) -> &mut Self {
        self.with_yield = false;
        self
    }

    /// Limit for the whole run; on expiry every process of it is killed.
    pub fn timeout(&mut self, limit: Duration) -> &mut Self {
        self.timeout = limit;
        self
    }

    /// Runs under `mpi`'s launcher (default: [`Mpi::selected`]).
    pub fn mpi(&mut self, mpi: &Mpi) -> &mut Self {
        self.mpi = mpi.clone();
        self
    }

    /// Working directory of mpiexec and the ranks.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.current_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The preloads, in `LD_PRELOAD` order (building the yield preload if needed).
    fn preload_list(&self) -> Result<Vec<PathBuf>> {
        let mut libs = self.preloads.clone();
        if self.with_yield {
            libs.push(crate::yield_preload()?);
        }
        Ok(libs)
    }

    fn command(&self) -> Result<Command> {
        let mpi = &self.mpi;
        let mut cmd = Command::new(&mpi.launcher[0]);
        cmd.args(&mpi.launcher[1..]).envs(mpi.env.iter().cloned());
        // One variable for every rank, or (`job: false`) for the ranks of
        // the context it follows: Hydra's -genv / -env, Open MPI's -x.
        let set = |cmd: &mut Command, key: &OsStr, value: &OsStr, job: bool| match mpi.launch {
            Launch::Hydra => {
                cmd.arg(if job { "-genv" } else { "-env" })
                    .arg(key)
                    .arg(value);
            }
            Launch::OpenMpi => {
                let mut pair = key.to_owned();
                pair.push("=");
                pair.push(value);
                cmd.arg("-x").arg(pair);
            }
        };
        let libs = self.preload_list()?;
        let joined = |libs: &[PathBuf]| {
            std::env::join_paths(libs)
                .map_err(|e| Error::io("joining LD_PRELOAD", std::io::Error::other(e)))
        };
        if mpi.launch == Launch::Hydra {
            for (key, value) in &self.env {
                set(&mut cmd, key, value, true);
            }
            if !libs.is_empty() {
                set(&mut cmd, OsStr::new("LD_PRELOAD"), &joined(&libs)?, true);
            }
        }
        for (i, context) in self.contexts.iter().enumerate() {
            if i > 0 {
                cmd.arg(":");
            }
            cmd.arg("-n").arg(context.ranks.to_string());
            let all: Vec<PathBuf> = context.preloads.iter().chain(&libs).cloned().collect();
            match mpi.launch {
                Launch::Hydra => {
                    for (key, value) in &context.env {
                        set(&mut cmd, key, value, false);
                    }
                    if !context.preloads.is_empty() {
                        // `-env` replaces the job's value for these ranks.
                        set(&mut cmd, OsStr::new("LD_PRELOAD"), &joined(&all)?, false);
                    }
                    cmd.arg(&context.exe);
                }
                Launch::OpenMpi => {
                    // Open MPI 4's -x belongs to the context it follows,
                    // Open MPI 5's to the whole job: the job's variables
                    // with -x in every context, the context's own through
                    // env(1), which then runs the executable.
                    for (key, value) in &self.env {
                        set(&mut cmd, key, value, false);
                    }
                    if !libs.is_empty() {
                        set(&mut cmd, OsStr::new("LD_PRELOAD"), &joined(&libs)?, false);
                    }
                    if !context.env.is_empty() || !context.preloads.is_empty() {
                        cmd.arg("env");
                        for (key, value) in &context.env {
                            let mut pair = key.to_owned();
                            pair.push("=");
                            pair.push(value);
                            cmd.arg(pair);
                        }
                        if !context.preloads.is_empty() {
                            let mut pair = OsString::from("LD_PRELOAD=");
                            pair.push(joined(&all)?);
                            cmd.arg(pair);
                        }
                    }
                    cmd.arg(&context.exe);
                }
            }
            cmd.args(&context.args);
        }
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        // Hydra's mpiexec now and then writes to a forwarding pipe that a
        // rank which exited within milliseconds has closed, and dies of
        // SIGPIPE with no output. With SIGPIPE ignored (for mpiexec and, by
        // inheritance, the ranks) the write fails with EPIPE instead.
        // SAFETY: only async-signal-safe work between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGPIPE, libc::SIG_IGN);
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// Runs it to the end or to the timeout. A failing program is not an
    /// error here (look at [`RunOutput::status`]); a timeout is
    /// [`Error::Timeout`]. Runs of one process share the machine's cores:
    /// each run waits until `min(ranks, cores)` cores are free, and its
    /// timeout counts from then.
    pub fn run(&self) -> Result<RunOutput> {
        let mut cmd = self.command()?;
        let command = shell_words(&cmd);
        let _cores = CoreBudget::global().acquire(self.ranks());

        // mpiexec stays in our process group, so a Ctrl-C of the tests reaches
        // it and hydra tears the ranks down; timeouts are handled by kill_tree.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("starting `{command}`"), e))?;
        let pid = child.id();
        let stdout = Capture::start(child.stdout.take());
        let stderr = Capture::start(child.stderr.take());
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(child.wait());
        });

        let waited = match done_rx.recv_timeout(self.timeout) {
            Ok(waited) => Some(waited),
            Err(_) => {
                kill_tree(pid);
                // The waiter reaps mpiexec now that it is dead.
                let _ = done_rx.recv_timeout(PIPE_GRACE);
                None
            }
        };
        let elapsed = start.elapsed();
        let (stdout, stderr) = (stdout.finish(), stderr.finish());
        match waited {
            None => Err(Error::Timeout {
                command,
                after: self.timeout,
                stdout,
                stderr,
            }),
            Some(Err(e)) => Err(Error::io(format!("waiting for `{command}`"), e)),
            Some(Ok(status)) => Ok(RunOutput {
                command,
                status,
                stdout,
                stderr,
                elapsed,
            }),
        }
    }
}

impl RunOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Panics with the command, status and both outputs unless the run succeeded.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(self.success(), "{self}");
        self
    }
}

impl std::fmt::Display for RunOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}`: {} after {:.2} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.status,
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

fn shell_words(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|w| w.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads one pipe to its end on a thread; what arrived so far stays
/// available even if the pipe never closes.
struct Capture {
    data: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
    _thread: Option<JoinHandle<()>>,
}

impl Capture {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Capture {
        let data = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let thread = pipe.map(|mut pipe| {
            let data = Arc::clone(&data);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    lock(&data).extend_from_slice(&chunk[..n]);
                }
                let _ = tx.send(());
            })
        });
        Capture {
            data,
            done,
            _thread: thread,
        }
    }

    fn finish(self) -> String {
        let _ = self.done.recv_timeout(PIPE_GRACE);
        String::from_utf8_lossy(&lock(&self.data)).into_owned()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills `root` and every descendant, and every process group among them
/// except our own. Repeated a few times in case something forked meanwhile.
fn kill_tree(root: u32) {
    // SAFETY: getpgrp(2) cannot fail and touches no memory of ours.
    let ours = unsafe { libc::getpgrp() };
    for _ in 0..3 {
        let tree = process_tree(root);
        if tree.is_empty() {
            return;
        }
        for &(pid, pgrp) in &tree {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                if pgrp > 1 && pgrp != ours {
                    libc::kill(-pgrp, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (pid, process group) of `root` and all its live descendants, from /proc.
fn process_tree(root: u32) -> Vec<(i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, ppid, pgrp) of every process; zombies are dead already.
    let all: Vec<(i32, i32, i32)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After "pid (comm) ": state ppid pgrp ...; comm may hold spaces.
            let rest = stat.get(stat.rfind(')')? + 2..)?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            let pgrp = fields.next()?.parse().ok()?;
            (state != "Z").then_some((pid, ppid, pgrp))
        })
        .collect();
    let Ok(root) = i32::try_from(root) else {
        return Vec::new();
    };
    let mut tree: Vec<(i32, i32)> = all
        .iter()
        .filter(|p| p.0 == root)
        .map(|p| (p.0, p.2))
        .collect();
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i].0;
        tree.extend(all.iter().filter(|p| p.1 == parent).map(|p| (p.0, p.2)));
        i += 1;
    }
    tree
}

/// Counting semaphore over the machine's cores: MPICH's ranks busy-poll, so
/// runs of one test process take turns instead of crowding the cores.
struct CoreBudget {
    cores: u32,
    free: Mutex<u32>,
    freed: Condvar,
}

struct CoreLease<'a> {
    budget: &'a CoreBudget,
    held: u32,
}

impl CoreBudget {
    fn global() -> &'static CoreBudget {
        static BUDGET: OnceLock<CoreBudget> = OnceLock::new();
        BUDGET.get_or_init(|| {
            let cores = std::thread::available_parallelism()
                .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
                .unwrap_or(1);
            CoreBudget {
                cores,
                free: Mutex::new(cores),
                freed: Condvar::new(),
            }
        })
    }

    fn acquire(&self, ranks: u32) -> CoreLease<'_> {
        let want = ranks.clamp(1, self.cores);
        let mut free = lock(&self.free);
        while *free < want {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *free -= want;
        CoreLease {
            budget: self,
            held: want,
        }
    }
}

impl Drop for CoreLease<'_> {
    fn drop(&mut self) {
        *lock(&self.budget.free) += self.held;
        self.budget.freed.notify_all();
    }
}
