//! `loom run CONFIG [PROGRAM]` weaves the machine a config names and runs a program on it (or the machine's
//! built-in demo); `loom run --model DIR [PROGRAM]` runs a woven checkpoint directory. `loom bench-run` is the
//! same run as a benchmark (JSON figures, no console).
//!
//! The decode loop ([`isa_api::host::run_io`]) knows only the published protocol and the executor's next
//! token; the machine's front supplies the load image and the host devices (console, exit, fault report,
//! input ports), which read the decoded trace. No circuit and no reference evaluator is reachable from the
//! loop: the instructions run in the weights.

use crate::registry::MACHINES;
use anyhow::{Context, Result, bail};
use backends::{Executor, ExecutorKind};
use indicatif::{ProgressBar, ProgressStyle};
use isa_api::front::{Devices, EXIT_STEP_LIMIT, Finish, GenericMachine, LoadImage, Machine, Program, RunEnd};
use isa_api::host::{self, RunOutcome};
use isa_api::{MachineDesc, MachineFace, Protocol};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use weaver::config::Config;

#[derive(clap::Args)]
pub struct Args {
    /// `CONFIG [PROGRAM]`: a machine config (configs/rv32im.toml, configs/acc8.toml, ...) and a program for it
    /// (an ELF for rv32im, a raw memory image for the test machines; default: the machine's built-in demo).
    /// With --model: `[PROGRAM]`.
    #[arg(num_args = 0..=2, value_name = "CONFIG [PROGRAM] | [PROGRAM]")]
    pub inputs: Vec<PathBuf>,
    /// Woven checkpoint directory (from `loom weave`) to run instead of weaving a config.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Executor (default: the config's `[run] executor`; incremental with --model).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    #[command(flatten)]
    pub program: ProgramFlags,
    #[command(flatten)]
    pub devices: DeviceFlags,
    #[command(flatten)]
    pub keys: KeyOverrides,
}

/// The flags of one program's run (`run`, `bench-run`, `eval`): its step limit, its trace, the progress line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ProgramFlags {
    /// Stop after this many machine steps if the machine has not halted (default: the config's
    /// `max_steps`, or 100,000,000 with --model).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// Write {"prompt": [...], "generated": [...], "injected": [[i, id], ...]} here.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// The host devices' flags of the verbs that run one program with them (`run`, `bench-run`, `eval`).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DeviceFlags {
    /// The program's standard input (RV32: what read(2) on fd 0 returns), read as the machine asks for it
    /// (default: this process's standard input; `bench-run`: none).
    #[arg(long, value_name = "FILE")]
    pub stdin: Option<PathBuf>,
    /// Machines that declare a clock: stop after N frames (ticks).
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Machines that declare a display: the frames as an animated GIF.
    #[arg(long, value_name = "FILE")]
    pub gif: Option<PathBuf>,
    /// Machines that declare a display: a PNG per frame in DIR (frame-00000.png, ...).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Pixels per display pixel in the GIF and PNGs.
    #[arg(long, default_value_t = 8)]
    pub scale: u32,
    /// Machines that declare a keypad: the keys pressed by frame (`FRAME KEYS` lines: hex key numbers joined
    /// by `+`, or `-` for none).
    #[arg(long = "input", value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Replace existing frame files.
    #[arg(long)]
    pub force: bool,
}

/// `loom bench-run`: `run`'s arguments; the figures are JSON (the verb's only format: `--json` is accepted so
/// that a script may pass it to every verb that prints figures).
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub run: Args,
    /// Print the figures as JSON (always so).
    #[arg(long)]
    pub json: bool,
}

/// The standard input of a run: the file `path`, else `default`.
pub(crate) fn open_stdin(path: Option<&Path>, default: impl FnOnce() -> Box<dyn std::io::Read>) -> Result<Box<dyn std::io::Read>> {
    Ok(match path {
        Some(p) => Box::new(std::io::BufReader::new(std::fs::File::open(p).with_context(|| format!("--stdin {}", p.display()))?)),
        None => default(),
    })
}

/// Machine keys given on the command line, which override the config's `[machine]` table (a machine that
/// does not take a key refuses it by name).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KeyOverrides {
    /// Where a raw program is loaded (the machine key `load_at`; 6502: e.g. 0x0400).
    #[arg(long, value_parser = parse_address)]
    pub load_at: Option<u64>,
    /// The first program counter (the machine key `entry`; 6502: default the reset vector or load_at).
    #[arg(long, value_parser = parse_address)]
    pub pc: Option<u64>,
}

/// An address: decimal, or hexadecimal with `0x` or `$`.
fn parse_address(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).or_else(|| t.strip_prefix('$')) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    u64::from_str_radix(&digits.replace('_', ""), radix).map_err(|e| format!("{s:?} is not an address ({e})"))
}

