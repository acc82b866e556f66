//! The bank registry as one flat byte blob: fixed-size rows, a sorted key index, a sorted BIC
//! index and a string pool. Built from `bank_registry.csv` by `build.rs` (so the binary embeds it
//! and needs no parsing at start-up) and by `--data DIR` at run time, with this same code.
//!
//! Layout, little-endian:
//! ```text
//! header  "PPDB0001" rows:u32 keys:u32 bics:u32 strings:u32
//! rows    ROW bytes each: country[2] code(off:u32 len:u8) name(off:u32 len:u16)
//!         short(off:u32 len:u16) source(off:u32 len:u8) bic[11] bic_len:u8 flags:u8 method[2]
//! keys    KEY bytes each: country[2] code[16] first_row:u32 row_count:u16   (sorted)
//! bics    BIC bytes each: bic11[11] 0 row:u32                              (sorted)
//! strings UTF-8
//! ```

use std::collections::HashMap;
use std::io::Read;

/// Magic bytes at the start of a blob.
pub const MAGIC: &[u8; 8] = b"PPDB0001";
/// Header size.
pub const HEADER: usize = 24;
/// Row size.
pub const ROW: usize = 39;
/// Key size.
pub const KEY: usize = 24;
/// BIC index entry size.
pub const BIC: usize = 16;
/// The longest bank code the key index holds.
pub const MAX_CODE: usize = 16;

/// Row flag: the source marks this row primary.
pub const FLAG_PRIMARY: u8 = 1;
/// Row flag: the row to answer with for its (country, code).
pub const FLAG_PREFERRED: u8 = 2;

/// One CSV record.
struct Record {
    country: String,
    code: String,
    name: String,
    bic: String,
    source: String,
    short_name: String,
    primary: bool,
    preferred: bool,
    method: String,
}

/// Builds a blob from the text of `bank_registry.csv`.
pub fn build(csv_reader: impl Read) -> Result<Vec<u8>, String> {
    let mut records = read_records(csv_reader)?;
    // Rows of one (country, code) must be contiguous; codes sort as text; coded rows first.
    records.sort_by(|a, b| (&a.country, a.code.is_empty(), &a.code).cmp(&(&b.country, b.code.is_empty(), &b.code)));
    let mut pool = StringPool::default();
    let mut rows = Vec::with_capacity(records.len() * ROW);
    for r in &records {
        write_row(&mut rows, r, &mut pool)?;
    }
    let keys = key_index(&records);
    let bics = bic_index(&records);
    let mut blob = Vec::with_capacity(HEADER + rows.len() + keys.len() + bics.len() + pool.bytes.len());
    blob.extend_from_slice(MAGIC);
    for n in [records.len(), keys.len() / KEY, bics.len() / BIC, pool.bytes.len()] {
        blob.extend_from_slice(&(n as u32).to_le_bytes());
    }
    blob.extend_from_slice(&rows);
    blob.extend_from_slice(&keys);
    blob.extend_from_slice(&bics);
    blob.extend_from_slice(&pool.bytes);
    Ok(blob)
}

fn read_records(csv_reader: impl Read) -> Result<Vec<Record>, String> {
    let mut reader = csv::Reader::from_reader(csv_reader);
    let headers = reader.headers().map_err(|e| e.to_string())?.clone();
    let column =
        |name: &str| headers.iter().position(|h| h == name).ok_or(format!("bank_registry.csv has no {name} column"));
    let cols = [
        column("country")?,
        column("bank_code")?,
        column("name")?,
        column("bic")?,
        column("source")?,
        column("short_name")?,
        column("primary")?,
        column("preferred")?,
        column("check_method")?,
    ];
    let mut records = Vec::new();
    for (line, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("bank_registry.csv: {e}"))?;
        let get = |i: usize| row.get(cols[i]).unwrap_or("").to_owned();
        let record = Record {
            country: get(0),
            code: get(1),
            name: get(2),
            bic: get(3),
            source: get(4),
            short_name: get(5),
            primary: get(6) == "1",
            preferred: get(7) == "1",
            method: get(8),
        };
        let valid = record.country.len() == 2
            && record.code.len() <= MAX_CODE
            && (record.bic.is_empty() || record.bic.len() == 8 || record.bic.len() == 11)
            && record.method.len() <= 2;
        if !valid {
            return Err(format!(
                "bank_registry.csv row {}: malformed country, bank code, BIC or check method",
                line + 2
            ));
        }
        records.push(record);
    }
    Ok(records)
}

