//! `loom`: the user binary. One module per subcommand; `main` only parses and dispatches.

use clap::{Parser, Subcommand};

mod bench;
mod bench_executors;
mod chat;
mod chat_template;
mod cuda;
mod display;
mod eval;
mod generate;
mod graft;
mod lockstep;
mod nes;
mod profile;
mod progress;
mod python;
mod random_model;
mod registry;
mod run;
mod session;
mod text_check;
mod tokenizer;
mod weave;
mod weave_cache;

#[derive(Parser)]
#[command(name = "loom", version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("LOOM_COMMIT"), ")"), about = "Qwen3.5 runtime and machine weaver")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Greedy-decode from a Qwen3.5 checkpoint; prints {"generated":[...]}.
    Generate(generate::Args),
    /// Write a deterministic random Qwen3.5 checkpoint (a preset shape).
    RandomModel(random_model::Args),
    /// Measure load time, decode tokens/s and peak memory of a checkpoint.
    BenchGenerate(bench::Args),
    /// Weave a machine (TOML config) into a checkpoint directory; prints the report.
    Weave(weave::Args),
    /// Weave a machine into a base Qwen3.5 checkpoint's layer shape and write the grafted checkpoint: the
    /// machine's layers in front of the base's, its trace tokens after the base's vocabulary.
    Graft(graft::Args),
    /// Chat with a grafted checkpoint whose `calc` tool calls run on its machine layers (the RV32 calculator
    /// firmware): interactive, or `--messages FILE --json` scripted, or `--bench-mul-big FILE`.
    Chat(chat::Args),
    /// Compare a grafted checkpoint's text with its base's over a text (default: a built-in passage): positions
    /// bit-identical, max |delta logit|, KL, greedy agreement, routed and plain.
    TextCheck(text_check::Args),
    /// Run a program on a machine: `run CONFIG [PROGRAM]` weaves the machine the config names and runs the
    /// program (or the machine's built-in demo), printing its console and exiting with its status;
    /// `run --model DIR [PROGRAM]` runs a woven checkpoint directory. Host devices only: the instructions run
    /// in the weights.
    Run(run::Args),
    /// `run` as a benchmark: no console output; prints weave (or load) time, tokens/s, instructions/s, memory
    /// as JSON. Takes a config or `--model DIR [PROGRAM]`.
    BenchRun(run::BenchArgs),
    /// Run a program on the machine's exact reference evaluator, nothing woven (as transformer-vm's `wasm-eval`):
    /// `eval CONFIG [PROGRAM]` with `run`'s host devices and trace, for plugin authors debugging a circuit.
    Eval(eval::Args),
    /// Run programs (default: the machine's built-in examples) on the woven machine and replay each trace
    /// against the machine's reference evaluator (every position) and, for RV32, the reference interpreter (pc
    /// and x0..x31 after every instruction, console and exit status).
    Lockstep(lockstep::Args),
    /// Run executors side by side on one woven machine and program (default: sparse,incremental,jit): the same
    /// trace, token for token, required of each; prints build time, memory, tokens/s, instructions/s and each
    /// executor's speed as a ratio to the first's.
    BenchExecutors(bench_executors::Args),
    /// Run a NES program frame by frame: the 2A03 in the woven network (or the reference interpreter, or both
    /// compared), the PPU, APU and pads in the host; frames as PNG or GIF, sound as WAV. Default: our demo.
    Nes(nes::Args),
    /// Run a Python script in MicroPython on the woven RV32IM machine: `python [CONFIG] -c 'print(2**100)'`
    /// or `python [CONFIG] SCRIPT` (default config: the built-in configs/rv32im-512k.toml). The script is the
    /// firmware's standard input; its output is the console. Without a script on a terminal (or with `-i`): a
    /// line-by-line session.
    Python(python::Args),
    /// Run a CUDA-subset kernel on the woven SIMT4 GPU: `cuda kernel.cu --grid X[,Y] --block X[,Y] --arg
    /// n=37 --arg 'out=zeros(40)'` (or a launch file `kernel.toml` beside it); prints the arrays as JSON.
    /// `--check` replays the trace against the reference interpreter.
    Cuda(cuda::Args),
    /// Where the weave cache is, what it holds and how big it is; `loom cache clear` empties it.
    Cache(weave_cache::CacheArgs),
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell), e.g.
    /// `loom completions bash > ~/.local/share/bash-completion/completions/loom`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The `--executor` value of every verb: one of [`backends::ExecutorKind::ALL`] by name, each listed in the help.
pub(crate) fn executor_parser() -> impl clap::builder::TypedValueParser<Value = backends::ExecutorKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(backends::ExecutorKind::ALL.map(|k| k.name())).map(|s| backends::ExecutorKind::parse(&s).expect("a listed executor name"))
}

/// The exit status of a check that ran and found the network and its reference disagreeing (`lockstep`, `cuda
/// --check`, `nes --cpu both`, `text-check`, `bench-executors`): distinct from 1, an error that stopped the command, and 2, a
/// command line that does not parse.
pub const DISAGREES: u8 = 3;

fn main() -> std::process::ExitCode {
    // A closed pipe ends loom quietly, as it does any Unix tool (`loom lockstep ... | head`): Rust starts with
    // SIGPIPE ignored, so a write to a closed standard output would panic ("failed printing to stdout").
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let ok = |r: anyhow::Result<()>| r.map(|()| std::process::ExitCode::SUCCESS);
    let result = match cli.command {
        Command::Generate(a) => ok(generate::run(a)),
        Command::RandomModel(a) => ok(random_model::run(a)),
        Command::BenchGenerate(a) => ok(bench::run(a)),
        Command::Weave(a) => ok(weave::run(a)),
        Command::Graft(a) => ok(graft::run(a)),
        Command::TextCheck(a) => text_check::run(a),
        Command::Chat(a) => ok(chat::run(a)),
        Command::Run(a) => run::run(a, false),
        Command::BenchRun(a) => run::run(a.run, true),
        Command::Eval(a) => eval::run(a),
        Command::Lockstep(a) => lockstep::run(a),
        Command::BenchExecutors(a) => bench_executors::run(a),
        Command::Nes(a) => nes::run(a),
        Command::Python(a) => python::run(a),
        Command::Cuda(a) => cuda::run(a),
        Command::Cache(a) => ok(weave_cache::run(a)),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "loom", &mut std::io::stdout());
            Ok(std::process::ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
