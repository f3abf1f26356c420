//! `loom nes [CONFIG] [ROM]`: a NES program frame by frame. The 2A03, its RAM and the cartridge program run in
//! the woven network (`--cpu network`, the default); the host (`host-nes`) plays the PPU, the APU and the pads
//! and writes the pictures and the sound. `--cpu reference` runs the reference interpreter instead (to check
//! the network), `--cpu both` runs the two one after the other and compares every frame's pixels and the audio.

use crate::session::weave_config;
use anyhow::{Context, Result, bail};
use backends::ExecutorKind;
use host_nes::input::InputSchedule;
use host_nes::output::{FileRecorder, OutputSpec, fnv1a};
use host_nes::{Board, NetworkDevices, Recorder};
use indicatif::{ProgressBar, ProgressStyle};
use isa_api::front::Machine;
use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

/// Which CPU runs the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Cpu {
    /// The 2A03 woven into the network (the instructions run in the weights).
    Network,
    /// The reference interpreter (a check on the network).
    Reference,
    /// Both, one after the other: every frame and the audio must be equal.
    Both,
}

#[derive(clap::Args)]
pub struct Args {
    /// `[CONFIG] [ROM]`: a NES-map config (default: the built-in configs/nes.toml) and an iNES ROM, mappers
    /// 0-4 (default: the built-in demo, host-nes/demo/demo.nes).
    #[arg(num_args = 0..=2, value_name = "[CONFIG] [ROM]")]
    pub inputs: Vec<PathBuf>,
    /// Frames to run (default 120; with --window, until the window is closed).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Show the frames in a window as they are made and read pad 1 from its keyboard (arrows; X = A, Z = B,
    /// Right Shift = Select, Enter = Start); Escape or closing the window ends the run. Added to --input's
    /// buttons; not with --cpu both (live keys cannot be replayed).
    #[arg(long)]
    pub window: bool,
    /// Write a PNG of every recorded frame into this directory (frame-00000.png, ...).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Write the recorded frames as an animated GIF.
    #[arg(long)]
    pub gif: Option<PathBuf>,
    /// Write the sound (44.1 kHz, mono, 16-bit) as a WAV file.
    #[arg(long)]
    pub wav: Option<PathBuf>,
    /// Buttons by frame: an input file (`FRAME PAD1 [PAD2]` lines) or an FCEUX movie (.fm2).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Record every K-th frame (PNG and GIF).
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Which CPU runs the program.
    #[arg(long, value_enum, default_value_t = Cpu::Network)]
    pub cpu: Cpu,
    /// Executor of the network (default: the config's `[run] executor`).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    /// Replace existing output files.
    #[arg(long)]
    pub force: bool,
    /// Battery-backed PRG RAM (a cartridge whose header says so): start from ROM.sav beside the ROM when it
    /// exists and write the 8 KiB of PRG RAM there at the end (replacing an existing file only with --force).
    #[arg(long)]
    pub save: bool,
    /// Print the figures as JSON (seconds per frame, instructions and tokens per frame, frame hashes).
    #[arg(long)]
    pub json: bool,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// The built-in config: the NES map.
const NES_CONFIG: &str = include_str!("../../configs/nes.toml");

/// What one CPU's run gave.
struct NesRun {
    cpu: &'static str,
    frames: u64,
    instructions: u64,
    tokens: Option<usize>,
    secs: f64,
    /// The network CPU's decode time by token kind.
    token_times: Option<crate::profile::TokenTimes>,
    /// With `LOOM_PROFILE=stages`: the network CPU's decode time by layer and stage.
    stage_times: Option<serde_json::Value>,
    /// With `LOOM_PROFILE=fields`: the network CPU's decode time by the trace field of the token fed.
    field_times: Option<serde_json::Value>,
    /// With `LOOM_PROFILE=steps`: the network CPU's decode time by the kind of machine step.
    step_times: Option<serde_json::Value>,
    hashes: Vec<(u64, u64)>,
    audio_hash: u64,
    samples: u64,
    summary: String,
    /// The run's exit status: 0, or a machine fault's (134) or the step limit's (124).
    status: u8,
    /// The PRG RAM ($6000-$7FFF) at the end.
    prg_ram: Vec<u8>,
}

impl NesRun {
    fn figures(&self) -> serde_json::Value {
        let f = self.frames.max(1) as f64;
        serde_json::json!({
            "cpu": self.cpu,
            "frames": self.frames,
            "seconds": self.secs,
            "seconds_per_frame": self.secs / f,
            "instructions": self.instructions,
            "instructions_per_frame": self.instructions as f64 / f,
            "tokens": self.tokens,
            "tokens_per_frame": self.tokens.map(|t| t as f64 / f),
            "tokens_per_s": self.tokens.map(|t| t as f64 / self.secs),
            "frames_hash": format!("{:016x}", fnv1a(self.hashes.iter().flat_map(|h| h.1.to_le_bytes()))),
            "audio_samples": self.samples,
            "audio_hash": format!("{:016x}", self.audio_hash),
            "tokens_per_instruction": self.tokens.map(|t| t as f64 / self.instructions.max(1) as f64),
            "token_times": self.token_times.map(|t| t.json()),
            "stage_times": self.stage_times,
            "field_times": self.field_times,
            "step_times": self.step_times,
        })
    }
}

fn spec(a: &Args, record: bool) -> OutputSpec {
    if record {
        OutputSpec { png_dir: a.png.clone(), gif: a.gif.clone(), wav: a.wav.clone(), every: a.every, force: a.force }
    } else {
        OutputSpec { every: a.every, ..OutputSpec::default() }
    }
}

fn progress_bar(show: bool) -> ProgressBar {
    let pb = crate::progress::spinner(show);
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
    pb
}

/// `loom nes`; returns the process exit status: 0, 3 ([`crate::DISAGREES`]) when `--cpu both` finds a difference, 134 when a CPU
/// faults (an opcode the 2A03 refuses), 124 at the step limit.
pub fn run(a: Args) -> Result<ExitCode> {
    let is_config = |p: &PathBuf| p.extension().is_some_and(|e| e == "toml");
    let (config, rom_path) = match a.inputs.as_slice() {
        [] => (None, None),
        [one] if is_config(one) => (Some(one.clone()), None),
        [one] => (None, Some(one.clone())),
        [c, r] if is_config(c) && !is_config(r) => (Some(c.clone()), Some(r.clone())),
        [c, r] if is_config(r) => bail!("the config goes first: loom nes {} {}", r.display(), c.display()),
        [c, _] => bail!("one ROM at a time ({} is not a config: a config ends in .toml)", c.display()),
        _ => bail!("give at most a config and a ROM"),
    };
    if a.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    if a.window && a.cpu == Cpu::Both {
        bail!("--window reads the keyboard live, which --cpu both cannot replay on the second CPU; use --input FILE");
    }
    let frames = a.frames.unwrap_or(if a.window { u64::MAX } else { 120 });
    if a.every == 0 {
        bail!("--every must be at least 1");
    }
    let (rom_name, rom) = match &rom_path {
        Some(p) => (p.display().to_string(), std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => ("the built-in demo (host-nes/demo/demo.nes)".to_string(), host_nes::DEMO_ROM.to_vec()),
    };
    let (cart, mut image) = host_nes::load_rom(&rom_name, &rom).map_err(anyhow::Error::msg)?;
    let save = if a.save { Some(battery_save(&a, rom_path.as_deref(), &cart, &mut image)?) } else { None };
    let input = match &a.input {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            InputSchedule::parse(&p.display().to_string(), &text)?
        }
        None if rom_path.is_none() => InputSchedule::parse("host-nes/demo/input.txt", host_nes::DEMO_INPUT)?,
        None => InputSchedule::default(),
    };
    // Refuse existing outputs before any long work.
    let live = host_nes::LiveButtons::default();
    let recorder = Sinks { file: Rc::new(RefCell::new(FileRecorder::new(spec(&a, true))?)), window: open_window(&a, &rom_name, &live)? };
    if a.png.is_none() && a.gif.is_none() && a.wav.is_none() && !a.json {
        eprintln!("(no --png, --gif or --wav: the frames and the sound are not saved)");
    }
    let progress = !a.no_progress && !a.json;
    let mut runs = Vec::new();
    if matches!(a.cpu, Cpu::Reference | Cpu::Both) {
        // With --cpu both, the network's run writes the files.
        let rec = if a.cpu == Cpu::Both { Sinks { file: Rc::new(RefCell::new(FileRecorder::new(spec(&a, false))?)), window: None } } else { recorder.clone() };
        let job = Job { frames, cart: cart.clone(), image: &image, input: input.clone(), live: &live, rec, progress };
        runs.push(run_reference(job)?);
    }
    if matches!(a.cpu, Cpu::Network | Cpu::Both) {
        let (cfg, machine) = crate::session::open_config_or(config.as_deref(), NES_CONFIG, "configs/nes.toml (built in)")?;
        let desc = machine.describe()?;
        if desc.name != "mos6502-nes" {
            bail!("{}: loom nes runs the 6502's NES map (map = \"nes\"), this config's machine is {}", cfg.origin, desc.name);
        }
        // The PRG ROM's size and banking come from the cartridge's header.
        let machine: Box<dyn Machine> = Box::new(host_nes::nes_machine_for(&cart));
        let job = Job { frames, cart, image: &image, input, live: &live, rec: recorder.clone(), progress };
        runs.push(run_network(&a, &cfg, machine, job)?);
    }
    recorder.file.borrow_mut().finish()?;
    if let (Some(path), Some(last)) = (&save, runs.last()) {
        std::fs::write(path, &last.prg_ram).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("PRG RAM saved to {} ({} CPU)", path.display(), last.cpu);
    }
    let mut status = runs.iter().map(|r| r.status).find(|&s| s != 0).unwrap_or(0);
    let mut identical = true;
    if let [r, n] = runs.as_slice() {
        let differ = r.hashes.iter().zip(&n.hashes).position(|(x, y)| x != y);
        match differ {
            Some(i) => {
                eprintln!("frame {} differs between the reference CPU and the network", r.hashes[i].0);
                status = crate::DISAGREES;
                identical = false;
            }
            None if r.hashes.len() != n.hashes.len() => {
                eprintln!("the reference CPU gave {} frames, the network {}", r.hashes.len(), n.hashes.len());
                status = crate::DISAGREES;
                identical = false;
            }
            None if r.audio_hash != n.audio_hash || r.samples != n.samples => {
                eprintln!("the audio differs between the reference CPU and the network ({} and {} samples)", r.samples, n.samples);
                status = crate::DISAGREES;
                identical = false;
            }
            None => eprintln!("{} frames and {} audio samples identical on the reference CPU and the network", n.hashes.len(), n.samples),
        }
    }
    if a.json {
        let all: Vec<_> = runs.iter().map(NesRun::figures).collect();
        let mut out = serde_json::json!({ "rom": rom_name, "runs": all });
        if runs.len() == 2 {
            out["identical"] = serde_json::json!(identical);
            out["network_over_reference_seconds"] = serde_json::json!(runs[1].secs / runs[0].secs.max(1e-9));
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for r in &runs {
            let f = r.frames.max(1) as f64;
            let tokens = r.tokens.map_or(String::new(), |t| format!(", {:.0} tokens per frame ({:.0} tokens/s)", t as f64 / f, t as f64 / r.secs));
            eprintln!(
                "[loom nes, {} CPU: {}; {} frames in {:.1} s: {:.3} s per frame, {:.0} instructions per frame{tokens}]",
                r.cpu,
                r.summary,
                r.frames,
                r.secs,
                r.secs / f,
                r.instructions as f64 / f
            );
        }
    }
    Ok(ExitCode::from(status))
}

/// `--save`: the `.sav` beside the ROM, its 8 KiB loaded into the start image's PRG RAM when it exists. Errors
/// before any long work: no ROM file, a cartridge without a battery, a file of another size, an existing file
/// without --force (the run would replace it).
fn battery_save(a: &Args, rom: Option<&std::path::Path>, cart: &host_nes::Cartridge, image: &mut isa_6502::front::ProgramImage) -> Result<PathBuf> {
    let Some(rom) = rom else { bail!("--save needs a ROM file (the demo has no battery)") };
    if !cart.battery {
        bail!("--save: {} has no battery-backed PRG RAM (iNES flags 6, bit 1)", rom.display());
    }
    let path = rom.with_extension("sav");
    if path.exists() {
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        if bytes.len() != 0x2000 {
            bail!("{}: {} bytes, a save holds the 8 KiB of PRG RAM ($6000-$7FFF)", path.display(), bytes.len());
        }
        if !a.force {
            bail!("{} exists: --save starts from it and replaces it at the end; add --force", path.display());
        }
        image.bytes.retain(|b| !(0x6000..0x8000).contains(&b.0));
        image.bytes.extend(bytes.iter().enumerate().map(|(i, &v)| (0x6000 + i as u16, v)));
    }
    Ok(path)
}

/// Where a run's frames and sound go: the files (and the hashes), and the window when there is one.
#[derive(Clone)]
struct Sinks {
    file: Rc<RefCell<FileRecorder>>,
    #[cfg(feature = "window")]
    window: Option<Rc<RefCell<host_nes::window::WindowRecorder>>>,
    #[cfg(not(feature = "window"))]
    window: Option<std::convert::Infallible>,
}

impl Recorder for Sinks {
    fn frame(&mut self, frame: &host_nes::Frame) {
        self.file.frame(frame);
        #[cfg(feature = "window")]
        if let Some(w) = &mut self.window {
            w.frame(frame);
        }
    }
    fn samples(&mut self, samples: &[i16]) {
        self.file.samples(samples);
    }
    fn stop(&self) -> bool {
        #[cfg(feature = "window")]
        if let Some(w) = &self.window {
            return w.stop();
        }
        false
    }
}

/// The window of `--window`, its keys going to `live`.
#[cfg(feature = "window")]
fn open_window(a: &Args, rom_name: &str, live: &host_nes::LiveButtons) -> Result<Option<Rc<RefCell<host_nes::window::WindowRecorder>>>> {
    if !a.window {
        return Ok(None);
    }
    let title = format!("loom nes: {rom_name}");
    let w = host_nes::window::WindowRecorder::open(&title, live.clone()).map_err(anyhow::Error::msg)?;
    Ok(Some(Rc::new(RefCell::new(w))))
}

#[cfg(not(feature = "window"))]
fn open_window(a: &Args, _rom_name: &str, _live: &host_nes::LiveButtons) -> Result<Option<std::convert::Infallible>> {
    if a.window {
        bail!("--window: this loom was built without the `window` feature");
    }
    Ok(None)
}

/// One CPU's run: the frames to run, the cartridge and the CPU's start image, the buttons (file and live) and
/// where the frames go.
struct Job<'a> {
    frames: u64,
    cart: host_nes::Cartridge,
    image: &'a isa_6502::front::ProgramImage,
    input: InputSchedule,
    live: &'a host_nes::LiveButtons,
    rec: Sinks,
    progress: bool,
}

impl Job<'_> {
    /// The board at power-on with the job's cartridge and buttons.
    fn board(&self) -> Board {
        let mut board = Board::new(self.cart.clone(), self.input.clone());
        board.set_live(self.live.clone());
        board
    }
}

