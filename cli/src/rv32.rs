//! `loom run configs/rv32im.toml [program.elf]`: weave the RV32IM+Zba machine the config describes, load the
//! program through load tokens, and decode on the sparse executor. The console (the OUT port) is printed as
//! the bytes come; the process exits with the program's exit status.
//!
//! The decode loop is [`weaver::host::run_observed`]: it sees the published protocol and the model's next
//! token, nothing else. The host side here follows the trace by field *names* of the manifest (ports `OUT`,
//! `EXIT`, `FAULT`, registers `PC`, `BUSY`, memory `RAM` writes) to print, count instructions and report a
//! fault; it never evaluates an instruction.

use anyhow::{Context, Result, bail};
use backends::sparse::SparseModel;
use indicatif::{ProgressBar, ProgressStyle};
use isa_api::{FieldRole, MachineDesc, Protocol, Token};
use isa_rv32im::FaultCode;
use isa_rv32im::circuit::{MemoryLayout, Rv32MachineOptions, rv32im_machine};
use isa_rv32im::circuit_config::{Backend, Rv32Config};
use isa_rv32im::program::ProgramImage;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use weaver::host::{self, Event};

/// Exit status when the machine faults (illegal instruction, access outside RAM, ...): 128 + SIGABRT.
pub const EXIT_FAULT: u8 = 134;
/// Exit status when `--max-steps` ends the run before the program exits.
pub const EXIT_STEP_LIMIT: u8 = 124;

/// What to run and how.
pub struct Rv32Run<'a> {
    pub config: &'a Path,
    /// An ELF32 executable; `None` runs the built-in demo (`examples/rv32/src/demo.c`).
    pub program: Option<&'a Path>,
    pub max_steps: Option<usize>,
    pub trace: Option<PathBuf>,
    /// Draw the progress line on stderr (when it is a terminal).
    pub progress: bool,
    /// Benchmark mode: no console output; print the figures as JSON on stdout.
    pub bench: bool,
}

/// The machine description the config selects: the static registration, or a cdylib plugin.
pub(crate) fn machine(cfg: &Rv32Config, opts: &Rv32MachineOptions, config_path: &Path) -> Result<MachineDesc> {
    let ours = rv32im_machine(opts)?;
    let Some(plugin) = &cfg.machine.plugin else { return Ok(ours) };
    let path = config_path.parent().unwrap_or(Path::new(".")).join(plugin);
    let bytes = isa_api::plugin::load_plugin_bytes(&path)?;
    let desc = MachineDesc::from_json(&bytes).with_context(|| format!("{}: machine description", path.display()))?;
    if desc != ours {
        bail!(
            "the plugin {} describes a different machine than {} (RAM size, base or layout differ; the plugin serves its default machine)",
            path.display(),
            config_path.display()
        );
    }
    Ok(desc)
}

/// Weave options of an RV32IM config: the minimal geometry, or the config's `[geometry]` (a base model's
/// shape; missing fields keep the minimal value). `attention_layer`: include an inert full-attention layer
/// (checkpoints for transformers need one; a fitted geometry's attention interval already gives them).
pub(crate) fn weave_options(cfg: &Rv32Config, desc: &MachineDesc, attention_layer: bool) -> Result<weaver::WeaveOptions> {
    let Some(t) = &cfg.geometry else { return Ok(weaver::WeaveOptions { fit: None, attention_layer }) };
    let g = weaver::export::GeometryConfig::from_table(t)?;
    let (_, _, _, minimal) = weaver::plan(desc, &weaver::WeaveOptions::default())?;
    Ok(weaver::WeaveOptions { fit: Some(g.target(&minimal.geometry)), attention_layer })
}

fn field_index(machine: &str, what: &str, names: impl Iterator<Item = String>, name: &str) -> Result<u32> {
    names.into_iter().position(|n| n == name).map(|i| i as u32).with_context(|| format!("machine {machine} has no {what} {name}"))
}

