//! Fingerprints of the SIMT4 machine (FNV-1a of its description's JSON) for the shipped configs
//! (`configs/simt4.toml`, `configs/simt4-8.toml`) and a few other valid shapes (one warp, 16 and 32 lanes, the
//! memory extremes): a refactor of `src/circuit` that must not change the machine (nor, therefore, any woven
//! weight) prints the same lines before and after. `cargo run --release -p isa-simt4 --example simt4_fingerprint`.

use isa_simt4::Simt4Config;
use isa_simt4::circuit::simt4_machine;

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3))
}

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut shapes: Vec<(String, Simt4Config)> = Vec::new();
    for file in ["simt4.toml", "simt4-8.toml"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("read config");
        let table: toml::Table = text.parse().expect("parse config");
        let mut section = table["machine"].as_table().expect("[machine]").clone();
        section.remove("isa"); // the front's dispatch key, not a machine setting
        shapes.push((file.into(), isa_simt4::front::parse_keys(&section).expect("keys")));
    }
    let c = |lanes, warps, shared_words, global_words| Simt4Config { lanes, warps, shared_words, global_words };
    for (name, cfg) in [
        ("one-warp", c(4, 1, 128, 128)),
        ("two-warps", c(8, 2, 65536, 256)),
        ("16-lanes", c(16, 4, 1024, 65536)),
        ("32-lanes", c(32, 32, 128, 4096)),
    ] {
        shapes.push((name.into(), cfg));
    }
    for (name, cfg) in shapes {
        let d = simt4_machine(&cfg).unwrap();
        let j = serde_json::to_vec(&d).unwrap();
        let cj = serde_json::to_vec(&d.circuit).unwrap();
        println!(
            "{name} {cfg:?}: desc {} bytes, fnv {:016x}; circuit {} bytes, fnv {:016x}",
            j.len(),
            fnv(&j),
            cj.len(),
            fnv(&cj)
        );
    }
}
