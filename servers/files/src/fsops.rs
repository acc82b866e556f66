//! The file operations the tools share, each on descriptors opened beneath a root: open a file
//! to read (regular files only, within the size cap, not multiply linked unless allowed), list a
//! directory, write atomically (a temporary file in the same directory, renamed into place).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};

use mcp::server::ToolError;
use rustix::fs::{fstat, renameat, statat, unlinkat, AtFlags, FileType, Mode, OFlags, Stat};

use crate::errors::tool_error;
use crate::paths::Located;
use crate::sandbox::{open_beneath, open_beneath_mode, open_parent};
use crate::App;

/// A directory entry: its name (bytes, as on disk) and kind.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name's bytes.
    pub name: Vec<u8>,
    /// What it is, from the directory itself (no `stat`).
    pub kind: Kind,
}

/// What an entry is (serialized as `file`, `directory`, `symlink` or `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    #[serde(rename = "directory")]
    Dir,
    /// A symbolic link (never followed in listings and walks).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl Kind {
    /// From a file type.
    pub fn of(t: FileType) -> Kind {
        match t {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        }
    }

    /// The prefix of a listing line, as the reference server writes it: `[DIR]` or `[FILE]`.
    pub fn tag(self) -> &'static str {
        if self == Kind::Dir {
            "[DIR]"
        } else {
            "[FILE]"
        }
    }
}

impl Entry {
    /// The name as text; bytes that are not UTF-8 are shown as `\xNN` (such a name can be
    /// listed, not addressed).
    pub fn display(&self) -> String {
        display_name(&self.name)
    }
}

/// A name as text, invalid UTF-8 escaped as `\xNN`.
pub fn display_name(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(s) => s.to_owned(),
        Err(_) => {
            let mut out = String::new();
            for chunk in name.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    out.push_str(&format!("\\x{b:02X}"));
                }
            }
            out
        }
    }
}

/// Reads the entries of the open directory `dir` (without `.` and `..`), at most `limit`.
pub fn list(dir: OwnedFd, limit: usize) -> io::Result<(Vec<Entry>, bool)> {
    let mut entries = Vec::new();
    let mut reader = rustix::fs::Dir::new(dir)?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if entries.len() >= limit {
            return Ok((entries, true));
        }
        let mut kind = Kind::of(entry.file_type());
        if entry.file_type() == FileType::Unknown {
            kind = match statat(reader.fd()?, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Kind::of(FileType::from_raw_mode(st.st_mode)),
                Err(_) => Kind::Other,
            };
        }
        entries.push(Entry { name: name.to_vec(), kind });
    }
    Ok((entries, false))
}

impl App {
    /// Opens `at` beneath its root with `flags`, explaining a failure.
    pub fn open(&self, at: &Located, flags: OFlags) -> Result<OwnedFd, ToolError> {
        open_beneath(at.root.fd(), &at.rel, flags, self.policy).map_err(|e| self.fail(&e, at))
    }

    /// The failure `e` on `at`, in words.
    pub fn fail(&self, e: &io::Error, at: &Located) -> ToolError {
        tool_error(e, &at.shown(), self.policy.follow_symlinks)
    }

    /// Opens the regular file `at` for reading, checked against the size cap and the
    /// hard-link rule. `cap` is the most bytes the caller will read.
    pub fn open_file(&self, at: &Located, cap: u64) -> Result<(File, Stat), ToolError> {
        let fd = self.open(at, OFlags::RDONLY)?;
        let st = fstat(&fd).map_err(|e| self.fail(&e.into(), at))?;
        self.check_readable(&st, at, cap)?;
        Ok((File::from(fd), st))
    }

