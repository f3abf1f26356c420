//! `loom nes` end to end: the demo on the reference CPU and on the woven network (frames, GIF, WAV, the two
//! CPUs compared), and clear errors for bad ROMs, input files and existing outputs.

mod common;
use common::*;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = loom().current_dir(repo()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
}

#[test]
fn the_demo_on_both_cpus_writes_frames_gif_and_wav() {
    let dir = scratch("nes-demo");
    let (gif, wav, frames) = (dir.join("demo.gif"), dir.join("demo.wav"), dir.join("frames"));
    let (code, stdout, stderr) = run(&[
        "nes",
        "--frames",
        "6",
        "--cpu",
        "both",
        "--gif",
        gif.to_str().unwrap(),
        "--wav",
        wav.to_str().unwrap(),
        "--png",
        frames.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("6 frames and ") && stderr.contains("identical on the reference CPU and the network"), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("JSON figures");
    assert_eq!(v["identical"], true);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!((runs[0]["cpu"].as_str(), runs[1]["cpu"].as_str()), (Some("reference"), Some("network")));
    assert_eq!(runs[0]["frames_hash"], runs[1]["frames_hash"]);
    assert_eq!(runs[0]["instructions"], runs[1]["instructions"]);
    assert!(runs[1]["tokens_per_frame"].as_f64().unwrap() > 1000.0);
    // Six PNGs, a GIF of six frames, a WAV of 6 frames of sound.
    for n in 0..6 {
        let png = frames.join(format!("frame-{n:05}.png"));
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"), "{}", png.display());
    }
    let g = std::fs::read(&gif).unwrap();
    assert!(g.starts_with(b"GIF89a"));
    assert_eq!(g.windows(2).filter(|w| w == b"\x00\x2C").count() >= 6, true, "six image descriptors");
    let w = std::fs::read(&wav).unwrap();
    assert!(w.starts_with(b"RIFF") && &w[8..12] == b"WAVE");
    // 6 frames of 29,780.5 cycles at 44,100 samples per 1,789,773 cycles: about 4,400 samples.
    assert!(w.len() > 44 + 2 * 4_000, "{} bytes", w.len());
    // Nothing is overwritten without --force.
    let (code, _, stderr) = run(&["nes", "--frames", "1", "--cpu", "reference", "--gif", gif.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("exists; give --force to replace it"), "{stderr}");
    assert_eq!(std::fs::read(&gif).unwrap(), g, "the GIF is untouched");
    let (code, _, stderr) = run(&["nes", "--frames", "1", "--cpu", "reference", "--gif", gif.to_str().unwrap(), "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    // --force on a directory of frames from a longer run leaves this run's frames only (and the user's other files).
    std::fs::write(frames.join("notes.txt"), "mine").unwrap();
    let (code, _, stderr) = run(&["nes", "--frames", "2", "--cpu", "reference", "--png", frames.to_str().unwrap(), "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    let mut names: Vec<String> = std::fs::read_dir(&frames).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    names.sort();
    assert_eq!(names, ["frame-00000.png", "frame-00001.png", "notes.txt"]);
    // --png onto a file: named, before any work.
    let (code, _, stderr) = run(&["nes", "--frames", "1", "--cpu", "reference", "--png", gif.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("is a file; --png takes a directory for the frames"), "{stderr}");
}

#[test]
fn bad_roms_and_input_files_are_named() {
    let dir = scratch("nes-bad");
    let mut axrom = b"NES\x1a\x02\x01\x70\x00".to_vec();
    axrom.resize(16 + 0x8000 + 0x2000, 0);
    let rom = dir.join("axrom.nes");
    std::fs::write(&rom, axrom).unwrap();
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--cpu", "reference"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("axrom.nes: mapper 7 is not supported (this host runs mappers 0-4: NROM, MMC1, UxROM, CNROM, MMC3)"), "{stderr}");
    // A size the board cannot have.
    let mut cnrom = b"NES\x1a\x02\x00\x30\x00".to_vec();
    cnrom.resize(16 + 0x8000, 0);
    let rom = dir.join("cnrom.nes");
    std::fs::write(&rom, cnrom).unwrap();
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--cpu", "reference"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("CNROM boards have 16 or 32 KiB of PRG ROM and 8 KiB-2 MiB of CHR ROM; the header says 32 KiB of PRG ROM and 0 KiB"), "{stderr}");
    let junk = dir.join("junk.nes");
    std::fs::write(&junk, b"not a rom").unwrap();
    let (_, _, stderr) = run(&["nes", junk.to_str().unwrap(), "--cpu", "reference"]);
    assert!(stderr.contains("junk.nes: not an iNES file"), "{stderr}");
    let input = dir.join("buttons.txt");
    std::fs::write(&input, "0 -\n10 Jump\n").unwrap();
    let (code, _, stderr) = run(&["nes", "--input", input.to_str().unwrap(), "--cpu", "reference"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("buttons.txt, line 2: \"Jump\" is not a button"), "{stderr}");
    let (_, _, stderr) = run(&["nes", "configs/rv32im.toml", "--frames", "1"]);
    assert!(stderr.contains("loom nes runs the 6502's NES map"), "{stderr}");
    // Arguments are not guessed by position: a config ends in .toml and comes first.
    let (code, _, stderr) = run(&["nes", "fib.elf", "demo.nes"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("one ROM at a time (fib.elf is not a config: a config ends in .toml)"), "{stderr}");
    let (code, _, stderr) = run(&["nes", "demo.nes", "configs/nes.toml"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("the config goes first: loom nes configs/nes.toml demo.nes"), "{stderr}");
}

/// `--window`: under a virtual X server (Debian's xvfb, which `.ci/run` installs) the demo runs in a window and
/// still writes its frames; without a display, and with `--cpu both`, a clear error.
#[test]
fn the_window_shows_the_frames_or_says_why_not() {
    let (code, _, stderr) = run(&["nes", "--window", "--cpu", "both", "--frames", "2"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("--window reads the keyboard live, which --cpu both cannot replay"), "{stderr}");
    let out = loom().current_dir(repo()).env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY").args(["nes", "--window", "--cpu", "reference", "--frames", "2"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("--window: cannot open a window"), "{stderr}");
    if std::process::Command::new("xvfb-run").arg("--help").output().is_err() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "xvfb-run (Debian's xvfb) is missing under CI=true");
        println!("SKIPPED: no xvfb-run for the window test");
        return;
    }
    let dir = scratch("nes-window");
    let frames = dir.join("frames");
    let out = std::process::Command::new("xvfb-run")
        .arg("-a")
        .arg(env!("CARGO_BIN_EXE_loom"))
        .args(["nes", "--window", "--cpu", "reference", "--frames", "12", "--no-progress", "--png"])
        .arg(&frames)
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("12 frames in"), "{stderr}");
    assert_eq!(std::fs::read_dir(&frames).unwrap().count(), 12);
}

/// `--save`: a battery cartridge's PRG RAM goes to ROM.sav beside the ROM and comes back on the next run; an
/// existing save is replaced only with --force; no battery, no save.
#[test]
fn battery_ram_is_saved_only_when_asked() {
    let dir = scratch("nes-save");
    // An NROM with battery RAM whose program stores $5A at $6000 and $A5 at $7FFF, then loops.
    let code = [0xA9, 0x5A, 0x8D, 0x00, 0x60, 0xA9, 0xA5, 0x8D, 0xFF, 0x7F, 0x4C, 0x0A, 0x80];
    let mut f = b"NES\x1a\x01\x01\x02\x00".to_vec();
    f.resize(16, 0);
    let mut prg = vec![0u8; 0x4000];
    prg[..code.len()].copy_from_slice(&code);
    prg[0x3FFC] = 0x00;
    prg[0x3FFD] = 0x80;
    f.extend(prg);
    f.extend(vec![0u8; 0x2000]);
    let rom = dir.join("battery.nes");
    std::fs::write(&rom, &f).unwrap();
    let sav = dir.join("battery.sav");
    let _ = std::fs::remove_file(&sav);
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--frames", "1", "--cpu", "reference", "--save"]);
    assert_eq!(code, Some(0), "{stderr}");
    let saved = std::fs::read(&sav).unwrap();
    assert_eq!((saved.len(), saved[0], saved[0x1FFF]), (0x2000, 0x5A, 0xA5));
    // Without --force the save is not replaced; with it, the run starts from it.
    let mut edited = saved.clone();
    edited[5] = 0x77;
    std::fs::write(&sav, &edited).unwrap();
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--frames", "1", "--cpu", "reference", "--save"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("battery.sav exists: --save starts from it and replaces it at the end; add --force"), "{stderr}");
    assert_eq!(std::fs::read(&sav).unwrap(), edited);
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--frames", "1", "--cpu", "reference", "--save", "--force"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(std::fs::read(&sav).unwrap()[5], 0x77, "the run started from the save");
    // No battery: refused.
    f[6] = 0;
    std::fs::write(&rom, &f).unwrap();
    let (code, _, stderr) = run(&["nes", rom.to_str().unwrap(), "--frames", "1", "--cpu", "reference", "--save"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("has no battery-backed PRG RAM"), "{stderr}");
}
