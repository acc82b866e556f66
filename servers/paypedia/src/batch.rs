//! `iban_check_batch`: up to 1,000,000 IBANs, one per line, inline or in a file the server was
//! allowed to read. It runs as a task (a job for clients that follow none), reports progress
//! (checked and invalid counts), and ends with a summary (counts by country and by error class)
//! and a CSV report, one row per IBAN, written to a file as it goes and served as a resource.
//!
//! The check itself runs on a blocking thread, in chunks: between chunks it reports progress
//! and stops within a chunk (a few milliseconds) once its task is cancelled. A batch read from a
//! file is read line by line (twice: once to count, once to check), never whole. A report is
//! bound to the account that ran the batch: another caller gets "no such report".

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp::server::{IntoToolOutput, RequestContext, State, Structured, ToolError};
use mcp::types::content::ContentBlock;
use mcp::types::resources::Resource;
use mcp::types::tools::CallToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{extract, iban, Data};

/// The most IBANs in one batch.
pub const MAX_IBANS: usize = 1_000_000;
/// Rows per part of a report, for clients that read it in pieces.
pub const PART_ROWS: usize = 100_000;
/// IBANs checked between two looks at progress and cancellation.
const CHUNK: usize = 2048;

/// Arguments of `iban_check_batch`: exactly one of `input` and `uri`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchArgs {
    /// IBANs, one per line (each line as people type it: spaces, dashes, lower case are fine).
    #[serde(default)]
    pub input: Option<String>,
    /// Or the file:// URI of a text file of them, one per line, in a directory the server was
    /// started with --input-dir for.
    #[serde(default)]
    pub uri: Option<String>,
}

/// Valid and invalid counts.
#[derive(Serialize, JsonSchema, Default, Clone, Debug, PartialEq)]
pub struct Counts {
    /// Valid IBANs.
    pub valid: usize,
    /// Invalid IBANs.
    pub invalid: usize,
}

/// Where the report is.
#[derive(Serialize, JsonSchema, Clone, Debug)]
pub struct ReportInfo {
    /// The resource with the whole CSV.
    pub uri: String,
    /// Its rows (one per input line), without the header.
    pub rows: usize,
    /// Its size in bytes.
    pub bytes: u64,
    /// Parts of it, `uri/part/N` for N from 1, each of at most 100,000 rows.
    pub parts: usize,
}

/// The outcome of a batch.
#[derive(Serialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BatchSummary {
    /// Input lines checked (blank lines are skipped).
    pub total: usize,
    /// Valid IBANs.
    pub valid: usize,
    /// Invalid IBANs (lines without an IBAN included).
    pub invalid: usize,
    /// Per country code.
    pub by_country: BTreeMap<String, Counts>,
    /// Per error class (`NoIban` for a line with nothing like an IBAN).
    pub by_error: BTreeMap<String, usize>,
    /// The CSV report.
    pub report: ReportInfo,
}

/// Where reports go and which directories the batch may read: the router's state (as an
/// `Arc<BatchConfig>`), set at start-up.
pub struct BatchConfig {
    /// The reports' directory.
    pub report_dir: PathBuf,
    /// Directories whose files `uri` may name.
    pub input_dirs: Vec<PathBuf>,
}

impl Default for BatchConfig {
    /// Reports under the temporary directory, no file read.
    fn default() -> Self {
        BatchConfig { report_dir: default_report_dir(), input_dirs: Vec::new() }
    }
}

/// `$TMPDIR/paypedia-reports-$USER`: one directory per user, the same across restarts (a
/// stored task's result names its report).
pub fn default_report_dir() -> PathBuf {
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let user: String = user.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
    std::env::temp_dir().join(format!("paypedia-reports-{user}"))
}

