//! `loom chat --model DIR`: a chat with a grafted checkpoint whose tool calls run in its own machine layers.
//!
//! The conversation is rendered with the model's chat template ([`crate::chat_template`]) and tokenized with
//! its `tokenizer.json`; the base's layers (the graft's text route) decode greedily. When the model closes a
//! tool call (`</tool_call>`), or a scripted conversation ends in an assistant turn with `tool_calls`, each call
//! runs on the graft's machine route: a machine session loaded with the tool's firmware (the calc firmware
//! `examples/rv32/bin/calc.elf`, built into the binary, is read once as prompt tokens and every call runs on a
//! copy of the session that read it; the trace is the one a fresh session gives), the call's own text
//! (`<function=calc>\n<parameter=expression>\n...\n</parameter>\n</function>`) is its standard input, and what
//! the machine writes to its console, decoded from the network's own trace tokens, is the `tool_response`.
//! The driver reads the function's name to pick the firmware and never looks at the expression.
//!
//! Two caches, two position counters: the machine's trace (firmware load, steps, injected input) lives in its
//! own session and never enters the text session, whose context is exactly the chat template's rendering of
//! the conversation, tool responses included as text. After every tool round the conversation is rendered again
//! and only the tokens beyond what the text session has already read are fed (its positions continue from
//! there; if the new rendering does not extend the old one, the session starts over), so the base sees the
//! same text, at the same positions, as for a conversation whose tool answers were typed in.

use crate::chat_template::{ChatTemplate, parse_json, py_dumps};
use crate::session::{Loaded, Preloaded, open_checkpoint, run_program_preloaded, stdin_io};
use crate::tokenizer::Tokenizer;
use anyhow::{Context, Result, bail};
use backends::graft::{GraftManifest, Route};
use backends::{Executor, ExecutorKind, Session};
use isa_api::front::{Program, RunEnd};
use minijinja::Value;
use serde::Serialize;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The calculator firmware (`examples/rv32/src/calc.c`, built by `examples/rv32/build.sh`).
pub const CALC_ELF: &[u8] = include_bytes!("../../examples/rv32/bin/calc.elf");

#[derive(clap::Args)]
pub struct Args {
    /// A grafted checkpoint (from `loom graft`) whose machine is RV32IM.
    #[arg(long)]
    pub model: PathBuf,
    /// A scripted conversation: a JSON list of chat messages (`role`, `content`, and on assistant messages
    /// `tool_calls` with `function: {name, arguments}`, the arguments an object or a JSON string). Tool calls
    /// of a final assistant message are answered, then the model goes on. Without it: an interactive chat.
    #[arg(long, value_name = "FILE")]
    pub messages: Option<PathBuf>,
    /// Print one JSON object: reply, tool_calls, tool_responses, tool_runs, tokens, seconds.
    #[arg(long)]
    pub json: bool,
    /// A system message for the interactive chat.
    #[arg(long)]
    pub system: Option<String>,
    /// At most this many tokens per assistant turn.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    /// A tool call that has not finished after this many machine steps answers with an error.
    #[arg(long, default_value_t = 5_000_000)]
    pub max_tool_steps: usize,
    /// At most this many rounds of tool calls in one assistant turn.
    #[arg(long, default_value_t = 8)]
    pub max_tool_rounds: usize,
    /// Let the model think first (`<think>` ... `</think>`; the template's `enable_thinking`).
    #[arg(long)]
    pub think: bool,
    /// Executor of the base's layers (dense: flex, ndarray, wgpu; or sparse).
    #[arg(long, default_value = "flex", value_parser = crate::executor_parser())]
    pub text_executor: ExecutorKind,
    /// Executor of the machine's layers.
    #[arg(long, default_value = "incremental", value_parser = crate::executor_parser())]
    pub machine_executor: ExecutorKind,
    /// Run DeepMind's mul_big problems in FILE (`examples/chat/mul_big.json`) and print the score: each
    /// problem's calc call is given (`--bench-mode calls`, what a random base can take) or the model writes its
    /// own calls from the question (`--bench-mode model`, for a real Qwen3.5).
    #[arg(long, value_name = "FILE")]
    pub bench_mul_big: Option<PathBuf>,
    /// `calls` or `model` (see --bench-mul-big).
    #[arg(long, default_value = "calls", value_parser = ["calls", "model"])]
    pub bench_mode: String,
    /// Only the first N problems of --bench-mul-big.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Load the calc firmware afresh for every call instead of running each call from a copy of the machine
    /// session that read it once (the traces are the same; this is slower).
    #[arg(long)]
    pub reload_firmware: bool,
    /// Write each tool call's machine trace here as `call-N.json` ({"prompt", "generated", "injected"}, machine
    /// ids; what `backends/tools/hf_check_trace.py --console` replays in transformers).
    #[arg(long, value_name = "DIR")]
    pub trace_dir: Option<PathBuf>,
}