fn run_reference(job: Job) -> Result<NesRun> {
    let (frames, rec) = (job.frames, job.rec.clone());
    let pb = progress_bar(job.progress);
    let t0 = Instant::now();
    let mut nes = host_nes::ReferenceNes::new(job.image, job.board());
    let mut r = rec.clone();
    let fault = host_nes::reference_frames(&mut nes, frames, &mut r, |f, instructions| {
        let per = t0.elapsed().as_secs_f64() / (f.number + 1) as f64;
        pb.set_message(format!("reference CPU: frame {}{}, {per:.4} s/frame, {instructions} instructions", f.number + 1, of(frames)));
        pb.tick();
    });
    pb.finish_and_clear();
    let (summary, status) = match fault {
        Some(f) => (format!("interpreter fault {f}"), isa_api::front::EXIT_FAULT),
        None => (format!("{} frames", nes.board.frames_finished()), 0),
    };
    let secs = t0.elapsed().as_secs_f64();
    let rb = rec.file.borrow();
    if let Some(e) = &rb.error {
        bail!("{e}");
    }
    Ok(NesRun {
        cpu: "reference",
        frames: nes.board.frames_finished(),
        instructions: nes.instructions,
        tokens: None,
        token_times: None,
        stage_times: None,
        field_times: None,
        step_times: None,
        secs,
        hashes: rb.hashes.clone(),
        audio_hash: rb.audio_hash(),
        samples: rb.sample_count,
        summary,
        status,
        prg_ram: nes.memory[0x6000..0x8000].to_vec(),
    })
}

