//! The integration tests that share nothing process-wide, as modules of one binary:
//! one link of the library instead of one per file (each test binary links all of
//! oscost and its dependencies again). Each module is one former test file and keeps
//! its own doc. Apart, in binaries of their own: tests that read their children's
//! memory high-water mark (`decode_memory`, `import_memory`), load the machine on
//! purpose (`stop_under_load`), or need no other test forking meanwhile
//! (`spawn_children`, `orphans`).

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod conditions;
mod crosscheck;
mod ctx_cli;
mod docs;
mod ecosystem;
mod fleet;
mod fuzz;
mod hardening;
mod helper_privilege;
mod history_cli;
mod kinds_roundtrip;
mod limits;
mod load_cli;
mod noise_cli;
mod paths;
mod pipeline;
mod plan_cli;
mod postgres_store;
mod preflight;
mod reliability;
mod report_browser;
mod results_cli;
mod screen_cli;
mod sim_cli;
mod syscall_cli;
mod trace_cli;
mod vocabulary;
