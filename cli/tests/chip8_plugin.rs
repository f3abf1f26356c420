//! A machine plugin built out of tree and loaded by the unmodified binary: the CHIP-8 crate of
//! examples/plugins/chip8 is copied to a temporary folder as a third party would have it (its isa-api
//! dependency pointed at this checkout), built there as a cdylib, its own tests run (its circuit in lockstep
//! with its interpreter: Timendus' tests and our ROM over 120,000 instructions), and `loom` runs ROMs on it
//! from a config naming the library: frames as PNGs, the network in lockstep with the circuit's reference.
//! Needs cargo (it is running this test) and, for Timendus' ROMs, `$WEAVER_TESTDATA`.

mod common;
use common::{loom, repo, scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Copy the plugin's sources to `dir` (not its build output), pointing isa-api at this checkout.
fn copy_plugin(dir: &Path) {
    let src = repo().join("examples/plugins/chip8");
    for sub in ["src", "tests", "roms"] {
        copy_tree(&src.join(sub), &dir.join(sub));
    }
    let manifest = std::fs::read_to_string(src.join("Cargo.toml")).unwrap();
    let isa_api = repo().join("isa-api").canonicalize().unwrap();
    let manifest = manifest.replace("path = \"../../../isa-api\"", &format!("path = {:?}", isa_api.display().to_string()));
    assert!(manifest.contains(&isa_api.display().to_string()));
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The committed lockfile: the same dependency versions, no registry resolution needed.
    std::fs::copy(src.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// Copy a folder with its subfolders (the plugin's `src/circuit/`).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Where the plugin builds: beside the workspace's build output when there is one, so CI builds it incrementally.
fn plugin_target() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d).join("chip8-plugin"),
        None => repo().join("target/chip8-plugin"),
    }
}

fn testdata() -> Option<PathBuf> {
    test_kit::data_dir("WEAVER_TESTDATA", None)
}

