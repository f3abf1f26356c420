//! Why the SIMT4 machine description could not be built.

use isa_api::DescError;
use thiserror::Error;

/// An error of [`crate::circuit::simt4_machine`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Simt4Error {
    /// The config is out of range ([`crate::isa::Simt4Config::validate`]); the message names the bad key.
    #[error("simt4 config out of range: {0}")]
    Config(String),
    /// The built description fails [`isa_api::MachineDesc::validate`] (a bug in the circuit, not in the input).
    #[error("simt4 machine description is malformed: {0}")]
    Desc(#[from] DescError),
}
