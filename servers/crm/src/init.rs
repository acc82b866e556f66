//! `crm-mcp init`: creates the schema and loads a dataset into an empty database.
//!
//! On PostgreSQL it also checks what would silently break CJK search (a `C` ctype empties
//! `pg_trgm`'s trigrams of Japanese text) and creates the serving role: `LOGIN`, no inheritance,
//! `USAGE` on schema `crm` and `SELECT` on its three tables, nothing else; temporary tables are
//! revoked from `PUBLIC` on the database, and the role's defaults are read-only with timeouts.

#[cfg(feature = "postgres")]
pub use pg::{init_postgres, PgInit};

#[cfg(feature = "postgres")]
mod pg {
    use tokio_postgres::Client;

    use crate::dataset::{CustomerKeys, Dataset};
    use crate::store::postgres::{connect, describe, parse_url, tls};

    /// What `init` is told on PostgreSQL.
    pub struct PgInit {
        /// The administrator's (or schema owner's) connection URL.
        pub url: String,
        /// The serving role to create or update.
        pub role: String,
        /// Its password.
        pub password: String,
    }

    const SCHEMA: &str = "
CREATE SCHEMA IF NOT EXISTS crm;
CREATE TABLE crm.companies(
    id bigint PRIMARY KEY, name text NOT NULL, name_kana text NOT NULL, domain text NOT NULL);
CREATE TABLE crm.customers(
    id bigint PRIMARY KEY, name text NOT NULL, name_kana text NOT NULL, name_latin text NOT NULL,
    email text NOT NULL, phone text NOT NULL, company_id bigint REFERENCES crm.companies(id),
    owner text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    name_key text COLLATE \"C\" NOT NULL, kana_key text COLLATE \"C\" NOT NULL,
    latin_key text COLLATE \"C\" NOT NULL, latin_rev_key text COLLATE \"C\" NOT NULL,
    email_key text COLLATE \"C\" NOT NULL, name_len integer NOT NULL);
CREATE TABLE crm.interactions(
    id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES crm.customers(id),
    occurred_at timestamptz NOT NULL, channel text NOT NULL, subject text NOT NULL, body text NOT NULL);
CREATE TABLE crm.meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE crm.search_grams(
    kind integer NOT NULL, gram text COLLATE \"C\" NOT NULL, name_len integer NOT NULL, id bigint NOT NULL,
    PRIMARY KEY (kind, gram, name_len, id));
";

    const INDEXES: &str = "
CREATE INDEX customers_name_trgm ON crm.customers USING gin (name_key gin_trgm_ops);
CREATE INDEX customers_kana_trgm ON crm.customers USING gin (kana_key gin_trgm_ops);
CREATE INDEX customers_latin_trgm ON crm.customers USING gin (latin_key gin_trgm_ops);
CREATE INDEX customers_latin_rev_trgm ON crm.customers USING gin (latin_rev_key gin_trgm_ops);
CREATE INDEX customers_email_trgm ON crm.customers USING gin (email_key gin_trgm_ops);
CREATE INDEX customers_name_key ON crm.customers (name_key, name_len, id);
CREATE INDEX customers_kana_key ON crm.customers (kana_key, name_len, id);
CREATE INDEX customers_latin_key ON crm.customers (latin_key, name_len, id);
CREATE INDEX customers_latin_rev_key ON crm.customers (latin_rev_key, name_len, id);
CREATE INDEX customers_email_key ON crm.customers (email_key, name_len, id);
CREATE INDEX customers_by_len ON crm.customers (name_len, id);
CREATE INDEX interactions_by_customer ON crm.interactions (customer_id, occurred_at DESC, id DESC);
ANALYZE crm.companies, crm.customers, crm.interactions, crm.search_grams;
";

    const BATCH: usize = 5_000;

    fn sql_error(what: &str) -> impl Fn(tokio_postgres::Error) -> String + '_ {
        move |e| format!("{what}: {}", describe(&e))
    }

    /// A role name we are willing to splice into DDL (through `format('%I')` anyway).
    fn valid_role(name: &str) -> bool {
        let mut chars = name.chars();
        matches!(chars.next(), Some('a'..='z' | '_'))
            && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
            && name.len() <= 63
    }

