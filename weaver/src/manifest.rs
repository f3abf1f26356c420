//! The machine manifest published with a woven model (`machine.json`): the trace protocol (every token's
//! meaning), the machine's names and widths, and the report. A host needs nothing else to run the model.

use crate::report::Report;
use isa_api::{MachineDesc, MemoryDesc, PortDesc, Protocol, RegisterDesc};
use serde::{Deserialize, Serialize};

/// Format tag and version of the manifest file.
pub const MANIFEST_FORMAT: &str = "loom-machine-manifest";
pub const MANIFEST_VERSION: u32 = 1;

/// The manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub machine: String,
    pub registers: Vec<RegisterDesc>,
    pub memories: Vec<MemoryDesc>,
    pub ports: Vec<PortDesc>,
    /// Memory a program file is loaded into (memory 0).
    pub program_memory: u32,
    /// Input ports the host drives ([`MachineDesc::inputs`]).
    #[serde(default)]
    pub inputs: Vec<PortDesc>,
    /// The micro-step register: a step retires an instruction iff it is 0 after it ([`MachineDesc::micro_step`]).
    #[serde(default)]
    pub micro_step: Option<u32>,
    pub protocol: Protocol,
    pub report: Report,
}

impl Manifest {
    pub fn new(d: &MachineDesc, p: &Protocol, r: &Report) -> Self {
        Self {
            format: MANIFEST_FORMAT.into(),
            version: MANIFEST_VERSION,
            machine: d.name.clone(),
            registers: d.registers.clone(),
            memories: d.memories.clone(),
            ports: d.ports.clone(),
            program_memory: 0,
            inputs: d.inputs.clone(),
            micro_step: d.micro_step,
            protocol: p.clone(),
            report: r.clone(),
        }
    }

    /// Parse and check format and version.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| format!("malformed machine manifest: {e}"))?;
        if m.format != MANIFEST_FORMAT || m.version != MANIFEST_VERSION {
            return Err(format!("manifest format {:?} version {} (expected {MANIFEST_FORMAT:?} version {MANIFEST_VERSION})", m.format, m.version));
        }
        Ok(m)
    }
}
