//! The terminal while the view owns it: raw mode (keys come one by one, and Ctrl-C as a key,
//! not as SIGINT: the view stops the run as the signal would) on the alternate screen, so
//! that what the terminal showed before comes back untouched when it is left. Whatever ends
//! the view gives the terminal back: [`Screen`]'s drop, a panic (the hook [`Screen::enter`]
//! installs restores first, so the panic's message is readable) and a signal handler that
//! exits the process ([`restore`], which it calls before `exit`). Restoring gives the real
//! stderr back too ([`crate::stderr`]).

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Whether the terminal is in the view's modes now.
static ENTERED: AtomicBool = AtomicBool::new(false);

/// The terminal in the view's modes; left on drop.
pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    /// Raw mode, the alternate screen and a hidden cursor, drawn on stdout.
    pub fn enter() -> io::Result<Screen> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        terminal::enable_raw_mode()?;
        ENTERED.store(true, Ordering::SeqCst);
        let mut stdout = io::stdout();
        if let Err(e) = execute!(stdout, terminal::EnterAlternateScreen, cursor::Hide) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Gives the terminal back (the real stderr on descriptor 2, cooked mode, the main screen,
/// the cursor) if the view has it; nothing otherwise, so any exit path may call it.
pub fn restore() {
    crate::stderr::give_back();
    if ENTERED.swap(false, Ordering::SeqCst) {
        let _ = execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}
