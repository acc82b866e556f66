//! The tools: the reference server's thirteen (same names, same argument names, so a host
//! configuration can switch) and `grep`. Every structured result keeps the reference's
//! `content` text and adds typed fields.

pub mod grep;
pub mod list;
pub mod read;
pub mod search;
pub mod write;

use mcp::server::{Router, Structured, ToolDef};
use mcp::types::tools::ToolAnnotations;

use read::TextOut;

/// `{content: text}`, the reference server's structured shape.
pub fn text_out(text: String) -> Structured<TextOut> {
    Structured { text: text.clone(), value: TextOut { content: text } }
}

fn hints(read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(read_only),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    }
}

fn def(name: &str, title: &str, description: &str, annotations: ToolAnnotations) -> ToolDef {
    ToolDef::new(name).title(title).description(description).annotations(annotations)
}

const INSIDE: &str = " Only works within allowed directories.";

/// Registers every tool; writes are left out of a read-only server. Each takes the [`App`](crate::App)
/// as the router's [`State`](mcp::server::State).
pub fn register(mut router: Router, read_only: bool) -> Router {
    let ro = hints(true, false, true);
    router = router.tool_def(
        def(
            "read_text_file",
            "Read Text File",
            &format!(
        "Read the complete contents of a file as text. Use head to read only the first N lines or tail for the last N \
         lines (large files: the whole file is refused over the server's size cap).{INSIDE}"),
            ro.clone(),
        ),
        read::read_text_file,
    );
    router = router.tool_def(
        def(
            "read_file",
            "Read File (Deprecated)",
            "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
            ro.clone(),
        ),
        read::read_text_file,
    );
    router = router.tool_def(
        def(
            "read_media_file",
            "Read Media File",
            &format!(
        "Read a file and return it base64-encoded with its MIME type: images and audio as image/audio content, any \
         other type as an embedded resource.{INSIDE}"),
            ro.clone(),
        ),
        read::read_media_file,
    );
    router = router.tool_def(
        def(
            "read_multiple_files",
            "Read Multiple Files",
            &format!(
        "Read several files at once; each file's text follows its path, and a file that cannot be read says why in \
         its place without stopping the others.{INSIDE}"),
            ro.clone(),
        ),
        read::read_multiple_files,
    );
    router = router.tool_def(
        def(
            "list_directory",
            "List Directory",
            &format!("List a directory's entries, [DIR] and [FILE] prefixes, sorted by name.{INSIDE}"),
            ro.clone(),
        ),
        list::list_directory,
    );
    router = router.tool_def(
        def(
            "list_directory_with_sizes",
            "List Directory with Sizes",
            &format!(
                "List a directory's entries with file sizes, sorted by name or size (sortBy), with totals.{INSIDE}"
            ),
            ro.clone(),
        ),
        list::list_directory_with_sizes,
    );
    router = router.tool_def(
        def(
            "directory_tree",
            "Directory Tree",
            &format!(
                "A recursive tree of a directory as 2-space-indented JSON: name, type (file/directory), children for \
         directories. excludePatterns leaves out globs (node_modules, .git, **/*.log).{INSIDE}"
            ),
            ro.clone(),
        ),
        search::directory_tree,
    );
    router = router.tool_def(
        def(
            "search_files",
            "Search Files",
            &format!(
        "Find files and directories whose path, relative to path, matches a glob: *.ext in path itself, **/*.ext at \
         any depth. Returns full paths. To search file contents use grep.{INSIDE}"),
            ro.clone(),
        ),
        search::search_files,
    );
    router = router.tool_def(
        def(
            "grep",
            "Search File Contents",
            &format!(
        "Search file contents for a regular expression (or text, with literal), like ripgrep: .gitignore is honoured, \
         binary files skipped, results as path:line:text with optional context lines, at most maxResults lines. \
         include narrows to a glob (*.rs).{INSIDE}"),
            ro.clone(),
        ),
        grep::grep,
    );
    router = router.tool_def(
        def(
            "get_file_info",
            "Get File Info",
            &format!(
        "Metadata of a file or directory: size, times, type, permissions, hard links. A symbolic link is described, \
         not followed.{INSIDE}"),
            ro.clone(),
        ),
        list::get_file_info,
    );
    router = router.tool_def(def("list_allowed_directories", "List Allowed Directories",
        "The directories this server may access (and their subdirectories), why each applies, and how containment is \
         enforced. Call it before using other tools.", ro), list::list_allowed_directories);
    if read_only {
        return router;
    }
    router = router.tool_def(
        def(
            "write_file",
            "Write File",
            &format!(
        "Create a file or overwrite one completely (atomically: readers see the old or the new contents, never a \
         mix).{INSIDE}"),
            hints(false, true, true),
        ),
        write::write_file,
    );
    router = router.tool_def(
        def(
            "edit_file",
            "Edit File",
            &format!(
        "Replace exact text in a file: each edit's oldText must occur exactly once. Returns a git-style diff; with \
         dryRun true nothing is written.{INSIDE}"),
            hints(false, true, false),
        ),
        write::edit_file,
    );
    router = router.tool_def(
        def(
            "create_directory",
            "Create Directory",
            &format!("Create a directory with any missing parents; an existing directory is fine.{INSIDE}"),
            hints(false, false, true),
        ),
        write::create_directory,
    );
    router = router.tool_def(
        def(
            "move_file",
            "Move File",
            "Move or rename a file or directory. Fails if the destination exists. Both source and destination must be \
         within allowed directories.",
            hints(false, true, false),
        ),
        write::move_file,
    );
    router
}
