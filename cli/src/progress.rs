//! Progress on standard error: a spinner on a terminal; elsewhere (a log file, a pipe, CI) a plain line of the
//! same message every few seconds, so a long run redirected to a file still says what it is doing.

use indicatif::{ProgressBar, ProgressDrawTarget, TermLike};
use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Seconds between two progress lines when standard error is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// A spinner (`show`: else hidden). Not on a terminal, its message goes out as a line every [`LINE_EVERY`].
pub fn spinner(show: bool) -> ProgressBar {
    if !show {
        ProgressBar::hidden()
    } else if io::IsTerminal::is_terminal(&io::stderr()) {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::term_like_with_hz(Box::new(Lines::default()), 1))
    }
}

/// A draw target that writes what a draw puts on the screen as one plain line, at most one per [`LINE_EVERY`]
/// (the first after that long), and ignores cursor movement and clearing.
#[derive(Debug, Default)]
struct Lines {
    /// When the last line went out (`None`: not yet; the clock starts at the first draw), and the text of the
    /// draw in progress.
    state: Mutex<(Option<Instant>, String)>,
}

impl Lines {
    fn put(&self, s: &str) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1.push_str(s);
    }
}

impl TermLike for Lines {
    fn width(&self) -> u16 {
        200
    }
    fn move_cursor_up(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.put(s);
        Ok(())
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.put(s);
        Ok(())
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    /// The end of a draw: its text goes out as a line when one is due.
    fn flush(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let text = std::mem::take(&mut st.1);
        let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\r');
        let now = Instant::now();
        match st.0 {
            None => st.0 = Some(now),
            Some(t) if now.duration_since(t) >= LINE_EVERY && !text.is_empty() => {
                st.0 = Some(now);
                writeln!(io::stderr(), "{text}")?;
            }
            Some(_) => {}
        }
        Ok(())
    }
}
