//! Fingerprints of the RV32IM+Zba circuit (FNV-1a of its JSON) for both layouts and several RAM geometries:
//! a refactor of `src/circuit/` that must not change the machine (nor, therefore, any woven weight) prints
//! the same lines before and after. `cargo run --release -p isa-rv32im --example circuit_fingerprint`.

fn main() {
    use isa_rv32im::circuit::{MemoryLayout, Rv32MachineOptions, rv32im_machine};
    for layout in [MemoryLayout::Words, MemoryLayout::ByteLanes] {
        for (base, size) in [(0x10000u32, 65536u32), (0x10000, 262144), (0x10000, 1024), (0x1234, 4096)] {
            let d = rv32im_machine(&Rv32MachineOptions { ram_base: base, ram_size: size, layout }).unwrap();
            let j = serde_json::to_vec(&d.circuit).unwrap();
            let h = j.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
            println!("{layout:?} {base:#x} {size}: {} bytes, fnv {h:016x}", j.len());
        }
    }
}
