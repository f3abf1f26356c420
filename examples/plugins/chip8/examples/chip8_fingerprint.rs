//! The fingerprint of the CHIP-8 machine (FNV-1a of its JSON description, circuit and face together): a refactor
//! of `src/circuit` that must not change the machine (nor, therefore, any woven weight) prints the same lines
//! before and after.
//! `cargo run --release --manifest-path examples/plugins/chip8/Cargo.toml --example chip8_fingerprint`.

fn main() {
    let d = loom_chip8::circuit::chip8_machine();
    let fnv = |j: &[u8]| j.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
    let j = serde_json::to_vec(&d).unwrap();
    println!("chip8 machine: {} bytes, fnv {:016x}", j.len(), fnv(&j));
    let j = serde_json::to_vec(&d.circuit).unwrap();
    println!("chip8 circuit: {} nodes, {} bytes, fnv {:016x}", d.circuit.nodes.len(), j.len(), fnv(&j));
}
