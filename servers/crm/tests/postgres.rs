//! `crm-mcp` on a real PostgreSQL: a throwaway cluster this test starts (Debian's
//! `postgresql-15`, as the `postgres` user when run as root, on a free loopback port, SCRAM
//! passwords), `crm-mcp init`, the same suite as SQLite, and the security tests: the serving
//! role cannot write even after `BEGIN READ WRITE` or `COMMIT;` tricks, has no temporary tables,
//! cannot stack statements, and the server's statement timeout fires. A missing PostgreSQL is a
//! failure, never a skip.

mod common;

use std::process::{Command, Output};

use crm_mcp::pg_cluster::{Cluster, ADMIN_PASSWORD};

use common::{call, full_suite, hit_ids, search_matches_the_definitions, spawn, text};
use serde_json::json;

const RO_PASSWORD: &str = "ro-Secret-Pass-9876";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

fn crm(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crm-mcp"));
    command.args(args).env_remove("CRM_DATABASE_URL").env_remove("CRM_READONLY_PASSWORD");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The read-only role, by hand: every way a session might try to write fails.
async fn the_role_cannot_write(url: &str) {
    let c = client(url).await;
    let denied = |r: Result<u64, tokio_postgres::Error>, what: &str| {
        let e = r.expect_err(what);
        let code = e.code().map(|c| c.code().to_owned()).unwrap_or_default();
        assert!(["42501", "25006"].contains(&code.as_str()), "{what}: {e:?}");
    };
    denied(c.execute("INSERT INTO crm.customers (id) VALUES (1)", &[]).await, "insert");
    denied(c.execute("UPDATE crm.customers SET name = 'x' WHERE id = 1023", &[]).await, "update");
    denied(c.execute("DELETE FROM crm.interactions", &[]).await, "delete");
    // default_transaction_read_only is only advisory; privileges are the boundary.
    c.batch_execute("BEGIN READ WRITE").await.unwrap();
    denied(c.execute("DELETE FROM crm.customers WHERE id = 1023", &[]).await, "delete after BEGIN READ WRITE");
    c.batch_execute("ROLLBACK").await.unwrap();
    c.batch_execute("BEGIN READ WRITE").await.unwrap();
    denied(c.execute("CREATE TEMP TABLE t (x int)", &[]).await, "temporary table");
    c.batch_execute("ROLLBACK").await.unwrap();
    denied(c.execute("CREATE TABLE crm.pwned (x int)", &[]).await, "create in crm");
    denied(c.execute("CREATE TABLE public.pwned (x int)", &[]).await, "create in public");
    // The reference server's hole: COMMIT out of the read-only transaction (simple protocol).
    // The role's read-only default stops the first try; turning it off meets the privileges.
    let e = c.batch_execute("BEGIN READ ONLY; COMMIT; DROP TABLE crm.customers;").await.unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("25006"), "{e:?}");
    c.batch_execute("BEGIN READ ONLY; COMMIT; SET default_transaction_read_only = off;").await.unwrap();
    let e = c.batch_execute("DROP TABLE crm.customers").await.unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e:?}");
    let e = c.batch_execute("TRUNCATE crm.interactions").await.unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42501"), "{e:?}");
    // A GRANT to itself is only a warning ("no privileges were granted") and grants nothing.
    let _ = c.batch_execute("GRANT INSERT ON crm.customers TO crm_mcp_ro").await;
    let can: bool = c.query_one("SELECT has_table_privilege('crm.customers', 'INSERT')", &[]).await.unwrap().get(0);
    assert!(!can);
    // The extended protocol, which the server uses, refuses stacked statements outright.
    let e = c.prepare("SELECT 1; DROP TABLE crm.customers").await.unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("42601"), "{e:?}");
    let n: i64 = c.query_one("SELECT count(*) FROM crm.customers", &[]).await.unwrap().get(0);
    assert_eq!(n, 10_000);
}

