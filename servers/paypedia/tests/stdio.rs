//! `paypedia` as a real child process on real pipes: the walkthrough's calls, and bad input of
//! every kind answered clearly without breaking anything.

use std::process::Command;

use mcp::testing::LinePeer;
use serde_json::{json, Value};

/// paypedia on real pipes, after the handshake Claude Code sends.
fn spawn(args: &[&str]) -> LinePeer {
    let mut server = LinePeer::spawn(env!("CARGO_BIN_EXE_paypedia"), args);
    server.timeout = std::time::Duration::from_secs(20);
    let r = server.initialize("2025-06-18");
    assert_eq!(r["result"]["serverInfo"]["name"], "paypedia");
    server
}

/// The result of calling `tool`.
fn call(server: &mut LinePeer, tool: &str, arguments: Value) -> Value {
    server.request("tools/call", json!({"name": tool, "arguments": arguments}))["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

#[test]
fn the_walkthrough_calls() {
    let mut s = spawn(&[]);
    let tools = s.request("tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().unwrap();
    let resolve = tools.iter().find(|t| t["name"] == "bank_resolve").unwrap();
    assert_eq!(resolve["inputSchema"]["properties"]["country"]["maxLength"], 8);
    assert_eq!(resolve["inputSchema"]["properties"]["bankCode"]["maxLength"], 16);
    assert_eq!(resolve["inputSchema"]["additionalProperties"], false);
    assert!(resolve["outputSchema"].is_object());

    let r = call(&mut s, "iban_check", json!({"input": "FR7630006000011234567890189"}));
    assert_eq!(r["isError"], Value::Null);
    assert!(text(&r).contains("**VALID** · France (FR)"), "{}", text(&r));
    assert_eq!(r["structuredContent"]["results"][0]["valid"], true);

    let r = call(&mut s, "bank_resolve", json!({"country": "FR", "bankCode": "30004"}));
    assert!(text(&r).starts_with("**BNP PARIBAS** · BIC BNPAFRPP"), "{}", text(&r));
    assert_eq!(r["structuredContent"]["bank"]["bic"], "BNPAFRPP");

    let r = call(&mut s, "bic_lookup", json!({"bic": "cobadeffxxx"}));
    assert_eq!(r["structuredContent"]["structure"]["institution"], "COBA");
    assert!(r["structuredContent"]["banks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["name"].as_str().unwrap().contains("Commerzbank")));
}

#[test]
fn resources_and_prompt() {
    let mut s = spawn(&[]);
    let r = s.request("resources/read", json!({"uri": "paypedia://countries/fr"}));
    let fr: Value = serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!((fr["ibanLength"].clone(), fr["bankCodes"].clone()), (json!(27), json!(217)));
    let r = s.request("resources/read", json!({"uri": "paypedia://countries"}));
    let all: Value = serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 127);
    let r = s.request("resources/read", json!({"uri": "paypedia://countries/ZZ"}));
    assert!(r["error"]["code"].is_i64());
    let r = s.request(
        "prompts/get",
        json!({"name": "check_payment_details", "arguments": {"iban": "DE89370400440532013000"}}),
    );
    assert!(r["result"]["messages"][0]["content"]["text"].as_str().unwrap().contains("iban_check"));
    let r = s.request("completion/complete", json!({"ref": {"type": "ref/resource", "uri": "paypedia://countries/{cc}"}, "argument": {"name": "cc", "value": "f"}}));
    assert_eq!(r["result"]["completion"]["values"], json!(["FI", "FK", "FO", "FR"]));
}

#[test]
fn bad_input_gets_a_clear_answer() {
    let mut s = spawn(&[]);
    // Empty input.
    let r = call(&mut s, "iban_check", json!({"input": ""}));
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("No IBAN found"));
    // Control characters and non-ASCII around a valid IBAN.
    let r =
        call(&mut s, "iban_check", json!({"input": "\u{0}\u{7}Zahlung an: DE89 3704 0044 0532 0130 00 — merci ✓\r\n"}));
    assert_eq!(r["structuredContent"]["valid"], 1, "{}", text(&r));
    // 1 MB of text with two IBANs inside.
    let filler = "lorem ipsum dolor sit amet ".repeat(40_000);
    let input = format!("{filler} GB29 NWBK 6016 1331 9268 19 {filler} DE99370400440532013000");
    let r = call(&mut s, "iban_check", json!({"input": input}));
    assert_eq!(
        (r["structuredContent"]["valid"].clone(), r["structuredContent"]["invalid"].clone()),
        (json!(1), json!(1))
    );
    // 10,000 IBANs: all counted, the text stays small and says what was left out.
    let many = vec!["DE89370400440532013000"; 10_000].join("\n");
    let r = call(&mut s, "iban_check", json!({"input": many}));
    let out = &r["structuredContent"];
    assert_eq!((out["found"].clone(), out["valid"].clone()), (json!(10_000), json!(10_000)));
    assert_eq!(out["results"].as_array().unwrap().len(), 100);
    assert_eq!(out["omitted"], 9_900);
    assert!(text(&r).len() < 8_000, "text handed to the model: {} bytes", text(&r).len());
    assert!(text(&r).contains("9980 more not shown"), "{}", &text(&r)[text(&r).len() - 300..]);
    // Wrong types: a schema error the model can act on.
    let r = call(&mut s, "iban_check", json!({"input": 42}));
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("/input"), "{}", text(&r));
    let r = call(&mut s, "bank_resolve", json!({"country": "FRANCE-LONG-NAME", "bankCode": "30004"}));
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("country"), "{}", text(&r));
    let r = call(&mut s, "bank_resolve", json!({"country": "FR", "bankCode": "30004", "extra": true}));
    assert_eq!(r["isError"], true);
    let r = call(&mut s, "bank_resolve", json!({"country": "FR", "bankCode": "99999"}));
    assert_eq!(r["isError"], true);
    assert!(text(&r).contains("217 codes"), "{}", text(&r));
    let r = call(&mut s, "bank_resolve", json!({"country": "US", "bankCode": "026009593"}));
    assert!(text(&r).contains("no bank codes for US"), "{}", text(&r));
    let r = call(&mut s, "bic_lookup", json!({"bic": "NOT A BIC"}));
    assert_eq!(r["isError"], true);
    // Still serving.
    let r = call(&mut s, "bank_resolve", json!({"country": "de", "bankCode": "370 400 44"}));
    assert!(text(&r).contains("Commerzbank"), "{}", text(&r));
}

#[test]
fn data_dir_loads_a_registry_of_the_same_format() {
    let dir = std::env::temp_dir().join(format!("paypedia-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    std::fs::copy(format!("{source}/iban_formats.csv"), dir.join("iban_formats.csv")).unwrap();
    std::fs::write(
        dir.join("bank_registry.csv"),
        "country,bank_code,name,bic,source,short_name,primary,preferred,check_method\nFR,30004,NEWER BANK NAME,BNPAFRPP,test,,1,1,\n",
    )
    .unwrap();
    let mut s = spawn(&["--data", dir.to_str().unwrap()]);
    let r = call(&mut s, "bank_resolve", json!({"country": "FR", "bankCode": "30004"}));
    assert!(text(&r).contains("NEWER BANK NAME"), "{}", text(&r));
    drop(s);
    // A missing or broken directory fails at start-up, with the reason on stderr.
    let out = Command::new(env!("CARGO_BIN_EXE_paypedia")).args(["--data", "/nonexistent"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bank_registry.csv"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_command_line_behaves_like_a_real_programs() {
    let paypedia = env!("CARGO_BIN_EXE_paypedia");
    let help = Command::new(paypedia).arg("--help").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for option in [
        "--data",
        "--http",
        "--allow-host",
        "--allow-origin",
        "--trust-proxy",
        "--json-response",
        "--session-idle",
        "--max-sessions",
        "--version",
    ] {
        assert!(text.contains(option), "--help does not list {option}:\n{text}");
    }
    assert!(text.contains("IBAN"), "--help says what the server is:\n{text}");
    let version = Command::new(paypedia).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("paypedia {}", env!("CARGO_PKG_VERSION")));
    let bogus = Command::new(paypedia).arg("--bogus").output().unwrap();
    assert_eq!(bogus.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bogus.stderr).contains("--bogus"), "the error names the option");
    let missing = Command::new(paypedia).arg("--http").output().unwrap();
    assert_eq!(missing.status.code(), Some(2), "an option without its value is a usage error");
}
