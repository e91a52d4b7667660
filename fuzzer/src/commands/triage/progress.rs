//! A progress bar on the terminal, so a long triage shows where it is: the stage, how many of
//! its items are done, the time so far and what is being tried now. Off when standard error
//! is not a terminal (logs and tests see only the result lines).

use std::io::{IsTerminal as _, Write as _};
use std::time::Instant;

/// Width of the bar in characters.
const WIDTH: usize = 24;

pub(super) struct Progress {
    live: bool,
    started: Instant,
    stage: &'static str,
    done: usize,
    total: usize,
    item: String,
    note: String,
}

impl Progress {
    /// A bar drawn on standard error when it is a terminal, and nothing otherwise.
    pub fn on_terminal() -> Self {
        Progress {
            live: std::io::stderr().is_terminal(),
            started: Instant::now(),
            stage: "",
            done: 0,
            total: 0,
            item: String::new(),
            note: String::new(),
        }
    }

    /// Now at item `done` of `total` of `stage`.
    pub fn show(&mut self, stage: &'static str, done: usize, total: usize, item: &str) {
        self.stage = stage;
        self.done = done;
        self.total = total;
        item.clone_into(&mut self.item);
        self.note.clear();
        self.draw();
    }

    /// What the current item is doing.
    pub fn note(&mut self, note: &str) {
        note.clone_into(&mut self.note);
        self.draw();
    }

    /// A result line on standard output, under the bar.
    pub fn say(&mut self, line: &str) {
        self.clear();
        println!("{line}");
        self.draw();
    }

    /// A warning on standard error, under the bar.
    pub fn warn(&mut self, line: &str) {
        self.clear();
        eprintln!("{line}");
        self.draw();
    }

    /// The bar goes away.
    pub fn finish(&mut self) {
        self.clear();
        self.live = false;
    }

    fn clear(&self) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }

    fn draw(&self) {
        if !self.live || self.stage.is_empty() {
            return;
        }
        let text = if self.note.is_empty() {
            &self.item
        } else {
            &self.note
        };
        eprint!(
            "\r\x1b[2K{} [{}] {}/{} {:.0} s  {}",
            self.stage,
            bar(self.done, self.total, WIDTH),
            self.done,
            self.total,
            self.started.elapsed().as_secs_f64(),
            tail(text, 60)
        );
        let _ = std::io::stderr().flush();
    }
}

/// `done` of `total` as a bar of `width` characters.
fn bar(done: usize, total: usize, width: usize) -> String {
    let filled = (done.min(total) * width).checked_div(total).unwrap_or(0);
    format!("{}{}", "#".repeat(filled), "-".repeat(width - filled))
}

/// The last `n` characters of `text` (a path's end says most).
fn tail(text: &str, n: usize) -> &str {
    let skip = text.chars().count().saturating_sub(n);
    text.char_indices()
        .nth(skip)
        .map_or("", |(i, _)| &text[i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_in_proportion() {
        assert_eq!(bar(0, 4, 8), "--------");
        assert_eq!(bar(1, 4, 8), "##------");
        assert_eq!(bar(4, 4, 8), "########");
        assert_eq!(bar(9, 4, 8), "########");
        assert_eq!(bar(0, 0, 8), "--------");
    }

    #[test]
    fn long_items_keep_their_end() {
        assert_eq!(tail("findings/mismatch/ReLU", 4), "ReLU");
        assert_eq!(tail("ab", 4), "ab");
        assert_eq!(tail("", 4), "");
        assert_eq!(tail("ééé", 2), "éé");
    }
}
