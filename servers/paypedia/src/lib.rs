//! paypedia: IBAN checking and bank-code resolution on a real registry (schwifty 2026.10.1,
//! built from central-bank publications; see `data/README.md`).
//!
//! The library holds the domain logic; `main.rs` exposes it as MCP tools, resources and a
//! prompt. Everything here is synchronous and allocation-light: checking an IBAN, bank lookup
//! included, takes well under a microsecond.

pub mod batch;
mod blob;
pub mod countries;
pub mod extract;
pub mod formats;
pub mod germany;
pub mod iban;
pub mod national;
pub mod registry;
pub mod tools;

use std::path::Path;
use std::sync::OnceLock;

use formats::Formats;
use registry::Registry;

/// The registry and the IBAN formats.
pub struct Data {
    /// Bank codes and BICs.
    pub registry: Registry,
    formats_csv: String,
    formats: OnceLock<Formats>,
}

impl Data {
    /// The data compiled into the binary. Costs nothing until first used.
    pub fn embedded() -> &'static Data {
        static DATA: OnceLock<Data> = OnceLock::new();
        DATA.get_or_init(|| Data {
            registry: Registry::embedded(),
            formats_csv: String::new(),
            formats: OnceLock::new(),
        })
    }

    /// Data from a directory holding `bank_registry.csv` and `iban_formats.csv` in the format
    /// of `data/README.md`; checked completely before serving.
    pub fn load(dir: &Path) -> Result<&'static Data, String> {
        let registry = Registry::from_csv_file(&dir.join("bank_registry.csv"))?;
        let path = dir.join("iban_formats.csv");
        let formats_csv = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let formats = Formats::parse(&formats_csv)?;
        let data = Data { registry, formats_csv, formats: OnceLock::from(formats) };
        Ok(Box::leak(Box::new(data)))
    }

    /// The IBAN formats, parsed on first use.
    pub fn formats(&self) -> &Formats {
        self.formats.get_or_init(|| {
            let text = if self.formats_csv.is_empty() { formats::EMBEDDED_CSV } else { &self.formats_csv };
            Formats::parse(text).expect("the embedded IBAN formats are valid")
        })
    }
}