    /// Refuses what is not a regular file, what is larger than `cap`, and a file with other
    /// hard links (its contents may be a file outside the roots) unless they are allowed.
    pub fn check_readable(&self, st: &Stat, at: &Located, cap: u64) -> Result<(), ToolError> {
        let shown = at.shown();
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => {
                return Err(ToolError::new(format!(
                    "{shown} is a directory: list_directory or directory_tree lists it"
                )))
            }
            _ => {
                return Err(ToolError::new(format!(
                    "{shown} is not a regular file (a FIFO, socket or device): not read"
                )))
            }
        }
        if st.st_nlink > 1 && !self.allow_hard_links {
            return Err(ToolError::new(format!(
                "{shown} has {} hard links, so its contents may be those of a file outside the allowed directories: \
                 not read (the operator can allow it with --allow-hard-links)",
                st.st_nlink
            )));
        }
        if st.st_size as u64 > cap {
            return Err(ToolError::new(format!(
                "{shown} is {} bytes, over the {} bytes one call may read: read part of it with head or tail (text), \
                 or grep it for what you need",
                st.st_size, cap
            )));
        }
        Ok(())
    }

    /// The whole of the regular file `at` (at most the file cap).
    pub fn read_all(&self, at: &Located) -> Result<Vec<u8>, ToolError> {
        let (mut file, st) = self.open_file(at, self.limits.max_file_bytes)?;
        let mut bytes = Vec::with_capacity(st.st_size as usize);
        (&mut file).take(self.limits.max_file_bytes + 1).read_to_end(&mut bytes).map_err(|e| self.fail(&e, at))?;
        if bytes.len() as u64 > self.limits.max_file_bytes {
            return Err(ToolError::new(format!("{} grew past the read limit while it was read", at.shown())));
        }
        Ok(bytes)
    }

    /// The regular file `at` as UTF-8 text.
    pub fn read_text(&self, at: &Located) -> Result<String, ToolError> {
        let bytes = self.read_all(at)?;
        String::from_utf8(bytes).map_err(|e| {
            ToolError::new(format!(
                "{} is not UTF-8 text (byte {} is not): read_media_file returns it as binary",
                at.shown(),
                e.utf8_error().valid_up_to()
            ))
        })
    }

    /// Refuses a write when the server is read-only.
    pub fn check_writable(&self) -> Result<(), ToolError> {
        if self.read_only {
            return Err(ToolError::new("this server is read-only (--read-only): nothing can be written"));
        }
        Ok(())
    }

    /// Writes `bytes` to `at` atomically: a temporary file beside it, then a rename over it. An
    /// existing file keeps its permissions; a symlink in its place is refused as `edit_file`
    /// refuses it (not followed, or leading outside), else replaced, never written through;
    /// another hard link to the old file keeps the old contents. `create_only` refuses
    /// an existing name.
    pub fn write_atomic(&self, at: &Located, bytes: &[u8]) -> Result<(), ToolError> {
        self.check_writable()?;
        let (dir, name) = open_parent(at.root.fd(), &at.rel, self.policy).map_err(|e| self.fail(&e, at))?;
        let mode = match statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                // The link must be one the server would follow, as a read or an edit would.
                self.open(at, OFlags::RDONLY)?;
                Mode::from_raw_mode(0o644)
            }
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                return Err(ToolError::new(format!("{} is a directory: it cannot be written as a file", at.shown())))
            }
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                Mode::from_raw_mode(st.st_mode & 0o7777)
            }
            _ => Mode::from_raw_mode(0o644),
        };
        let tmp = temp_name(name)?;
        let file =
            open_beneath_mode(dir.as_fd(), &tmp, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, mode, self.policy)
                .map_err(|e| self.fail(&e, at))?;
        let file = File::from(file);
        let written = rustix::fs::fchmod(&file, mode)
            .map_err(io::Error::from)
            .and_then(|()| write_and_sync(file, bytes))
            .and_then(|()| renameat(&dir, tmp.as_str(), &dir, name).map_err(io::Error::from));
        if let Err(e) = written {
            let _ = unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err(self.fail(&e, at));
        }
        Ok(())
    }
}

fn write_and_sync(mut file: File, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync_all()
}

/// A hidden name beside `name` that no one else picks (never a guessable one: without a random
/// source the write fails).
fn temp_name(name: &str) -> Result<String, ToolError> {
    let tag = mcp::util::random::hex(8)?;
    let short: String = name.chars().take(100).collect();
    Ok(format!(".{short}.{tag}.files-mcp.tmp"))
}

/// Whether a name (bytes) is one the model could address (valid UTF-8, no backslash).
pub fn addressable(name: &[u8]) -> bool {
    std::str::from_utf8(name).is_ok_and(|s| !s.contains('\\'))
}