fn run_network(a: &Args, cfg: &weaver::config::Config, machine: Box<dyn Machine>, job: Job) -> Result<NesRun> {
    let (rec, progress) = (job.rec.clone(), job.progress);
    let l = weave_config(cfg, machine, a.executor, progress)?;
    if !a.json {
        eprintln!("{}", l.header());
    }
    let opts = host_nes::nes_machine_for(&job.cart).options();
    let devices = Rc::new(RefCell::new(NetworkDevices::new(&opts, job.board(), job.image.memory(), Some(job.frames), Box::new(rec.clone()))));
    let r = crate::session::run_with_devices(&l, &job.image.load_image(&opts), Box::new(Shared(devices.clone(), Vec::new())), l.max_steps, progress, "network CPU: ")?;
    let prg_ram = devices.borrow().prg_ram().to_vec();
    let rb = rec.file.borrow();
    if let Some(e) = &rb.error {
        bail!("{e}");
    }
    Ok(NesRun {
        cpu: "network",
        frames: rb.hashes.len() as u64,
        instructions: r.instructions,
        tokens: Some(r.tokens()),
        secs: r.secs,
        token_times: Some(r.token_times),
        stage_times: r.stage_times.as_ref().map(|t| crate::profile::stage_profile_json(t, r.commit_stage_times.as_ref())),
        field_times: r.field_times.as_ref().map(|f| f.json()),
        step_times: r.step_times.as_ref().map(|s| s.json()),
        hashes: rb.hashes.clone(),
        audio_hash: rb.audio_hash(),
        samples: rb.sample_count,
        summary: r.finish.summary.clone(),
        status: r.finish.status,
        prg_ram,
    })
}

