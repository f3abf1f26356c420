//! `loom`: the user binary. One module per subcommand; `main` only parses and dispatches.

use clap::{Parser, Subcommand};

mod bench;
mod generate;
mod random_model;
mod run;
mod weave;

#[derive(Parser)]
#[command(name = "loom", version, about = "Qwen3.5 runtime and machine weaver")]
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
    /// Run a woven machine from its checkpoint directory (host devices only).
    Run(run::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(a) => generate::run(a),
        Command::RandomModel(a) => random_model::run(a),
        Command::BenchGenerate(a) => bench::run(a),
        Command::Weave(a) => weave::run(a),
        Command::Run(a) => run::run(a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