/// Read an RV32IM config that runs on the sparse executor (`loom run`, `loom lockstep`).
pub(crate) fn sparse_config(path: &Path) -> Result<Rv32Config> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let cfg = Rv32Config::parse(&text).with_context(|| format!("{}", path.display()))?;
    if cfg.run.backend != Backend::Sparse {
        bail!(
            "{}: backend {:?} is the dense burn model, which holds every woven weight (billions of parameters for \
             this machine) as a dense f32 tensor; rv32im runs here on backend = \"sparse\" (for the dense path, \
             export the machine with `loom weave CONFIG --out DIR` and decode it with `loom generate --model DIR`)",
            path.display(),
            cfg.run.backend
        );
    }
    Ok(cfg)
}

/// Run it; returns the process exit status.
pub fn run(r: Rv32Run) -> Result<ExitCode> {
    let cfg = sparse_config(r.config)?;
    let opts = cfg.options();
    let (elf, program_name) = match r.program {
        Some(p) => (std::fs::read(p).with_context(|| format!("reading {}", p.display()))?, p.display().to_string()),
        None => {
            let demo = isa_rv32im::examples::example("demo").context("the built-in demo is missing")?;
            (demo.elf.to_vec(), "built-in demo (bignum products)".to_string())
        }
    };
    // Check the program before the (long) weave.
    let image = ProgramImage::from_elf(&elf, &opts).with_context(|| program_name.clone())?;
    let desc = machine(&cfg, &opts, r.config)?;
    let max_steps = r.max_steps.unwrap_or(cfg.run.max_steps.min(usize::MAX as u64) as usize);

    let spinner = |msg: &str| {
        let pb = if r.progress { ProgressBar::new_spinner() } else { ProgressBar::hidden() };
        pb.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").unwrap());
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
        pb.set_message(msg.to_string());
        pb
    };
    let t0 = Instant::now();
    let pb = spinner(&format!("weaving {} ({} KiB RAM)", desc.name, opts.ram_size / 1024));
    let woven = weaver::weave(&desc, &weave_options(&cfg, &desc, false)?)?;
    let weave_s = t0.elapsed().as_secs_f64();
    pb.set_message("building the sparse executor");
    let model = SparseModel::new(&woven.config, &woven.weights).map_err(anyhow::Error::msg).context("building the sparse executor")?;
    drop(woven.weights);
    let build_s = t0.elapsed().as_secs_f64() - weave_s;
    pb.finish_and_clear();
    let rep = &woven.report;
    if !r.bench {
        eprintln!(
            "{}: {} layers, hidden {}, {:.2} G parameters ({} nonzero), {} tokens per step; woven in {:.1} s, executor ready in {:.1} s",
            rep.machine,
            rep.layers,
            rep.hidden_size,
            rep.parameters as f64 / 1e9,
            model.nonzero_weights(),
            rep.tokens_per_step,
            weave_s,
            build_s
        );
    }

    let host = HostView {
        proto: &woven.protocol,
        machine: desc.name.clone(),
        registers: desc.registers.iter().map(|r| r.name.clone()).collect(),
        ports: desc.ports.iter().map(|p| p.name.clone()).collect(),
        memories: desc.memories.len(),
        micro_step: desc.micro_step,
        report: woven.report.clone(),
    };
    let timing = (weave_s, build_s);
    drive(&model, &host, &image, &opts, &program_name, max_steps, &r, timing)
}

/// What the host loop knows of a woven rv32im machine: the published protocol and names (from the machine
/// description or a checkpoint's manifest), never the circuit.
pub(crate) struct HostView<'a> {
    pub proto: &'a Protocol,
    pub machine: String,
    pub registers: Vec<String>,
    pub ports: Vec<String>,
    pub memories: usize,
    /// The micro-step register (a step retired an instruction iff it is 0 after it).
    pub micro_step: Option<u32>,
    pub report: weaver::Report,
}