#[derive(Default)]
struct StringPool {
    bytes: Vec<u8>,
    seen: HashMap<String, u32>,
}

impl StringPool {
    fn add(&mut self, s: &str) -> u32 {
        if let Some(&off) = self.seen.get(s) {
            return off;
        }
        let off = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.seen.insert(s.to_owned(), off);
        off
    }
}

fn write_row(out: &mut Vec<u8>, r: &Record, pool: &mut StringPool) -> Result<(), String> {
    let too_long = |what: &str| format!("{what} of {} {} is too long", r.country, r.code);
    out.extend_from_slice(r.country.as_bytes());
    out.extend_from_slice(&pool.add(&r.code).to_le_bytes());
    out.push(r.code.len() as u8);
    out.extend_from_slice(&pool.add(&r.name).to_le_bytes());
    out.extend_from_slice(&u16::try_from(r.name.len()).map_err(|_| too_long("name"))?.to_le_bytes());
    out.extend_from_slice(&pool.add(&r.short_name).to_le_bytes());
    out.extend_from_slice(&u16::try_from(r.short_name.len()).map_err(|_| too_long("short name"))?.to_le_bytes());
    out.extend_from_slice(&pool.add(&r.source).to_le_bytes());
    out.push(u8::try_from(r.source.len()).map_err(|_| too_long("source"))?);
    let mut bic = [0u8; 11];
    bic[..r.bic.len()].copy_from_slice(r.bic.as_bytes());
    out.extend_from_slice(&bic);
    out.push(r.bic.len() as u8);
    out.push(if r.primary { FLAG_PRIMARY } else { 0 } | if r.preferred { FLAG_PREFERRED } else { 0 });
    let mut method = [0u8; 2];
    method[..r.method.len()].copy_from_slice(r.method.as_bytes());
    out.extend_from_slice(&method);
    Ok(())
}

/// The padded key of a (country, code).
pub fn key_bytes(country: &[u8], code: &[u8]) -> Option<[u8; 2 + MAX_CODE]> {
    if country.len() != 2 || code.len() > MAX_CODE {
        return None;
    }
    let mut key = [0u8; 2 + MAX_CODE];
    key[..2].copy_from_slice(country);
    key[2..2 + code.len()].copy_from_slice(code);
    Some(key)
}

fn key_index(records: &[Record]) -> Vec<u8> {
    let mut keys: Vec<([u8; 2 + MAX_CODE], u32, u16)> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if r.code.is_empty() {
            continue;
        }
        let key = key_bytes(r.country.as_bytes(), r.code.as_bytes()).expect("checked on read");
        match keys.last_mut() {
            Some((k, _, count)) if *k == key => *count += 1,
            _ => keys.push((key, i as u32, 1)),
        }
    }
    keys.sort_by_key(|k| k.0);
    let mut out = Vec::with_capacity(keys.len() * KEY);
    for (key, first, count) in keys {
        out.extend_from_slice(&key);
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
    }
    out
}

/// A BIC as 11 characters: a BIC8 gets the primary-office suffix `XXX`.
pub fn bic11(bic: &[u8]) -> Option<[u8; 11]> {
    let mut out = [0u8; 11];
    match bic.len() {
        8 => {
            out[..8].copy_from_slice(bic);
            out[8..].copy_from_slice(b"XXX");
        }
        11 => out.copy_from_slice(bic),
        _ => return None,
    }
    Some(out)
}

fn bic_index(records: &[Record]) -> Vec<u8> {
    let mut entries: Vec<([u8; 11], u32)> =
        records.iter().enumerate().filter_map(|(i, r)| bic11(r.bic.as_bytes()).map(|b| (b, i as u32))).collect();
    entries.sort();
    let mut out = Vec::with_capacity(entries.len() * BIC);
    for (bic, row) in entries {
        out.extend_from_slice(&bic);
        out.push(0);
        out.extend_from_slice(&row.to_le_bytes());
    }
    out
}