/// The tool.
pub async fn iban_check_batch(
    State(config): State<Arc<BatchConfig>>,
    args: BatchArgs,
    cx: RequestContext,
) -> Result<BatchOutput, ToolError> {
    let data: &'static Data = *cx.state::<&'static Data>()?;
    let input = match (args.input, args.uri) {
        (Some(input), None) => Input::Inline(input),
        (None, Some(uri)) => Input::File(allowed_file(&config, &uri)?),
        _ => {
            return Err(ToolError::new("Pass exactly one of input (the IBANs, one per line) and uri (a file of them)."))
        }
    };
    // Cancelled (the task, or the call dropped), the counting and the check stop within a chunk.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(stop.clone());
    let (counting, counting_stop) = (input.clone(), stop.clone());
    let lines = tokio::task::spawn_blocking(move || counting.count_lines(&counting_stop))
        .await
        .map_err(|e| ToolError::new(e.to_string()))??
        .ok_or_else(|| ToolError::new("the batch was cancelled"))?;
    if lines > MAX_IBANS {
        return Err(ToolError::new(format!(
            "The batch has {lines} lines; at most {MAX_IBANS} IBANs fit in one batch: split it and start one batch per part."
        )));
    }
    let (id, path) = new_report(&config.report_dir, &cx.account())
        .map_err(|e| ToolError::new(format!("cannot write the report: {e}")))?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(usize, usize)>(8);
    let worker_stop = stop.clone();
    let worker_path = path.clone();
    let mut worker = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::create(&worker_path)?;
        let report = |done, invalid| {
            let _ = tx.try_send((done, invalid));
        };
        match &input {
            Input::Inline(text) => check_all(data, text.as_bytes(), lines, file, &worker_stop, report),
            Input::File(path) => {
                let reader = std::io::BufReader::new(std::fs::File::open(path)?);
                check_all(data, reader, lines, file, &worker_stop, report)
            }
        }
    });
    let outcome = loop {
        tokio::select! {
            Some((done, invalid)) = rx.recv() => {
                let message = format!("checked {done} of {lines} IBANs, {invalid} invalid");
                cx.progress(done as f64, Some(lines as f64), Some(&message)).await;
            }
            outcome = &mut worker => break outcome,
        }
    };
    let mut summary = match outcome {
        Ok(Ok(Some(summary))) => summary,
        Ok(Ok(None)) => return Err(ToolError::new("the batch was cancelled")),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(ToolError::new("the batch file is not UTF-8 text: save it as UTF-8, one IBAN per line"))
        }
        Ok(Err(e)) => return Err(ToolError::new(format!("cannot write the report: {e}"))),
        Err(e) => return Err(ToolError::new(format!("the batch stopped: {e}"))),
    };
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    summary.report = ReportInfo {
        uri: format!("paypedia://reports/{id}"),
        rows: summary.total,
        bytes,
        parts: summary.total.div_ceil(PART_ROWS).max(1),
    };
    Ok(BatchOutput(summary))
}

/// Where a batch's IBANs are.
#[derive(Clone)]
enum Input {
    /// In the request.
    Inline(String),
    /// In a file the server may read (checked).
    File(PathBuf),
}

impl Input {
    /// Its non-blank lines, counted as they are read; `None` once `stop` is set.
    fn count_lines(&self, stop: &AtomicBool) -> Result<Option<usize>, ToolError> {
        match self {
            Input::Inline(text) => Ok(Some(text.lines().filter(|l| !l.trim().is_empty()).count())),
            Input::File(path) => {
                use std::io::BufRead;
                let file = std::fs::File::open(path)
                    .map_err(|e| ToolError::new(format!("cannot read {}: {e}", path.display())))?;
                let mut reader = std::io::BufReader::new(file);
                let (mut count, mut read, mut line) = (0, 0usize, String::new());
                loop {
                    line.clear();
                    read += 1;
                    if read % CHUNK == 0 && stop.load(Ordering::Relaxed) {
                        eprintln!("iban_check_batch: stopped after 0 of {count}+ IBANs, while counting (cancelled)");
                        return Ok(None);
                    }
                    match reader.read_line(&mut line) {
                        Ok(0) => return Ok(Some(count)),
                        Ok(_) => count += usize::from(!line.trim().is_empty()),
                        Err(_) => {
                            return Err(ToolError::new(format!(
                                "cannot read {}: it must be UTF-8 text, one IBAN per line",
                                path.display()
                            )))
                        }
                    }
                }
            }
        }
    }
}

