//! The SIMT4 program corpus: small hand-written programs (lanes in lane order, nested divergence, a loop with
//! per-lane trip counts, a barrier rotating warps, a bounds fault, an empty program, ALU edge cases) that the
//! interpreter's unit tests check value by value and the circuit lockstep (`tests/circuit_lockstep.rs`) runs at
//! every lane and warp count. Arrays are laid out for up to 32 threads: bounds of 32 and per-lane results at a
//! stride of 32 words.

use crate::isa::Instr;
use crate::isa::Opcode::*;

/// The corpus: `(name, program)`, in a fixed order. A program stops by `HALT` or, as its name says, by a fault.
pub fn programs() -> Vec<(&'static str, Vec<Instr>)> {
    vec![
        (
            "lanes_add_and_store_in_lane_order",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(Mul, 2, 1, 3),
                Instr::rri(Add, 2, 2, 1),
                Instr::mem(Stg, 0, 1, 2, 0, 32),
                Instr::rri(Add, 3, 0, 1),
                Instr::rri(Add, 4, 0, 8),
                Instr::rri(Add, 5, 0, 0),
                Instr::mem(Atomg, 6, 5, 3, 40, 1),
                Instr::mem(Stg, 0, 1, 6, 44, 32),
                Instr::new(Halt),
            ],
        ),
        (
            "divergence_with_counters",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(And, 2, 1, 1),
                Instr::rrr(If, 0, 2, 0),
                Instr::rri(Add, 3, 0, 10),
                Instr::new(Else),
                Instr::rri(Seq, 4, 1, 2),
                Instr::rrr(If, 0, 4, 0),
                Instr::rri(Add, 3, 0, 20),
                Instr::new(Else),
                Instr::rri(Add, 3, 0, 30),
                Instr::new(Endif),
                Instr::new(Endif),
                Instr::mem(Stg, 0, 1, 3, 0, 32),
                Instr::new(Halt),
            ],
        ),
        (
            "loop_with_per_lane_trip_counts",
            vec![
                Instr::rrr(Tid, 1, 0, 0),
                Instr::rri(Add, 2, 0, 0),
                Instr::rri(Add, 3, 0, 0),
                Instr::rri(If, 0, 0, 1),
                Instr::rri(If, 0, 0, 1),
                Instr::rri(Add, 4, 1, 1),
                Instr::rrr(Slt, 5, 3, 4),
                Instr::rri(Brk, 0, 5, 2),
                Instr::rrr(Add, 2, 2, 3),
                Instr::new(Endif),
                Instr::rri(Add, 3, 3, 1),
                Instr::imm(Jany, 4),
                Instr::new(Endif),
                Instr::mem(Stg, 0, 1, 2, 0, 32),
                Instr::new(Halt),
            ],
        ),
        (
            "barrier_rotates_warps",
            vec![
                Instr::imm(Creset, 8),
                Instr::rrr(Tid, 1, 0, 0),
                Instr::mem(Sts, 0, 1, 1, 0, 8),
                Instr::imm(Bar, 2),
                Instr::rri(Sub, 2, 0, 7),
                Instr::rrr(Sub, 2, 0, 2),
                Instr::rrr(Sub, 2, 2, 1),
                Instr::mem(Lds, 3, 2, 0, 0, 8),
                Instr::mem(Stg, 0, 1, 3, 0, 8),
                Instr::imm(Bar, 2),
                Instr::new(Halt),
            ],
        ),
        ("bounds_fault_lane_3", vec![Instr::rrr(Tid, 1, 0, 0), Instr::mem(Ldg, 2, 1, 0, 0, 3), Instr::new(Halt)]),
        ("illegal_empty_program", vec![]),
        (
            "alu_edge_cases",
            vec![
                Instr::rri(Add, 1, 0, 0x8000_0000),
                Instr::rri(Sra, 2, 1, 40),
                Instr::rri(Shl, 3, 1, 32),
                Instr::rri(Mulhi, 4, 1, 0xFFFF_FFFF),
                Instr::rri(Mulhu, 5, 1, 4),
                Instr::rri(Min, 6, 1, 1),
                Instr::rri(Minu, 7, 1, 1),
                Instr::rri(Cmov, 8, 0, 5),
                Instr::rri(Cmov, 9, 1, 5),
                Instr::rrr(Tid, 10, 0, 0),
                Instr::mem(Stg, 0, 10, 2, 0, 32),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 3, 0, 64),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 4, 0, 96),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 5, 0, 128),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 6, 0, 160),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 7, 0, 192),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 8, 0, 224),
                Instr::rri(Add, 10, 10, 32),
                Instr::mem(Stg, 0, 10, 9, 0, 256),
                Instr::new(Halt),
            ],
        ),
    ]
}

/// The corpus program called `name`; `None` when there is none.
pub fn program(name: &str) -> Option<Vec<Instr>> {
    programs().into_iter().find(|(n, _)| *n == name).map(|(_, p)| p)
}
