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
    #[error("{0}")]
    Other(String),
}
