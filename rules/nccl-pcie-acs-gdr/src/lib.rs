//! PCIe ACS on the path between a NIC and a GPU breaks GPU Direct RDMA:
//! NCCL's InfiniBand transport gets completions with status 4
//! (IBV_WC_LOC_PROT_ERR), or collectives crawl (NCCL troubleshooting guide,
//! "PCI Access Control Services"; NCCL's own hint from 2.30.7; NVIDIA/nccl
//! issue 928). The P2P side between GPUs is `nccl-pcie-acs-p2p`'s.
//!
//! `host.pcie_acs_enabled` is in the contract; `host.gpudirect_rdma` is a
//! proposed field: NCCL can use GPU Direct RDMA (an RDMA NIC that shares a
//! PCIe switch with a GPU, and GPU memory registration through
//! nvidia-peermem or DMA-BUF).
#![no_std]

use pitfall_sdk::prelude::*;

const ACS: &str = "host.pcie_acs_enabled";
const GDR: &str = "host.gpudirect_rdma";

/// Whether the environment keeps NCCL from GPU Direct RDMA: no InfiniBand
/// transport at all, or the GDR level at LOC (`0` in the old numbering).
fn gdr_turned_off(m: &Manifest) -> bool {
    let ib_off = m.env("NCCL_IB_DISABLE").is_some_and(|v| v.trim() == "1");
    let gdr_off = m.env("NCCL_NET_GDR_LEVEL").is_some_and(|v| matches!(v.trim(), "0" | "LOC"));
    ib_off || gdr_off
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.nvidia_gpus().next().is_none() || gdr_turned_off(m) {
        return Outcome::clear();
    }
    let (acs, gdr) = (m.boolean(ACS), m.boolean(GDR));
    // Either one known to be off clears it, whatever the other is.
    if acs == Some(false) || gdr == Some(false) {
        return Outcome::clear();
    }
    if acs == Some(true) && gdr == Some(true) {
        return Outcome::matched().evidence(ACS).evidence(GDR);
    }
    let mut outcome = Outcome::undetermined();
    if acs.is_none() {
        outcome = outcome.missing(ACS);
    }
    if gdr.is_none() {
        outcome = outcome.missing(GDR);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