/// The decode loop of an rv32im run: load the program through its prompt, feed back every token, print the
/// console, keep the host's view of RAM (for the fault report), count instructions by the retire rule.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive(model: &SparseModel, h: &HostView, image: &ProgramImage, opts: &Rv32MachineOptions, program_name: &str, max_steps: usize, r: &Rv32Run, (weave_s, build_s): (f64, f64)) -> Result<ExitCode> {
    let rep = &h.report;
    let proto: &Protocol = h.proto;
    let port = |n: &str| field_index(&h.machine, "port", h.ports.iter().cloned(), n);
    let regi = |n: &str| field_index(&h.machine, "register", h.registers.iter().cloned(), n);
    let (p_out, p_exit, p_fault) = (port("OUT")?, port("EXIT")?, port("FAULT")?);
    let r_pc = regi("PC")?;
    let r_busy = match h.micro_step {
        Some(r) => r,
        None => regi("BUSY")?,
    };
    let prompt = image.prompt(proto);

    // Host-side view of the trace: this step's field values, the instruction count, RAM (for the fault report).
    let mut ram = image.ram.clone();
    let lanes = matches!(opts.layout, MemoryLayout::ByteLanes);
    let (mut pc_word, mut busy) = (0u64, 0u64);
    let mut ram_addr = vec![0u64; h.memories];
    let mut ram_data: Vec<Option<u64>> = vec![None; h.memories];
    let (mut instructions, mut exit, mut fault) = (0u64, None::<u64>, None::<u64>);
    let mut fault_pc_word = None::<u64>;
    let mut exit_retired = false;
    let mut stdout = std::io::stdout().lock();
    let mut console = Vec::new();
    let pb = if r.progress && !r.bench { ProgressBar::new_spinner() } else { ProgressBar::hidden() };
    pb.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap());
    let mut st = model.new_state();
    let t1 = Instant::now();
    let mut generated = 0usize;
    let out = host::run_observed(
        proto,
        &prompt,
        max_steps,
        |t| model.step_argmax(&mut st, t),
        |ev| match ev {
            Event::Output { port, value } => {
                if port == p_out {
                    console.push(value as u8);
                    if !r.bench {
                        pb.suspend(|| {
                            let _ = stdout.write_all(&[value as u8]);
                            if value == b'\n' as u64 {
                                let _ = stdout.flush();
                            }
                        });
                    }
                } else if port == p_exit {
                    exit = Some(value);
                } else if port == p_fault {
                    fault = Some(value);
                }
            }
            Event::Token { token, .. } => {
                generated += 1;
                match proto.decode(token) {
                    Some(Token::Value { field, value }) => {
                        let f = &proto.fields[field as usize];
                        let v = value << f.lo;
                        match f.role {
                            FieldRole::RegNext { reg, chunk } if reg == r_pc => pc_word = if chunk == 0 { v } else { pc_word | v },
                            FieldRole::RegNext { reg, chunk } if reg == r_busy => busy = if chunk == 0 { v } else { busy | v },
                            FieldRole::MemAddr { mem, chunk } if mem >= isa_rv32im::circuit::mem::RAM0 => {
                                let m = mem as usize;
                                ram_addr[m] = if chunk == 0 { v } else { ram_addr[m] | v };
                            }
                            FieldRole::MemData { mem, chunk } if mem >= isa_rv32im::circuit::mem::RAM0 => {
                                let m = mem as usize;
                                ram_data[m] = Some(if chunk == 0 { v } else { ram_data[m].unwrap_or(0) | v });
                            }
                            _ => {}
                        }
                    }
                    Some(Token::None { field }) => {
                        // A disabled write is one NONE on its group's first field (the address).
                        if let FieldRole::MemAddr { mem, .. } | FieldRole::MemData { mem, .. } = proto.fields[field as usize].role {
                            ram_data[mem as usize] = None;
                        }
                    }
                    _ => {}
                }
            }
            Event::Step { steps } => {
                for m in isa_rv32im::circuit::mem::RAM0 as usize..h.memories {
                    if let Some(d) = ram_data[m].take() {
                        let lane = m - isa_rv32im::circuit::mem::RAM0 as usize;
                        if lanes {
                            if let Some(b) = ram.get_mut(ram_addr[m] as usize * 4 + lane) {
                                *b = d as u8;
                            }
                        } else if let Some(w) = ram.get_mut(ram_addr[m] as usize * 4..ram_addr[m] as usize * 4 + 4) {
                            w.copy_from_slice(&(d as u32).to_le_bytes());
                        }
                    }
                }
                // A faulting step leaves pc at the faulting instruction.
                if fault.is_some() && fault_pc_word.is_none() {
                    fault_pc_word = Some(pc_word);
                }
                // BUSY = 0: an instruction retired; the exit ECALL retires in the step that writes EXIT.
                if busy == 0 || (exit.is_some() && !exit_retired) {
                    instructions += 1;
                    exit_retired = exit.is_some();
                }
                if steps % 16 == 0 {
                    let secs = t1.elapsed().as_secs_f64().max(1e-9);
                    pb.set_message(format!(
                        "{instructions} instructions, {steps} steps, {} tokens, {:.0} tokens/s, {:.1} instructions/s",
                        prompt.len() + generated,
                        (prompt.len() + generated) as f64 / secs,
                        instructions as f64 / secs
                    ));
                    pb.tick();
                }
            }
        },
    )
    .map_err(anyhow::Error::msg)?;
    pb.finish_and_clear();
    let _ = stdout.flush();
    drop(stdout);
    let secs = t1.elapsed().as_secs_f64();
    let tokens = out.trace.prompt.len() + out.trace.generated.len();
    if let Some(p) = &r.trace {
        std::fs::write(p, serde_json::to_string(&out.trace)?).with_context(|| format!("writing {}", p.display()))?;
    }
    let status = match (exit, fault, out.halted) {
        (Some(code), _, _) => code as u8,
        (None, Some(_), _) => EXIT_FAULT,
        _ => EXIT_STEP_LIMIT,
    };
    if r.bench {
        let figures = serde_json::json!({
            "machine": rep.machine,
            "program": program_name,
            "ram_bytes": opts.ram_size,
            "layers": rep.layers,
            "hidden_size": rep.hidden_size,
            "parameters": rep.parameters,
            "nonzero_weights": model.nonzero_weights(),
            "tokens_per_step": rep.tokens_per_step,
            "weave_s": weave_s,
            "executor_build_s": build_s,
            "prompt_tokens": out.trace.prompt.len(),
            "generated_tokens": out.trace.generated.len(),
            "steps": out.steps,
            "instructions": instructions,
            "decode_s": secs,
            "tokens_per_s": tokens as f64 / secs,
            "instructions_per_s": instructions as f64 / secs,
            "tokens_per_instruction": out.trace.generated.len() as f64 / instructions.max(1) as f64,
            "exit_status": status,
            "console_bytes": console.len(),
            "peak_rss_bytes": crate::bench::proc_status_bytes("VmHWM:"),
        });
        println!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(ExitCode::from(status));
    }
    let summary = format!(
        "{instructions} instructions, {} steps, {tokens} tokens ({} prompt) in {secs:.1} s: {:.0} tokens/s, {:.1} instructions/s (sparse executor)",
        out.steps,
        out.trace.prompt.len(),
        tokens as f64 / secs,
        instructions as f64 / secs
    );
    match (exit, fault) {
        (Some(code), _) => eprintln!("[loom: exit {code}; {summary}]"),
        (None, Some(v)) => {
            let pc_word = fault_pc_word.unwrap_or(pc_word);
            let pc = opts.ram_base.wrapping_add((pc_word as u32) << 2);
            let off = (pc_word as usize) * 4;
            let word = ram.get(off..off + 4).map(|w| u32::from_le_bytes(w.try_into().unwrap()));
            let kind = FaultCode::from_value(v).map_or(format!("fault code {v:#x}"), |k| k.to_string());
            let addr = isa_rv32im::circuit::fault_address(v).map_or(String::new(), |a| format!(", address {a:#010x}"));
            eprintln!(
                "[loom: machine fault: {kind} at pc {pc:#010x}, instruction {}{addr}; {summary}]",
                word.map_or("outside RAM".to_string(), |w| format!("{w:#010x}"))
            );
        }
        _ => eprintln!("[loom: step limit ({max_steps} steps) reached before the program exited; {summary}]"),
    }
    Ok(ExitCode::from(status))
}

