//! The SIMT4 machine's public face: the indices of its registers, memories and ports in the circuit and its
//! description, and the widths derived from the config ([`crate::isa::Simt4Config`], which lives with the
//! instruction set). [`crate::circuit`] re-exports these, so `isa_simt4::circuit::{reg, mem, port}` keep working.

use crate::isa::Simt4Config;

/// Register indices.
pub mod reg {
    /// `PC` (12 bits).
    pub const PC: u32 = 0;
    /// `WARP` (max(1, log2 warps) bits).
    pub const WARP: u32 = 1;
    /// `BUSY` (6 bits, [`crate::isa::BUSY_BITS`]): the micro-step register.
    pub const BUSY: u32 = 2;
    /// `STOP` (1 bit): set by a fault step; the next step halts.
    pub const STOP: u32 = 3;
    /// `DQ{l}` (32 bits): lane `l`'s dividend magnitude shifting out and quotient shifting in.
    pub const fn div_q(l: u32) -> u32 {
        4 + 2 * l
    }
    /// `DR{l}` (32 bits): lane `l`'s partial remainder.
    pub const fn div_r(l: u32) -> u32 {
        5 + 2 * l
    }
}

/// Memory indices.
pub mod mem {
    /// `PROG`: 4096 words of 64 bits.
    pub const PROG: u32 = 0;
    /// `SHARED`: `shared_words` words of 32 bits.
    pub const SHARED: u32 = 1;
    /// `GLOBAL`: `global_words` words of 32 bits.
    pub const GLOBAL: u32 = 2;
    /// `WPC`: per-warp saved PCs, 12-bit words.
    pub const WPC: u32 = 3;
    /// `R{l}`: lane `l`'s registers (32-bit words, row `warp * 32 + reg`).
    pub const fn lane(l: u32) -> u32 {
        4 + l
    }
}

/// Output port indices.
pub mod port {
    /// `FAULT` (64 bits): the fault word.
    pub const FAULT: u32 = 0;
}

/// Bits of the `WARP` register and address bits of `WPC`: max(1, log2 `warps`).
pub fn warp_bits(cfg: &Simt4Config) -> u32 {
    cfg.warps.trailing_zeros().max(1)
}
