//! The MCP face of paypedia: tool arguments, structured outputs, the text handed to the model,
//! the country resources and the payment-check prompt.

use mcp::server::{RequestContext, ResourceRequest, State, Structured, ToolError};
use mcp::types::prompts::PromptMessage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::extract;
use crate::iban::{self, ErrorKind};
use crate::registry::Bank;
use crate::{countries, Data};

/// Verdicts detailed in the structured output; the rest are counted.
pub const MAX_RESULTS: usize = 100;
/// Verdicts detailed in the text for the model.
pub const MAX_TEXT_RESULTS: usize = 20;
/// IBAN-like spans examined in one input.
pub const MAX_CANDIDATES: usize = 100_000;
/// The longest input accepted, in bytes.
pub const MAX_INPUT: usize = 4 * 1024 * 1024;

/// Arguments of `iban_check`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IbanCheckArgs {
    /// One or more IBANs, or free text that contains them (spaces, dashes, lower case and an
    /// "IBAN:" prefix are fine), e.g. "FR76 3000 6000 0112 3456 7890 189".
    pub input: String,
}

/// The bank behind an IBAN or a code.
#[derive(Serialize, JsonSchema, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BankInfo {
    /// The bank's name, in its own spelling.
    pub name: String,
    /// Its BIC, when the registry has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bic: Option<String>,
    /// Short name, when the source gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_name: Option<String>,
    /// Where the record comes from (see the data README).
    pub source: String,
}

impl From<Bank> for BankInfo {
    fn from(b: Bank) -> Self {
        BankInfo {
            name: b.name.to_owned(),
            bic: Some(b.bic.to_owned()).filter(|s| !s.is_empty()),
            short_name: Some(b.short_name.to_owned()).filter(|s| !s.is_empty()),
            source: b.source.to_owned(),
        }
    }
}

/// The verdict on one IBAN.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct IbanResult {
    /// The IBAN as written in the input.
    pub input: String,
    /// Compact form: letters and digits, upper case.
    pub iban: String,
    /// Printed form, in groups of four.
    pub formatted: String,
    /// Whether every check passed.
    pub valid: bool,
    /// What is wrong, when invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorKind>,
    /// Exactly what is wrong, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// ISO country code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// Country name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_name: Option<String>,
    /// National check digits: pass, fail:InvalidBBANChecksum, not-verified or n/a.
    pub national_check: String,
    /// National bank code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank_code: Option<String>,
    /// Branch code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_code: Option<String>,
    /// Account number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The bank, when the code is in the registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank: Option<BankInfo>,
    /// Whether the country is in the SEPA zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sepa: Option<bool>,
}

/// The structured output of `iban_check`.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct IbanCheckOutput {
    /// IBAN-like spans found in the input.
    pub found: usize,
    /// How many are valid.
    pub valid: usize,
    /// How many are invalid.
    pub invalid: usize,
    /// Verdicts left out of `results` (at most 100 are detailed).
    pub omitted: usize,
    /// The verdicts, in input order.
    pub results: Vec<IbanResult>,
}

/// Checks one candidate and describes it.
pub fn verdict(data: &Data, raw: &str, compact: &str) -> IbanResult {
    let check = iban::check(data, compact.as_bytes());
    let bban = compact.as_bytes().get(4..).unwrap_or(&[]);
    let format = check.format;
    let structure_ok = !matches!(
        check.error,
        Some((ErrorKind::InvalidStructure | ErrorKind::InvalidCountryCode | ErrorKind::InvalidLength, _))
    );
    let part = |r: Option<&Option<std::ops::Range<usize>>>| {
        if structure_ok {
            r.and_then(|r| iban::component(bban, r)).map(str::to_owned)
        } else {
            None
        }
    };
    let country = format.map(|f| f.country.clone());
    IbanResult {
        input: raw.to_owned(),
        iban: compact.to_owned(),
        formatted: iban::formatted(compact),
        valid: check.is_valid(),
        error: check.error.as_ref().map(|e| e.0),
        message: check.error.as_ref().map(|e| e.1.clone()),
        country_name: country.as_deref().and_then(countries::name).map(str::to_owned),
        country,
        national_check: check.national.as_str().to_owned(),
        bank_code: part(format.map(|f| &f.bank)),
        branch_code: part(format.map(|f| &f.branch)),
        account: part(format.map(|f| &f.account)),
        bank: check.bank.map(BankInfo::from),
        sepa: format.map(|f| f.sepa),
    }
}

