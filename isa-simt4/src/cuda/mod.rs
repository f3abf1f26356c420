//! The CUDA subset front end (being written): parse a kernel with `lang-c`, compile it for one launch into
//! SIMT4 code ([`crate::KernelImage`]).

use crate::isa::Simt4Config;
use crate::launch::{KernelImage, LaunchSpec};

/// A compile error at a place in the kernel source. Displayed as `file:line:column: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub file: String,
    /// 1-based; 0 when the error has no place (a launch that does not fit the machine).
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for CompileError {}

/// Compile the one `__global__` kernel of `source` (named `file` in errors) for `spec` on a machine of shape
/// `cfg`.
pub fn compile(source: &str, file: &str, spec: &LaunchSpec, cfg: &Simt4Config) -> Result<KernelImage, CompileError> {
    let _ = (source, spec, cfg);
    Err(CompileError { file: file.into(), line: 0, column: 0, message: "the CUDA front end is not written yet".into() })
}