/// The flags of the verbs that run one program on a built-in config (`python`, `cuda`): executor, step limit,
/// progress line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunFlags {
    /// Executor (default: the config's `[run] executor`).
    #[arg(long, value_parser = crate::executor_parser())]
    pub executor: Option<ExecutorKind>,
    /// Stop after this many machine steps (default: the config's `max_steps`).
    #[arg(long, allow_negative_numbers = true)]
    pub max_steps: Option<usize>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// Dense executors hold every woven weight as an f32 tensor; above this many parameters a config run is
/// refused with a pointer to the sparse executor (a checkpoint run with `--model` is the user's explicit choice).
pub(crate) const DENSE_PARAMETER_LIMIT: usize = 500_000_000;

/// A machine ready to run: its front, face and protocol, an executor with the woven (or loaded) model.
pub(crate) struct Loaded {
    pub machine: Box<dyn Machine>,
    pub face: MachineFace,
    /// The description (a config run), for the reference replay of `loom lockstep`.
    pub desc: Option<MachineDesc>,
    pub protocol: Protocol,
    pub report: weaver::Report,
    pub executor: Box<dyn Executor>,
    /// Seconds to weave (config) or load (checkpoint), and to build the executor.
    pub prepare_s: f64,
    pub build_s: f64,
    pub from_checkpoint: bool,
    /// The weights came from the weave cache ([`crate::weave_cache`]), not from the weaver.
    pub cached: bool,
    pub max_steps: usize,
}

impl Loaded {
    /// How the weights were had: `woven`, `loaded from the weave cache` or `loaded` (a checkpoint).
    pub fn prepared(&self) -> &'static str {
        match (self.from_checkpoint, self.cached) {
            (true, _) => "loaded",
            (false, true) => "loaded from the weave cache",
            (false, false) => "woven",
        }
    }

    /// The one-line header of a run: the machine's shape, how it was prepared and in how long.
    pub fn header(&self) -> String {
        format!(
            "{}: {} layers, hidden {}, {:.3} G parameters, {} in {:.1} s, {} executor ready in {:.1} s",
            self.report.machine,
            self.report.layers,
            self.report.hidden_size,
            self.report.parameters as f64 / 1e9,
            self.prepared(),
            self.prepare_s,
            self.executor.kind(),
            self.build_s
        )
    }
}

/// Read a config and make its machine (cheap: nothing is woven yet).
pub(crate) fn open_config(path: &Path, keys: &KeyOverrides) -> Result<(Config, Box<dyn Machine>)> {
    let mut cfg = Config::from_file(path)?;
    let plain = cfg.clone();
    let mut given = Vec::new();
    for (key, flag, value) in [("load_at", "--load-at", keys.load_at), ("entry", "--pc", keys.pc)] {
        if let Some(v) = value {
            let v = i64::try_from(v).map_err(|_| anyhow::anyhow!("{flag}: {v:#x} is too large"))?;
            cfg.machine.keys.insert(key.to_string(), toml::Value::Integer(v));
            given.push(flag);
        }
    }
    match cfg.machine(MACHINES) {
        Ok(machine) => Ok((cfg, machine)),
        // The flags, not the config, are what the machine refuses.
        Err(e) if !given.is_empty() && plain.machine(MACHINES).is_ok() => {
            bail!("{}: machine {} does not take this (it sets the machine keys load_at / entry, which only the 6502 has): {e}", given.join(" and "), plain.machine.isa.as_deref().unwrap_or("?"))
        }
        Err(e) => Err(e.into()),
    }
}

/// The config at `path`, or the built-in config `builtin` (its text) named `origin` when there is none.
pub(crate) fn open_config_or(path: Option<&Path>, builtin: &str, origin: &str) -> Result<(Config, Box<dyn Machine>)> {
    match path {
        Some(p) => open_config(p, &KeyOverrides::default()),
        None => {
            let cfg = Config::parse(builtin, origin, Path::new("."))?;
            let m = cfg.machine(MACHINES)?;
            Ok((cfg, m))
        }
    }
}

/// Weave the config's machine (no inert attention layer: runs here do not need one) and build the executor.
pub(crate) fn weave_config(cfg: &Config, machine: Box<dyn Machine>, executor: Option<ExecutorKind>, progress: bool) -> Result<Loaded> {
    let desc = machine.describe()?;
    weave_described(cfg, machine, desc, executor, progress)
}

