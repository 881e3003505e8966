//! The server's configuration: flags with environment equivalents, in one
//! typed struct.

use std::net::SocketAddr;
use std::path::PathBuf;

/// `pitfall-server` settings.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "pitfall-server", version, about = "The Pitfall registry server")]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "PITFALL_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where the server keeps its data (the compiled-code cache now;
    /// the SQLite database with the registry issue).
    #[arg(long, env = "PITFALL_DATA_DIR", default_value = "./pitfall-data")]
    pub data_dir: PathBuf,
    /// Largest request body accepted, in bytes (a manifest is a few KiB).
    #[arg(long, env = "PITFALL_MAX_BODY_BYTES", default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
}
