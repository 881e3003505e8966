//! Whether the GPUs of a host reach each other peer to peer (CUDA P2P,
//! `cudaDeviceCanAccessPeer`). Custom all-reduce kernels (SGLang's,
//! TensorRT-LLM's) need it; the manifest states it in
//! `host.gpu_peer_access`, and without that field one kind of GPU is known
//! to lack it: the GeForce RTX 40 cards, whose driver does not offer P2P
//! (SGLang 0.1.18's custom all-reduce: "RTX 40 ... do not have P2P";
//! `sglang-custom-allreduce-geforce-p2p` cites it). The workstation Ada
//! and Quadro cards do offer it.

use crate::view::{Accelerator, Manifest};

/// The manifest field stating peer access between the host's GPUs.
pub const PEER_ACCESS: &str = "host.gpu_peer_access";

/// What the manifest says of peer access between the GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerAccess {
    /// `host.gpu_peer_access` is true.
    Available,
    /// `host.gpu_peer_access` is false.
    Stated,
    /// Not stated, but the GPU is a GeForce RTX 40 card.
    GeForceRtx40,
    /// Neither: the rule needs [`PEER_ACCESS`].
    Unknown,
}

impl PeerAccess {
    /// Whether peer access is known to be missing.
    pub fn missing(self) -> bool {
        matches!(self, PeerAccess::Stated | PeerAccess::GeForceRtx40)
    }

    /// The field that says so, for evidence: [`PEER_ACCESS`] when stated,
    /// else the GPU's model.
    pub fn evidence(self, gpu: &Accelerator) -> crate::view::Path {
        match self {
            PeerAccess::GeForceRtx40 => gpu.field_path("model"),
            _ => crate::view::Path::new(PEER_ACCESS),
        }
    }
}

/// Whether `gpu`'s model names a GeForce RTX 40 card (not an Ada
/// workstation or Quadro card).
pub fn is_geforce_rtx40(m: &Manifest, gpu: &Accelerator) -> bool {
    let model = gpu.field_path("model");
    m.text_contains(model.as_str(), "RTX 40") == Some(true)
        && m.text_contains_any(model.as_str(), &["Ada", "Quadro"]) == Some(false)
}

/// What `m` says of peer access between the host's GPUs, `gpu` being
/// one of them: the stated field first, else what its model tells.
pub fn peer_access(m: &Manifest, gpu: &Accelerator) -> PeerAccess {
    match m.boolean(PEER_ACCESS) {
        Some(true) => PeerAccess::Available,
        Some(false) => PeerAccess::Stated,
        None if is_geforce_rtx40(m, gpu) => PeerAccess::GeForceRtx40,
        None => PeerAccess::Unknown,
    }
}