/// [`weave_config`] of a machine already described (`desc`: `machine.describe()`), so that a run builds its
/// circuit once.
pub(crate) fn weave_described(cfg: &Config, machine: Box<dyn Machine>, desc: isa_api::MachineDesc, executor: Option<ExecutorKind>, progress: bool) -> Result<Loaded> {
    let kind = executor.unwrap_or(cfg.run.executor);
    let pb = spinner(progress, &format!("weaving {} {}", desc.name, machine.about()));
    let t0 = Instant::now();
    let opts = weaver::WeaveOptions { fit: cfg.geometry.clone(), attention_layer: false };
    let (woven, cached) = woven_or_cached(&desc, &opts, &pb)?;
    let prepare_s = t0.elapsed().as_secs_f64();
    if kind.is_dense() && woven.report.parameters > DENSE_PARAMETER_LIMIT {
        bail!(
            "{}: executor {kind} is a dense burn backend, which holds every woven weight as an f32 tensor ({:.2} G parameters, {:.1} GB \
             for this machine); run it on executor = \"incremental\" (or \"sparse\"), or export it with `loom weave CONFIG --out DIR` and use `loom run --model DIR --executor {kind}`",
            cfg.origin,
            woven.report.parameters as f64 / 1e9,
            woven.report.parameters as f64 * 4e-9
        );
    }
    pb.set_message(format!("building the {kind} executor"));
    let executor = backends::executor::build(kind, &woven.config, &woven.weights)?;
    drop(woven.weights);
    let build_s = t0.elapsed().as_secs_f64() - prepare_s;
    pb.finish_and_clear();
    Ok(Loaded {
        machine,
        face: desc.face.clone(),
        desc: Some(desc),
        protocol: woven.protocol,
        report: woven.report,
        executor,
        prepare_s,
        build_s,
        from_checkpoint: false,
        cached,
        max_steps: cfg.max_steps(),
    })
}

/// A woven machine's config, weights, protocol and report.
struct WovenParts {
    config: backends::Qwen35Config,
    weights: backends::WeightMap,
    protocol: isa_api::Protocol,
    report: weaver::report::Report,
}

/// The machine from the weave cache ([`crate::weave_cache`]) where it holds it, else woven now and stored
/// there if weaving took long enough to be worth it. A cache that cannot be read or written is reported on
/// stderr and otherwise ignored.
/// Also returns whether it came from the cache.
fn woven_or_cached(desc: &isa_api::MachineDesc, opts: &weaver::WeaveOptions, pb: &indicatif::ProgressBar) -> Result<(WovenParts, bool)> {
    let cache = crate::weave_cache::dir();
    let key = crate::weave_cache::key(desc, opts);
    if let Some(root) = &cache {
        match crate::weave_cache::load(root, &key) {
            Ok(Some(e)) => return Ok((WovenParts { config: e.config, weights: e.weights, protocol: e.manifest.protocol, report: e.manifest.report }, true)),
            Ok(None) => {}
            Err(e) => pb.suspend(|| eprintln!("warning: weave cache entry {key} unreadable ({e:#}); weaving again")),
        }
    }
    let t0 = Instant::now();
    let woven = weaver::weave(desc, opts)?;
    if let Some(root) = cache.as_ref().filter(|_| t0.elapsed().as_secs_f64() >= crate::weave_cache::min_weave_s()) {
        pb.set_message(format!("caching the woven {} in {}", desc.name, root.display()));
        if let Err(e) = crate::weave_cache::store(root, &key, &woven.config, &woven.weights, &woven.manifest) {
            pb.suspend(|| eprintln!("warning: could not cache the woven machine in {} ({e:#})", root.display()));
        }
    }
    Ok((WovenParts { config: woven.config, weights: woven.weights, protocol: woven.protocol, report: woven.report }, false))
}

/// Open a woven checkpoint directory: its manifest's machine (the registry's front for its name, else the
/// generic front) and an executor over its weights.
pub(crate) fn open_checkpoint(dir: &Path, program: Option<&Program>, executor: Option<ExecutorKind>) -> Result<Loaded> {
    let kind = executor.unwrap_or(ExecutorKind::Incremental);
    let t0 = Instant::now();
    let manifest = weaver::export::load_manifest(dir)?;
    let face = manifest.face.clone();
    let machine: Box<dyn Machine> = match weaver::config::find(MACHINES, &face.name) {
        Some(front) => front.from_face(&face, program).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?,
        None => Box::new(GenericMachine::of_face(face.clone(), None)),
    };
    // A grafted checkpoint runs its machine on the machine's route: the machine's layers only, in its own ids.
    let executor = if backends::graft::GraftManifest::load(dir)?.is_some() {
        backends::executor::open_route(kind, dir, backends::graft::Route::Machine)?
    } else {
        backends::executor::open(kind, dir)?
    };
    if (manifest.protocol.vocab_size as usize) > executor.config().vocab_size {
        bail!("{}: the protocol needs {} tokens but the model has {}", dir.display(), manifest.protocol.vocab_size, executor.config().vocab_size);
    }
    let prepare_s = t0.elapsed().as_secs_f64();
    Ok(Loaded {
        machine,
        face,
        desc: None,
        protocol: manifest.protocol,
        report: manifest.report,
        executor,
        prepare_s,
        build_s: 0.0,
        from_checkpoint: true,
        cached: false,
        max_steps: 100_000_000,
    })
}

