//! The description: the register file, the memories, the `FAULT` port and the finished circuit as a validated
//! [`MachineDesc`] with its program layout (`PROG` from row 0) and micro-step register (`BUSY`).

use super::shape::Shape;
use crate::error::Simt4Error;
use crate::face::{reg, warp_bits};
use crate::isa::{BUSY_BITS, PC_BITS, Simt4Config};
use isa_api::{CircuitBuilder, MachineDesc, MemoryDesc, PortDesc, PortRole, ProgramLayout, RegisterDesc};

/// The SIMT4 register file description: `PC`, `WARP`, `BUSY`, `STOP`, then per lane `DQ`, `DR`.
fn registers(cfg: &Simt4Config) -> Vec<RegisterDesc> {
    let r = |name: String, width: u32| RegisterDesc { name, width };
    let mut v = vec![
        r("PC".into(), PC_BITS),
        r("WARP".into(), warp_bits(cfg)),
        r("BUSY".into(), BUSY_BITS),
        r("STOP".into(), 1),
    ];
    for l in 0..cfg.lanes {
        v.extend([r(format!("DQ{l}"), 32), r(format!("DR{l}"), 32)]);
    }
    v
}

/// The machine description of `cfg` around the circuit built in `b`, validated.
pub(super) fn describe(cfg: &Simt4Config, shape: &Shape, b: CircuitBuilder) -> Result<MachineDesc, Simt4Error> {
    let (sb, gb, wb) = (shape.sb, shape.gb, shape.wb);
    let m = |name: String, word_width: u32, addr_width: u32| MemoryDesc { name, word_width, addr_width };
    let mut mems = vec![
        m("PROG".into(), 64, PC_BITS),
        m("SHARED".into(), 32, sb),
        m("GLOBAL".into(), 32, gb),
        m("WPC".into(), PC_BITS, wb),
    ];
    mems.extend((0..shape.lanes).map(|l| m(format!("R{l}"), 32, shape.rab)));
    let mut desc = MachineDesc::new(
        "simt4",
        registers(cfg),
        mems,
        vec![PortDesc::new("FAULT", 64).with_role(PortRole::Fault)],
        b.finish(),
    )
    .with_program_layout(ProgramLayout { memory: "PROG".into(), base: 0, preload: vec![], registers: vec![] });
    desc.micro_step = Some(reg::BUSY);
    desc.validate()?;
    Ok(desc)
}