/// `iban_check`: every IBAN in the input, checked.
pub fn iban_check(data: &Data, input: &str) -> Result<Structured<IbanCheckOutput>, ToolError> {
    if input.len() > MAX_INPUT {
        return Err(ToolError::new(format!(
            "The input is {} bytes; pass at most {} bytes (split the text and call iban_check once per part).",
            input.len(),
            MAX_INPUT
        )));
    }
    let (candidates, beyond) = extract::find(data, input, MAX_CANDIDATES);
    if candidates.is_empty() {
        return Err(ToolError::new(format!(
            "No IBAN found in the input ({} characters). An IBAN starts with a two-letter country code and two \
             check digits, e.g. \"DE89 3704 0044 0532 0130 00\". Pass the IBAN itself or text that contains it.",
            input.chars().count()
        )));
    }
    let mut output = IbanCheckOutput {
        found: candidates.len() + beyond,
        valid: 0,
        invalid: 0,
        omitted: beyond,
        results: Vec::new(),
    };
    for candidate in &candidates {
        let result = verdict(data, &candidate.raw, &candidate.compact);
        if result.valid {
            output.valid += 1;
        } else {
            output.invalid += 1;
        }
        if output.results.len() < MAX_RESULTS {
            output.results.push(result);
        } else {
            output.omitted += 1;
        }
    }
    Ok(Structured { text: render_check(&output), value: output })
}

fn render_check(out: &IbanCheckOutput) -> String {
    let mut text = String::new();
    if out.found > 1 {
        text.push_str(&format!("Found {} IBANs: {} valid, {} invalid.\n\n", out.found, out.valid, out.invalid));
    }
    for r in out.results.iter().take(MAX_TEXT_RESULTS) {
        text.push_str(&render_result(r));
        text.push('\n');
    }
    let not_shown = out.found - out.results.len().min(MAX_TEXT_RESULTS);
    if not_shown > 0 {
        text.push_str(&format!(
            "…and {not_shown} more not shown here (the structured result details the first {}; {} were not checked in detail). \
             Call iban_check on smaller parts to see them.\n",
            out.results.len(),
            out.omitted
        ));
    }
    text
}

fn render_result(r: &IbanResult) -> String {
    let mut s = format!("## {}\n", r.formatted);
    let place = match (&r.country_name, &r.country) {
        (Some(name), Some(cc)) => format!(" · {name} ({cc})"),
        _ => String::new(),
    };
    if r.valid {
        s.push_str(&format!("**VALID**{place}\n"));
    } else {
        let why = r.message.as_deref().unwrap_or("invalid");
        s.push_str(&format!("**INVALID**{place}: {why}\n"));
    }
    let mut facts = Vec::new();
    if let Some(code) = &r.bank_code {
        facts.push(format!("bank code {code}"));
    }
    if let Some(code) = &r.branch_code {
        facts.push(format!("branch {code}"));
    }
    if let Some(account) = &r.account {
        facts.push(format!("account {account}"));
    }
    if r.error.is_none() || r.error == Some(ErrorKind::InvalidBbanChecksum) {
        facts.push(format!("national check: {}", r.national_check));
    }
    if !facts.is_empty() {
        s.push_str(&format!("- {}\n", facts.join(" · ")));
    }
    match &r.bank {
        Some(bank) => {
            let bic = bank.bic.as_deref().map(|b| format!(" · BIC {b}")).unwrap_or_default();
            s.push_str(&format!("- Bank: {}{bic}\n", bank.name));
        }
        None if r.valid && r.bank_code.is_some() => s.push_str("- Bank: not in the registry\n"),
        None => {}
    }
    s
}

