//! `crm-mcp` on SQLite, over real pipes: the embedded demo database (no option at all) and a
//! file made by `crm-mcp init`.

mod common;

use std::process::Command;

use common::{call, full_suite, hit_ids, search_matches_the_definitions, spawn, text};
use serde_json::json;

#[test]
fn the_demo_database_with_no_option_at_all() {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let mut server = spawn(&[], &[("XDG_CACHE_HOME", cache_dir)]);
    full_suite(&mut server);
    search_matches_the_definitions(&mut server, true);
    // A second start reuses the cached file.
    let mut again = spawn(&[], &[("XDG_CACHE_HOME", cache_dir)]);
    assert!(hit_ids(&call(&mut again, "search_customer", json!({"query": "山田"}))).contains(&1023));
    let files: Vec<_> = std::fs::read_dir(cache.path().join("crm-mcp")).unwrap().collect();
    assert_eq!(files.len(), 1, "one demo file, nothing left aside");
}

#[test]
fn a_file_made_by_init_is_served_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crm.sqlite");
    let spec = format!("sqlite:{}", db.display());
    let out = Command::new(env!("CARGO_BIN_EXE_crm-mcp")).args(["init", "--db", &spec]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // init never overwrites.
    let out = Command::new(env!("CARGO_BIN_EXE_crm-mcp")).args(["init", "--db", &spec]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));

    let before = std::fs::read(&db).unwrap();
    let mut server = spawn(&["--db", &spec], &[]);
    full_suite(&mut server);
    drop(server);
    assert!(std::fs::read(&db).unwrap() == before, "serving never writes to the file");
}

#[test]
fn connection_strings_stay_off_the_command_line() {
    for db in ["postgres://crm:secret-pw@127.0.0.1/crm", "host=127.0.0.1 password=secret-pw"] {
        let out = Command::new(env!("CARGO_BIN_EXE_crm-mcp")).args(["--db", db]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("CRM_DATABASE_URL") && !stderr.contains("secret-pw"), "{stderr}");
    }
    // A bad URL in the environment is refused without being echoed.
    let out = Command::new(env!("CARGO_BIN_EXE_crm-mcp"))
        .env("CRM_DATABASE_URL", "postgres://crm:secret-pw@[::1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("secret-pw"), "{}", String::from_utf8_lossy(&out.stderr));
    // A missing file is named, and nothing is created.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sqlite");
    let out = Command::new(env!("CARGO_BIN_EXE_crm-mcp"))
        .args(["--db", &format!("sqlite:{}", path.display())])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("crm-mcp init"));
    assert!(!path.exists());
}

#[test]
fn older_clients_get_no_resource_links() {
    let cache = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_crm-mcp"));
    command.env("XDG_CACHE_HOME", cache.path());
    let mut server = mcp::testing::LinePeer::spawn_command(&mut command);
    server.timeout = std::time::Duration::from_secs(30);
    server.initialize("2025-03-26");
    let r = call(&mut server, "search_customer", json!({"query": "山田 太郎"}));
    assert_eq!(r["content"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(text(&r), "顧客ID:1023 / 山田太郎 / yamada@example.com");
}
