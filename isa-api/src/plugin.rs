//! Machine plugins loaded at run time: the one C-ABI entry point, its table, and the loader.
//!
//! A plugin is a `cdylib` that exports one `extern "C"` function named [`ENTRY_SYMBOL`] returning a pointer
//! to a static [`PluginTable`]. Only that `repr(C)` table, plain integers, raw byte buffers and function
//! pointers cross the library boundary, never `String`, `Vec`, `Box` or trait objects: the plugin serializes
//! its machine description to bytes (JSON of the `isa-api` types) and the host parses them. The side that
//! allocates a buffer frees it (the host calls the table's `free_bytes`). A panic inside the plugin is
//! caught there (`catch_unwind`) and reported as an error status, never unwound across the boundary. A
//! loaded library is never unloaded: thread-local destructors and statics make unloading unsound, so the
//! loader leaks the handle on purpose.
//!
//! The plugin side is one macro call, [`export_machine_plugin!`]; the host side is [`load_plugin_bytes`].

use std::path::Path;

/// Version of this ABI. A plugin built against another version is refused with
/// [`PluginError::AbiMismatch`]. 2: descriptions may declare devices; 3: circuits may clear memories
/// (`Circuit::mem_clears`), which an older host would ignore.
pub const ABI_VERSION: u32 = 3;

/// Name of the exported entry point (NUL-terminated for `dlsym`).
pub const ENTRY_SYMBOL: &[u8] = b"loom_machine_plugin_entry\0";

/// Status codes returned by [`PluginTable::describe`].
pub mod status {
    /// The buffer holds the serialized machine description.
    pub const OK: i32 = 0;
    /// The buffer holds a UTF-8 error message from the plugin.
    pub const ERROR: i32 = 1;
    /// The plugin panicked; the buffer holds the panic message when one could be recovered.
    pub const PANIC: i32 = 2;
}

/// A byte buffer allocated by the plugin and freed by the plugin's `free_bytes`.
#[repr(C)]
#[derive(Debug)]
pub struct PluginBytes {
    pub ptr: *mut u8,
    pub len: usize,
    pub cap: usize,
}

impl PluginBytes {
    /// An empty buffer (null pointer).
    pub const fn empty() -> Self {
        Self { ptr: std::ptr::null_mut(), len: 0, cap: 0 }
    }

    /// Hand a `Vec<u8>` over as a raw buffer (plugin side). Reclaim it only with [`PluginBytes::free`] in
    /// the same library.
    pub fn from_vec(v: Vec<u8>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        Self { ptr: v.as_mut_ptr(), len: v.len(), cap: v.capacity() }
    }

    /// Free a buffer made by [`PluginBytes::from_vec`] in this same library.
    ///
    /// # Safety
    /// `self` must come from `from_vec` in the calling library and not have been freed before.
    pub unsafe fn free(self) {
        if !self.ptr.is_null() {
            drop(unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) });
        }
    }
}

/// The table a plugin's entry point returns. `repr(C)`: stable layout across compilers and versions.
#[repr(C)]
pub struct PluginTable {
    /// Must equal the host's [`ABI_VERSION`].
    pub abi_version: u32,
    /// Writes the serialized machine description (or an error message) into `*out` and returns a
    /// [`status`] code.
    pub describe: unsafe extern "C" fn(out: *mut PluginBytes) -> i32,
    /// Frees a buffer that `describe` produced.
    pub free_bytes: unsafe extern "C" fn(buf: PluginBytes),
}

/// Signature of the exported entry point.
pub type EntryFn = unsafe extern "C" fn() -> *const PluginTable;

/// Plugin-side implementation of `describe`: runs `f` under `catch_unwind` and writes its bytes, its error's
/// message (the error's `Display`: the plugin's own error type, or a `String`) or the panic message into
/// `*out`. Used by [`export_machine_plugin!`].
///
/// # Safety
/// `out` must be a valid pointer to writable `PluginBytes`.
pub unsafe fn describe_with<E: std::fmt::Display>(out: *mut PluginBytes, f: fn() -> Result<Vec<u8>, E>) -> i32 {
    let (code, bytes) = match std::panic::catch_unwind(f) {
        Ok(Ok(b)) => (status::OK, b),
        Ok(Err(e)) => (status::ERROR, e.to_string().into_bytes()),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic without a message".to_string());
            (status::PANIC, msg.into_bytes())
        }
    };
    if out.is_null() {
        return status::ERROR;
    }
    unsafe { out.write(PluginBytes::from_vec(bytes)) };
    code
}

