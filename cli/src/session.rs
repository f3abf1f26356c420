//! The machine session every verb that runs a machine uses: a machine ready to run ([`Loaded`]: woven from a
//! config, from the weave cache, or loaded from a checkpoint, with its executor), a program's run on it with the
//! machine's host devices ([`run_program`], [`drive_devices`] over [`isa_api::host::run_devices`]), and a session
//! that has read a program's prompt once ([`Preloaded`]).
//!
//! The decode loop knows only the published protocol and the executor's next token; the machine's front supplies
//! the load image and the host devices, which read the decoded trace. No circuit and no reference evaluator is
//! reachable from the loop: the instructions run in the weights.

use crate::profile::{FieldTimes, StepTimes, TokenTimes, print_stage_times, profile_wanted, token_kinds};
use crate::registry::MACHINES;
use crate::run::KeyOverrides;
use anyhow::{Context, Result, bail};
use backends::{Executor, ExecutorKind};
use indicatif::{ProgressBar, ProgressStyle};
use isa_api::front::{Devices, Finish, GenericMachine, LoadImage, Machine, Program, RunEnd};
use isa_api::host::{self, RunOutcome};
use isa_api::{MachineDesc, MachineFace, Protocol};
use std::io::Write;
use std::path::Path;
use std::time::Instant;
use weaver::config::Config;

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
    /// [`crate::profile::stage_profile_json`]).
    pub stage_times: Option<backends::incremental::StageTimes>,
    /// With `LOOM_PROFILE=stages`: the part of `stage_times` spent on commit tokens (`STEP` and end tokens).
    pub commit_stage_times: Option<backends::incremental::StageTimes>,
    /// With `LOOM_PROFILE=fields`: the decode time by the trace field of the token fed (see [`FieldTimes`]).
    pub field_times: Option<FieldTimes>,
    /// With `LOOM_PROFILE=steps`: the decode time by the kind of machine step (see [`StepTimes`]).
    pub step_times: Option<StepTimes>,
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
    let stages_on = profile_wanted("stages");
    let mut stages_wanted = stages_on;
    let mut field_times = profile_wanted("fields").then(|| FieldTimes::new(&l.protocol));
    let mut step_times = profile_wanted("steps").then(|| StepTimes::new(&l.protocol));
    // With the stage profile: the commit tokens' share of it, from the profile read before and after each.
    let mut commit_stages: Option<backends::incremental::StageTimes> = None;
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
        let before = if stages_on && k == 0 { session.stage_times() } else { None };
        let t0 = Instant::now();
        let next = session.step_argmax(t);
        let secs = t0.elapsed().as_secs_f64();
        if let (Some(before), Some(after)) = (&before, session.stage_times().filter(|_| k == 0)) {
            commit_stages.get_or_insert_with(Default::default).add_since(&after, before);
        }
        times[k].0 += 1;
        times[k].1 += secs;
        if let Some(f) = &mut field_times {
            f.add(t, secs);
        }
        if let Some(s) = &mut step_times {
            s.add(t, k as u8, secs);
        }
        next
    };
    let Driven { out, end, finish, mut devices, secs } = drive_devices(&l.protocol, &prompt, devices, max_steps, progress, label, next)?;
    let counters = session.counters();
    let frames = devices.take_frames();
    let token_times = TokenTimes { commit: times[0], field: times[1], input: times[2], prompt: times[3] };
    let stage_times = session.stage_times();
    if let Some(t) = &stage_times {
        print_stage_times(t, "tokens");
    }
    if let Some(t) = &commit_stages {
        print_stage_times(t, "commit tokens");
    }
    if let Some(f) = &field_times {
        f.print();
    }
    if let Some(s) = &step_times {
        s.print(20);
    }
    Ok(RunResult { instructions: devices.instructions(), console: devices.console().to_vec(), out, finish, end, secs, counters, frames, token_times, stage_times, commit_stage_times: commit_stages, field_times, step_times })
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
    fn answer(&mut self, port: u32, request: u64) -> u64 {
        self.inner.answer(port, request)
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

fn spinner(progress: bool, msg: &str) -> ProgressBar {
    let pb = crate::progress::spinner(progress);
    pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
    pb.enable_steady_tick(std::time::Duration::from_millis(200));
    pb.set_message(msg.to_string());
    pb
}