/// What one program's run gave.
pub(crate) struct RunResult {
    pub out: RunOutcome,
    pub finish: Finish,
    pub end: RunEnd,
    pub instructions: u64,
    pub console: Vec<u8>,
    pub secs: f64,
    /// The executor's work counters for this run (see `backends::Session::counters`).
    pub counters: Vec<(&'static str, u64)>,
    /// Frames of a declared display, one per tick.
    pub frames: Vec<isa_api::devices::Frame>,
    /// Where the decode time went, by the kind of token fed (see [`TokenTimes`]).
    pub token_times: TokenTimes,
    /// With `LOOM_PROFILE=stages` on the incremental executor: the decode time by layer and stage (see
    /// [`stage_times_json`]).
    pub stage_times: Option<backends::incremental::StageTimes>,
    /// With `LOOM_PROFILE=fields`: the decode time by the trace field of the token fed (see [`FieldTimes`]).
    pub field_times: Option<FieldTimes>,
}

/// The profiles `LOOM_PROFILE` asks for, a comma-separated list: `stages` (decode time by layer and stage, the
/// incremental executor) and `fields` (decode time by the trace field of the token fed, any executor).
fn profile_wanted(name: &str) -> bool {
    std::env::var("LOOM_PROFILE").is_ok_and(|v| v.split(',').any(|p| p.trim() == name))
}

/// Decode time by the trace field of the token fed, its commit (end) variant apart from the others: a commit's
/// time is the whole machine step's, so the commits of a field tell which steps end with it (e.g. an `IO_READ`
/// request's) and what they cost. Tokens outside the step fields (loads, `STEP`, `HALT`) are not counted.
#[derive(Clone, Debug)]
pub(crate) struct FieldTimes {
    /// Per token id: `2 * field + end`, or `u32::MAX` when not a counted field token.
    slot: Vec<u32>,
    names: Vec<String>,
    /// Per slot: tokens fed and seconds spent.
    times: Vec<(u64, f64)>,
}

impl FieldTimes {
    pub fn new(proto: &isa_api::Protocol) -> Self {
        use isa_api::protocol::Token;
        let slot = (0..proto.vocab_size)
            .map(|t| match proto.decode(t) {
                Some(Token::Value { field, end, .. }) if !matches!(proto.fields[field as usize].role, isa_api::FieldRole::LoadAddr { .. } | isa_api::FieldRole::LoadData { .. }) => 2 * field + end as u32,
                _ => u32::MAX,
            })
            .collect();
        let names = proto.fields.iter().map(|f| f.name.clone()).collect();
        Self { slot, names, times: vec![(0, 0.0); 2 * proto.fields.len()] }
    }

    fn add(&mut self, token: u32, secs: f64) {
        if let Some(&s) = self.slot.get(token as usize).filter(|s| **s != u32::MAX) {
            let e = &mut self.times[s as usize];
            e.0 += 1;
            e.1 += secs;
        }
    }

    /// (field name, commit, tokens, seconds) of every field fed, the most time first.
    pub fn rows(&self) -> Vec<(&str, bool, u64, f64)> {
        let mut rows: Vec<_> = self.times.iter().enumerate().filter(|(_, t)| t.0 > 0).map(|(s, t)| (self.names[s / 2].as_str(), s % 2 == 1, t.0, t.1)).collect();
        rows.sort_by(|a, b| b.3.total_cmp(&a.3));
        rows
    }

    /// The rows as JSON: field, commit, tokens, milliseconds and microseconds per token.
    pub fn json(&self) -> serde_json::Value {
        self.rows().iter().map(|(f, c, n, s)| serde_json::json!({ "field": f, "commit": c, "tokens": n, "ms": s * 1e3, "us_per_token": s / *n as f64 * 1e6 })).collect()
    }

    /// The rows as a table on stderr.
    fn print(&self) {
        eprintln!("decode time by the field of the token fed (LOOM_PROFILE=fields):");
        eprintln!("{:>16} {:>7} {:>10} {:>10} {:>8}", "field", "commit", "tokens", "ms", "us/token");
        for (f, c, n, s) in self.rows() {
            eprintln!("{f:>16} {:>7} {n:>10} {:>10.1} {:>8.2}", if c { "yes" } else { "" }, s * 1e3, s / n as f64 * 1e6);
        }
    }
}

/// The stage profile as JSON: milliseconds per layer and stage, per stage over all layers, and for the final
/// norm with the lm_head (`head_ms`), over `tokens` tokens (every token after the prompt).
pub(crate) fn stage_times_json(t: &backends::incremental::StageTimes) -> serde_json::Value {
    let ms = |ns: u64| ns as f64 / 1e6;
    serde_json::json!({
        "tokens": t.tokens,
        "stages": backends::incremental::STAGES,
        "ms_per_stage": t.per_stage().map(ms),
        "ms_per_layer": t.layers.iter().map(|l| l.map(ms)).collect::<Vec<_>>(),
        "head_ms": ms(t.head),
    })
}

/// The stage profile as a table on stderr (milliseconds).
fn print_stage_times(t: &backends::incremental::StageTimes) {
    let stages = backends::incremental::STAGES;
    eprintln!("decode time by layer and stage over {} tokens (LOOM_PROFILE=stages), ms:", t.tokens);
    eprintln!("{:>6} {}", "layer", stages.iter().map(|s| format!("{s:>15}")).collect::<String>());
    for (l, row) in t.layers.iter().enumerate() {
        eprintln!("{l:>6} {}", row.iter().map(|ns| format!("{:>15.1}", *ns as f64 / 1e6)).collect::<String>());
    }
    eprintln!("{:>6} {}", "all", t.per_stage().iter().map(|ns| format!("{:>15.1}", *ns as f64 / 1e6)).collect::<String>());
    eprintln!("final norm, lm_head and argmax: {:.1} ms", t.head as f64 / 1e6);
}

/// Tokens fed and seconds spent in the executor, by kind: a *commit* (`STEP` or an end token: the forward pass
/// that computes the next machine step), a *field* token (a step's other fields: emitting what the step
/// computed), an *input* (a host injection) and a *prompt* token (program loads). A commit costs several
/// field tokens, so this is where a machine's time goes. One clock read per token.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TokenTimes {
    pub commit: (u64, f64),
    pub field: (u64, f64),
    pub input: (u64, f64),
    pub prompt: (u64, f64),
}

