//! `paypedia`: the IBAN and bank-code MCP server.
//!
//! ```text
//! paypedia [--data DIR] [--http ADDR] [transport options]   # --help lists them all
//! ```
//! Serves stdio by default. `--data DIR` loads `bank_registry.csv` and `iban_formats.csv` from
//! DIR instead of the registry built into the binary.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use mcp::cli::ServeArgs;
use mcp::server::{RequestContext, Router, State, Structured, ToolDef, ToolError};
use mcp::tasks::TaskSupport;
use paypedia::batch;
use paypedia::tools::{
    self, BankResolveArgs, BankResolveOutput, BicLookupArgs, BicLookupOutput, IbanCheckArgs, IbanCheckOutput,
};
use paypedia::Data;

const IBAN_CHECK: &str = "Validates one or more IBANs and names the bank behind each. Pass an IBAN, several, or any \
text that contains them (spaces, dashes, lower case and an \"IBAN:\" prefix are fine). For each IBAN it checks the \
country, the length, the country's BBAN layout, the ISO 13616 check digits and, where the country has them, the \
national check digits (RIB key, CIN, Spanish control digits, German per-bank methods...), then resolves the bank code \
to the bank's name and BIC. Each verdict says exactly what is wrong when it is invalid. Call this whenever a user \
gives, pastes or asks about an IBAN, before any payment. At most 100 verdicts are detailed per call.";

const BANK_RESOLVE: &str = "Returns a bank's name and BIC from its national bank code (the one embedded in the \
IBAN) and its country. Registry of ~25,300 codes in 46 countries, built from central-bank publications. Call this \
when you have a bank code (e.g., 30004 in France) but do not know which institution it belongs to. The code is the \
country's own: 5 digits in FR, 8 in DE (Bankleitzahl), the 4-letter BIC prefix in GB and IE, bank + branch in SI.";

const IBAN_CHECK_BATCH: &str = "Checks a batch of up to 1,000,000 IBANs, one per line: pass them inline as input, or \
the file:// URI of a text file of them. It answers at once and runs in the background, as a task or a job: follow \
it as the answer says. Its result counts valid and invalid IBANs by country and by error class, and links a CSV \
report with one row per IBAN (input, verdict, error class, bank, BIC). For a few IBANs, use iban_check instead.";

const BIC_LOOKUP: &str = "Explains a BIC (SWIFT code): its institution, country, location and branch parts, and \
which banks in the registry use it, with their national bank codes. Call this to check that a BIC given for a \
payment belongs to the bank the IBAN points to, or to find a bank from its BIC.";

/// The OAuth scope of the lookups (`iban_check`, `bank_resolve`, `bic_lookup`, the country
/// resources, the prompt), when the server runs with `--auth-issuer`.
const READ: &[&str] = &["paypedia:read"];
/// The scope of `iban_check_batch` and its reports (a batch costs far more than a lookup).
const BATCH: &[&str] = &["paypedia:batch"];

/// The registry the server runs with, as the handlers take it.
type Registry = State<&'static Data>;

async fn iban_check(
    State(data): Registry,
    args: IbanCheckArgs,
    _cx: RequestContext,
) -> Result<Structured<IbanCheckOutput>, ToolError> {
    tools::iban_check(data, &args.input)
}

async fn bank_resolve(
    State(data): Registry,
    args: BankResolveArgs,
    _cx: RequestContext,
) -> Result<Structured<BankResolveOutput>, ToolError> {
    tools::bank_resolve(data, &args.country, &args.bank_code)
}

async fn bic_lookup(
    State(data): Registry,
    args: BicLookupArgs,
    _cx: RequestContext,
) -> Result<Structured<BicLookupOutput>, ToolError> {
    tools::bic_lookup(data, &args.bic)
}