/// The tools this driver declares to the model, in the chat template's `tools` form.
fn tool_schemas() -> Value {
    parse_json(
        r#"[{"type": "function", "function": {"name": "calc", "description": "Evaluate an arithmetic expression exactly: signed integers and decimals of any length, + - * / and parentheses (a quotient that does not end is rounded to 20 decimal places). Use it for every calculation.", "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description": "The expression, for example -139552.6575*-0.3"}}, "required": ["expression"]}}},
            {"type": "function", "function": {"name": "run_c", "description": "Compile a short C program (C11, picolibc: stdio, string, stdlib; no floating point hardware) for a 32-bit RISC-V machine with 64 KiB of RAM, run it, and return what it prints.", "parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "The whole program, with main"}, "stdin": {"type": "string", "description": "Its standard input (optional)"}}, "required": ["code"]}}}]"#,
    )
    .expect("the tool schema is JSON")
}

/// The start-up code and syscalls of a user program (`examples/rv32/user/`), for `run_c`.
const USER_START: &str = include_str!("../../examples/rv32/user/start.S");
const USER_SYSCALLS: &str = include_str!("../../examples/rv32/user/syscalls.c");

/// `run_c`'s compiler: Debian's RISC-V cross gcc with picolibc, as `examples/rv32/user/build.sh` builds.
const CROSS_GCC: &str = "riscv64-unknown-elf-gcc";
const PICOLIBC: &str = "/usr/lib/picolibc/riscv64-unknown-elf";

/// Compile `code` into an RV32IM ELF (in a temporary directory); the error text is what the tool answers.
fn compile_c(code: &str) -> std::result::Result<Vec<u8>, String> {
    let dir = std::env::temp_dir().join(format!("loom-run-c-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())));
    std::fs::create_dir_all(&dir).map_err(|e| format!("error: run_c cannot create {}: {e}", dir.display()))?;
    let result = (|| {
        for (name, text) in [("start.S", USER_START), ("syscalls.c", USER_SYSCALLS), ("main.c", code)] {
            std::fs::write(dir.join(name), text).map_err(|e| format!("error: run_c cannot write {name}: {e}"))?;
        }
        let out = std::process::Command::new(CROSS_GCC)
            .current_dir(&dir)
            .args(["-march=rv32im", "-mabi=ilp32", "-Os", "-g0", "-isystem", &format!("{PICOLIBC}/include"), "-nostdlib", &format!("-L{PICOLIBC}/lib/rv32im/ilp32")])
            .args(["-Wl,--gc-sections", "-s", "start.S", "syscalls.c", "main.c", "-lc", "-lgcc", "-o", "main.elf"])
            .output()
            .map_err(|e| format!("error: run_c needs {CROSS_GCC} and picolibc (Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf): {e}"))?;
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr);
            let msg: String = msg.lines().filter(|l| l.contains("error")).take(8).collect::<Vec<_>>().join("\n");
            return Err(format!("error: the program does not compile:\n{}", if msg.is_empty() { "(no message)".into() } else { msg }));
        }
        std::fs::read(dir.join("main.elf")).map_err(|e| format!("error: run_c: {e}"))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// One tool call: the function's name, its arguments (a map in their order) and the call's text as the
/// model wrote it (or as the chat template writes it), between `<tool_call>\n` and `\n</tool_call>`.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    pub body: String,
}

impl ToolCall {
    /// A call given as `{function: {name, arguments}}` (or `{name, arguments}`): arguments an object or a JSON
    /// string holding one.
    fn from_message(call: &Value, at: &str) -> Result<Self> {
        let f = match call.get_attr("function") {
            Ok(f) if !f.is_undefined() => f,
            _ => call.clone(),
        };
        let name = f.get_attr("name").ok().and_then(|n| n.as_str().map(str::to_string)).with_context(|| format!("{at}: a tool call without function.name"))?;
        let args = f.get_attr("arguments").unwrap_or_default();
        let arguments = if let Some(s) = args.as_str() {
            parse_json(s).with_context(|| format!("{at}: the arguments of {name} are a string that is not JSON"))?
        } else if args.is_undefined() || args.is_none() {
            Value::from_iter(Vec::<(String, Value)>::new())
        } else {
            args
        };
        if arguments.kind() != minijinja::value::ValueKind::Map {
            bail!("{at}: the arguments of {name} are not an object");
        }
        let body = call_body(&name, &arguments)?;
        Ok(ToolCall { name, arguments, body })
    }

    /// As the chat template's `tool_calls` entry.
    fn to_message(&self) -> Value {
        minijinja::context! { type => "function", function => minijinja::context! { name => self.name.clone(), arguments => self.arguments.clone() } }
    }

    fn arguments_json(&self) -> serde_json::Value {
        let mut s = String::new();
        py_dumps(&self.arguments, &mut s).expect("arguments are JSON values");
        serde_json::from_str(&s).expect("py_dumps writes JSON")
    }
}

/// The Qwen3.5 template's text for a call (`<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>`;
/// a value that is not a string as JSON).
fn call_body(name: &str, arguments: &Value) -> Result<String> {
    let mut s = format!("<function={name}>\n");
    for key in arguments.try_iter()? {
        let v = arguments.get_item(&key)?;
        let text = match v.as_str() {
            Some(t) => t.to_string(),
            None => {
                let mut j = String::new();
                py_dumps(&v, &mut j)?;
                j
            }
        };
        s.push_str(&format!("<parameter={key}>\n{text}\n</parameter>\n"));
    }
    s.push_str("</function>");
    Ok(s)
}

/// The calls in an assistant turn's text: each `<tool_call>...</tool_call>` (the last may lack its closing tag
/// when generation stopped on it), and the text before the first.
fn parse_calls(text: &str) -> (String, Vec<ToolCall>) {
    let Some(first) = text.find("<tool_call>") else { return (text.to_string(), Vec::new()) };
    let content = text[..first].trim().to_string();
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let (inner, next) = match after.find("</tool_call>") {
            Some(e) => (&after[..e], &after[e + "</tool_call>".len()..]),
            None => (after, ""),
        };
        let body = inner.strip_prefix('\n').unwrap_or(inner);
        let body = body.strip_suffix('\n').unwrap_or(body).to_string();
        let name = body
            .split("<function=")
            .nth(1)
            .and_then(|s| s.split('>').next())
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let mut args: Vec<(String, Value)> = Vec::new();
        for part in body.split("<parameter=").skip(1) {
            if let Some((key, v)) = part.split_once('>') {
                let v = v.split("</parameter>").next().unwrap_or(v);
                let v = v.strip_prefix('\n').unwrap_or(v);
                let v = v.strip_suffix('\n').unwrap_or(v);
                args.push((key.trim().to_string(), Value::from(v.to_string())));
            }
        }
        calls.push(ToolCall { name, arguments: Value::from_iter(args), body });
        rest = next;
    }
    (content, calls)
}

/// What one tool call gave: the response text and the machine's figures.
#[derive(Clone, Debug, Serialize)]
pub struct ToolRun {
    pub name: String,
    pub response: String,
    /// `ok`, or why it is an error: `program error` (the firmware's own error message, exit status not 0),
    /// `step limit`, `fault`, `unknown tool`, `no machine`.
    pub status: String,
    /// Instructions the machine retired, machine steps, trace tokens (the firmware load prompt included) and
    /// the load prompt's share.
    pub instructions: u64,
    pub steps: usize,
    pub trace_tokens: usize,
    pub load_tokens: usize,
    /// Seconds of the call (from the preloaded firmware: a fork and the run; with --reload-firmware the load
    /// prompt's reading too), and of reading the firmware's load prompt once, on the first calc call.
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_seconds: Option<f64>,
}

/// The graft's machine and the tools' firmware.
struct Machine {
    /// The machine route (leaked: it lives as long as the process, and the preloaded session borrows it).
    loaded: Option<&'static Loaded>,
    /// A session that has read the calc firmware's load prompt; every calc call runs on a fork of it
    /// (`None` until the first call, or with --reload-firmware).
    calc_pre: std::cell::OnceCell<Option<Preloaded<'static>>>,
    reload: bool,
    why_not: String,
    calc: Program,
    max_steps: usize,
    trace_dir: Option<PathBuf>,
    calls: std::cell::Cell<usize>,
}

impl Machine {
    fn open(dir: &Path, kind: ExecutorKind, max_steps: usize, trace_dir: Option<PathBuf>, reload: bool) -> Result<Self> {
        if let Some(t) = &trace_dir {
            std::fs::create_dir_all(t).with_context(|| format!("creating {}", t.display()))?;
        }
        let calls = std::cell::Cell::new(0);
        let calc = Program { name: "calc.elf".into(), bytes: CALC_ELF.to_vec(), expected_console: None };
        let manifest = weaver::export::load_manifest(dir)?;
        if manifest.face.name != "rv32im" {
            let why_not = format!("this model's machine is {}, not rv32im: it cannot run the calc firmware or C programs", manifest.face.name);
            return Ok(Machine { loaded: None, calc_pre: Default::default(), reload, why_not, calc, max_steps, trace_dir, calls });
        }
        let loaded: &'static Loaded = Box::leak(Box::new(open_checkpoint(dir, Some(&calc), Some(kind))?));
        Ok(Machine { loaded: Some(loaded), calc_pre: Default::default(), reload, why_not: String::new(), calc, max_steps, trace_dir, calls })
    }

    /// Run `call` on the machine: its firmware loaded, its text as standard input.
    fn run(&self, call: &ToolCall) -> Result<ToolRun> {
        let t0 = Instant::now();
        let mut r = ToolRun { name: call.name.clone(), response: String::new(), status: "ok".into(), instructions: 0, steps: 0, trace_tokens: 0, load_tokens: 0, seconds: 0.0, load_seconds: None };
        let arg = |k: &str| call.arguments.get_attr(k).ok().and_then(|v| v.as_str().map(str::to_string));
        let compiled;
        let (program, stdin) = match call.name.as_str() {
            // The call's own text is the calculator's input.
            "calc" => (&self.calc, call.body.clone()),
            "run_c" => {
                let Some(code) = arg("code") else {
                    r.status = "program error".into();
                    r.response = "error: run_c takes the program as its code parameter".into();
                    return Ok(r);
                };
                match compile_c(&code) {
                    Ok(elf) => compiled = Program { name: "run_c".into(), bytes: elf, expected_console: None },
                    Err(msg) => {
                        r.status = "compile error".into();
                        r.response = msg;
                        r.seconds = t0.elapsed().as_secs_f64();
                        return Ok(r);
                    }
                }
                (&compiled, arg("stdin").unwrap_or_default())
            }
            other => {
                r.status = "unknown tool".into();
                r.response = format!("error: unknown tool {other:?}; the tools are: calc, run_c");
                return Ok(r);
            }
        };
        let Some(l) = &self.loaded else {
            r.status = "no machine".into();
            r.response = format!("error: {}", self.why_not);
            return Ok(r);
        };
        let image = match l.machine.load(program) {
            Ok(i) => i,
            Err(e) => {
                r.status = "program error".into();
                r.response = format!("error: the machine cannot load the program: {e}");
                return Ok(r);
            }
        };
        let input = Box::new(std::io::Cursor::new(stdin.into_bytes()));
        // The calc firmware is read once; each call runs from a fork of the session that read it.
        let pre = if call.name == "calc" && !self.reload {
            if self.calc_pre.get().is_none() {
                let t = Instant::now();
                let _ = self.calc_pre.set(Preloaded::load(l, &image)?);
                r.load_seconds = Some(t.elapsed().as_secs_f64());
            }
            self.calc_pre.get().and_then(Option::as_ref)
        } else {
            None
        };
        let t_run = Instant::now();
        let out = run_program_preloaded(l, &image, pre, self.max_steps, stdin_io(input))?;
        if let Some(t) = &self.trace_dir {
            let n = self.calls.get() + 1;
            self.calls.set(n);
            let p = t.join(format!("call-{n}.json"));
            std::fs::write(&p, serde_json::to_string(&out.out.trace)?).with_context(|| format!("writing {}", p.display()))?;
        }
        r.instructions = out.instructions;
        r.steps = out.out.steps;
        r.trace_tokens = out.tokens();
        r.load_tokens = out.out.trace.prompt.len();
        let console = String::from_utf8_lossy(&out.console).trim().to_string();
        match out.end {
            RunEnd::StepLimit => {
                r.status = "step limit".into();
                r.response = format!("error: {} did not finish within {} machine steps", call.name, self.max_steps);
            }
            _ if out.finish.status == 0 => r.response = console,
            _ if out.finish.summary.starts_with("exit") && call.name == "run_c" => {
                // A C program's exit status is part of its answer.
                r.response = format!("{console}\n(exit status {})", out.finish.status).trim_start().to_string();
            }
            _ if out.finish.summary.starts_with("exit") => {
                r.status = "program error".into();
                r.response = if console.is_empty() { format!("error: {} ended with {}", call.name, out.finish.summary) } else { console };
            }
            _ => {
                r.status = "fault".into();
                r.response = format!("error: {}", out.finish.summary);
            }
        }
        r.seconds = t_run.elapsed().as_secs_f64();
        Ok(r)
    }
}

/// A chat message as the template takes it.
fn message(role: &str, content: &str, calls: &[ToolCall]) -> Value {
    if calls.is_empty() {
        minijinja::context! { role => role, content => content }
    } else {
        minijinja::context! { role => role, content => content, tool_calls => calls.iter().map(ToolCall::to_message).collect::<Vec<_>>() }
    }
}

/// The base's layers reading the conversation: one session, the ids it has read, the logits after the last.
struct TextSide<'e> {
    ex: &'e dyn Executor,
    session: Box<dyn Session + 'e>,
    fed: Vec<u32>,
    logits: Vec<f32>,
    /// Ids at or above this are never chosen (the base's padding rows).
    vocab: usize,
    stops: Vec<u32>,
    /// Tokens read and generated, and the times the session started over.
    prefilled: usize,
    restarts: usize,
}

impl<'e> TextSide<'e> {
    fn new(ex: &'e dyn Executor, tok: &Tokenizer) -> Result<Self> {
        let id = |s: &str| tok.special_id(s).with_context(|| format!("the tokenizer has no {s} token"));
        let stops = vec![id("<|im_end|>")?, id("<|endoftext|>")?, id("</tool_call>")?];
        let vocab = ex.config().vocab_size.min(tok.vocab_size());
        Ok(TextSide { ex, session: ex.session(), fed: Vec::new(), logits: Vec::new(), vocab, stops, prefilled: 0, restarts: 0 })
    }

    /// Make the session's context `ids`: feed what extends what it has read, or start over.
    fn sync(&mut self, ids: &[u32]) -> Result<()> {
        if !ids.starts_with(&self.fed) || (ids.len() == self.fed.len() && self.logits.is_empty()) {
            self.session = self.ex.session();
            self.fed.clear();
            self.restarts += 1;
        }
        let rest = &ids[self.fed.len()..];
        if !rest.is_empty() {
            self.logits = self.session.prefill(rest)?;
            self.fed.extend_from_slice(rest);
            self.prefilled += rest.len();
        }
        Ok(())
    }

    /// Greedy tokens until a stop token (included) or `max` tokens; `on_token` sees each.
    fn generate(&mut self, max: usize, mut on_token: impl FnMut(&[u32])) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for _ in 0..max {
            let row = &self.logits[..self.vocab.min(self.logits.len())];
            let next = backends::cpu::argmax(row);
            out.push(next);
            on_token(&out);
            if self.stops.contains(&next) {
                break;
            }
            self.logits = self.session.step(next)?;
            self.fed.push(next);
        }
        Ok(out)
    }
}

/// Prints a reply's text as its tokens come.
struct Stream {
    on: bool,
    printed: usize,
}

impl Stream {
    fn show(&mut self, tok: &Tokenizer, ids: &[u32]) {
        if !self.on {
            return;
        }
        let text = tok.decode(ids);
        // Hold back a partial UTF-8 character.
        if text.ends_with('\u{fffd}') || text.len() <= self.printed || !text.is_char_boundary(self.printed) {
            return;
        }
        print!("{}", &text[self.printed..]);
        let _ = std::io::stdout().flush();
        self.printed = text.len();
    }
}

/// What one assistant turn (with its tool rounds) gave.
#[derive(Default)]
struct Turn {
    reply: String,
    calls: Vec<ToolCall>,
    runs: Vec<ToolRun>,
    tokens: usize,
}

/// The chat: template, tokenizer, the model's two routes, the conversation.
struct Chat<'e> {
    template: ChatTemplate,
    tok: Tokenizer,
    text_ex: Option<&'e dyn Executor>,
    text: Option<TextSide<'e>>,
    machine: Machine,
    messages: Vec<Value>,
    tools: Value,
    think: bool,
    max_tokens: usize,
    max_rounds: usize,
    stream: bool,
    verbose: bool,
}

