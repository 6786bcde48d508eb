//! Node setup, below the daemon: what `oomwarden run` and every command that reads a node
//! (`top`, `layout`, `score`, `record`) need before they read anything: the host checks
//! ([`check_host`], [`check_psi`]), the settings ([`load_settings`]), the layout ([`resolve_layout`]), the
//! identity cache's configuration, the clocks, and the build's version. No runtime, no
//! server, no client: the forensics commands link this, not `oomwarden-daemon`.

mod clock;
mod host;
mod identity;
mod layout;
mod settings;

pub use clock::{monotonic_ns, next_tick, wall_clock};
pub use host::{check_host, check_psi, psi_off_on_cmdline};
pub use identity::identity_config;
pub use layout::{resolve_layout, warn_missing_dirs};
pub use settings::{
    Declared, MAX_CONFIG_BYTES, load_declared, load_for_reload, load_settings, unsafe_reload,
};

/// The version and the commit this build is from (`0.1.0 (commit 2f3a9c1d0e4b)`), as
/// `oomwarden --version` prints it.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("OOMWARDEN_COMMIT"),
    ")"
);

/// The commit this build is from (see the build script), `unknown` when it could not tell.
pub const COMMIT: &str = env!("OOMWARDEN_COMMIT");

/// Why a node cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The configuration is invalid or unreadable (the message names the file).
    #[error("{0}")]
    Config(String),
    /// This host cannot run the OOM handler (the message says what is missing).
    #[error("{0}")]
    Host(String),
    /// No layout fits the cgroup tree (the message says why and what to set).
    #[error("{0}")]
    Layout(String),
}
