//! The bank registry: national bank codes and BICs to banks, read straight from the blob that
//! `build.rs` embeds (no parsing at start-up), or from one built from `--data DIR`.

use crate::blob::{self, BIC, HEADER, KEY, MAX_CODE, ROW};

/// A read-only view of a registry blob.
#[derive(Clone, Copy)]
pub struct Registry {
    rows: &'static [u8],
    keys: &'static [u8],
    bics: &'static [u8],
    strings: &'static [u8],
}

/// One bank record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bank {
    /// ISO country code of the IBAN.
    pub country: &'static str,
    /// National bank code (empty for BIC-only rows).
    pub code: &'static str,
    /// Name in its original spelling.
    pub name: &'static str,
    /// Short name, when the source gives one.
    pub short_name: &'static str,
    /// BIC (8 or 11 characters), or empty.
    pub bic: &'static str,
    /// The data's source id.
    pub source: &'static str,
    /// The source marks this row primary.
    pub primary: bool,
    /// The row that answers for its code.
    pub preferred: bool,
    /// DE: the Bundesbank check-digit method.
    pub check_method: &'static str,
}

/// The registry compiled into the binary.
pub static EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/registry.bin"));

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

impl Registry {
    /// A view of `blob`; `Err` if it is not a registry blob.
    pub fn from_blob(blob: &'static [u8]) -> Result<Registry, String> {
        if blob.len() < HEADER || &blob[..8] != blob::MAGIC {
            return Err("not a paypedia registry blob".into());
        }
        let (rows, keys, bics, strings) = (u32_at(blob, 8), u32_at(blob, 12), u32_at(blob, 16), u32_at(blob, 20));
        let sizes = [rows * ROW, keys * KEY, bics * BIC, strings];
        if HEADER + sizes.iter().sum::<usize>() != blob.len() {
            return Err("truncated registry blob".into());
        }
        let mut at = HEADER;
        let mut take = |n: usize| {
            let part = &blob[at..at + n];
            at += n;
            part
        };
        Ok(Registry { rows: take(sizes[0]), keys: take(sizes[1]), bics: take(sizes[2]), strings: take(sizes[3]) })
    }

    /// The embedded registry.
    pub fn embedded() -> Registry {
        Registry::from_blob(EMBEDDED).expect("the embedded registry is valid")
    }

    /// Builds a registry from a `bank_registry.csv` file (the blob is kept for the process's life).
    pub fn from_csv_file(path: &std::path::Path) -> Result<Registry, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let blob = blob::build(file)?;
        Registry::from_blob(Box::leak(blob.into_boxed_slice()))
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len() / ROW
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How many distinct (country, bank code) pairs.
    pub fn code_count(&self) -> usize {
        self.keys.len() / KEY
    }

    fn string(&self, off: usize, len: usize) -> &'static str {
        // Written from `&str` by the builder; a corrupt blob yields "" rather than a panic.
        let strings: &'static [u8] = self.strings;
        strings.get(off..off + len).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("")
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> Bank {
        let r: &'static [u8] = &self.rows[i * ROW..(i + 1) * ROW];
        let bic_len = (r[35] as usize).min(11);
        let method_len = r[37..39].iter().take_while(|&&b| b != 0).count();
        Bank {
            country: std::str::from_utf8(&r[0..2]).unwrap_or(""),
            code: self.string(u32_at(r, 2), r[6] as usize),
            name: self.string(u32_at(r, 7), u16_at(r, 11)),
            short_name: self.string(u32_at(r, 13), u16_at(r, 17)),
            source: self.string(u32_at(r, 19), r[23] as usize),
            bic: std::str::from_utf8(&r[24..24 + bic_len]).unwrap_or(""),
            primary: r[36] & blob::FLAG_PRIMARY != 0,
            preferred: r[36] & blob::FLAG_PREFERRED != 0,
            check_method: std::str::from_utf8(&r[37..37 + method_len]).unwrap_or(""),
        }
    }