impl TokenTimes {
    /// Per kind: tokens, seconds and microseconds per token.
    pub fn json(&self) -> serde_json::Value {
        let k = |(n, s): (u64, f64)| serde_json::json!({ "tokens": n, "seconds": s, "us_per_token": if n > 0 { s / n as f64 * 1e6 } else { 0.0 } });
        serde_json::json!({ "commit": k(self.commit), "field": k(self.field), "input": k(self.input), "prompt": k(self.prompt) })
    }
}

/// Per token id: 0 commit, 1 field, 2 input, 3 prompt (a load) or outside the protocol.
fn token_kinds(proto: &isa_api::Protocol) -> Vec<u8> {
    use isa_api::protocol::Token;
    (0..proto.vocab_size)
        .map(|t| match proto.decode(t) {
            Some(Token::Step) => 0,
            Some(Token::Value { end: true, .. }) => 0,
            Some(Token::Value { field, .. }) => match proto.fields[field as usize].role {
                isa_api::FieldRole::In { .. } => 2,
                isa_api::FieldRole::LoadAddr { .. } | isa_api::FieldRole::LoadData { .. } => 3,
                _ => 1,
            },
            _ => 3,
        })
        .collect()
}

impl RunResult {
    pub fn tokens(&self) -> usize {
        self.out.trace.prompt.len() + self.out.trace.generated.len()
    }
}

/// Standard output, flushed after every write: a console byte shows when the machine writes it, so a prompt
/// without a newline (`>>> `) is on the screen before the machine waits for input. (A console byte costs the
/// machine a step of several tokens, so the write per byte costs nothing beside it.)
struct Unbuffered(std::io::Stdout);

impl Write for Unbuffered {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.0.flush()?;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Run `image` on the loaded machine with its host devices: console bytes echo to stdout when `echo`; `io`
/// gives the program's standard input, a frame limit and keys.
pub(crate) fn run_program(l: &Loaded, image: &LoadImage, max_steps: usize, echo: bool, progress: bool, label: &str, io: isa_api::front::HostIo) -> Result<RunResult> {
    let console: Box<dyn Write> = if echo { Box::new(Unbuffered(std::io::stdout())) } else { Box::new(std::io::sink()) };
    let devices = l.machine.devices_with(&l.face, image, console, io)?;
    run_with_devices(l, image, devices, max_steps, progress, label)
}

/// Standard input only.
pub(crate) fn stdin_io(stdin: Box<dyn std::io::Read>) -> isa_api::front::HostIo {
    isa_api::front::HostIo { stdin, ..Default::default() }
}

/// A session that has read a program's load prompt, and its prediction after the last prompt token: runs of
/// that program start from a fork of it instead of reading the prompt again.
pub(crate) struct Preloaded<'e> {
    pub session: Box<dyn backends::Session + 'e>,
    pub prompt: Vec<u32>,
    pub next: u32,
}

impl<'e> Preloaded<'e> {
    /// Read `image`'s prompt on a new session of `l`; `None` if the executor cannot fork its sessions.
    pub fn load(l: &'e Loaded, image: &LoadImage) -> Result<Option<Self>> {
        let prompt = image.prompt(&l.protocol);
        let mut session = l.executor.session();
        if session.fork().is_none() {
            return Ok(None);
        }
        let mut next = None;
        for &t in &prompt {
            next = Some(session.step_argmax(t)?);
        }
        let next = next.context("the program's load prompt is empty")?;
        Ok(Some(Preloaded { session, prompt, next }))
    }
}

/// `image` on `l` with stdin `io`, from the preloaded session `pre` (whose prompt must be `image`'s) when given.
pub(crate) fn run_program_preloaded(l: &Loaded, image: &LoadImage, pre: Option<&Preloaded>, max_steps: usize, io: isa_api::front::HostIo) -> Result<RunResult> {
    let devices = l.machine.devices_with(&l.face, image, Box::new(std::io::sink()), io)?;
    run_devices_from(l, image, devices, max_steps, false, "", pre)
}

