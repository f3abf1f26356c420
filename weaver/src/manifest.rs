//! The machine manifest published with a woven model (`machine.json`): the trace protocol (every token's
//! meaning), the machine's names and widths, and the report. A host needs nothing else to run the model.

use crate::error::WeaveError;
use crate::report::Report;
use isa_api::{MachineDesc, MachineFace, Protocol};
use serde::{Deserialize, Serialize};

/// Format tag and version of the manifest file. Version 3: the trace protocol that writes only what changed, with
/// end variants (version 2 wrote every field, with NONE groups; its checkpoints are refused).
pub const MANIFEST_FORMAT: &str = "loom-machine-manifest";
pub const MANIFEST_VERSION: u32 = 3;

/// The manifest: the machine's face ([`MachineFace`], flattened: `name`, `registers`, `memories`, `ports`,
/// `inputs`, `io_ranges`, `micro_step`), the memory a program file loads into, the trace protocol, the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    #[serde(flatten)]
    pub face: MachineFace,
    /// Memory a raw program file is loaded into (memory 0).
    pub program_memory: u32,
    pub protocol: Protocol,
    pub report: Report,
}

impl Manifest {
    pub fn new(d: &MachineDesc, p: &Protocol, r: &Report) -> Self {
        Self { format: MANIFEST_FORMAT.into(), version: MANIFEST_VERSION, face: d.face.clone(), program_memory: 0, protocol: p.clone(), report: r.clone() }
    }

    /// Parse and check format and version.
    pub fn from_json(text: &str) -> Result<Self, WeaveError> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| WeaveError::ManifestMalformed(e.to_string()))?;
        if m.format != MANIFEST_FORMAT || m.version != MANIFEST_VERSION {
            return Err(WeaveError::ManifestVersion { format: m.format, version: m.version });
        }
        Ok(m)
    }
}
