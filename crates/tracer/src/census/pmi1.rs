//! PMI-1, the key-value space MPICH's hydra (and Intel MPI's) serves on
//! the socket `PMI_FD`: one request line, one answer line.

use super::{ANSWER_LIMIT, key};
use std::ffi::c_int;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::time::{Duration, Instant};

/// The PMI-1 wire protocol on the process manager's socket: one request
/// line, one answer line. The socket is MPICH's: the tracer talks on it only
/// before PMPI_Init (which starts MPICH's own conversation with `init`) and
/// right after it returns, when MPICH is not using it.
pub(super) struct Pmi {
    socket: std::mem::ManuallyDrop<std::fs::File>,
    kvs: String,
}

impl Pmi {
    /// Says hello and puts this rank's key.
    pub(super) fn connect(fd: RawFd, rank: u32, value: &str) -> Result<Pmi, String> {
        // SAFETY: the descriptor the process manager gave this process;
        // never closed by us (ManuallyDrop), MPICH goes on using it.
        let socket = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let mut pmi = Pmi {
            socket,
            kvs: String::new(),
        };
        let hello = pmi.ask("cmd=init pmi_version=1 pmi_subversion=1")?;
        if !hello.starts_with("cmd=response_to_init") || field(&hello, "rc") != Some("0") {
            return Err(format!(
                "unexpected answer {:?}",
                hello.escape_default().to_string()
            ));
        }
        let name = pmi.ask("cmd=get_my_kvsname")?;
        pmi.kvs = field(&name, "kvsname")
            .ok_or("no key-value space name")?
            .to_owned();
        let put = pmi.ask(&format!(
            "cmd=put kvsname={} key={} value={value}",
            pmi.kvs,
            key(rank)
        ))?;
        if field(&put, "rc") != Some("0") {
            return Err("the process manager refused a key".into());
        }
        Ok(pmi)
    }

    /// Every rank's value, `None` where its key is not there.
    pub(super) fn values(&mut self, size: u32) -> Result<Vec<Option<String>>, String> {
        (0..size)
            .map(|rank| {
                let got = self.ask(&format!("cmd=get kvsname={} key={}", self.kvs, key(rank)))?;
                Ok((field(&got, "rc") == Some("0"))
                    .then(|| field(&got, "value").unwrap_or("").to_owned()))
            })
            .collect()
    }

    /// Sends one request and reads its one-line answer, within
    /// [`ANSWER_LIMIT`].
    fn ask(&mut self, request: &str) -> Result<String, String> {
        let line = format!("{request}\n");
        self.socket
            .write_all(line.as_bytes())
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + ANSWER_LIMIT;
        let mut answer = Vec::new();
        let mut byte = [0u8];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !readable(&self.socket, left) {
                return Err("no answer".into());
            }
            // One byte at a time: nothing after the answer's end is ours.
            match self.socket.read(&mut byte) {
                Ok(1) if byte[0] == b'\n' => break,
                Ok(1) if answer.len() < 4096 => answer.push(byte[0]),
                Ok(1) => return Err("answer too long".into()),
                Ok(_) => return Err("the process manager closed the socket".into()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        String::from_utf8(answer).map_err(|_| "an answer that is not text".into())
    }
}

/// The value of `name=` in a PMI-1 line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// Waits until `file` can be read, at most `limit`.
fn readable(file: &std::fs::File, limit: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut poll = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = c_int::try_from(limit.as_millis()).unwrap_or(c_int::MAX);
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut poll, 1, ms) > 0 }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_of_answers() {
        let line = "cmd=get_result rc=-1 msg=key_mpigram-1_not_found value=unknown";
        assert_eq!(field(line, "rc"), Some("-1"));
        assert_eq!(field(line, "value"), Some("unknown"));
        assert_eq!(field(line, "kvsname"), None);
        assert_eq!(
            field("cmd=my_kvsname kvsname=kvs_1_0", "kvsname"),
            Some("kvs_1_0")
        );
    }
}
