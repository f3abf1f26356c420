//! The machine as a run-time plugin: with the `plugin` feature this crate's `cdylib`
//! exports the `isa-api` C-ABI entry point, whose `describe` returns the default machine (64 KiB at 0x10000,
//! words layout) as JSON. Off by default, so that binaries linking several machine crates statically do not
//! get the entry symbol twice: `cargo build --release -p isa-rv32im --features plugin` builds
//! `libisa_rv32im.so`, which `isa_api::plugin::load_plugin_bytes` loads.

use crate::circuit::{CircuitError, Rv32MachineOptions, rv32im_machine};

/// The serialized default machine description (what the plugin's `describe` hands over).
pub fn describe() -> Result<Vec<u8>, CircuitError> {
    Ok(rv32im_machine(&Rv32MachineOptions::default())?.to_json())
}

#[cfg(feature = "plugin")]
isa_api::export_machine_plugin!(describe);

#[cfg(test)]
mod tests {
    #[test]
    fn describe_round_trips_through_json() {
        let bytes = super::describe().unwrap();
        let d = isa_api::MachineDesc::from_json(&bytes).unwrap();
        assert_eq!(d.name, "rv32im");
        assert_eq!(d, super::rv32im_machine(&Default::default()).unwrap());
    }
}
