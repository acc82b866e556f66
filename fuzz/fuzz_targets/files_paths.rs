//! files-mcp's path resolution: a path from the model is located among the roots, then opened
//! beneath its root by both resolvers (the kernel's `openat2` and the walk), symlinks followed or
//! not. Whatever the path, what opens is inside the root: a tree with symlinks that point out
//! (absolute and relative) is there to be escaped through.
#![no_main]

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use files_mcp::paths::locate;
use files_mcp::sandbox::{open_beneath, Policy, Resolver, Root};
use libfuzzer_sys::fuzz_target;
use rustix::fs::OFlags;

struct Tree {
    roots: Vec<Arc<Root>>,
    _dir: PathBuf,
}

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        // A fixed place, so that absolute paths in the seeds name it.
        let dir = PathBuf::from("/tmp/files-mcp-fuzz");
        let root = dir.join("root");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(dir.join("outside")).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("sub/b.txt"), "b").unwrap();
        std::fs::write(dir.join("outside/secret"), "secret").unwrap();
        let link = |target: &str, at: PathBuf| std::os::unix::fs::symlink(target, at).unwrap();
        link("../outside", root.join("up"));
        link(dir.join("outside").to_str().unwrap(), root.join("abs"));
        link("sub", root.join("in"));
        link("../../outside/secret", root.join("sub/leak"));
        link("/", root.join("sub/deeper/slash"));
        let second = root.join("sub");
        let roots = vec![
            Arc::new(Root::open(&root, "fuzz".into()).unwrap()),
            Arc::new(Root::open(&second, "fuzz".into()).unwrap()),
        ];
        Tree { roots, _dir: dir }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else { return };
    let tree = tree();
    let Ok(located) = locate(&tree.roots, input) else { return };
    assert!(!located.rel.starts_with('/'), "{input:?} located at {:?}", located.rel);
    for resolver in [Resolver::Openat2, Resolver::Walk] {
        for follow_symlinks in [false, true] {
            let policy = Policy { resolver, follow_symlinks };
            let Ok(fd) = open_beneath(located.root.fd(), &located.rel, OFlags::RDONLY, policy) else { continue };
            let opened = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
            assert!(
                opened.starts_with(&located.root.real),
                "{input:?} ({resolver:?}, follow {follow_symlinks}) opened {} outside {}",
                opened.display(),
                located.root.real.display()
            );
        }
    }
});