/// Arguments of `bank_resolve`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BankResolveArgs {
    /// ISO 3166-1 alpha-2 country code, e.g. "FR", "DE", "ES".
    #[schemars(length(max = 8))]
    pub country: String,
    /// National bank code, e.g. "30004".
    #[serde(rename = "bankCode")]
    #[schemars(length(max = 16))]
    pub bank_code: String,
}

/// The structured output of `bank_resolve`.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BankResolveOutput {
    /// ISO country code.
    pub country: String,
    /// The code, normalized.
    pub bank_code: String,
    /// The bank the code resolves to.
    pub bank: BankInfo,
    /// Other records under the same code (branches, other legal entities).
    pub alternatives: Vec<BankInfo>,
}

/// `bank_resolve`: the bank behind a national bank code.
pub fn bank_resolve(data: &Data, country: &str, code: &str) -> Result<Structured<BankResolveOutput>, ToolError> {
    let country = country.trim().to_ascii_uppercase();
    let code: String = code.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_uppercase();
    if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(ToolError::new(format!("country must be a two-letter ISO code such as \"FR\", not {country:?}.")));
    }
    let codes = data.registry.codes_in(&country);
    if codes == 0 {
        return Err(ToolError::new(format!(
            "The registry has no bank codes for {country}. Countries covered: {}.",
            covered_countries(data)
        )));
    }
    let banks = data.registry.lookup(&country, &code);
    let Some((first, rest)) = banks.split_first() else {
        return Err(ToolError::new(format!(
            "No bank with code {code:?} in {country} (the registry has {codes} codes for {country}). {}",
            key_hint(data, &country)
        )));
    };
    let bank = BankInfo::from(*first);
    let alternatives: Vec<BankInfo> = rest.iter().take(10).map(|b| BankInfo::from(*b)).collect();
    let mut text = format!("**{}**", bank.name);
    if let Some(bic) = &bank.bic {
        text.push_str(&format!(" · BIC {bic}"));
    }
    text.push_str(&format!("\n{} bank code {code}", countries::name(&country).unwrap_or(&country)));
    if !alternatives.is_empty() {
        text.push_str(&format!("\nOther records under this code ({}):", rest.len()));
        for alt in &alternatives {
            text.push_str(&format!(
                "\n- {}{}",
                alt.name,
                alt.bic.as_deref().map(|b| format!(" · {b}")).unwrap_or_default()
            ));
        }
    }
    let value = BankResolveOutput { country, bank_code: code, bank, alternatives };
    Ok(Structured { text, value })
}

fn covered_countries(data: &Data) -> String {
    data.formats()
        .all()
        .iter()
        .map(|f| f.country.as_str())
        .filter(|c| data.registry.codes_in(c) > 0)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a country's lookup key is formed, for a not-found answer.
fn key_hint(data: &Data, country: &str) -> String {
    let Some(format) = data.formats().get(country) else {
        return String::new();
    };
    let len: usize = format
        .lookup
        .iter()
        .filter_map(|c| match c {
            crate::formats::Component::Bank => format.bank.clone(),
            crate::formats::Component::Branch => format.branch.clone(),
        })
        .map(|r| r.len())
        .sum();
    let what = match country {
        "GB" | "IE" => "the 4 letters of the BIC's bank prefix that follow the check digits (e.g. NWBK)".to_owned(),
        "SI" => "the 5 digits of bank and branch after the check digits".to_owned(),
        "IT" | "SM" => "the 5-digit ABI after the CIN letter".to_owned(),
        _ => format!("the {len} characters after the check digits of an IBAN"),
    };
    format!("In {country} the code is {what}; iban_check reads it from a full IBAN.")
}

/// Arguments of `bic_lookup`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BicLookupArgs {
    /// A BIC (SWIFT code), 8 or 11 characters, e.g. "BNPAFRPP" or "COBADEFFXXX".
    #[schemars(length(max = 16))]
    pub bic: String,
}

