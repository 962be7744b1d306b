//! The tracer's messages on stderr: one line each, written with one
//! write(2), so that lines of ranks sharing the launcher's stderr never
//! interleave mid-line.

/// Writes `mpigram: {text}` and a newline in one write.
pub fn say(text: &str) {
    let line = format!("mpigram: {text}\n");
    // SAFETY: writes from a live buffer of that length. A short or failed
    // write loses (part of) the message, nothing else.
    unsafe { libc::write(libc::STDERR_FILENO, line.as_ptr().cast(), line.len()) };
}

/// Says what is about the job's settings (the same in every rank: a bad
/// `MPIGRAM_TIMING`, say) once for the job: on the launcher's rank 0.
pub fn say_for_job(text: &str) {
    if crate::census::launcher_rank() == 0 {
        say(text);
    }
}