/// The network's devices, kept by the caller too (to read the PRG RAM after the run), and a copy of their
/// console text.
struct Shared(Rc<RefCell<NetworkDevices>>, Vec<u8>);

impl isa_api::front::Devices for Shared {
    fn inject(&mut self, steps: usize) -> Vec<(u32, u64)> {
        self.0.borrow_mut().inject(steps)
    }
    fn answer(&mut self, port: u32, request: u64) -> u64 {
        self.0.borrow_mut().answer(port, request)
    }
    fn step(&mut self, step: &isa_api::StepEvents) {
        let mut d = self.0.borrow_mut();
        d.step(step);
        if d.console().len() != self.1.len() {
            self.1 = d.console().to_vec();
        }
    }
    fn instructions(&self) -> u64 {
        self.0.borrow().instructions()
    }
    fn console(&self) -> &[u8] {
        &self.1
    }
    fn finish(&mut self, end: isa_api::front::RunEnd) -> isa_api::front::Finish {
        self.0.borrow_mut().finish(end)
    }
    fn done(&self) -> bool {
        self.0.borrow().done()
    }
    fn progress(&self) -> Option<String> {
        self.0.borrow().progress()
    }
}

/// " of N" for a progress line, nothing when the run has no frame limit.
fn of(frames: u64) -> String {
    if frames == u64::MAX { String::new() } else { format!(" of {frames}") }
}
