//! What a cartridge ROM costs in the network, loaded as prompt tokens into Gated DeltaNet memory (what the
//! 2A03 machine does) or compiled into the weights (a `Lookup`, which the weaver makes an MLP, as Nesformer
//! compiles its cartridge data). Both machines read one byte of a 4 KiB ROM per step at an address that moves
//! every step (a program counter) and write it to a register, so the trace carries every byte read.
//!
//! ```sh
//! cargo run --release -p isa-6502 --example rom_in_weights
//! ```
//!
//! Prints, for each: layers, MLP units, dense parameters, nonzero weights, prompt tokens, and on the
//! incremental executor the decode speed and the weights multiplied per token. The 2A03 reads up to seven ROM
//! bytes an instruction (fetch 3, pointer 3, data 1) from a 16 or 32 KiB PRG ROM: multiply the lookup's figures
//! by 4-8 (the ROM's 4 KiB blocks) and by 7 to estimate the compiled form of a whole cartridge.

use backends::incremental::IncrementalModel;
use isa_api::circuit::CircuitBuilder;
use isa_api::{MachineDesc, MemoryDesc, RegisterDesc, host};

const ROM_BYTES: usize = 4096;
const STEPS: usize = 2000;

/// Pseudo-random bytes (a 64-bit LCG): as varied as code.
fn rom() -> Vec<u8> {
    let mut s = 0x6502_u64;
    (0..ROM_BYTES)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

/// R (12 bits) steps by 7 each step (so consecutive reads are far apart, as jumps make them); V = ROM[R].
fn machine(in_weights: bool, rom: &[u8]) -> MachineDesc {
    let mut b = CircuitBuilder::new();
    let r = b.reg(0, 12);
    let seven = b.konst(12, 7);
    let next = b.add(r, seven);
    let value = if in_weights { b.lookup(8, rom.iter().map(|&x| u64::from(x)).collect(), r) } else { b.load(0, 8, r) };
    b.set_next(0, next);
    b.set_next(1, value);
    let regs = vec![RegisterDesc { name: "R".into(), width: 12 }, RegisterDesc { name: "V".into(), width: 8 }];
    let mems = if in_weights { vec![] } else { vec![MemoryDesc { name: "ROM".into(), word_width: 8, addr_width: 12 }] };
    MachineDesc::new(if in_weights { "rom-in-weights" } else { "rom-in-memory" }, regs, mems, vec![], b.finish())
}

fn main() {
    let rom = rom();
    println!("| ROM of {ROM_BYTES} bytes | layers | MLP units | dense parameters | nonzero weights | prompt tokens (time) | decode tokens/s | weights multiplied per decoded token |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for in_weights in [false, true] {
        let desc = machine(in_weights, &rom);
        desc.validate().expect("valid");
        let woven = weaver::weave(&desc, &weaver::WeaveOptions::default()).expect("weaves");
        let proto = &woven.protocol;
        let model = IncrementalModel::new(&woven.config, &woven.weights).expect("builds");
        let mut prompt = if in_weights { vec![] } else { proto.load_tokens(0, 0, &rom.iter().map(|&x| u64::from(x)).collect::<Vec<_>>()) };
        prompt.push(proto.step_token);
        // The prompt alone, then prompt and steps: the difference is the decoding of the steps.
        let run = |steps: usize| {
            let mut st = model.new_state();
            let t0 = std::time::Instant::now();
            let out = host::run(proto, &prompt, steps, |t| model.step_argmax(&mut st, t)).expect("runs");
            (out, t0.elapsed().as_secs_f64(), st.counters())
        };
        let (_, prompt_secs, c0) = run(0);
        let (out, secs, c1) = run(STEPS);
        let (dsecs, dtokens, dweights) = (secs - prompt_secs, c1.tokens - c0.tokens, c1.weights_read - c0.weights_read);
        // Check the bytes the trace carries against the ROM.
        let steps = proto.decode_steps(&out.trace.generated).expect("decodes");
        let mut r = 0usize;
        for s in &steps {
            assert_eq!(s.reg(1) as u8, rom[r], "the byte read at {r:#x}");
            r = (r + 7) % ROM_BYTES;
        }
        println!(
            "| {} | {} | {} | {} | {} | {} ({:.2} s) | {:.0} | {:.0} |",
            if in_weights { "in the weights (Lookup)" } else { "in DeltaNet memory (prompt tokens)" },
            woven.config.num_hidden_layers,
            woven.config.intermediate_size,
            woven.config.parameter_count(),
            woven.report.nonzero_weights,
            prompt.len(),
            prompt_secs,
            dtokens as f64 / dsecs,
            dweights as f64 / dtokens.max(1) as f64
        );
    }
}