/// The parts of a BIC.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BicStructure {
    /// Institution code (4 letters).
    pub institution: String,
    /// Country code (2 letters).
    pub country: String,
    /// Location code (2 characters).
    pub location: String,
    /// Branch code (3 characters; XXX is the primary office).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A test BIC (location ends in 0).
    pub test: bool,
}

/// The structured output of `bic_lookup`.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BicLookupOutput {
    /// The BIC, normalized.
    pub bic: String,
    /// Its parts.
    pub structure: BicStructure,
    /// Banks that use it, with their national codes.
    pub banks: Vec<BicBank>,
    /// Records left out of `banks` (at most 20 are listed).
    pub omitted: usize,
}

/// A registry record that uses a BIC.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BicBank {
    /// ISO country of the national code.
    pub country: String,
    /// National bank code (empty for BIC-only records).
    pub bank_code: String,
    /// The record.
    #[serde(flatten)]
    pub bank: BankInfo,
}

/// `bic_lookup`: a BIC's structure and the banks that use it.
pub fn bic_lookup(data: &Data, bic: &str) -> Result<Structured<BicLookupOutput>, ToolError> {
    let bic: String = bic.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_uppercase();
    let b = bic.as_bytes();
    let well_formed = (b.len() == 8 || b.len() == 11)
        && b[..6].iter().all(u8::is_ascii_uppercase)
        && b[6..].iter().all(u8::is_ascii_alphanumeric);
    if !well_formed {
        return Err(ToolError::new(format!(
            "{bic:?} is not a BIC: a BIC is 8 or 11 characters, 4 letters for the institution, 2 for the \
             country, 2 letters or digits for the location and optionally 3 for the branch, e.g. \"BNPAFRPP\"."
        )));
    }
    let structure = BicStructure {
        institution: bic[..4].to_owned(),
        country: bic[4..6].to_owned(),
        location: bic[6..8].to_owned(),
        branch: (bic.len() == 11).then(|| bic[8..].to_owned()),
        test: b[7] == b'0',
    };
    let rows = data.registry.by_bic(&bic);
    let omitted = rows.len().saturating_sub(20);
    let banks: Vec<BicBank> = rows
        .iter()
        .take(20)
        .map(|r| BicBank { country: r.country.to_owned(), bank_code: r.code.to_owned(), bank: BankInfo::from(*r) })
        .collect();
    let mut text = format!(
        "**{bic}**: institution {}, country {} ({}), location {}{}{}\n",
        structure.institution,
        structure.country,
        countries::name(&structure.country).unwrap_or("unknown country"),
        structure.location,
        structure
            .branch
            .as_deref()
            .map(|br| if br == "XXX" { ", primary office".to_owned() } else { format!(", branch {br}") })
            .unwrap_or_default(),
        if structure.test { " (a test BIC)" } else { "" }
    );
    if banks.is_empty() {
        text.push_str("No bank in the registry uses this BIC. It may still exist: the registry covers national bank codes of 46 countries, not every BIC.");
    } else {
        text.push_str(&format!("Used by {} record(s) in the registry:\n", rows.len()));
        for bank in &banks {
            let code = if bank.bank_code.is_empty() {
                String::new()
            } else {
                format!(" — {} code {}", bank.country, bank.bank_code)
            };
            text.push_str(&format!("- {}{code} · {}\n", bank.bank.name, bank.bank.bic.as_deref().unwrap_or("")));
        }
        if omitted > 0 {
            text.push_str(&format!("…and {omitted} more.\n"));
        }
    }
    Ok(Structured { text, value: BicLookupOutput { bic, structure, banks, omitted } })
}

