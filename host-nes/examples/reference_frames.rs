//! Render a ROM's frames on the reference CPU (a quick look while writing a ROM; `loom nes` is the tool):
//!
//! ```sh
//! cargo run --release -p host-nes --example reference_frames -- ROM FRAMES OUT_DIR [EVERY] [INPUT_FILE]
//! ```
//!
//! Writes OUT_DIR/frame-NNNNN.png every EVERY frames (default 1), OUT_DIR/audio.wav, and prints each frame's hash.

use host_nes::input::InputSchedule;
use host_nes::output::{FileRecorder, OutputSpec};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err("usage: reference_frames ROM FRAMES OUT_DIR [EVERY] [INPUT_FILE]".into());
    }
    let bytes = std::fs::read(&args[0]).map_err(|e| format!("{}: {e}", args[0]))?;
    let (cart, image) = host_nes::load_rom(&args[0], &bytes).map_err(|e| e.to_string())?;
    let frames: u64 = args[1].parse().map_err(|e| format!("FRAMES: {e}"))?;
    let dir = std::path::PathBuf::from(&args[2]);
    let every = args.get(3).map(|s| s.parse::<u64>()).transpose().map_err(|e| format!("EVERY: {e}"))?.unwrap_or(1);
    let input = match args.get(4) {
        Some(p) => InputSchedule::parse(p, &std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?).map_err(|e| e.to_string())?,
        None => InputSchedule::default(),
    };
    let spec = OutputSpec { png_dir: Some(dir.clone()), gif: None, wav: Some(dir.join("audio.wav")), every, force: true };
    let mut rec = FileRecorder::new(spec).map_err(|e| e.to_string())?;
    let nes = host_nes::run_reference(cart, &image, input, frames, &mut rec).map_err(|e| e.to_string())?;
    rec.finish().map_err(|e| e.to_string())?;
    for (n, h) in &rec.hashes {
        println!("frame {n}: {h:016x}");
    }
    println!("{} instructions, {} samples, audio hash {:016x}", nes.instructions, rec.sample_count, rec.audio_hash());
    Ok(())
}