/// Run `image` on the loaded machine with the host devices `devices` (a host of its own: `loom nes`).
pub(crate) fn run_with_devices(l: &Loaded, image: &LoadImage, devices: Box<dyn Devices>, max_steps: usize, progress: bool, label: &str) -> Result<RunResult> {
    run_devices_from(l, image, devices, max_steps, progress, label, None)
}

/// [`run_with_devices`], from a fork of `pre` (the prompt already read) when given. The trace is the same: the
/// prompt is in it, and the fork predicts what a session that read it predicts.
fn run_devices_from(l: &Loaded, image: &LoadImage, devices: Box<dyn Devices>, max_steps: usize, progress: bool, label: &str, pre: Option<&Preloaded>) -> Result<RunResult> {
    let prompt = image.prompt(&l.protocol);
    let (mut session, mut skip, preloaded_next) = match pre {
        Some(p) => {
            anyhow::ensure!(p.prompt == prompt, "the preloaded session read another program's prompt");
            (p.session.fork().context("the executor cannot fork its sessions")?, prompt.len(), p.next)
        }
        None => (l.executor.session(), 0, 0),
    };
    let kinds = token_kinds(&l.protocol);
    let mut times = [(0u64, 0f64); 4];
    // The stage profile starts at the first token after the prompt.
    let mut stages_wanted = profile_wanted("stages");
    let mut field_times = profile_wanted("fields").then(|| FieldTimes::new(&l.protocol));
    let next = |t| {
        // The prompt's tokens were read by the preloaded session: its prediction after the last.
        if skip > 0 {
            skip -= 1;
            return Ok(preloaded_next);
        }
        let k = kinds.get(t as usize).copied().unwrap_or(3) as usize;
        if stages_wanted && k != 3 {
            stages_wanted = false;
            session.profile_stages();
        }
        let t0 = Instant::now();
        let next = session.step_argmax(t);
        let secs = t0.elapsed().as_secs_f64();
        times[k].0 += 1;
        times[k].1 += secs;
        if let Some(f) = &mut field_times {
            f.add(t, secs);
        }
        next
    };
    let Driven { out, end, finish, mut devices, secs } = drive_devices(&l.protocol, &prompt, devices, max_steps, progress, label, next)?;
    let counters = session.counters();
    let frames = devices.take_frames();
    let token_times = TokenTimes { commit: times[0], field: times[1], input: times[2], prompt: times[3] };
    let stage_times = session.stage_times();
    if let Some(t) = &stage_times {
        print_stage_times(t);
    }
    if let Some(f) = &field_times {
        f.print();
    }
    Ok(RunResult { instructions: devices.instructions(), console: devices.console().to_vec(), out, finish, end, secs, counters, frames, token_times, stage_times, field_times })
}

/// What the host loop of [`drive_devices`] gave: the trace and steps, how the run ended, the devices' finish
/// and the devices themselves (frames, console, instructions), and the seconds it took.
pub(crate) struct Driven {
    pub out: RunOutcome,
    pub end: RunEnd,
    pub finish: Finish,
    pub devices: Box<dyn Devices>,
    pub secs: f64,
}

/// The host loop ([`host::run_devices`]) with the machine's host `devices`: `prompt`, then the tokens `next`
/// predicts (a network session's, or the reference evaluator's for `loom eval`), until the machine halts, the
/// devices are done or `max_steps` steps ran. A progress line (`label` first) when `progress`.
pub(crate) fn drive_devices<E: std::fmt::Display>(
    proto: &isa_api::Protocol,
    prompt: &[u32],
    devices: Box<dyn Devices>,
    max_steps: usize,
    progress: bool,
    label: &str,
    next: impl FnMut(u32) -> std::result::Result<u32, E>,
) -> Result<Driven> {
    let pb = crate::progress::spinner(progress);
    pb.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap());
    let mut devices = Suspending { inner: devices, pb: &pb };
    let t1 = Instant::now();
    let run = host::run_devices(proto, prompt, &mut devices, max_steps, next, |steps, tokens, d| {
        if steps % 16 == 0 {
            let secs = t1.elapsed().as_secs_f64().max(1e-9);
            let n = d.instructions();
            let own = d.progress().map_or(String::new(), |p| format!("{p}, "));
            pb.set_message(format!("{label}{own}{n} instructions, {steps} steps, {tokens} tokens, {:.0} tokens/s, {:.1} instructions/s", tokens as f64 / secs, n as f64 / secs));
            pb.tick();
        }
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    pb.finish_and_clear();
    let secs = t1.elapsed().as_secs_f64();
    let _ = std::io::stdout().flush();
    Ok(Driven { out: run.out, end: run.end, finish: run.finish, devices: devices.inner, secs })
}

/// Devices whose steps (which may print console output) hide the progress line while they run.
struct Suspending<'p> {
    inner: Box<dyn Devices>,
    pb: &'p ProgressBar,
}