impl<'e> Chat<'e> {
    /// Answer the tool calls of the last message if it is an assistant turn with unanswered calls, then let the
    /// model go on (up to `max_rounds` rounds of its own tool calls).
    fn turn(&mut self) -> Result<Turn> {
        let mut turn = Turn::default();
        let pending = self.messages.last().and_then(|m| {
            let role = m.get_attr("role").ok()?;
            let calls = m.get_attr("tool_calls").ok()?;
            (role.as_str() == Some("assistant") && !calls.is_undefined() && !calls.is_none()).then_some(calls)
        });
        if let Some(calls) = pending {
            let calls: Vec<ToolCall> =
                calls.try_iter()?.enumerate().map(|(i, c)| ToolCall::from_message(&c, &format!("the last message's tool call {i}"))).collect::<Result<_>>()?;
            self.answer(&calls, &mut turn)?;
        }
        for round in 0..=self.max_rounds {
            if self.max_tokens == 0 {
                break;
            }
            let prompt = self.template.render(&self.messages, Some(&self.tools), true, self.think)?;
            let ids = self.tok.encode(&prompt);
            let ex = self.text_ex.context("no text executor")?;
            if self.text.is_none() {
                self.text = Some(TextSide::new(ex, &self.tok)?);
            }
            let text = self.text.as_mut().expect("set above");
            text.sync(&ids)?;
            let mut stream = Stream { on: self.stream, printed: 0 };
            let tok = &self.tok;
            let out = text.generate(self.max_tokens, |ids| stream.show(tok, ids))?;
            turn.tokens += out.len();
            let body: Vec<u32> = out.iter().copied().filter(|t| !text.stops[..2].contains(t)).collect();
            let said = self.tok.decode(&body);
            let (content, calls) = parse_calls(&said);
            if calls.is_empty() || round == self.max_rounds {
                turn.reply = content.trim().to_string();
                self.messages.push(message("assistant", &turn.reply, &[]));
                break;
            }
            if self.stream {
                println!();
            }
            self.messages.push(message("assistant", &content, &calls));
            self.answer(&calls, &mut turn)?;
        }
        Ok(turn)
    }

