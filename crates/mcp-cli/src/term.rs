//! The terminal of `mcp chat`: the person's lines, read by one thread, so that a question
//! abandoned (Ctrl-C during a consent prompt or a form) takes no line with it and the next line
//! typed reaches the chat; consent questions asked there; server and model text cleaned of
//! escape sequences before it is printed.

use std::io::{BufRead, Write};
use std::sync::OnceLock;

use futures_util::future::BoxFuture;
use mcp_host::consent::{Answer, Asker, Question};
use tokio::sync::{mpsc, watch, Mutex};

/// The lines typed, as one reader thread gets them (closed at the end of input).
fn lines() -> &'static Mutex<mpsc::UnboundedReceiver<String>> {
    static LINES: OnceLock<Mutex<mpsc::UnboundedReceiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line.trim().to_owned()).is_err() {
                    break;
                }
            }
        });
        Mutex::new(rx)
    })
}

/// The next line typed; `None` at the end of input. A caller that stops waiting takes none.
pub async fn next_line() -> Option<String> {
    lines().lock().await.recv().await
}

/// The person's lines for code that reads a `BufRead` on a blocking thread (the forms of
/// elicitation): each line comes from [`next_line`], and once the [`Abandon`] it was made with
/// is dropped, reading ends (end of input) instead of waiting for a line it would swallow.
pub struct Typed {
    handle: tokio::runtime::Handle,
    abandoned: watch::Receiver<()>,
    pending: Vec<u8>,
    at: usize,
}

/// Ends the reading of a [`Typed`] when dropped.
pub struct Abandon(#[allow(dead_code)] watch::Sender<()>);

impl Typed {
    /// A reader for the current runtime, and what abandons it.
    pub fn new() -> (Typed, Abandon) {
        let (tx, rx) = watch::channel(());
        let typed = Typed { handle: tokio::runtime::Handle::current(), abandoned: rx, pending: Vec::new(), at: 0 };
        (typed, Abandon(tx))
    }
}

impl std::io::Read for Typed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Typed {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at >= self.pending.len() {
            let mut abandoned = self.abandoned.clone();
            let line = self.handle.block_on(async move {
                tokio::select! {
                    line = next_line() => line,
                    _ = abandoned.changed() => None,
                }
            });
            self.pending = line.map(|l| format!("{l}\n").into_bytes()).unwrap_or_default();
            self.at = 0;
        }
        Ok(&self.pending[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.pending.len());
    }
}

/// Asks at the terminal, one question at a time.
pub struct Terminal {
    turn: Mutex<()>,
}

impl Terminal {
    /// The terminal.
    pub fn new() -> Terminal {
        Terminal { turn: Mutex::new(()) }
    }
}

impl Asker for Terminal {
    fn can_ask(&self) -> bool {
        true
    }

    fn ask<'a>(&'a self, question: &'a Question) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            ask(question).await
        })
    }
}

/// Prints `text` and a prompt on stderr.
fn say(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{text}");
    let _ = err.flush();
}

async fn ask(q: &Question) -> Answer {
    let arguments = serde_json::to_string_pretty(&q.arguments).unwrap_or_default();
    let arguments = clean(&arguments).replace('\n', "\n  ");
    let (server, tool, why) = (clean(&q.server), clean(&q.tool), clean(&q.why));
    if let Some(skill) = tool.strip_prefix("skill ") {
        say(&format!("\n\x1b[1m{server} offers the skill {skill} to the model\x1b[0m ({why})\n  {arguments}\n"));
        loop {
            say("  [y] this session  [a] always (until it changes)  [n] no\n  > ");
            let Some(line) = next_line().await else { return Answer::Deny(None) };
            match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "s" => return Answer::Session,
                "a" | "t" => return Answer::AlwaysTool,
                "n" | "no" | "" => return Answer::Deny(None),
                _ => {}
            }
        }
    }
    say(&format!("\n\x1b[1m{server} wants to run {tool}\x1b[0m ({why})\n  arguments: {arguments}\n"));
    loop {
        say("  [y] once  [s] this session  [t] always this tool  [a] always this server  [n] no  [r] no, with a reason  [d] never this tool\n  > ");
        let Some(line) = next_line().await else { return Answer::Deny(None) };
        match line.as_str() {
            "y" | "Y" | "yes" => return Answer::Once,
            "s" | "S" => return Answer::Session,
            "t" | "T" => return Answer::AlwaysTool,
            "a" | "A" => return Answer::AlwaysServer,
            "n" | "N" | "no" | "" => return Answer::Deny(None),
            "d" | "D" => return Answer::NeverTool,
            "r" | "R" => {
                say("  reason (the model reads it): ");
                return Answer::Deny(next_line().await.filter(|r| !r.is_empty()));
            }
            _ => {}
        }
    }
}

/// Text from a server or a model made safe to print at a terminal: escape sequences (CSI, OSC
/// and the rest), other control characters but newline and tab, and the bidirectional
/// overrides are removed, so that nothing a server says can move the cursor, clear the screen,
/// retitle the window or draw a fake prompt.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => skip_escape(&mut chars),
            '\u{9b}' => skip_until_final(&mut chars),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {}
            c => out.push(c),
        }
    }
    out
}

/// After an ESC: the rest of its sequence.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_until_final(chars),
        // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \\).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\x07' || (c == '\x1b' && chars.peek() == Some(&'\\')) {
                    if c == '\x1b' {
                        chars.next();
                    }
                    return;
                }
            }
        }
        // Two-character sequences (ESC 7, ESC c, ...) and character-set selections (ESC ( B).
        Some('(' | ')' | '*' | '+' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}

/// A CSI's parameters and its final byte.
fn skip_until_final(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\x40'..='\x7e').contains(&c) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_never_reach_the_terminal() {
        assert_eq!(clean("plain text\n\twith tab"), "plain text\n\twith tab");
        assert_eq!(clean("\x1b[2J\x1b[Hcleared"), "cleared");
        assert_eq!(clean("\x1b[1;31mred\x1b[0m"), "red");
        assert_eq!(clean("\x1b]0;evil title\x07after"), "after");
        assert_eq!(clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
        assert_eq!(clean("a\rb\x08c\x00d\x7f"), "abcd");
        assert_eq!(clean("\u{9b}31mcsi"), "csi");
        assert_eq!(clean("\u{202e}txt.exe"), "txt.exe");
        assert_eq!(clean("日本語 ok"), "日本語 ok");
        assert_eq!(clean("trailing \x1b"), "trailing ");
    }
}
