//! Helpers shared by the tests that read `$WEAVER_TESTDATA`: the data files, Tom Harte's test cases, nestest's
//! log lines.
#![allow(dead_code)]

use std::path::PathBuf;

/// The path of `rel` under `$WEAVER_TESTDATA`, or `None` after `SKIPPED` (a failure under `CI=true`).
#[allow(unused_imports)]
pub use test_kit::testdata as testdata_file;

/// One of Tom Harte's single-instruction tests (the fields the circuit tests compare; `processortests.rs` also
/// reads the bus cycles).
#[derive(serde::Deserialize)]
pub struct HarteCase {
    pub name: String,
    pub initial: HarteState,
    #[serde(rename = "final")]
    pub expected: HarteState,
}

/// A machine state of a Harte test: registers and the RAM bytes it lists.
#[derive(serde::Deserialize)]
pub struct HarteState {
    pub pc: u16,
    pub s: u8,
    pub a: u8,
    pub x: u8,
    pub y: u8,
    pub p: u8,
    pub ram: Vec<(u16, u8)>,
}

/// The Harte test files (one per opcode), sorted; `None` (after SKIPPED) without the data.
pub fn harte_files() -> Option<Vec<PathBuf>> {
    let dir = testdata_file("6502/processortests")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("read the processortests directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Some(files)
}

/// PC, A, X, Y, SP, P and CYC of a nestest.log line (the state before its instruction).
pub fn log_state(line: &str) -> [u64; 7] {
    let field = |key: &str| line.split_whitespace().find_map(|t| t.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {line}"));
    let hex = |s: &str| u64::from_str_radix(s, 16).expect("hex");
    [
        hex(&line[..4]),
        hex(field("A:")),
        hex(field("X:")),
        hex(field("Y:")),
        hex(field("SP:")),
        hex(field("P:")),
        field("CYC:").parse().expect("CYC"),
    ]
}
