//! The rows a CRM database holds, read from CSV: the demo data built into the binary
//! (`data/*.csv`, generated once by `data/generate.py`) or a directory of the same files.

use std::path::Path;

use serde::Deserialize;

use crate::normalize::{family_first_key, search_key};

/// A company.
#[derive(Debug, Clone, Deserialize)]
pub struct CompanyRow {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The reading of its name in kana, when known.
    pub name_kana: String,
    /// Its web domain.
    pub domain: String,
}

/// A customer (a contact person).
#[derive(Debug, Clone, Deserialize)]
pub struct CustomerRow {
    /// Its id (the seed's 顧客ID).
    pub id: i64,
    /// The name as written (kanji, kana or Latin letters).
    pub name: String,
    /// The reading in kana (furigana), as the CRM user entered it.
    pub name_kana: String,
    /// The romanized name, given name first.
    pub name_latin: String,
    /// E-mail address.
    pub email: String,
    /// Phone number.
    pub phone: String,
    /// The company the customer works for.
    pub company_id: Option<i64>,
    /// The account owner on our side.
    pub owner: String,
    /// When the record was created (RFC 3339, UTC).
    pub created_at: String,
    /// When it last changed (RFC 3339, UTC).
    pub updated_at: String,
}

/// The search keys of a customer, written next to the record (see [`crate::normalize`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomerKeys {
    /// Key of the name.
    pub name: String,
    /// Key of the kana reading.
    pub kana: String,
    /// Key of the romanized name, as written.
    pub latin: String,
    /// Key of the romanized name, family name first.
    pub latin_family_first: String,
    /// Key of the e-mail address.
    pub email: String,
    /// Length of the name key in characters (shorter names rank first among equals).
    pub name_len: i32,
}

impl CustomerKeys {
    /// The keys of `row`.
    pub fn of(row: &CustomerRow) -> CustomerKeys {
        let name = search_key(&row.name);
        CustomerKeys {
            name_len: i32::try_from(name.chars().count()).unwrap_or(i32::MAX),
            name,
            kana: search_key(&row.name_kana),
            latin: search_key(&row.name_latin),
            latin_family_first: family_first_key(&row.name_latin),
            email: search_key(&row.email),
        }
    }
}

/// A contact with a customer: a mail, a call, a meeting.
#[derive(Debug, Clone, Deserialize)]
pub struct InteractionRow {
    /// Its id.
    pub id: i64,
    /// The customer.
    pub customer_id: i64,
    /// When it happened (RFC 3339, UTC).
    pub occurred_at: String,
    /// email, phone, meeting or chat.
    pub channel: String,
    /// A subject line.
    pub subject: String,
    /// The text: customer-written, so untrusted.
    pub body: String,
}

/// Everything a database is initialised with.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Companies.
    pub companies: Vec<CompanyRow>,
    /// Customers.
    pub customers: Vec<CustomerRow>,
    /// Interactions.
    pub interactions: Vec<InteractionRow>,
}

const COMPANIES: &str = include_str!("../data/companies.csv");
const CUSTOMERS: &str = include_str!("../data/customers.csv");
const INTERACTIONS: &str = include_str!("../data/interactions.csv");

fn parse<T: for<'de> Deserialize<'de>>(name: &str, text: &str) -> Result<Vec<T>, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    reader.deserialize().enumerate().map(|(i, row)| row.map_err(|e| format!("{name}, row {}: {e}", i + 2))).collect()
}

impl Dataset {
    /// The demo data built into the binary: 300 companies, 10,000 customers, 15,019 interactions.
    pub fn demo() -> Dataset {
        Dataset::parse(COMPANIES, CUSTOMERS, INTERACTIONS).expect("the embedded demo data parses")
    }

    /// A dataset from `companies.csv`, `customers.csv` and `interactions.csv` in `dir` (the
    /// columns of `data/`).
    pub fn load_dir(dir: &Path) -> Result<Dataset, String> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
        };
        Dataset::parse(&read("companies.csv")?, &read("customers.csv")?, &read("interactions.csv")?)
    }

    fn parse(companies: &str, customers: &str, interactions: &str) -> Result<Dataset, String> {
        Ok(Dataset {
            companies: parse("companies.csv", companies)?,
            customers: parse("customers.csv", customers)?,
            interactions: parse("interactions.csv", interactions)?,
        })
    }

    /// The customers repeated `times` times (ids shifted by multiples of 1,000,000, e-mail
    /// addresses tagged), for benchmarks at scale; interactions are not repeated.
    pub fn scaled(mut self, times: u32) -> Dataset {
        let base = self.customers.clone();
        for copy in 1..i64::from(times.max(1)) {
            self.customers.extend(base.iter().map(|c| {
                let mut c = c.clone();
                c.id += copy * 1_000_000;
                c.email = match c.email.split_once('@') {
                    Some((local, domain)) => format!("{local}+{copy}@{domain}"),
                    None => format!("{}+{copy}", c.email),
                };
                c
            }));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_data_holds_the_seeds_customer() {
        let data = Dataset::demo();
        assert_eq!(data.customers.len(), 10_000);
        let taro = data.customers.iter().find(|c| c.id == 1023).unwrap();
        assert_eq!((taro.name.as_str(), taro.email.as_str()), ("山田太郎", "yamada@example.com"));
        let keys = CustomerKeys::of(taro);
        assert_eq!(keys.kana, "ヤマダタロウ");
        assert_eq!(keys.latin_family_first, "yamadataro");
        assert_eq!(Dataset::demo().scaled(3).customers.len(), 30_000);
    }
}
