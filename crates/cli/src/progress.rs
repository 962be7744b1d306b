//! Progress of long operations: a bar on a terminal, nothing when stderr
//! is piped or redirected (scripts and logs stay clean).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar counting `total` calls, or a hidden one off a terminal.
pub fn calls(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {human_pos}/{human_len} calls, {eta} left")
    {
        bar.set_style(style);
    }
    bar
}