/// Export a machine plugin from a `cdylib` crate. `$describe` is a `fn() -> Result<Vec<u8>, E>` returning the
/// serialized machine description, `E` any error type with `Display` (its message is what the host reports).
///
/// ```text
/// fn describe() -> Result<Vec<u8>, serde_json::Error> { serde_json::to_vec(&my_machine()) }
/// isa_api::export_machine_plugin!(describe);
/// ```
#[macro_export]
macro_rules! export_machine_plugin {
    ($describe:path) => {
        unsafe extern "C" fn __loom_describe(out: *mut $crate::plugin::PluginBytes) -> i32 {
            unsafe { $crate::plugin::describe_with(out, $describe) }
        }
        unsafe extern "C" fn __loom_free(buf: $crate::plugin::PluginBytes) {
            unsafe { buf.free() }
        }
        static __LOOM_TABLE: $crate::plugin::PluginTable = $crate::plugin::PluginTable {
            abi_version: $crate::plugin::ABI_VERSION,
            describe: __loom_describe,
            free_bytes: __loom_free,
        };
        /// The plugin's C-ABI entry point.
        #[unsafe(no_mangle)]
        pub extern "C" fn loom_machine_plugin_entry() -> *const $crate::plugin::PluginTable {
            &__LOOM_TABLE
        }
    };
}

/// Errors loading a plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("cannot load plugin library {path}: {msg}")]
    Load { path: String, msg: String },
    #[error("{path} is not a machine plugin: it has no `loom_machine_plugin_entry` symbol ({msg})")]
    NoEntry { path: String, msg: String },
    #[error("{path}: plugin ABI version {found}, this program speaks version {expected}")]
    AbiMismatch { path: String, found: u32, expected: u32 },
    #[error("{path}: the plugin reported an error: {msg}")]
    Plugin { path: String, msg: String },
    #[error("{path}: the plugin panicked: {msg}")]
    Panicked { path: String, msg: String },
    #[error("{path}: malformed machine description: {msg}")]
    Malformed { path: String, msg: String },
}

/// Load the library at `path`, check its ABI version and return the bytes its `describe` produced. The
/// library stays loaded for the life of the process (never unloaded, on purpose).
pub fn load_plugin_bytes(path: &Path) -> Result<Vec<u8>, PluginError> {
    let p = path.display().to_string();
    if !path.is_file() {
        return Err(PluginError::Load { path: p, msg: "no such file (build the plugin first: its README says how)".into() });
    }
    // SAFETY: loading a library runs its initializers; the user named this file as a machine plugin.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| PluginError::Load { path: p.clone(), msg: e.to_string() })?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: the symbol's type is fixed by this ABI; a library exporting it with another type is a
    // plugin built against a different ABI, which the version check below catches for tables we can read.
    let entry: libloading::Symbol<EntryFn> =
        unsafe { lib.get(ENTRY_SYMBOL) }.map_err(|e| PluginError::NoEntry { path: p.clone(), msg: e.to_string() })?;
    let table = unsafe { entry() };
    if table.is_null() {
        return Err(PluginError::Plugin { path: p, msg: "entry point returned a null table".into() });
    }
    let table: &PluginTable = unsafe { &*table };
    if table.abi_version != ABI_VERSION {
        return Err(PluginError::AbiMismatch { path: p, found: table.abi_version, expected: ABI_VERSION });
    }
    let mut out = PluginBytes::empty();
    let code = unsafe { (table.describe)(&mut out) };
    let bytes = if out.ptr.is_null() { Vec::new() } else { unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec() };
    unsafe { (table.free_bytes)(out) };
    match code {
        status::OK => Ok(bytes),
        status::PANIC => Err(PluginError::Panicked { path: p, msg: String::from_utf8_lossy(&bytes).into_owned() }),
        _ => Err(PluginError::Plugin { path: p, msg: String::from_utf8_lossy(&bytes).into_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugin's own error type.
    #[derive(Debug, thiserror::Error)]
    #[error("no such machine")]
    struct NoMachine;

    fn ok() -> Result<Vec<u8>, NoMachine> {
        Ok(b"{\"name\":\"x\"}".to_vec())
    }
    fn err() -> Result<Vec<u8>, NoMachine> {
        Err(NoMachine)
    }
    fn boom() -> Result<Vec<u8>, NoMachine> {
        panic!("plugin bug")
    }

    fn call<E: std::fmt::Display>(f: fn() -> Result<Vec<u8>, E>) -> (i32, Vec<u8>) {
        let mut out = PluginBytes::empty();
        let code = unsafe { describe_with(&mut out, f) };
        let bytes = unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec();
        unsafe { out.free() };
        (code, bytes)
    }

    #[test]
    fn describe_reports_bytes_errors_and_panics() {
        assert_eq!(call(ok), (status::OK, b"{\"name\":\"x\"}".to_vec()));
        assert_eq!(call(err), (status::ERROR, b"no such machine".to_vec()));
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let (code, msg) = call(boom);
        std::panic::set_hook(prev);
        assert_eq!(code, status::PANIC);
        assert_eq!(msg, b"plugin bug");
    }

    #[test]
    fn loading_a_non_plugin_is_a_clear_error() {
        let e = load_plugin_bytes(Path::new("/nonexistent/libnothing.so")).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/libnothing.so") && e.contains("no such file (build the plugin first"), "{e}");
        // A real shared library without our entry point.
        for lib in ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"] {
            if Path::new(lib).exists() {
                let e = load_plugin_bytes(Path::new(lib)).unwrap_err();
                assert!(matches!(e, PluginError::NoEntry { .. }), "{e}");
                return;
            }
        }
    }
}
