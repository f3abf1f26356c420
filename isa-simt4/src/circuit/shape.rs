//! The machine's shape as the sections use it: the config's sizes and the widths derived from them.

use crate::face::warp_bits;
use crate::isa::Simt4Config;

/// The config's sizes and the widths derived from them.
pub(super) struct Shape {
    /// Lanes: 4, 8, 16 or 32.
    pub lanes: u32,
    /// Most warps in a block (a power of two).
    pub warps: u32,
    /// log2 warps (0 with one warp).
    pub lw: u32,
    /// Bits of the `WARP` register and address bits of `WPC` ([`warp_bits`]).
    pub wb: u32,
    /// log2 lanes.
    pub ll: u32,
    /// Address bits of `SHARED`.
    pub sb: u32,
    /// Address bits of `GLOBAL`.
    pub gb: u32,
    /// Address bits of a lane's register memory ([`Simt4Config::reg_addr_bits`]).
    pub rab: u32,
}

impl Shape {
    /// The shape of a validated `cfg`.
    pub fn of(cfg: &Simt4Config) -> Self {
        Shape {
            lanes: cfg.lanes,
            warps: cfg.warps,
            lw: cfg.warps.trailing_zeros(),
            wb: warp_bits(cfg),
            ll: cfg.lanes.trailing_zeros(),
            sb: cfg.shared_words.trailing_zeros(),
            gb: cfg.global_words.trailing_zeros(),
            rab: cfg.reg_addr_bits(),
        }
    }
}
