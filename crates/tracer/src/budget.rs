//! The tracer's memory budget, `MPIGRAM_MEMORY`: the most memory a
//! rank's signature table, its timing and its grammar may take, with what
//! writing them out takes. When a new signature takes them past half of it
//! (the other half is for encoding and compressing them), the rank writes
//! them out as a completed part of its trace (`rank<N>.part<K>.mgr`, see
//! `mpigram_trace`'s `spilled` module) and goes on with an empty table, so
//! a program whose calls never repeat runs in bounded memory. The check is
//! made only when a signature is new: a repeated call pays nothing for it.

/// Budget when `MPIGRAM_MEMORY` is not set: 64 MiB.
pub const DEFAULT_BUDGET: usize = 64 << 20;

/// `MPIGRAM_MEMORY`: bytes, with an optional binary unit (`64M`, `1G`,
/// `512k`, `2GiB`, `65536`). A value that is not one gets one message (for
/// the job) and the default.
pub fn budget_from_env() -> usize {
    let Some(value) = std::env::var_os("MPIGRAM_MEMORY").filter(|v| !v.is_empty()) else {
        return DEFAULT_BUDGET;
    };
    match value.to_str().and_then(parse_bytes) {
        Some(bytes) => bytes,
        None => {
            crate::message::say_for_job(&format!(
                "MPIGRAM_MEMORY={} is not an amount of memory (such as 64M, 1G or a number of bytes); using 64M",
                value.to_string_lossy()
            ));
            DEFAULT_BUDGET
        }
    }
}

/// A positive number of bytes: digits, then optionally `k`, `M`, `G` or
/// `T` (powers of 1024, any case, optionally followed by `B` or `iB`).
pub fn parse_bytes(text: &str) -> Option<usize> {
    let text = text.trim();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: usize = number.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    let bytes = number.checked_mul(1usize.checked_shl(shift)?)?;
    (bytes > 0).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn amounts_of_memory() {
        assert_eq!(parse_bytes("65536"), Some(65536));
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes("64m"), Some(64 << 20));
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        assert_eq!(parse_bytes("2GiB"), Some(2 << 30));
        assert_eq!(parse_bytes("512kB"), Some(512 << 10));
        assert_eq!(parse_bytes(" 3 M "), Some(3 << 20));
        for bad in [
            "",
            "0",
            "M",
            "64X",
            "-1",
            "1.5G",
            "64MM",
            "99999999999999999999T",
        ] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }
}