    /// Run each call on the machine; its response becomes a `tool` message.
    fn answer(&mut self, calls: &[ToolCall], turn: &mut Turn) -> Result<()> {
        for call in calls {
            let run = self.machine.run(call)?;
            if self.verbose {
                let expr = call.arguments.get_attr("expression").ok().filter(|v| !v.is_undefined()).map_or(call.body.clone(), |v| v.to_string());
                eprintln!(
                    "[{} {expr:?} -> {:?}: {} instructions, {} trace tokens ({} firmware load{}), {:.1} s in the machine's layers]",
                    call.name,
                    run.response,
                    run.instructions,
                    run.trace_tokens,
                    run.load_tokens,
                    run.load_seconds.map_or(String::new(), |s| format!(", read once in {s:.1} s")),
                    run.seconds
                );
            }
            self.messages.push(message("tool", &run.response, &[]));
            turn.calls.push(call.clone());
            turn.runs.push(run);
        }
        Ok(())
    }
}

/// Check a scripted conversation: a list of messages with known roles.
fn read_messages(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v = parse_json(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    if v.kind() != minijinja::value::ValueKind::Seq {
        bail!("{}: expected a JSON list of chat messages", path.display());
    }
    let list: Vec<Value> = v.try_iter()?.collect();
    for (i, m) in list.iter().enumerate() {
        let role = m.get_attr("role").ok().and_then(|r| r.as_str().map(str::to_string));
        match role.as_deref() {
            Some("system" | "user" | "assistant" | "tool") => {}
            Some(r) => bail!("{}: message {i} has role {r:?} (system, user, assistant or tool)", path.display()),
            None => bail!("{}: message {i} has no role", path.display()),
        }
        if let Ok(calls) = m.get_attr("tool_calls") {
            if !calls.is_undefined() && !calls.is_none() {
                for (j, c) in calls.try_iter().with_context(|| format!("{}: message {i}: tool_calls is not a list", path.display()))?.enumerate() {
                    ToolCall::from_message(&c, &format!("{}: message {i}, tool call {j}", path.display()))?;
                }
            }
        }
    }
    Ok(list)
}

pub fn run(a: Args) -> Result<()> {
    let t0 = Instant::now();
    let dir = &a.model;
    let graft = GraftManifest::load(dir)?.with_context(|| {
        format!("{} is not a grafted checkpoint (no graft.json): `loom chat` needs a language model with a machine, from `loom graft`", dir.display())
    })?;
    let template = ChatTemplate::from_model_dir(dir)?;
    let tok = Tokenizer::from_model_dir(dir)?;
    let machine = Machine::open(dir, a.machine_executor, a.max_tool_steps, a.trace_dir.clone(), a.reload_firmware)?;
    let messages = match &a.messages {
        Some(p) => read_messages(p)?,
        None => Vec::new(),
    };
    // The base's layers are loaded only when text is to be generated.
    let needs_text = a.max_tokens > 0 && !(a.bench_mul_big.is_some() && a.bench_mode == "calls");
    let text_ex = if needs_text { Some(backends::executor::open_route(a.text_executor, dir, Route::Text)?) } else { None };
    let interactive = a.messages.is_none() && a.bench_mul_big.is_none();
    let mut chat = Chat {
        template,
        tok,
        text_ex: text_ex.as_deref(),
        text: None,
        machine,
        messages,
        tools: tool_schemas(),
        think: a.think,
        max_tokens: a.max_tokens,
        max_rounds: a.max_tool_rounds,
        stream: !a.json,
        verbose: !a.json,
    };
    if let Some(file) = &a.bench_mul_big {
        return bench_mul_big(&mut chat, file, &a, &graft);
    }
    if interactive {
        return interactive_chat(&mut chat, &a);
    }
    let turn = chat.turn()?;
    if a.json {
        let out = serde_json::json!({
            "reply": turn.reply,
            "tool_calls": turn.calls.iter().map(|c| serde_json::json!({"name": c.name, "arguments": c.arguments_json()})).collect::<Vec<_>>(),
            "tool_responses": turn.runs.iter().map(|r| r.response.clone()).collect::<Vec<_>>(),
            "tool_runs": turn.runs,
            "tokens": turn.tokens,
            "text_tokens_read": chat.text.as_ref().map_or(0, |t| t.prefilled),
            "seconds": t0.elapsed().as_secs_f64(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!();
    }
    Ok(())
}

fn interactive_chat(chat: &mut Chat, a: &Args) -> Result<()> {
    if let Some(s) = &a.system {
        chat.messages.push(message("system", s, &[]));
    }
    let tty = std::io::stdin().is_terminal();
    eprintln!("loom chat: {} (tools: calc and run_c, on the grafted machine). Ctrl-D ends.", a.model.display());
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if tty {
            eprint!("> ");
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        chat.messages.push(message("user", line.trim(), &[]));
        chat.turn()?;
        println!();
    }
    Ok(())
}

/// One mul_big problem: the question, the call a model would write, the exact answer.
#[derive(serde::Deserialize)]
struct Problem {
    question: String,
    expression: String,
    answer: String,
}

fn bench_mul_big(chat: &mut Chat, file: &Path, a: &Args, graft: &GraftManifest) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
    let problems: Vec<Problem> = serde_json::from_value(v.get("problems").cloned().unwrap_or(v.clone()))
        .with_context(|| format!("{}: expected {{\"problems\": [{{question, expression, answer}}, ...]}}", file.display()))?;
    let problems = &problems[..a.limit.unwrap_or(problems.len()).min(problems.len())];
    let t0 = Instant::now();
    chat.verbose = false;
    chat.stream = false;
    if a.bench_mode == "calls" {
        // The call is given: only the machine runs.
        chat.max_tokens = 0;
    }
    let mut rows = Vec::new();
    let mut correct = 0;
    for (i, p) in problems.iter().enumerate() {
        chat.messages.clear();
        chat.messages.push(message("user", &p.question, &[]));
        if a.bench_mode == "calls" {
            let mut args: Vec<(String, Value)> = Vec::new();
            args.push(("expression".into(), Value::from(p.expression.clone())));
            let call = ToolCall::from_message(&minijinja::context! { function => minijinja::context! { name => "calc", arguments => Value::from_iter(args) } }, "problem")?;
            chat.messages.push(message("assistant", "", &[call]));
        }
        let t = Instant::now();
        let turn = chat.turn()?;
        let got = if a.bench_mode == "calls" { turn.runs.first().map(|r| r.response.clone()).unwrap_or_default() } else { turn.reply.clone() };
        let ok = if a.bench_mode == "calls" { got == p.answer } else { mentions(&got, &p.answer) };
        correct += ok as usize;
        let run = turn.runs.first();
        let row = serde_json::json!({
            "question": p.question, "expression": p.expression, "answer": p.answer, "got": got, "correct": ok,
            "instructions": run.map(|r| r.instructions), "trace_tokens": run.map(|r| r.trace_tokens),
            "tool_calls": turn.runs.len(), "seconds": t.elapsed().as_secs_f64(),
        });
        if !a.json {
            eprintln!(
                "{:>3} {} {:<46} {} ({}{:.1} s)",
                i + 1,
                if ok { "ok  " } else { "MISS" },
                p.question,
                got,
                run.map_or(String::new(), |r| format!("{} instructions, {} trace tokens, ", r.instructions, r.trace_tokens)),
                t.elapsed().as_secs_f64()
            );
        }
        rows.push(row);
    }
    let secs = t0.elapsed().as_secs_f64();
    let n = problems.len();
    let trace: usize = rows.iter().filter_map(|r| r["trace_tokens"].as_u64()).sum::<u64>() as usize;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "model": a.model.display().to_string(), "machine": graft.machine, "mode": a.bench_mode,
                "problems": n, "correct": correct, "score": correct as f64 / n.max(1) as f64,
                "seconds": secs, "seconds_per_problem": secs / n.max(1) as f64, "trace_tokens": trace, "results": rows,
            }))?
        );
    } else {
        println!("mul_big ({} mode): {correct} of {n} exact ({:.1}%), {secs:.1} s ({:.1} s per problem, {trace} trace tokens)", a.bench_mode, 100.0 * correct as f64 / n.max(1) as f64, secs / n.max(1) as f64);
    }
    Ok(())
}