/// The server over `data` (the embedded registry, or the one `--data` loaded), its batches
/// as `batches` says.
fn router(data: &'static Data, batches: batch::BatchConfig) -> Router {
    Router::new()
        .info("paypedia", env!("CARGO_PKG_VERSION"))
        .with_state(data)
        .with_state(Arc::new(batches))
        .instructions(
            "paypedia checks IBANs (iban_check) and resolves national bank codes (bank_resolve) and BICs \
             (bic_lookup) on a registry of real bank data. Read paypedia://countries for IBAN formats.",
        )
        .tool_def(
            ToolDef::new("iban_check").title("Check IBANs").description(IBAN_CHECK).read_only().scopes(READ),
            iban_check,
        )
        .tool_def(
            ToolDef::new("bank_resolve")
                .title("Resolve a bank code")
                .description(BANK_RESOLVE)
                .read_only()
                .scopes(READ),
            bank_resolve,
        )
        .tool_def(
            ToolDef::new("bic_lookup").title("Look up a BIC").description(BIC_LOOKUP).read_only().scopes(READ),
            bic_lookup,
        )
        .tool_def(
            ToolDef::new("iban_check_batch")
                .title("Check a batch of IBANs")
                .description(IBAN_CHECK_BATCH)
                .read_only()
                .scopes(BATCH)
                .task_support(TaskSupport::Optional),
            batch::iban_check_batch,
        )
        .resource_template_def(
            mcp::types::resources::ResourceTemplate {
                uri_template: "paypedia://reports/{id}".into(),
                name: "report".into(),
                title: Some("The CSV report of a batch".into()),
                description: Some(
                    "One row per IBAN of an iban_check_batch run: input, verdict, error class, bank, BIC.".into(),
                ),
                mime_type: Some("text/csv".into()),
                ..Default::default()
            },
            batch::report_resource,
        )
        .resource_template_def(
            mcp::types::resources::ResourceTemplate {
                uri_template: "paypedia://reports/{id}/part/{n}".into(),
                name: "report-part".into(),
                title: Some("100,000 rows of a batch report".into()),
                description: Some("Part n (from 1) of a batch report, with the CSV header.".into()),
                mime_type: Some("text/csv".into()),
                ..Default::default()
            },
            batch::report_part,
        )
        .resource_def(
            mcp::types::resources::Resource {
                uri: "paypedia://countries".into(),
                name: "countries".into(),
                title: Some("IBAN formats of every country".into()),
                description: Some(
                    "Length, layout, example, national check algorithm and bank-code count per country.".into(),
                ),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            tools::countries_resource,
        )
        .resource_template_def(
            mcp::types::resources::ResourceTemplate {
                uri_template: "paypedia://countries/{cc}".into(),
                name: "country".into(),
                title: Some("IBAN format of one country".into()),
                description: Some(
                    "The IBAN format of the country with ISO code {cc}, e.g. paypedia://countries/FR.".into(),
                ),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            tools::country_resource,
        )
        .complete_resource_argument("paypedia://countries/{cc}", "cc", move |typed: &str, _: &_| {
            let typed = typed.to_ascii_uppercase();
            data.formats().all().iter().map(|f| f.country.clone()).filter(|c| c.starts_with(&typed)).collect()
        })
        .prompt_def(
            mcp::types::prompts::Prompt {
                name: "check_payment_details".into(),
                title: Some("Check a payee's payment details".into()),
                description: Some("Walks the model through checking a payee's IBAN and BIC before a payment.".into()),
                ..Default::default()
            },
            tools::check_payment_prompt,
        )
        .resource_scopes("paypedia://countries", READ)
        .template_scopes("paypedia://countries/{cc}", READ)
        .template_scopes("paypedia://reports/{id}", BATCH)
        .template_scopes("paypedia://reports/{id}/part/{n}", BATCH)
        .prompt_scopes("check_payment_details", READ)
}

/// paypedia: an MCP server for payment data. It checks IBANs (layout, ISO 13616 and national check
/// digits) and names the bank and BIC behind them, on a registry of 25,333 national bank codes in
/// 46 countries. Serves MCP on stdio unless --http is given.
#[derive(Parser, Default)]
#[command(name = "paypedia", version)]
struct Cli {
    /// Serve the registry in DIR (bank_registry.csv and iban_formats.csv, the format of
    /// servers/paypedia/data) instead of the one built into the binary
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Let iban_check_batch read files (file:// URIs) in DIR (repeatable); without it, it reads
    /// none
    #[arg(long = "input-dir", value_name = "DIR")]
    input_dirs: Vec<PathBuf>,
    /// Where iban_check_batch writes its CSV reports (default: $TMPDIR/paypedia-reports-$USER)
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli: Cli = mcp::cli::parse();
    let data = match &cli.data {
        None => Data::embedded(),
        Some(dir) => match Data::load(dir) {
            Ok(data) => data,
            Err(e) => {
                eprintln!("paypedia: cannot load --data {}: {e}", dir.display());
                return std::process::ExitCode::FAILURE;
            }
        },
    };
    let mut input_dirs = Vec::new();
    for dir in &cli.input_dirs {
        match std::fs::canonicalize(dir) {
            Ok(dir) => input_dirs.push(dir),
            Err(e) => {
                eprintln!("paypedia: --input-dir {}: {e}", dir.display());
                return std::process::ExitCode::from(2);
            }
        }
    }
    let report_dir = cli.report_dir.clone().unwrap_or_else(batch::default_report_dir);
    let batches = batch::BatchConfig { report_dir, input_dirs };
    match mcp::cli::serve(router(data, batches), &cli.serve).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("paypedia: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