/// `loom run --model DIR PROGRAM.elf` for a woven rv32im checkpoint (`loom weave configs/rv32im.toml --out
/// DIR`): the RAM geometry comes from the checkpoint's manifest (memory `RAM` of words, or byte lanes
/// `RAM0..RAM3`), the RAM base from the ELF's entry point (the machine starts at the RAM base), and the run
/// is the same decode loop as `loom run CONFIG`: only the manifest and the weights, no circuit, no interpreter.
pub(crate) fn run_checkpoint(dir: &Path, program: &Path, max_steps: Option<usize>, trace: Option<PathBuf>, progress: bool, bench: bool) -> Result<ExitCode> {
    let elf = std::fs::read(program).with_context(|| format!("reading {}", program.display()))?;
    let entry = isa_rv32im::parse_elf(&elf).with_context(|| program.display().to_string())?.entry;
    let t0 = Instant::now();
    let (config, weights, manifest) = weaver::export::load(dir)?;
    let mems = &manifest.memories;
    let rows = |name: &str| mems.iter().find(|m| m.name == name).map(|m| (1u64 << m.addr_width) * 4);
    let (layout, ram_size) = match (rows("RAM"), rows("RAM0")) {
        (Some(n), _) => (MemoryLayout::Words, n),
        (None, Some(n)) => (MemoryLayout::ByteLanes, n),
        _ => bail!("{}: machine {} has no RAM memory (not an rv32im checkpoint)", dir.display(), manifest.machine),
    };
    let opts = Rv32MachineOptions { ram_base: entry, ram_size: u32::try_from(ram_size).context("RAM size")?, layout };
    opts.validate().with_context(|| format!("{}: entry point {entry:#x} as the RAM base", program.display()))?;
    let image = ProgramImage::from_elf(&elf, &opts).with_context(|| program.display().to_string())?;
    let load_s = t0.elapsed().as_secs_f64();
    let model = SparseModel::new(&config, &weights).map_err(anyhow::Error::msg).context("building the sparse executor")?;
    drop(weights);
    let build_s = t0.elapsed().as_secs_f64() - load_s;
    let rep = &manifest.report;
    if !bench {
        eprintln!(
        "{} from {}: {} layers, hidden {}, {} KiB RAM at {entry:#x}; loaded in {load_s:.1} s, executor ready in {build_s:.1} s",
        rep.machine,
        dir.display(),
        rep.layers,
        rep.hidden_size,
            ram_size / 1024
        );
    }
    let host = HostView {
        proto: &manifest.protocol,
        machine: manifest.machine.clone(),
        registers: manifest.registers.iter().map(|r| r.name.clone()).collect(),
        ports: manifest.ports.iter().map(|p| p.name.clone()).collect(),
        memories: mems.len(),
        micro_step: manifest.micro_step,
        report: manifest.report.clone(),
    };
    let r = Rv32Run { config: dir, program: Some(program), max_steps, trace, progress, bench };
    drive(&model, &host, &image, &opts, &program.display().to_string(), max_steps.unwrap_or(100_000_000), &r, (load_s, build_s))
}
