//! Descriptors for a byte-stream peer: stdout taken for the protocol alone (fd 1 pointed at
//! stderr), and pipes or sockets driven by the reactor in non-blocking mode (a terminal or a
//! regular file falls back to tokio's blocking file). Used by the stdio transport and by the
//! client's child processes.
#![allow(unsafe_code)] // Raw descriptors: dup, dup2, fcntl, read and write. Each use is commented.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Moves the real stdout to a private descriptor and points fd 1 at stderr.
pub fn take_stdout() -> io::Result<OwnedFd> {
    use std::io::Write as _;
    let _ = io::stdout().flush();
    // SAFETY: dup on fd 1 has no memory effects; the result is checked and then owned.
    let fd = cvt(unsafe { libc::dup(1) })?;
    // SAFETY: fd is a fresh descriptor returned by dup, owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    set_cloexec(fd)?;
    // SAFETY: dup2 atomically replaces fd 1 with a copy of fd 2; both are open descriptors.
    cvt(unsafe { libc::dup2(2, 1) })?;
    Ok(owned)
}

/// A close-on-exec duplicate of `fd`, owned.
pub fn dup_fd(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: dup has no memory effects; the result is checked and then owned.
    let new = cvt(unsafe { libc::dup(fd) })?;
    set_cloexec(new)?;
    // SAFETY: `new` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid descriptor with integer arguments only.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) }).map(drop)
}

/// A libc return value: negative means failure, with the reason in `errno`.
fn cvt<T: Default + PartialOrd>(n: T) -> io::Result<T> {
    if n < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(n)
    }
}

/// Whether `fd` is a pipe or a socket, which epoll can drive.
fn is_pollable(fd: RawFd) -> bool {
    // SAFETY: fstat writes into a zeroed stat buffer that we own.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut stat) } != 0 {
        return false;
    }
    let kind = stat.st_mode & libc::S_IFMT;
    kind == libc::S_IFIFO || kind == libc::S_IFSOCK
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid descriptor with integer arguments only.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// An async reader for `fd`: reactor-driven for pipes and sockets, else tokio's blocking file.
pub fn reader_for(fd: OwnedFd) -> io::Result<Pin<Box<dyn AsyncRead + Send>>> {
    if is_pollable(fd.as_raw_fd()) {
        set_nonblocking(fd.as_raw_fd())?;
        Ok(Box::pin(Pipe::register(fd)?))
    } else {
        Ok(Box::pin(tokio::fs::File::from_std(std::fs::File::from(fd))))
    }
}

/// An async writer for `fd`: reactor-driven for pipes and sockets, else tokio's blocking file.
pub fn writer_for(fd: OwnedFd) -> io::Result<Pin<Box<dyn AsyncWrite + Send>>> {
    if is_pollable(fd.as_raw_fd()) {
        set_nonblocking(fd.as_raw_fd())?;
        Ok(Box::pin(Pipe::register(fd)?))
    } else {
        Ok(Box::pin(tokio::fs::File::from_std(std::fs::File::from(fd))))
    }
}

/// A non-blocking pipe or socket end driven by the reactor.
struct Pipe {
    fd: AsyncFd<OwnedFd>,
}

impl Pipe {
    fn register(fd: OwnedFd) -> io::Result<Self> {
        // SAFETY: the OwnedFd stays open and unchanged for as long as the AsyncFd owns it.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Pipe { fd })
    }
}

impl AsyncRead for Pipe {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            // SAFETY: the kernel writes at most `unfilled.len()` bytes into this uninitialized
            // memory; only the `n` bytes it reports written are then marked initialized. Not
            // zeroing first matters: the buffer is 64 KiB and this runs once per message.
            let unfilled = unsafe { buf.unfilled_mut() };
            let result = guard.try_io(|fd| {
                let n = unsafe { libc::read(fd.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len()) };
                cvt(n).map(|n| n as usize)
            });
            match result {
                Ok(Ok(n)) => {
                    // SAFETY: read(2) initialized the first `n` bytes.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let result = guard.try_io(|fd| {
                // SAFETY: writes at most data.len() bytes from memory we borrow.
                let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
                cvt(n).map(|n| n as usize)
            });
            match result {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
