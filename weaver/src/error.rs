//! [`WeaveError`]: every way weaving can fail, each naming the problem.

/// Errors of the weaver's passes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeaveError {
    #[error("invalid machine: {0}")]
    Desc(#[from] isa_api::DescError),
    #[error("node {node} ({what}): {msg}")]
    Unsupported { node: u32, what: String, msg: String },
    #[error("gate {name}: linear form reaches {bound}, beyond the exact range 2^17 = 131072")]
    FormTooWide { name: String, bound: i64 },
    #[error("the woven machine does not fit the requested geometry: {0}")]
    Overflow(String),
    /// A gate of a netlist evaluates to neither 0 nor 1 ([`crate::net::Netlist::eval`]).
    #[error("gate {name} evaluates to {value}")]
    GateNotBinary { name: String, value: i64 },
    /// A machine manifest that is not the manifest's JSON (the parser's message).
    #[error("malformed machine manifest: {0}")]
    ManifestMalformed(String),
    /// A machine manifest of another format or version.
    #[error(
        "manifest format {format:?} version {version} (expected {:?} version {})",
        crate::manifest::MANIFEST_FORMAT,
        crate::manifest::MANIFEST_VERSION
    )]
    ManifestVersion { format: String, version: u32 },
    #[error("{0}")]
    Other(String),
}