impl Devices for Suspending<'_> {
    fn inject(&mut self, steps: usize) -> Vec<(u32, u64)> {
        self.inner.inject(steps)
    }
    fn step(&mut self, step: &isa_api::StepEvents) {
        let inner = &mut self.inner;
        self.pb.suspend(|| inner.step(step));
    }
    fn instructions(&self) -> u64 {
        self.inner.instructions()
    }
    fn console(&self) -> &[u8] {
        self.inner.console()
    }
    fn finish(&mut self, end: RunEnd) -> Finish {
        self.inner.finish(end)
    }
    fn done(&self) -> bool {
        self.inner.done()
    }
    fn progress(&self) -> Option<String> {
        self.inner.progress()
    }
    fn take_frames(&mut self) -> Vec<isa_api::devices::Frame> {
        self.inner.take_frames()
    }
}

/// The frame outputs and keys of `--gif`, `--png`, `--frames`, `--input`, checked against the devices the
/// machine declares.
pub(crate) fn device_options(a: &DeviceFlags, face: &isa_api::MachineFace) -> Result<(crate::display::FrameOutput, isa_api::devices::KeySchedule)> {
    use isa_api::DeviceDesc;
    let has = |f: fn(&DeviceDesc) -> bool| face.devices.iter().any(f);
    let out = crate::display::FrameOutput { gif: a.gif.clone(), png_dir: a.png.clone(), scale: a.scale, force: a.force };
    if out.any() && !has(|d| matches!(d, DeviceDesc::Display { .. })) {
        bail!("--gif/--png: machine {} declares no display", face.name);
    }
    if a.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    if (out.any() || a.frames.is_some()) && !has(|d| matches!(d, DeviceDesc::Ticks { .. })) {
        bail!("--frames/--gif/--png: machine {} declares no clock (frames are its ticks)", face.name);
    }
    out.check()?;
    let keys = match &a.key_file {
        None => Default::default(),
        Some(p) => {
            let n = face.devices.iter().find_map(|d| if let DeviceDesc::Keypad { keys, .. } = d { Some(*keys) } else { None });
            let n = n.with_context(|| format!("--input: machine {} declares no keypad", face.name))?;
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            isa_api::devices::KeySchedule::parse(&text, n).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        }
    };
    Ok((out, keys))
}

/// The program argument, or the machine's demo.
pub(crate) fn program_or_demo(path: Option<&PathBuf>, machine: &dyn Machine, what: &str) -> Result<Program> {
    match path {
        Some(p) => Ok(Program::from_file(p)?),
        None => machine.demo().with_context(|| format!("{what} has no built-in demo program: give a PROGRAM")),
    }
}

fn spinner(progress: bool, msg: &str) -> ProgressBar {
    let pb = crate::progress::spinner(progress);
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb.set_message(msg.to_string());
    pb
}

/// Is `p` a machine config (a TOML file with a `[machine]` table), not a program such as a SIMT4 launch file?
fn is_machine_config(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "toml")
        && std::fs::read_to_string(p).ok().and_then(|t| t.parse::<toml::Table>().ok()).is_some_and(|t| t.contains_key("machine"))
}

