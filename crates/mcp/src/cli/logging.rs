//! The logger of server binaries: one line per event on stderr, never stdout.

/// Sends log messages to stderr (never stdout, which a stdio server's protocol owns): warnings
/// and errors by default; `RUST_LOG=info` (or `debug`, `trace`, `error`, `off`) for another level.
/// Does nothing if the program installed a `tracing` subscriber of its own (use one, such as
/// `tracing-subscriber`, for per-module filters or other formats).
///
/// The logger is a few lines of our own rather than a subscriber crate: it is installed at every
/// start of every server, and a host starts servers often.
pub fn init_logging() {
    if tracing::dispatcher::has_been_set() {
        return;
    }
    let level = std::env::var("RUST_LOG").ok().map_or(Some(tracing::Level::WARN), |v| log_level(&v));
    let Some(level) = level else { return };
    let _ = tracing::subscriber::set_global_default(StderrLog { max: level, name: program_name() });
}

/// The name this program was started as (`mcp` when it cannot be told).
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|p| std::path::Path::new(&p).file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "mcp".into())
}

/// The most verbose level named in a `RUST_LOG` value (`None` for `off`).
fn log_level(value: &str) -> Option<tracing::Level> {
    use tracing::Level;
    let words: Vec<String> = value.split([',', '=', ' ']).map(|w| w.trim().to_ascii_lowercase()).collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    if words.iter().all(|w| w == "off" || w.is_empty()) && has("off") {
        return None;
    }
    [
        ("trace", Level::TRACE),
        ("debug", Level::DEBUG),
        ("info", Level::INFO),
        ("warn", Level::WARN),
        ("error", Level::ERROR),
    ]
    .into_iter()
    .find(|(w, _)| has(w))
    .map(|(_, l)| l)
    .or(Some(Level::WARN))
}

/// Writes events at or above a level to stderr, one line each: `name: LEVEL message fields`.
struct StderrLog {
    max: tracing::Level,
    name: String,
}

impl tracing::Subscriber for StderrLog {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::from_level(self.max))
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = format!("{}: {} ", self.name, event.metadata().level());
        event.record(&mut LineVisitor(&mut line));
        eprintln!("{line}");
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// Appends an event's message, then its other fields as `name=value`.
struct LineVisitor<'a>(&'a mut String);

impl tracing::field::Visit for LineVisitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_picks_the_level() {
        use tracing::Level;
        assert_eq!(log_level("debug"), Some(Level::DEBUG));
        assert_eq!(log_level("mcp=info,hyper=warn"), Some(Level::INFO));
        assert_eq!(log_level("off"), None);
        assert_eq!(log_level("nonsense"), Some(Level::WARN));
    }
}
