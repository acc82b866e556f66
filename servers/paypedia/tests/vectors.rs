//! All 283 rows of `iban_test_vectors.csv`: verdict, error class, national check, bank code,
//! branch code, BIC and bank name as listed, both for the compact IBAN and for the input as
//! written (which the extractor must find as exactly one IBAN).

use paypedia::tools::verdict;
use paypedia::{extract, Data};

#[derive(Debug)]
struct Vector {
    iban: String,
    input: String,
    valid: bool,
    error: String,
    national: String,
    bank_code: String,
    branch_code: String,
    bic: String,
    bank_name: String,
}

fn vectors() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/iban_test_vectors.csv");
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            let get = |name: &str| row.get(headers.iter().position(|h| h == name).unwrap()).unwrap().to_owned();
            Vector {
                iban: get("iban"),
                input: Some(get("input")).filter(|s| !s.is_empty()).unwrap_or_else(|| get("iban")),
                valid: get("valid") == "true",
                error: get("error"),
                national: get("national_check"),
                bank_code: get("bank_code"),
                branch_code: get("branch_code"),
                bic: get("bic"),
                bank_name: get("bank_name"),
            }
        })
        .collect()
}

fn differences(v: &Vector, compact: &str, raw: &str) -> Vec<String> {
    let r = verdict(Data::embedded(), raw, compact);
    let mut diffs = Vec::new();
    let mut expect = |what: &str, got: String, want: &str| {
        if got != want {
            diffs.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    };
    expect("valid", r.valid.to_string(), &v.valid.to_string());
    expect("error", r.error.map(|e| e.as_str().to_owned()).unwrap_or_default(), &v.error);
    let national_ran = v.valid || v.error == "InvalidBBANChecksum";
    if national_ran {
        expect("national_check", r.national_check.clone(), &v.national);
        expect("bank_code", r.bank_code.clone().unwrap_or_default(), &v.bank_code);
        expect("branch_code", r.branch_code.clone().unwrap_or_default(), &v.branch_code);
        expect("bic", r.bank.as_ref().and_then(|b| b.bic.clone()).unwrap_or_default(), &v.bic);
        // The registry collapses runs of whitespace in names (data/README.md); six NO names in the
        // vectors, taken from schwifty's raw data, still end in a space.
        expect("bank_name", r.bank.as_ref().map(|b| b.name.clone()).unwrap_or_default(), v.bank_name.trim_end());
    }
    diffs
}

#[test]
fn every_vector_gets_its_listed_verdict_and_bank() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 283);
    let mut failures = Vec::new();
    for v in &vectors {
        let diffs = differences(v, &v.iban, &v.iban);
        if !diffs.is_empty() {
            failures.push(format!("{}: {}", v.iban, diffs.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of 283 vectors differ:\n{}", failures.len(), failures.join("\n"));
    let valid = vectors.iter().filter(|v| v.valid).count();
    assert_eq!(valid, 233, "the file lists 233 valid IBANs");
}

#[test]
fn every_vector_is_found_as_written() {
    let mut failures = Vec::new();
    for v in vectors() {
        let (found, extra) = extract::find(Data::embedded(), &v.input, 10);
        let compacts: Vec<&str> = found.iter().map(|c| c.compact.as_str()).collect();
        if compacts != [v.iban.as_str()] || extra != 0 {
            failures.push(format!("{:?}: found {compacts:?}", v.input));
            continue;
        }
        let diffs = differences(&v, &found[0].compact, &found[0].raw);
        if !diffs.is_empty() {
            failures.push(format!("{:?}: {}", v.input, diffs.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} inputs differ:\n{}", failures.len(), failures.join("\n"));
}
