//! Fingerprints of the 2A03 circuit (FNV-1a of its JSON) for the flat map (bare, with console and exit) and the
//! NES map: a refactor of `src/circuit.rs` that must not change a machine (nor, therefore, any woven weight)
//! prints the same lines before and after. `cargo run --release -p isa-6502 --example mos6502_fingerprint`.

fn main() {
    use isa_6502::circuit::{Mos6502Options, mos6502_machine};
    let flat = Mos6502Options::default();
    let io = Mos6502Options { console: Some(0xF001), exit: Some(0xF002), ..Default::default() };
    let nes = Mos6502Options { nes: true, ..Default::default() };
    for (name, opts) in [("flat", flat), ("flat with console and exit", io), ("NES map", nes)] {
        let d = mos6502_machine(&opts);
        let j = serde_json::to_vec(&d.circuit).unwrap();
        let h = j.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
        println!("{name}: {} bytes, fnv {h:016x}", j.len());
    }
}