/// The tool's output: the summary as text and structured content, and a link to the report.
pub struct BatchOutput(pub BatchSummary);

impl IntoToolOutput for BatchOutput {
    fn into_result(self) -> CallToolResult {
        let link = report_link(&self.0);
        let mut result = structured(self.0).into_result();
        result.content.push(link);
        result
    }

    fn output_schema() -> Option<mcp::types::JsonObject> {
        <Structured<BatchSummary> as IntoToolOutput>::output_schema()
    }
}

/// Tells the worker to stop when the tool's future is dropped (its task was cancelled).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The summary as text for the model, with a link to the report.
fn structured(summary: BatchSummary) -> Structured<BatchSummary> {
    let mut text =
        format!("**{} IBANs checked: {} valid, {} invalid.**\n", summary.total, summary.valid, summary.invalid);
    if !summary.by_error.is_empty() {
        let errors: Vec<String> = summary.by_error.iter().map(|(k, v)| format!("{k} {v}")).collect();
        text.push_str(&format!("Errors: {}.\n", errors.join(", ")));
    }
    let countries: Vec<String> =
        summary.by_country.iter().take(30).map(|(c, n)| format!("{c} {}/{}", n.valid, n.valid + n.invalid)).collect();
    text.push_str(&format!("Valid per country: {}.\n", countries.join(", ")));
    text.push_str(&format!(
        "Report (one CSV row per IBAN: input, verdict, error class, bank, BIC): {} ({} bytes; in {} parts at {}/part/N).",
        summary.report.uri, summary.report.bytes, summary.report.parts, summary.report.uri
    ));
    Structured { text, value: summary }
}

/// The result's extra block: a link to the report.
pub fn report_link(summary: &BatchSummary) -> ContentBlock {
    ContentBlock::ResourceLink(Resource {
        uri: summary.report.uri.clone(),
        name: "report".into(),
        mime_type: Some("text/csv".into()),
        size: Some(summary.report.bytes),
        ..Default::default()
    })
}