    async fn check_cluster(client: &Client) -> Result<(), String> {
        let ctype: String = client
            .query_one("SELECT datctype::text FROM pg_database WHERE datname = current_database()", &[])
            .await
            .map_err(sql_error("reading the database's locale"))?
            .get(0);
        if matches!(ctype.to_ascii_uppercase().as_str(), "C" | "POSIX") {
            return Err(format!(
                "this database's LC_CTYPE is {ctype:?}: pg_trgm then sees no trigrams in Japanese, Chinese or Korean \
                 text and CJK search silently finds nothing. Create the database with a UTF-8 ctype (initdb \
                 --locale=C.UTF-8 -E UTF8, or CREATE DATABASE ... LC_CTYPE 'C.UTF-8' TEMPLATE template0)."
            ));
        }
        client.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_trgm").await.map_err(sql_error(
            "CREATE EXTENSION pg_trgm (install postgresql-contrib; a superuser may need to run it)",
        ))?;
        let trigrams: String =
            client.query_one("SELECT show_trgm('山田太郎')::text", &[]).await.map_err(sql_error("show_trgm"))?.get(0);
        if trigrams == "{}" {
            return Err("pg_trgm extracts no trigrams from 山田太郎 in this database (a non-UTF-8 ctype?); CJK \
                        search would find nothing. Use a database with a UTF-8 ctype such as C.UTF-8."
                .into());
        }
        let held: Vec<String> = client
            .query(
                "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = 'crm' ORDER BY 1 LIMIT 6",
                &[],
            )
            .await
            .map_err(sql_error("looking into schema crm"))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !held.is_empty() {
            return Err(format!(
                "schema crm already holds {} (crm.customers already exists, or something else does): crm-mcp init \
                 only fills an empty schema crm and touches nothing else; DROP SCHEMA crm CASCADE to start again, \
                 or use another database",
                held.join(", ")
            ));
        }
        Ok(())
    }

    async fn load(client: &Client, data: &Dataset) -> Result<(), String> {
        let companies =
            "INSERT INTO crm.companies SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])";
        for chunk in data.companies.chunks(BATCH) {
            let ids: Vec<i64> = chunk.iter().map(|c| c.id).collect();
            let col = |f: fn(&crate::dataset::CompanyRow) -> &str| chunk.iter().map(f).collect::<Vec<&str>>();
            let (names, kana, domains) = (col(|c| &c.name), col(|c| &c.name_kana), col(|c| &c.domain));
            client
                .execute(companies, &[&ids, &names, &kana, &domains])
                .await
                .map_err(sql_error("loading companies"))?;
        }
        let customers = "INSERT INTO crm.customers SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], \
            $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[]::timestamptz[], \
            $10::text[]::timestamptz[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int[])";
        for chunk in data.customers.chunks(BATCH) {
            let keys: Vec<CustomerKeys> = chunk.iter().map(CustomerKeys::of).collect();
            let ids: Vec<i64> = chunk.iter().map(|c| c.id).collect();
            let companies: Vec<Option<i64>> = chunk.iter().map(|c| c.company_id).collect();
            let col = |f: fn(&crate::dataset::CustomerRow) -> &str| chunk.iter().map(f).collect::<Vec<&str>>();
            let key = |f: fn(&CustomerKeys) -> &str| keys.iter().map(f).collect::<Vec<&str>>();
            let lens: Vec<i32> = keys.iter().map(|k| k.name_len).collect();
            client
                .execute(
                    customers,
                    &[
                        &ids,
                        &col(|c| &c.name),
                        &col(|c| &c.name_kana),
                        &col(|c| &c.name_latin),
                        &col(|c| &c.email),
                        &col(|c| &c.phone),
                        &companies,
                        &col(|c| &c.owner),
                        &col(|c| &c.created_at),
                        &col(|c| &c.updated_at),
                        &key(|k| &k.name),
                        &key(|k| &k.kana),
                        &key(|k| &k.latin),
                        &key(|k| &k.latin_family_first),
                        &key(|k| &k.email),
                        &lens,
                    ],
                )
                .await
                .map_err(sql_error("loading customers"))?;
        }
        let interactions = "INSERT INTO crm.interactions SELECT * FROM unnest($1::bigint[], $2::bigint[], \
            $3::text[]::timestamptz[], $4::text[], $5::text[], $6::text[])";
        for chunk in data.interactions.chunks(BATCH) {
            let ids: Vec<i64> = chunk.iter().map(|i| i.id).collect();
            let customers: Vec<i64> = chunk.iter().map(|i| i.customer_id).collect();
            let col = |f: fn(&crate::dataset::InteractionRow) -> &str| chunk.iter().map(f).collect::<Vec<&str>>();
            client
                .execute(
                    interactions,
                    &[
                        &ids,
                        &customers,
                        &col(|i| &i.occurred_at),
                        &col(|i| &i.channel),
                        &col(|i| &i.subject),
                        &col(|i| &i.body),
                    ],
                )
                .await
                .map_err(sql_error("loading interactions"))?;
        }
        let keys: Vec<(i64, CustomerKeys)> = data.customers.iter().map(|c| (c.id, CustomerKeys::of(c))).collect();
        let grams = crate::grams::rows(&keys);
        let insert =
            "INSERT INTO crm.search_grams SELECT * FROM unnest($1::int[], $2::text[], $3::int[], $4::bigint[])";
        for chunk in grams.chunks(BATCH * 10) {
            let kinds: Vec<i32> = chunk.iter().map(|g| g.kind as i32).collect();
            let texts: Vec<&str> = chunk.iter().map(|g| g.gram.as_str()).collect();
            let lens: Vec<i32> = chunk.iter().map(|g| g.name_len).collect();
            let ids: Vec<i64> = chunk.iter().map(|g| g.id).collect();
            client
                .execute(insert, &[&kinds, &texts, &lens, &ids])
                .await
                .map_err(sql_error("loading the search grams"))?;
        }
        client
            .execute("INSERT INTO crm.meta VALUES ('schema_version', $1)", &[&crate::store::postgres::SCHEMA_VERSION])
            .await
            .map_err(sql_error("writing crm.meta"))?;
        client
            .execute("INSERT INTO crm.meta VALUES ('key_version', $1)", &[&crate::normalize::KEY_VERSION])
            .await
            .map_err(sql_error("writing crm.meta"))?;
        Ok(())
    }

    /// Runs a statement built by the server with `format()` (identifiers `%I`, literals `%L`), so
    /// that nothing we were given is spliced into SQL by hand.
    async fn formatted(
        client: &Client,
        template: &str,
        args: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<(), String> {
        let sql: String = client.query_one(template, args).await.map_err(sql_error("building a statement"))?.get(0);
        client.batch_execute(&sql).await.map_err(|e| format!("setting up the read-only role: {}", describe(&e)))
    }

    async fn create_role(client: &Client, role: &str, password: &str) -> Result<(), String> {
        let exists: bool = client
            .query_one("SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)", &[&role])
            .await
            .map_err(sql_error("looking up the role"))?
            .get(0);
        let verb = if exists { "ALTER" } else { "CREATE" };
        let template = format!(
            "SELECT format('{verb} ROLE %I LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS \
             CONNECTION LIMIT 32 PASSWORD %L', $1::text, $2::text)"
        );
        formatted(client, &template, &[&role, &password]).await?;
        // Only what init made (schema crm and its tables) and the serving role are changed: what
        // PUBLIC holds on the database or on schema public is the database owner's to decide.
        let grants = "SELECT format('REVOKE ALL ON SCHEMA crm FROM PUBLIC; \
            REVOKE ALL ON ALL TABLES IN SCHEMA crm FROM PUBLIC; \
            GRANT USAGE ON SCHEMA crm TO %1$I; \
            GRANT SELECT ON crm.companies, crm.customers, crm.interactions, crm.meta, crm.search_grams TO %1$I; \
            REVOKE TEMPORARY ON DATABASE %2$I FROM %1$I; \
            ALTER ROLE %1$I SET default_transaction_read_only = on; \
            ALTER ROLE %1$I SET statement_timeout = ''3s''; \
            ALTER ROLE %1$I SET idle_in_transaction_session_timeout = ''10s''; \
            ALTER ROLE %1$I SET search_path = crm', $1::text, current_database())";
        formatted(client, grants, &[&role]).await?;
        let row = client
            .query_one(
                "SELECT has_database_privilege($1, current_database(), 'TEMPORARY'), \
                        has_table_privilege($1, 'crm.customers', 'INSERT'), \
                        has_schema_privilege($1, 'public', 'CREATE'), current_database()::text",
                &[&role],
            )
            .await
            .map_err(sql_error("checking the role"))?;
        if row.get::<_, bool>(1) {
            return Err(format!(
                "role {role} can still write to crm.customers; run crm-mcp init as the schema's owner"
            ));
        }
        // What PUBLIC grants every role, said once with the statements that would close it.
        let database: String = row.get(3);
        for (held, what, fix) in [
            (
                row.get::<_, bool>(0),
                "create temporary tables",
                format!("REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC"),
            ),
            (
                row.get::<_, bool>(2),
                "create objects in schema public",
                "REVOKE CREATE ON SCHEMA public FROM PUBLIC".to_owned(),
            ),
        ] {
            if held {
                eprintln!(
                    "crm-mcp init: note: role {role} may {what} through PUBLIC's default grant, which init leaves \
                     as it is (every statement crm-mcp runs is READ ONLY). To close it for every role: {fix}"
                );
            }
        }
        Ok(())
    }

    /// Creates the schema, loads `data`, builds the indexes and the serving role.
    pub async fn init_postgres(init: &PgInit, data: &Dataset) -> Result<(), String> {
        if !valid_role(&init.role) {
            return Err(format!("--role {:?}: use lower-case letters, digits and _ (at most 63)", init.role));
        }
        if init.password.len() < 12 {
            return Err("the read-only role's password must have at least 12 characters".into());
        }
        let config = parse_url(&init.url)?;
        let client = connect(&config, &tls()?).await.map_err(|e| format!("cannot connect: {e}"))?;
        check_cluster(&client).await?;
        client.batch_execute("BEGIN").await.map_err(sql_error("BEGIN"))?;
        let loaded = async {
            client.batch_execute(SCHEMA).await.map_err(sql_error("creating schema crm"))?;
            load(&client, data).await?;
            client.batch_execute(INDEXES).await.map_err(sql_error("creating the trigram indexes"))?;
            create_role(&client, &init.role, &init.password).await
        }
        .await;
        match loaded {
            Ok(()) => client.batch_execute("COMMIT").await.map_err(sql_error("COMMIT")),
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn role_names() {
            assert!(super::valid_role("crm_mcp_ro"));
            assert!(!super::valid_role("Robert'); DROP"));
            assert!(!super::valid_role(""));
        }
    }
}