/// `loom run` / `loom bench-run`; returns the process exit status.
pub fn run(a: Args, bench: bool) -> Result<ExitCode> {
    let progress = !a.program.no_progress && !bench;
    // The circuit is built once and the program loaded once (a SIMT4 kernel compiled once), before the weave.
    let (l, program, image, (frame_out, keys)) = match &a.model {
        Some(dir) => {
            if a.inputs.len() > 1 {
                bail!("--model DIR takes at most one PROGRAM, got {} arguments", a.inputs.len());
            }
            if let Some(p) = a.inputs.first().filter(|p| is_machine_config(p)) {
                bail!("--model DIR runs the checkpoint's machine: {} looks like a config, not a program (give either a config or --model DIR)", p.display());
            }
            let keys: Vec<&str> = [(a.keys.load_at.is_some(), "--load-at"), (a.keys.pc.is_some(), "--pc")].into_iter().filter_map(|(on, f)| on.then_some(f)).collect();
            if !keys.is_empty() {
                bail!("{} with --model DIR: a checkpoint's machine keeps the keys it was woven with (run the config with them instead)", keys.join(" and "));
            }
            let given = a.inputs.first().map(|p| Program::from_file(p)).transpose()?;
            let l = open_checkpoint(dir, given.as_ref(), a.executor)?;
            let program = match given {
                Some(p) => p,
                None => program_or_demo(None, l.machine.as_ref(), &format!("machine {}", l.face.name))?,
            };
            let image = l.machine.load(&program)?;
            let devices = device_options(&a.devices, &l.face)?;
            (l, program, image, devices)
        }
        None => {
            let Some(config) = a.inputs.first() else {
                bail!("give a machine config (e.g. configs/rv32im.toml) and optionally a program, or --model DIR [PROGRAM]");
            };
            let (cfg, machine) = open_config(config, &a.keys)?;
            let program = program_or_demo(a.inputs.get(1), machine.as_ref(), &cfg.origin)?;
            // Check the program, the device options and --stdin before the (long) weave.
            let image = machine.load(&program)?;
            let desc = machine.describe()?;
            let devices = device_options(&a.devices, &desc.face)?;
            if let Some(p) = &a.devices.stdin {
                std::fs::File::open(p).with_context(|| format!("--stdin {}", p.display()))?;
            }
            (weave_described(&cfg, machine, desc, a.executor, progress)?, program, image, devices)
        }
    };
    let max_steps = a.program.max_steps.unwrap_or(l.max_steps);
    let rep = &l.report;
    let nonzero = l.executor.nonzero_weights().map_or(String::new(), |n| format!(" ({n} nonzero in the projections)"));
    let kind = l.executor.kind();
    if !bench {
        let about = l.machine.about();
        eprintln!(
            "{}{}: {} layers, hidden {}, {:.3} G parameters{nonzero}, at most {} tokens per step{}; {} in {:.1} s, {kind} executor ready in {:.1} s",
            rep.machine,
            a.model.as_ref().map_or(String::new(), |d| format!(" from {}", d.display())),
            rep.layers,
            rep.hidden_size,
            rep.parameters as f64 / 1e9,
            rep.tokens_per_step,
            if about.is_empty() { String::new() } else { format!(", {about}") },
            l.prepared(),
            l.prepare_s,
            l.build_s
        );
    }
    let input = open_stdin(a.devices.stdin.as_deref(), || if bench { Box::new(std::io::empty()) } else { Box::new(std::io::stdin()) })?;
    let r = run_program(&l, &image, max_steps, !bench, progress, "", isa_api::front::HostIo { stdin: input, frames: a.devices.frames, keys })?;
    if frame_out.any() {
        frame_out.write(&r.frames)?;
    }
    if let Some(p) = &a.program.trace {
        std::fs::write(p, serde_json::to_string(&r.out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let tokens = r.tokens();
    if bench {
        let figures = serde_json::json!({
            "machine": rep.machine,
            "about": l.machine.about(),
            "program": program.name,
            "executor": kind.name(),
            "layers": rep.layers,
            "hidden_size": rep.hidden_size,
            "parameters": rep.parameters,
            "nonzero_weights": l.executor.nonzero_weights(),
            "tokens_per_step": rep.tokens_per_step,
            "weave_ms": rep.weave_ms,
            "executor_build_s": l.build_s,
            "prompt_tokens": r.out.trace.prompt.len(),
            "generated_tokens": r.out.trace.generated.len(),
            "steps": r.out.steps,
            "halted": r.out.halted,
            "instructions": r.instructions,
            "decode_s": r.secs,
            "tokens_per_s": tokens as f64 / r.secs,
            "instructions_per_s": r.instructions as f64 / r.secs,
            "tokens_per_instruction": r.out.trace.generated.len() as f64 / r.instructions.max(1) as f64,
            "exit_status": r.finish.status,
            "console_bytes": r.console.len(),
            "peak_rss_bytes": crate::bench::proc_status_bytes("VmHWM:"),
        });
        let mut figures = figures;
        figures["token_times"] = r.token_times.json();
        if let Some(t) = &r.stage_times {
            figures["stage_times"] = stage_times_json(t);
        }
        if let Some(f) = &r.field_times {
            figures["field_times"] = f.json();
        }
        if !r.counters.is_empty() {
            figures["executor_counters"] = r.counters.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>().into();
        }
        figures[if l.from_checkpoint { "load_s" } else if l.cached { "weave_cache_load_s" } else { "weave_s" }] = serde_json::json!(l.prepare_s);
        println!("{}", serde_json::to_string_pretty(&figures)?);
        // A measurement: the program's status is a figure (`exit_status`), not the process's.
        return Ok(ExitCode::SUCCESS);
    }
    let summary = if r.end == RunEnd::StepLimit && r.finish.status == EXIT_STEP_LIMIT {
        format!("step limit ({max_steps} steps) reached: {}", r.finish.summary)
    } else {
        r.finish.summary.clone()
    };
    eprintln!(
        "[loom: {summary}; {} instructions, {} steps, {tokens} tokens ({} prompt) in {:.1} s: {:.0} tokens/s, {:.1} instructions/s ({kind} executor)]",
        r.instructions,
        r.out.steps,
        r.out.trace.prompt.len(),
        r.secs,
        tokens as f64 / r.secs,
        r.instructions as f64 / r.secs
    );
    Ok(ExitCode::from(r.finish.status))
}

#[cfg(test)]
mod tests {
    use super::is_machine_config;
    use std::path::Path;

    /// `run --model DIR PROGRAM` refuses a machine config as the program, but takes a SIMT4 launch file (TOML
    /// without a `[machine]` table) and any other file.
    #[test]
    fn a_launch_file_is_a_program_and_a_config_is_not() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(is_machine_config(&root.join("configs/simt4.toml")));
        assert!(is_machine_config(&root.join("configs/acc8.toml")));
        assert!(!is_machine_config(&root.join("examples/cuda/demo.toml")));
        assert!(!is_machine_config(&root.join("examples/cuda/demo.cu")));
        assert!(!is_machine_config(&root.join("no/such/file.toml")));
    }
}