    fn key_at(&self, i: usize) -> &[u8] {
        &self.keys[i * KEY..i * KEY + 2 + MAX_CODE]
    }

    /// The rows of a (country, bank code), the preferred one first; empty if unknown.
    pub fn lookup(&self, country: &str, code: &str) -> Vec<Bank> {
        let Some((first, count)) = self.find(country, code) else {
            return Vec::new();
        };
        let mut banks: Vec<Bank> = (first..first + count).map(|i| self.row(i)).collect();
        banks.sort_by_key(|b| !b.preferred);
        banks
    }

    /// The preferred row of a (country, bank code): the hot path of IBAN checking, no allocation.
    pub fn preferred(&self, country: &str, code: &str) -> Option<Bank> {
        let (first, count) = self.find(country, code)?;
        let rows = (first..first + count).map(|i| self.row(i));
        let mut fallback = None;
        for bank in rows {
            if bank.preferred {
                return Some(bank);
            }
            fallback.get_or_insert(bank);
        }
        fallback
    }

    fn find(&self, country: &str, code: &str) -> Option<(usize, usize)> {
        let key = blob::key_bytes(country.as_bytes(), code.as_bytes())?;
        let (mut lo, mut hi) = (0, self.code_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key_at(mid).cmp(&key[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let entry = &self.keys[mid * KEY..(mid + 1) * KEY];
                    return Some((u32_at(entry, 18), u16_at(entry, 22)));
                }
            }
        }
        None
    }

    /// Every row whose BIC is `bic` (a BIC8 also matches its `XXX` form), or, for a BIC8, every
    /// branch of that institution.
    pub fn by_bic(&self, bic: &str) -> Vec<Bank> {
        let bic = bic.as_bytes();
        let prefix: &[u8] = if bic.len() == 8 { bic } else { &bic[..bic.len().min(11)] };
        let exact = blob::bic11(bic);
        let n = self.bics.len() / BIC;
        let entry = |i: usize| &self.bics[i * BIC..(i + 1) * BIC];
        let start = partition_point(n, |i| &entry(i)[..prefix.len().min(11)] < prefix);
        let mut out = Vec::new();
        for i in start..n {
            let e = entry(i);
            if !e.starts_with(prefix) {
                break;
            }
            if bic.len() == 11 && exact.is_some_and(|x| e[..11] != x) {
                continue;
            }
            out.push(self.row(u32_at(e, 12)));
        }
        out
    }

    /// Number of bank codes per country.
    pub fn codes_in(&self, country: &str) -> usize {
        let n = self.code_count();
        let c = country.as_bytes();
        let start = partition_point(n, |i| &self.key_at(i)[..2] < c);
        let end = partition_point(n, |i| &self.key_at(i)[..2] <= c);
        end - start
    }
}

fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_registry_has_the_documented_counts() {
        let r = Registry::embedded();
        assert_eq!(r.len(), 32_238);
        assert_eq!(r.code_count(), 25_333);
        assert_eq!(r.codes_in("DE"), 3_505);
        assert_eq!(r.codes_in("SA"), 0);
    }

    #[test]
    fn looks_up_codes_and_bics() {
        let r = Registry::embedded();
        let bnp = r.preferred("FR", "30004").unwrap();
        assert_eq!((bnp.name, bnp.bic), ("BNP PARIBAS", "BNPAFRPP"));
        let cs = r.preferred("CH", "04835").unwrap();
        assert_eq!(cs.bic, "UBSWCHZH80A");
        assert!(r.preferred("FR", "99999").is_none());
        assert!(r.preferred("FR", "").is_none());
        let nwbk = r.by_bic("NWBKGB2L");
        assert!(nwbk.iter().any(|b| b.bic == "NWBKGB2LXXX"), "a BIC8 matches its XXX form");
        assert!(!r.by_bic("COBADEFFXXX").is_empty());
        assert!(r.by_bic("ZZZZZZZZ").is_empty());
    }
}