#[test]
fn crm_mcp_on_postgresql() {
    let cluster = Cluster::start().expect("a throwaway PostgreSQL cluster");
    let rt = runtime();
    rt.block_on(async {
        // Over TCP with SCRAM, as the server will connect.
        let admin = client(&cluster.admin_url("postgres")).await;
        admin.batch_execute("CREATE DATABASE crm").await.unwrap();
    });
    cluster
        .psql("postgres", "CREATE DATABASE c_locale LC_COLLATE 'C' LC_CTYPE 'C' ENCODING 'UTF8' TEMPLATE template0")
        .unwrap();

    // init refuses a C-ctype database, in words, and leaves it empty.
    let out = crm(
        &["init", "--db", "postgres"],
        &[("CRM_DATABASE_URL", &cluster.admin_url("c_locale")), ("CRM_READONLY_PASSWORD", RO_PASSWORD)],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("LC_CTYPE"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(ADMIN_PASSWORD));

    // init, as the cluster's owner.
    let env = [("CRM_DATABASE_URL", cluster.admin_url("crm")), ("CRM_READONLY_PASSWORD", RO_PASSWORD.to_owned())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = crm(&["init", "--db", "postgres"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(ADMIN_PASSWORD) && !stderr(&out).contains(RO_PASSWORD), "{}", stderr(&out));
    let again = crm(&["init", "--db", "postgres"], &env);
    assert!(!again.status.success() && stderr(&again).contains("already exists"), "{}", stderr(&again));
    // init left PUBLIC's grants on the database as they were, and said so.
    assert!(stderr(&out).contains("through PUBLIC's default grant"), "{}", stderr(&out));
    assert!(stderr(&out).contains("REVOKE TEMPORARY ON DATABASE crm FROM PUBLIC"), "{}", stderr(&out));
    let public_temp =
        "SELECT EXISTS (SELECT FROM pg_database d, aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a \
                       WHERE d.datname = 'crm' AND a.grantee = 0 AND a.privilege_type = 'TEMPORARY')";
    rt.block_on(async {
        let c = client(&cluster.admin_url("crm")).await;
        assert!(c.query_one(public_temp, &[]).await.unwrap().get::<_, bool>(0), "PUBLIC keeps TEMPORARY");
    });
    // A schema crm holding anything else is refused in words, and left as it was.
    rt.block_on(async {
        let admin = client(&cluster.admin_url("postgres")).await;
        admin.batch_execute("CREATE DATABASE shared").await.unwrap();
        let c = client(&cluster.admin_url("shared")).await;
        c.batch_execute("CREATE SCHEMA crm; CREATE TABLE crm.notes (x int)").await.unwrap();
    });
    let shared = [("CRM_DATABASE_URL", cluster.admin_url("shared")), ("CRM_READONLY_PASSWORD", RO_PASSWORD.to_owned())];
    let shared: Vec<(&str, &str)> = shared.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = crm(&["init", "--db", "postgres", "--role", "other_ro"], &shared);
    assert!(!out.status.success() && stderr(&out).contains("schema crm already holds notes"), "{}", stderr(&out));

    let ro_url = cluster.url("crm_mcp_ro", RO_PASSWORD, "crm");
    // The server serves while PUBLIC may create temporary tables, and says so.
    let out = crm(&[], &[("CRM_DATABASE_URL", &ro_url)]);
    assert!(stderr(&out).contains("through PUBLIC's default grant"), "{}", stderr(&out));
    // The database owner closes it, as the note says; then nothing can be created at all.
    cluster.psql("crm", "REVOKE TEMPORARY ON DATABASE crm FROM PUBLIC").unwrap();
    rt.block_on(the_role_cannot_write(&ro_url));

    // Data written with other search keys is refused, as on SQLite.
    cluster.psql("crm", "UPDATE crm.meta SET value = '0' WHERE key = 'key_version'").unwrap();
    let out = crm(&[], &[("CRM_DATABASE_URL", &ro_url)]);
    assert!(!out.status.success() && stderr(&out).contains("other search keys (version 0"), "{}", stderr(&out));
    cluster
        .psql(
            "crm",
            &format!("UPDATE crm.meta SET value = '{}' WHERE key = 'key_version'", crm_mcp::normalize::KEY_VERSION),
        )
        .unwrap();
    // So are tables laid out by an older crm-mcp (before search_grams: no schema_version).
    cluster.psql("crm", "DELETE FROM crm.meta WHERE key = 'schema_version'").unwrap();
    let out = crm(&[], &[("CRM_DATABASE_URL", &ro_url)]);
    assert!(!out.status.success() && stderr(&out).contains("(layout none"), "{}", stderr(&out));
    cluster
        .psql(
            "crm",
            &format!("INSERT INTO crm.meta VALUES ('schema_version', '{}')", crm_mcp::store::postgres::SCHEMA_VERSION),
        )
        .unwrap();

    // The server refuses to serve as a role that can write.
    let out = crm(&[], &[("CRM_DATABASE_URL", &cluster.admin_url("crm"))]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("refusing to serve") && stderr(&out).contains("superuser"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(ADMIN_PASSWORD));
    // A wrong password is reported without any secret.
    let out = crm(&[], &[("CRM_DATABASE_URL", &cluster.url("crm_mcp_ro", "wrong-password-123", "crm"))]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("password authentication failed") && !stderr(&out).contains("wrong-password-123"),
        "{}",
        stderr(&out)
    );

    // The same suite as SQLite, through the read-only role; the URL also works from a file.
    let mut server = spawn(&[], &[("CRM_DATABASE_URL", &ro_url)]);
    full_suite(&mut server);
    search_matches_the_definitions(&mut server, false);
    let dir = tempfile::tempdir().unwrap();
    let url_file = dir.path().join("url");
    std::fs::write(&url_file, format!("{ro_url}\n")).unwrap();
    let mut from_file = spawn(&["--db", "postgres", "--db-url-file", url_file.to_str().unwrap()], &[]);
    assert!(hit_ids(&call(&mut from_file, "search_customer", json!({"query": "山田"}))).contains(&1023));

    // Search text that tries to leave the transaction changes nothing.
    for query in ["'; COMMIT; DROP TABLE crm.customers; --", "x'); DELETE FROM crm.customers; --"] {
        let r = call(&mut server, "search_customer", json!({"query": query}));
        assert!(r["isError"].is_null());
    }
    assert!(hit_ids(&call(&mut server, "search_customer", json!({"query": "山田 太郎"}))).contains(&1023));

    // The server's own statement timeout, on a role with no default one (made by hand): a lock
    // holds the table before the server ever prepared a statement, the search is cancelled by
    // the session's 300 ms (not the client's backstop, 2 s later), the answer says so in words,
    // and the server serves again once the lock is gone.
    cluster.psql("crm", "ALTER ROLE crm_mcp_ro RESET statement_timeout").unwrap();
    let mut slow = spawn(&["--statement-timeout", "300"], &[("CRM_DATABASE_URL", &ro_url)]);
    let locker = rt.block_on(async {
        let c = client(&cluster.admin_url("crm")).await;
        c.batch_execute("BEGIN; LOCK TABLE crm.customers IN ACCESS EXCLUSIVE MODE").await.unwrap();
        c
    });
    let started = std::time::Instant::now();
    let r = call(&mut slow, "search_customer", json!({"query": "yamada"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).contains("longer than 300 ms"), "{r}");
    let waited = started.elapsed();
    assert!(
        waited < std::time::Duration::from_millis(2000),
        "the session's timeout fired, not the backstop: {waited:?}"
    );
    let t = text(&r);
    assert!(!t.contains("SELECT") && !t.contains(RO_PASSWORD) && !t.contains("127.0.0.1"), "{t}");
    rt.block_on(async { locker.batch_execute("ROLLBACK").await.unwrap() });
    assert!(hit_ids(&call(&mut slow, "search_customer", json!({"query": "yamada"}))).contains(&1023));

    // Nothing was written by anyone but init.
    rt.block_on(async {
        let c = client(&cluster.admin_url("crm")).await;
        let n: i64 = c.query_one("SELECT count(*) FROM crm.customers", &[]).await.unwrap().get(0);
        assert_eq!(n, 10_000);
        let tables: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            tables, 5,
            "companies, customers, interactions, meta, search_grams (crm.notes is another database's)"
        );
    });
    drop(server);
    drop(from_file);
    drop(slow);
}
