//! Helpers shared by host-nes' tests: the shared test data, a recorder of frame hashes and audio.
#![allow(dead_code)]

use host_nes::Recorder;
use host_nes::output::fnv1a;

/// A path under the shared test data (`WEAVER_TESTDATA`); `None` (SKIPPED) when it is unset, a failure under CI.
pub fn testdata(rel: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os("WEAVER_TESTDATA") {
        Some(d) => Some(std::path::PathBuf::from(d).join(rel)),
        None => {
            assert!(std::env::var_os("CI").is_none(), "CI=true needs WEAVER_TESTDATA");
            println!("SKIPPED: WEAVER_TESTDATA is not set");
            None
        }
    }
}

/// Every frame's hash (frames must come in order) and every audio sample.
#[derive(Default)]
pub struct Hashes {
    pub frames: Vec<u64>,
    pub audio: Vec<i16>,
}

impl Recorder for Hashes {
    fn frame(&mut self, f: &host_nes::Frame) {
        assert_eq!(f.number as usize, self.frames.len());
        self.frames.push(fnv1a(f.pixels.iter().copied()));
    }
    fn samples(&mut self, s: &[i16]) {
        self.audio.extend_from_slice(s);
    }
}