/// One country's IBAN format, as the country resources show it.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CountryInfo {
    /// ISO code.
    pub country: String,
    /// English name.
    pub name: Option<String>,
    /// registry, territory or aspirational.
    pub status: String,
    /// Uses this country's format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// IBAN length.
    pub iban_length: usize,
    /// SWIFT notation.
    pub iban_spec: String,
    /// A valid example.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    /// The national check algorithm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub national_check: Option<String>,
    /// In the SEPA zone.
    pub sepa: bool,
    /// Bank codes in the registry.
    pub bank_codes: usize,
}

fn country_info(data: &Data, format: &crate::formats::Format) -> CountryInfo {
    CountryInfo {
        country: format.country.clone(),
        name: countries::name(&format.country).map(str::to_owned),
        status: format.status.clone(),
        alias_of: format.alias_of.clone(),
        iban_length: format.iban_length,
        iban_spec: format.iban_spec.clone(),
        example: format.example.clone(),
        national_check: format.national_algo.map(|a| a.describe().to_owned()),
        sepa: format.sepa,
        bank_codes: data.registry.codes_in(&format.country),
    }
}

/// `paypedia://countries`: every country's IBAN format.
pub async fn countries_resource(
    State(data): State<&'static Data>,
    _r: ResourceRequest,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    let all: Vec<CountryInfo> = data.formats().all().into_iter().map(|f| country_info(data, f)).collect();
    Ok(serde_json::to_string_pretty(&all)?)
}

/// Parameters of `paypedia://countries/{cc}`.
#[derive(Deserialize)]
pub struct CountryParams {
    cc: String,
}

/// `paypedia://countries/{cc}`: one country's IBAN format.
pub async fn country_resource(
    State(data): State<&'static Data>,
    r: ResourceRequest<CountryParams>,
    _cx: RequestContext,
) -> Result<String, ToolError> {
    let cc = r.params.cc.to_ascii_uppercase();
    let format = data.formats().get(&cc).ok_or_else(|| {
        ToolError::not_found(format!("No IBAN format for {cc:?}; read paypedia://countries for the list."))
    })?;
    Ok(serde_json::to_string_pretty(&country_info(data, format))?)
}

/// Arguments of the `check_payment_details` prompt.
#[derive(Deserialize, JsonSchema)]
pub struct CheckPaymentArgs {
    /// The payee's name as the user has it.
    pub payee: Option<String>,
    /// The IBAN given for the payee.
    pub iban: Option<String>,
    /// The BIC given for the payee, if any.
    pub bic: Option<String>,
}

/// `check_payment_details`: a guided check of a payee's details.
pub async fn check_payment_prompt(
    args: CheckPaymentArgs,
    _cx: RequestContext,
) -> Result<Vec<PromptMessage>, ToolError> {
    let given = |label: &str, v: &Option<String>| v.as_deref().map(|v| format!("- {label}: {v}\n")).unwrap_or_default();
    let details = format!("{}{}{}", given("Payee", &args.payee), given("IBAN", &args.iban), given("BIC", &args.bic));
    let details =
        if details.is_empty() { "(ask the user for the payee's name, IBAN and BIC)\n".to_owned() } else { details };
    Ok(vec![PromptMessage::user(format!(
        "Check these payment details before money is sent:\n{details}\n\
         1. Call iban_check with the IBAN. If it is invalid, say exactly what is wrong and ask for a corrected IBAN; do not guess one.\n\
         2. Note the bank the IBAN belongs to (name and BIC from iban_check). If a BIC was given, call bic_lookup and \
            compare: a BIC of another bank than the IBAN's is a red flag (it can also be a legitimate intermediary; say so).\n\
         3. If the IBAN's country differs from where the payee is said to be, point it out.\n\
         4. Summarize: valid or not, bank, BIC, country, SEPA or not, and anything the user should confirm with the payee \
            by a channel other than the one the details came from (changed bank details are a classic fraud)."
    ))])
}