#[test]
fn a_chip8_plugin_built_out_of_tree_runs_in_the_binary() {
    let dir = scratch("chip8-plugin");
    let crate_dir = dir.join("loom-chip8");
    copy_plugin(&crate_dir);
    let target = plugin_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut test = Command::new(&cargo);
    test.args(["test", "--release"]).current_dir(&crate_dir).env("CARGO_TARGET_DIR", &target).env_remove("RUSTFLAGS");
    if let Some(td) = testdata() {
        test.env("WEAVER_TESTDATA", td);
    }
    let out = test.output().unwrap();
    let log = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the plugin's own tests:\n{log}");
    assert!(log.contains("our_rom_in_lockstep_for_120000_instructions ... ok"), "{log}");
    let out = Command::new(&cargo).args(["build", "--release"]).current_dir(&crate_dir).env("CARGO_TARGET_DIR", &target).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lib = target.join("release").join(format!("{}loom_chip8{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    assert!(lib.exists(), "{}", lib.display());
    let cfg = dir.join("chip8.toml");
    std::fs::write(&cfg, format!("[machine]\nplugin = {:?}\n", lib.display().to_string())).unwrap();

    // Our ROM through `loom lockstep`: every position equal to the circuit's reference.
    let rom = crate_dir.join("roms/bounce.ch8");
    let out = loom().arg("lockstep").arg(&cfg).arg(&rom).args(["--max-steps", "3000"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains(", 0 programs disagreeing"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));

    // Frames of our ROM as PNGs, keys from a file (key 5 freezes the digit and beeps).
    let frames = dir.join("frames");
    let keys = dir.join("keys.txt");
    std::fs::write(&keys, "3 5\n14 -\n").unwrap();
    let out = loom().arg("run").arg(&cfg).arg(&rom).args(["--no-progress", "--frames", "24", "--scale", "1", "--png"]).arg(&frames).arg("--input").arg(&keys).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Key 5 held in frames 3 to 13: each round of the ROM's loop that sees it sets the sound timer to 4 (a
    // round takes four frames, its sprites waiting for the display; the interpreter, in lockstep in the plugin's
    // tests, has the same timers), so the beeper sounds in 8 of the 24 frames.
    assert!(stderr.contains("chip8: ") && stderr.contains("[loom: 24 frames, the beeper on in 8;"), "{stderr}");
    for k in 0..24 {
        assert!(frames.join(format!("frame-{k:05}.png")).exists(), "frame {k}");
    }

    // Timendus' IBM logo: 230 lit pixels, as the plugin's interpreter draws it.
    if let Some(td) = testdata() {
        let ibm = td.join("chip8/timendus/2-ibm-logo.ch8");
        let out = loom().arg("run").arg(&cfg).arg(&ibm).args(["--no-progress", "--frames", "8", "--scale", "1", "--force", "--png"]).arg(&frames).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(frames.join("frame-00007.png")).unwrap()));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (64, 32));
        assert_eq!(buf.iter().filter(|p| **p != 0).count(), 230);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Plugins that lie, built here as cdylibs like any plugin: bytes that are not JSON, a description that fails
/// validation, an error, a panic in `describe`, another ABI version. Each is a clear error naming the library
/// and the problem (status 1), never a crash of the binary.
#[test]
fn lying_plugins_are_named_never_a_crash() {
    let dir = scratch("liar-plugins");
    let crate_dir = dir.join("liar");
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();
    let isa_api = repo().join("isa-api").canonicalize().unwrap();
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        format!("[package]\nname = \"liar\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nisa-api = {{ path = {:?} }}\nserde_json = \"1\"\n", isa_api.display().to_string()),
    )
    .unwrap();
    std::fs::write(
        crate_dir.join("src/lib.rs"),
        r#"use isa_api::plugin::{describe_with, PluginBytes, PluginTable, ABI_VERSION};
fn describe() -> Result<Vec<u8>, String> {
    match option_env!("LIAR").unwrap_or("") {
        "json" => Ok(b"{ this is not json".to_vec()),
        "invalid" => {
            let mut d = isa_api::examples::acc8();
            d.registers[0].width = 0;
            serde_json::to_vec(&d).map_err(|e| e.to_string())
        }
        "error" => Err("no machine today".into()),
        "panic" => panic!("describe panicked on purpose"),
        _ => serde_json::to_vec(&isa_api::examples::acc8()).map_err(|e| e.to_string()),
    }
}
unsafe extern "C" fn describe_c(out: *mut PluginBytes) -> i32 { unsafe { describe_with(out, describe) } }
unsafe extern "C" fn free_c(b: PluginBytes) { unsafe { b.free() } }
const VERSION: u32 = match option_env!("LIAR_ABI") { Some(_) => 1, None => ABI_VERSION };
static TABLE: PluginTable = PluginTable { abi_version: VERSION, describe: describe_c, free_bytes: free_c };
#[unsafe(no_mangle)]
pub extern "C" fn loom_machine_plugin_entry() -> *const PluginTable { &TABLE }
"#,
    )
    .unwrap();
    // The CHIP-8 plugin's lockfile pins the same dependencies (cargo adds the root package).
    std::fs::copy(repo().join("examples/plugins/chip8/Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();
    let target = plugin_target();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let lib_name = format!("{}liar{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let cases = [
        ("json", None, "malformed machine description"),
        ("invalid", None, "has width 0"),
        ("error", None, "the plugin reported an error: no machine today"),
        ("panic", None, "the plugin panicked: describe panicked on purpose"),
        ("honest", Some("1"), "plugin ABI version 1, this program speaks version 3"),
    ];
    for (liar, abi, want) in cases {
        let mut c = Command::new(&cargo);
        c.args(["build", "--release"]).current_dir(&crate_dir).env("CARGO_TARGET_DIR", &target).env("LIAR", liar).env_remove("RUSTFLAGS");
        match abi {
            Some(v) => c.env("LIAR_ABI", v),
            None => c.env_remove("LIAR_ABI"),
        };
        let out = c.output().unwrap();
        assert!(out.status.success(), "{liar}: {}", String::from_utf8_lossy(&out.stderr));
        // A copy per case: a loaded library is never unloaded, so each case is its own file.
        let lib = dir.join(format!("{liar}-{lib_name}"));
        std::fs::copy(target.join("release").join(&lib_name), &lib).unwrap();
        let cfg = dir.join(format!("{liar}.toml"));
        std::fs::write(&cfg, format!("[machine]\nplugin = {:?}\n", lib.display().to_string())).unwrap();
        let out = loom().arg("run").arg(&cfg).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{liar}: {stderr}");
        assert!(stderr.contains(want) && stderr.contains(&format!("{liar}-{lib_name}")), "{liar}: {stderr}");
        assert!(!stderr.contains("panicked at") || liar == "panic", "{liar}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
