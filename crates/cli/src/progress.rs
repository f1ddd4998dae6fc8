//! Progress of long operations: a bar (or a spinner when the total is unknown) on stderr
//! when it is a terminal, and nothing at all when it is piped or redirected.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress indicator, cleared when finished.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// Starts showing `message`: a bar towards `total`, or a spinner without one.
    pub(crate) fn start(total: Option<u64>, message: &str) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), target).with_style(
                ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            ),
            None => {
                let bar = ProgressBar::with_draw_target(None, target);
                bar.enable_steady_tick(Duration::from_millis(100));
                bar
            }
        };
        bar.set_message(message.to_owned());
        Progress { bar }
    }

    /// Moves the bar `steps` further.
    pub(crate) fn advance(&self, steps: u64) {
        self.bar.inc(steps);
    }

    /// Removes the indicator from the terminal.
    pub(crate) fn finish(self) {
        self.bar.finish_and_clear();
    }
}
