//! Fingerprints of the 2A03 circuit (FNV-1a of its JSON) for the flat map (bare, with console and exit) and the
//! NES map with each PRG banking: a refactor of `src/circuit/` that must not change a machine (nor, therefore,
//! any woven weight) prints the same lines before and after.
//! `cargo run --release -p isa-6502 --example mos6502_fingerprint`.

fn main() {
    use isa_6502::circuit::{Mos6502Options, PrgBanking, PrgRom, mos6502_machine};
    let flat = Mos6502Options::default();
    let io = Mos6502Options { console: Some(0xF001), exit: Some(0xF002), ..Default::default() };
    let nes = |kib, banking| Mos6502Options { nes: true, prg: PrgRom { kib, banking }, ..Default::default() };
    let machines = [
        ("flat", flat),
        ("flat with console and exit", io),
        ("NES map", Mos6502Options { nes: true, ..Default::default() }),
        ("NES map, UxROM 256 KiB", nes(256, PrgBanking::Uxrom)),
        ("NES map, MMC1 128 KiB", nes(128, PrgBanking::Mmc1)),
        ("NES map, MMC1 512 KiB", nes(512, PrgBanking::Mmc1)),
        ("NES map, MMC3 512 KiB", nes(512, PrgBanking::Mmc3)),
    ];
    for (name, opts) in machines {
        let d = mos6502_machine(&opts);
        let j = serde_json::to_vec(&d).unwrap();
        let h = j.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
        println!("{name}: {} bytes, fnv {h:016x}", j.len());
    }
}
