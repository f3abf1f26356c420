//! The generic host devices a machine declares (`isa_api::DeviceDesc`), through `loom run` on the paint8
//! test machine (configs/paint8.toml): a clock whose ticks are the frames, the display as GIF and PNGs, the
//! keypad from a key file, the beeper; and the errors for machines without them.

mod common;
use common::{loom, repo, scratch};

/// Lit display pixels of a PNG written at `scale`.
fn lit_pixels(path: &std::path::Path, scale: u32) -> (u32, u32, usize) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let lit = (0..h).step_by(scale as usize).flat_map(|y| (0..w).step_by(scale as usize).map(move |x| (x, y))).filter(|(x, y)| buf[(y * w + x) as usize] != 0).count();
    (w / scale, h / scale, lit)
}

#[test]
fn paint8_frames_go_to_a_gif_and_pngs() {
    let dir = scratch("devices-paint8");
    let keys = dir.join("keys.txt");
    std::fs::write(&keys, "10 2\n20 -\n").unwrap();
    let (gif, pngs) = (dir.join("paint.gif"), dir.join("frames"));
    let run = |extra: &[&str]| {
        loom().current_dir(repo()).args(["run", "--no-progress", "configs/paint8.toml", "--frames", "40", "--scale", "4"]).arg("--gif").arg(&gif).arg("--png").arg(&pngs).arg("--input").arg(&keys).args(extra).output().unwrap()
    };
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Key 1 is held in frames 10 to 19: the beeper sounds in those 10.
    assert!(stderr.contains("[loom: 40 frames, the beeper on in 10; 161 instructions"), "{stderr}");
    // Frame k shows the k pixels painted before its tick.
    for k in [0u32, 1, 17, 39] {
        assert_eq!(lit_pixels(&pngs.join(format!("frame-{k:05}.png")), 4), (16, 8, k as usize), "frame {k}");
    }
    assert!(!pngs.join("frame-00040.png").exists());
    let mut d = gif::DecodeOptions::new();
    d.set_color_output(gif::ColorOutput::Indexed);
    let mut g = d.read_info(std::fs::File::open(&gif).unwrap()).unwrap();
    let mut n = 0;
    while g.read_next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 40);
    // The outputs exist now: refused without --force, replaced with it.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists; give --force"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(run(&["--force"]).status.code(), Some(0));
    // Without --frames the machine paints its 128 pixels and halts.
    let out = loom().current_dir(repo()).args(["run", "--no-progress", "configs/paint8.toml"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[loom: halted;"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_options_need_the_devices() {
    let dir = scratch("devices-errors");
    let err = |args: &[&str]| {
        let out = loom().current_dir(repo()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let g = dir.join("x.gif");
    let g = g.to_str().unwrap();
    assert!(err(&["run", "configs/acc8.toml", "--gif", g]).contains("machine acc8 declares no display"));
    assert!(err(&["run", "configs/acc8.toml", "--frames", "3"]).contains("declares no clock"));
    let keys = dir.join("keys.txt");
    std::fs::write(&keys, "0 7\n").unwrap();
    let e = err(&["run", "configs/paint8.toml", "--input", keys.to_str().unwrap()]);
    assert!(e.contains("line 1: key 7 is not on a keypad of 4 keys"), "{e}");
    assert!(err(&["run", "configs/acc8.toml", "--input", keys.to_str().unwrap()]).contains("declares no keypad"));
    std::fs::remove_dir_all(&dir).unwrap();
}
