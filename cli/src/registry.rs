//! The machines this binary knows: one line per machine crate's front. A config's `[machine] isa = "..."`
//! selects one; `plugin = "path"` and `description = "file.json"` machines take the generic front. Adding a
//! machine is its crate plus one line here: the general verbs know no ISA (`python`, `chat`, `cuda` and `nes`
//! are one machine's front door each and know theirs).

use isa_api::MachineFront;

/// The registry.
pub static MACHINES: &[&dyn MachineFront] = &[
    &isa_rv32im::front::Rv32Front,
    &isa_6502::front::Mos6502Front,
    &isa_simt4::front::Simt4Front,
    &isa_api::examples::fronts::Acc8Front,
    &isa_api::examples::fronts::Io8Front,
    &isa_api::examples::fronts::Paint8Front,
];