/// Does `reply` state `answer` (as a number on its own, not inside a longer one)?
fn mentions(reply: &str, answer: &str) -> bool {
    let r = reply.replace(',', "");
    r.match_indices(answer).any(|(i, _)| {
        let before = r[..i].chars().next_back();
        let after = r[i + answer.len()..].chars().next();
        let digitish = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        !digitish(before) && !(digitish(after) || (after == Some('.') && digitish(r[i + answer.len() + 1..].chars().next())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_calls_are_parsed_and_their_text_kept() {
        let (content, calls) = parse_calls("Let me compute.\n\n<tool_call>\n<function=calc>\n<parameter=expression>\n2*3\n</parameter>\n</function>\n</tool_call>");
        assert_eq!(content, "Let me compute.");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "calc");
        assert_eq!(calls[0].arguments.get_attr("expression").unwrap().as_str(), Some("2*3"));
        assert_eq!(calls[0].body, "<function=calc>\n<parameter=expression>\n2*3\n</parameter>\n</function>");
        // A given call's text is the template's.
        let given = ToolCall::from_message(&parse_json(r#"{"function": {"name": "calc", "arguments": "{\"expression\": \"2*3\"}"}}"#).unwrap(), "t").unwrap();
        assert_eq!(given.body, calls[0].body);
        let e = ToolCall::from_message(&parse_json(r#"{"function": {"name": "calc", "arguments": "2*3"}}"#).unwrap(), "t").err().unwrap();
        assert!(format!("{e:#}").contains("t: the arguments of calc are a string that is not JSON"), "{e:#}");
        let e = ToolCall::from_message(&parse_json(r#"{"function": {"name": "calc", "arguments": [1]}}"#).unwrap(), "t").err().unwrap();
        assert!(format!("{e:#}").contains("t: the arguments of calc are not an object"), "{e:#}");
        assert!(parse_calls("no calls").1.is_empty());
    }

    #[test]
    fn a_reply_mentions_the_answer_as_a_whole_number() {
        assert!(mentions("The product is 7776112184.", "7776112184"));
        assert!(mentions("= -41,865.79725", "-41865.79725"));
        assert!(!mentions("77761121845", "7776112184"));
        assert!(!mentions("7776112184.5", "7776112184"));
    }
}
