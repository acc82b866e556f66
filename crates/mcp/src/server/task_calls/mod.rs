//! Calls that become tasks, and the calls about tasks: the side of [`tasks`](super::tasks) that
//! sees requests. `run.rs` runs a call of a tool that may run long (plainly, or as a task or a
//! job in the form the client follows), `methods.rs` answers `tasks/*`, `jobs.rs` the generated
//! `<tool>_status|_cancel|_list` tools.
//!
//! The tasks themselves (records, stores, the manager of live tasks, the settings) are in
//! `server::tasks`, below the request context and the tools, which reach a live task through
//! it; this module is above both.

pub(crate) mod jobs;
pub(crate) mod methods;
pub(crate) mod run;