/// The file a `file://` URI names, if it is inside an allowed directory and not too large.
fn allowed_file(config: &BatchConfig, uri: &str) -> Result<PathBuf, ToolError> {
    let path = uri.strip_prefix("file://").ok_or_else(|| {
        ToolError::new(format!("uri {uri:?} is not a file:// URI; pass the IBANs inline with input, or a file:// URI"))
    })?;
    let path = percent_decode(path);
    let allowed = &config.input_dirs;
    if allowed.is_empty() {
        return Err(ToolError::new(
            "This server reads no files (it was started without --input-dir): pass the IBANs inline with input.",
        ));
    }
    let real = std::fs::canonicalize(&path).map_err(|e| ToolError::new(format!("cannot read {path}: {e}")))?;
    if !allowed.iter().any(|dir| real.starts_with(dir)) {
        return Err(ToolError::new(format!("{path} is outside the directories this server may read")));
    }
    let limit = (MAX_IBANS as u64) * 80;
    let size = std::fs::metadata(&real).map(|m| m.len()).unwrap_or(0);
    if size > limit {
        return Err(ToolError::new(format!("{path} is {size} bytes: a batch file may be at most {limit} bytes")));
    }
    Ok(real)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A new report file for `account`: its id and path (reports older than a day are removed on
/// the way). Beside it, `ID.owner` holds a digest of the account, which reading it must match.
fn new_report(dir: &Path, account: &str) -> std::io::Result<(String, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    remove_old_reports(dir);
    // Never a guessable id (it is the report's only key): without a random source, no report.
    let id = mcp::util::random::hex(12)?;
    std::fs::write(dir.join(format!("{id}.owner")), owner_digest(account))?;
    Ok((id.clone(), dir.join(format!("{id}.csv"))))
}

/// The digest of an account as kept beside its reports (the account itself is not written).
fn owner_digest(account: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(account.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn remove_old_reports(dir: &Path) {
    let day = std::time::Duration::from_secs(24 * 3600);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The path of report `id`, if it exists and `account` ran it.
pub fn report_path(dir: &Path, id: &str, account: &str) -> Option<PathBuf> {
    let valid = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        return None;
    }
    let owner = std::fs::read_to_string(dir.join(format!("{id}.owner"))).ok()?;
    let path = dir.join(format!("{id}.csv"));
    (owner.trim() == owner_digest(account) && path.exists()).then_some(path)
}

/// Checks every non-blank line of `input`, read one at a time, writing a CSV row per line to `out`; `None` when
/// stopped.
pub fn check_all(
    data: &Data,
    mut input: impl std::io::BufRead,
    total: usize,
    out: impl Write,
    stop: &AtomicBool,
    mut progress: impl FnMut(usize, usize),
) -> std::io::Result<Option<BatchSummary>> {
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, out);
    out.write_all(b"input,verdict,error,bank,bic\n")?;
    let mut summary = BatchSummary {
        total: 0,
        valid: 0,
        invalid: 0,
        by_country: BTreeMap::new(),
        by_error: BTreeMap::new(),
        report: ReportInfo { uri: String::new(), rows: 0, bytes: 0, parts: 0 },
    };
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        check_line(data, &line, &mut summary, &mut out)?;
        if summary.total % CHUNK == 0 {
            if stop.load(Ordering::Relaxed) {
                eprintln!("iban_check_batch: stopped after {} of {total} IBANs (cancelled)", summary.total);
                return Ok(None);
            }
            progress(summary.total, summary.invalid);
        }
    }
    out.flush()?;
    progress(total, summary.invalid);
    Ok(Some(summary))
}

fn check_line(data: &Data, line: &str, summary: &mut BatchSummary, out: &mut impl Write) -> std::io::Result<()> {
    let line = line.trim();
    summary.total += 1;
    let (found, _) = extract::find(data, line, 1);
    let Some(candidate) = found.first() else {
        summary.invalid += 1;
        *summary.by_error.entry("NoIban".into()).or_default() += 1;
        return write_row(out, line, "invalid", "NoIban", "", "");
    };
    let check = iban::check(data, candidate.compact.as_bytes());
    let country = candidate.compact.get(..2).unwrap_or("").to_owned();
    let counts = summary.by_country.entry(country).or_default();
    if check.is_valid() {
        counts.valid += 1;
        summary.valid += 1;
        let (name, bic) = check.bank.map_or(("", ""), |b| (b.name, b.bic));
        write_row(out, line, "valid", "", name, bic)
    } else {
        counts.invalid += 1;
        summary.invalid += 1;
        let class = check.error.map_or("", |e| e.0.as_str());
        *summary.by_error.entry(class.into()).or_default() += 1;
        write_row(out, line, "invalid", class, "", "")
    }
}

/// One CSV row; fields with commas, quotes or line breaks are quoted.
fn write_row(
    out: &mut impl Write,
    input: &str,
    verdict: &str,
    error: &str,
    bank: &str,
    bic: &str,
) -> std::io::Result<()> {
    field(out, input)?;
    write!(out, ",{verdict},{error},")?;
    field(out, bank)?;
    writeln!(out, ",{bic}")
}

fn field(out: &mut impl Write, value: &str) -> std::io::Result<()> {
    if value.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        write!(out, "\"{}\"", value.replace('"', "\"\""))
    } else {
        out.write_all(value.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_country_and_error_and_writes_one_row_per_line() {
        let text = "DE89 3704 0044 0532 0130 00\n\nfr76 3000 6000 0112 3456 7890 189\nDE89 3704 0044 0532 0130 01\nhello, world\n";
        let mut out = Vec::new();
        let stop = AtomicBool::new(false);
        let summary = check_all(Data::embedded(), text.as_bytes(), 4, &mut out, &stop, |_, _| {}).unwrap().unwrap();
        assert_eq!((summary.total, summary.valid, summary.invalid), (4, 2, 2));
        assert_eq!(summary.by_country["DE"], Counts { valid: 1, invalid: 1 });
        assert_eq!(summary.by_error["NoIban"], 1);
        assert_eq!(summary.by_error["InvalidChecksumDigits"], 1);
        let csv = String::from_utf8(out).unwrap();
        assert_eq!(csv.lines().count(), 5, "{csv}");
        assert!(csv.contains("\"hello, world\",invalid,NoIban,,"), "{csv}");
        assert!(csv.lines().nth(1).unwrap().ends_with(",valid,,Commerzbank,COBADEFFXXX"), "{csv}");
    }

    #[test]
    fn a_stop_ends_the_work_within_a_chunk() {
        let text = "DE89370400440532013000\n".repeat(100_000);
        let stop = AtomicBool::new(true);
        let input = text.as_bytes();
        assert!(check_all(Data::embedded(), input, 100_000, std::io::sink(), &stop, |_, _| {}).unwrap().is_none());
    }
}

/// The variables of `paypedia://reports/{id}`.
#[derive(Deserialize)]
pub struct ReportParams {
    id: String,
}

/// The variables of `paypedia://reports/{id}/part/{n}`.
#[derive(Deserialize)]
pub struct PartParams {
    id: String,
    n: usize,
}

fn missing(id: &str) -> ToolError {
    ToolError::not_found(format!(
        "No report {id} of yours: reports are kept a day, for the caller that ran the batch; run the batch again for a new one."
    ))
}

/// `paypedia://reports/{id}`: the whole CSV report, whatever its size: streamed from its file
/// as it is sent, so the server holds a chunk of it at a time, never the whole.
pub async fn report_resource(
    State(config): State<Arc<BatchConfig>>,
    r: mcp::server::ResourceRequest<ReportParams>,
    cx: RequestContext,
) -> Result<mcp::server::StreamedText, ToolError> {
    let path = report_path(&config.report_dir, &r.params.id, &cx.account()).ok_or_else(|| missing(&r.params.id))?;
    mcp::server::StreamedText::file(path).await.map_err(|e| ToolError::new(format!("cannot read the report: {e}")))
}

/// `paypedia://reports/{id}/part/{n}`: rows `(n-1)*100000+1` to `n*100000` of a report, with its
/// header; read line by line, so only the part is held.
pub async fn report_part(
    State(config): State<Arc<BatchConfig>>,
    r: mcp::server::ResourceRequest<PartParams>,
    cx: RequestContext,
) -> Result<String, ToolError> {
    use std::io::BufRead;
    let path = report_path(&config.report_dir, &r.params.id, &cx.account()).ok_or_else(|| missing(&r.params.id))?;
    let n = r.params.n;
    if n == 0 {
        return Err(ToolError::invalid_params("parts are numbered from 1"));
    }
    let id = r.params.id.clone();
    tokio::task::spawn_blocking(move || -> Result<String, ToolError> {
        let file = std::fs::File::open(path).map_err(|e| ToolError::new(format!("cannot read the report: {e}")))?;
        let mut lines = std::io::BufReader::new(file).lines();
        let header = lines.next().transpose().map_err(|e| ToolError::new(e.to_string()))?.unwrap_or_default();
        let mut part = header + "\n";
        let mut taken = 0;
        for line in lines.skip((n - 1) * PART_ROWS).take(PART_ROWS) {
            part.push_str(&line.map_err(|e| ToolError::new(e.to_string()))?);
            part.push('\n');
            taken += 1;
        }
        if taken == 0 {
            return Err(ToolError::not_found(format!("Report {id} has no part {n}.")));
        }
        Ok(part)
    })
    .await
    .map_err(|e| ToolError::new(e.to_string()))?
}
