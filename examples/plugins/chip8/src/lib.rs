//! CHIP-8 for loom, as a machine plugin: [`interp`] is the reference interpreter, [`circuit`] the machine in
//! `isa-api`'s circuit IR that loom weaves into Qwen3.5 weights, [`face`] its public indices and constants. The
//! library exports the C-ABI entry point loom loads (`plugin = "..."` in a config).

pub mod circuit;
pub mod face;
pub mod interp;

/// The serialized machine description the plugin hands to loom.
pub fn describe() -> Result<Vec<u8>, String> {
    let d = circuit::chip8_machine();
    d.validate().map_err(|e| e.to_string())?;
    serde_json::to_vec(&d).map_err(|e| e.to_string())
}

isa_api::export_machine_plugin!(describe);
