//! What a failed system call means to the model, and what to do instead.

use std::io;

use mcp::server::ToolError;
use rustix::io::Errno;

/// A file-system failure on `shown`, said in words. `follow` is whether symlinks inside are
/// followed (it changes what a symlink refusal suggests).
pub fn explain(e: &io::Error, shown: &str, follow: bool) -> String {
    let errno = e.raw_os_error().map(Errno::from_raw_os_error);
    match errno {
        Some(Errno::XDEV) => format!(
            "{shown} leads outside its allowed directory (a .. above it, or a symbolic link that points out): refused"
        ),
        Some(Errno::LOOP) if follow => {
            format!("{shown} goes through too many symbolic links, or through one that points outside: refused")
        }
        Some(Errno::LOOP) => format!(
            "{shown} goes through a symbolic link, and this server does not follow symbolic links (its operator can \
             allow those that stay inside with --follow-symlinks-inside): use the link's target path instead"
        ),
        Some(Errno::NOENT) => {
            format!("{shown} does not exist; list_directory on its parent shows what does")
        }
        Some(Errno::NOTDIR) => format!("a component of {shown} is not a directory"),
        Some(Errno::ISDIR) => format!("{shown} is a directory; this needs a file (list_directory lists a directory)"),
        Some(Errno::EXIST) => format!("{shown} already exists"),
        Some(Errno::NOTEMPTY) => format!("{shown} is a directory that is not empty"),
        Some(Errno::ACCESS) | Some(Errno::PERM) => format!("permission denied on {shown}"),
        Some(Errno::ROFS) => format!("{shown} is on a read-only file system"),
        Some(Errno::NOSPC) | Some(Errno::DQUOT) => format!("no space left to write {shown}"),
        Some(Errno::NAMETOOLONG) => format!("{shown}: a name in it is too long"),
        Some(Errno::ILSEQ) => format!("{shown}: a symbolic link's target is not valid UTF-8"),
        _ => format!("{shown}: {e}"),
    }
}

/// [`explain`] as a tool error (an `isError` result).
pub fn tool_error(e: &io::Error, shown: &str, follow: bool) -> ToolError {
    ToolError::new(explain(e, shown, follow))
}
