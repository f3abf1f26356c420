//! Lockstep against QEMU: parse the per-instruction register dumps that
//! `qemu-riscv32 -cpu rv32,c=false,a=false,f=false,d=false,zba=true -singlestep -d cpu,nochain -D trace.log prog.elf`
//! writes, and compare them with the reference interpreter after every instruction. A mismatch is counted and
//! the interpreter resynchronised, so one run reports every difference.
//!
//! QEMU 7.2 user mode prints, before each instruction, one block
//! ```text
//!  pc       00010000
//!  x0/zero  00000000 x1/ra    00000000 x2/sp    40800990 x3/gp    00000000
//!  ... (8 lines of 4 registers, x0 to x31)
//! ```
//! (other lines, such as floating-point registers when F is enabled, are ignored). Dump k is the state after
//! instruction k-1. QEMU chooses its own initial sp, so dump 0 is compared on pc only; the example programs set
//! sp in their first instruction pair, after which all 32 registers must agree.

use std::io::{self, BufRead};
use std::path::Path;
use std::process::Command;

use super::{LockstepEnd, LockstepReport, Mismatch};
use crate::interp::{Cpu, StepEvent};

/// One register dump: pc and x0..x31, before an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceState {
    /// Program counter.
    pub pc: u32,
    /// x0..x31.
    pub x: [u32; 32],
}

/// Streaming parser over a QEMU `-d cpu` log.
pub struct TraceReader<R> {
    lines: io::Lines<R>,
    pending_pc: Option<u32>,
    line_no: usize,
}

impl<R: BufRead> TraceReader<R> {
    /// Wraps a reader.
    pub fn new(reader: R) -> Self {
        TraceReader {
            lines: reader.lines(),
            pending_pc: None,
            line_no: 0,
        }
    }
}

fn bad(line_no: usize, msg: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("qemu trace line {line_no}: {msg}"),
    )
}

fn hex(s: &str, line_no: usize) -> io::Result<u32> {
    u32::from_str_radix(s, 16).map_err(|_| bad(line_no, &format!("bad hex value {s:?}")))
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = io::Result<TraceState>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut x = [0u32; 32];
        let mut seen = 0u64; // bit i set when x_i was read
        loop {
            let line = match self.lines.next() {
                None => {
                    let partial = self.pending_pc.take().is_some() || seen != 0;
                    return if partial {
                        Some(Err(bad(self.line_no, "trace ends inside a register dump")))
                    } else {
                        None
                    };
                }
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(l)) => l,
            };
            self.line_no += 1;
            let mut tokens = line.split_whitespace();
            let Some(first) = tokens.next() else { continue };
            if first == "pc" {
                if self.pending_pc.take().is_some() {
                    return Some(Err(bad(
                        self.line_no,
                        "pc line before the previous dump was complete",
                    )));
                }
                let Some(v) = tokens.next() else {
                    return Some(Err(bad(self.line_no, "pc without value")));
                };
                match hex(v, self.line_no) {
                    Ok(pc) => self.pending_pc = Some(pc),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            }
            if !first.starts_with('x') || !first.contains('/') || self.pending_pc.is_none() {
                continue; // other state (f registers, CSRs), or text before the first dump
            }
            // Tokens come in pairs: "x5/t0" "00011054".
            let mut name = Some(first);
            while let Some(n) = name {
                let Some(v) = tokens.next() else {
                    return Some(Err(bad(self.line_no, "register without value")));
                };
                let idx = n
                    .trim_start_matches('x')
                    .split('/')
                    .next()
                    .and_then(|s| s.parse::<usize>().ok());
                let Some(i) = idx.filter(|&i| i < 32) else {
                    return Some(Err(bad(self.line_no, &format!("bad register name {n:?}"))));
                };
                match hex(v, self.line_no) {
                    Ok(val) => x[i] = val,
                    Err(e) => return Some(Err(e)),
                }
                seen |= 1 << i;
                name = tokens.next();
            }
            if seen == u32::MAX as u64 {
                let pc = self.pending_pc.take().unwrap_or(0);
                return Some(Ok(TraceState { pc, x }));
            }
        }
    }
}

/// What QEMU's dump and the interpreter's state say differently, in words (`pc qemu .. interp ..; x15 ...;`).
fn difference(qemu: &TraceState, interp: &TraceState) -> String {
    let mut w = String::new();
    if qemu.pc != interp.pc {
        w.push_str(&format!(" pc qemu {:#010x} interp {:#010x};", qemu.pc, interp.pc));
    }
    for i in 0..32 {
        if qemu.x[i] != interp.x[i] {
            w.push_str(&format!(" x{i} qemu {:#010x} interp {:#010x};", qemu.x[i], interp.x[i]));
        }
    }
    w.trim_start().to_string()
}

fn snapshot(cpu: &Cpu) -> TraceState {
    TraceState {
        pc: cpu.pc(),
        x: *cpu.regs(),
    }
}

/// Steps `cpu` along `trace`: dump 0 must have the interpreter's pc (and gives it qemu's sp); after each
/// instruction the interpreter's pc
/// and x0..x31 are compared with the next dump. On a mismatch the interpreter's registers are resynchronised to
/// QEMU's so that later instructions are still checked. After the last dump the interpreter runs on (up to
/// `tail_limit` instructions) to the program's exit, as QEMU prints nothing after the final ECALL.
pub fn lockstep<I>(cpu: &mut Cpu, trace: I, tail_limit: u64) -> io::Result<LockstepReport>
where
    I: IntoIterator<Item = io::Result<TraceState>>,
{
    const KEEP: usize = 10;
    let mut report = LockstepReport::new();
    let mut iter = trace.into_iter();
    let Some(first) = iter.next().transpose()? else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "empty qemu trace",
        ));
    };
    if first.pc != cpu.pc() {
        report.end = LockstepEnd::Error(format!(
            "entry pc differs: qemu {:#010x}, interpreter {:#010x}",
            first.pc,
            cpu.pc()
        ));
        report.mismatch_count += 1;
        return Ok(report);
    }
    // The loader's stack pointer is qemu's choice (high in its address space; ours is below the top of RAM,
    // `crate::elf::initial_sp`): the interpreter starts from qemu's, so programs that leave sp alone compare
    // too (while they do not touch the stack outside RAM).
    cpu.set_x(2, first.x[2]);
    let handle = |ev: StepEvent, report: &mut LockstepReport| match ev {
        StepEvent::Write { data, .. } => report.output.extend_from_slice(&data),
        StepEvent::Exit { code } => report.end = LockstepEnd::Exit(code as u8),
        _ => {}
    };
    for state in iter {
        let state = state?;
        let at_pc = cpu.pc();
        match cpu.step() {
            Ok(ev) => handle(ev, &mut report),
            Err(e) => {
                report.end = LockstepEnd::Error(e.to_string());
                report.mismatch_count += 1;
                report.executed = cpu.instret();
                return Ok(report);
            }
        }
        report.instructions += 1;
        report.steps += 1;
        let mine = snapshot(cpu);
        if mine != state {
            report.mismatch_count += 1;
            if report.mismatches.len() < KEEP {
                report.mismatches.push(Mismatch { instruction: report.instructions - 1, pc: at_pc, what: difference(&state, &mine) });
            }
            cpu.set_pc(state.pc);
            for i in 1..32 {
                cpu.set_x(i, state.x[i]);
            }
        }
    }
    let mut tail = 0;
    while report.exit_code().is_none() && tail < tail_limit {
        match cpu.step() {
            Ok(ev) => handle(ev, &mut report),
            Err(e) => {
                report.end = LockstepEnd::Error(e.to_string());
                break;
            }
        }
        tail += 1;
    }
    report.executed = cpu.instret();
    Ok(report)
}

/// The QEMU command line used for lockstep (without the program).
pub const QEMU_CPU: &str = "rv32,c=false,a=false,f=false,d=false,zba=true";

/// What QEMU itself reported for a run.
#[derive(Clone, Debug)]
pub struct QemuRun {
    /// The program's stdout.
    pub stdout: Vec<u8>,
    /// Process exit status (None if killed by a signal).
    pub status: Option<i32>,
    /// QEMU's own diagnostics.
    pub stderr: Vec<u8>,
}

/// Whether `qemu-riscv32` can be started.
pub fn qemu_available() -> bool {
    Command::new("qemu-riscv32")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs `qemu-riscv32 -cpu <QEMU_CPU> -singlestep -d cpu,nochain -D <log> <elf>`.
pub fn run_qemu(elf: &Path, log: &Path) -> io::Result<QemuRun> {
    let out = Command::new("qemu-riscv32")
        .args(["-cpu", QEMU_CPU, "-singlestep", "-d", "cpu,nochain", "-D"])
        .arg(log)
        .arg(elf)
        .output()?;
    Ok(QemuRun {
        stdout: out.stdout,
        status: out.status.code(),
        stderr: out.stderr,
    })
}

/// Full lockstep of one ELF: writes it to a temporary file, runs it under qemu-riscv32 with per-instruction
/// register dumps, replays the dumps against a fresh interpreter loaded with `config`, deletes the temporary files.
pub fn lockstep_elf(
    elf: &[u8],
    config: crate::Config,
    tail_limit: u64,
) -> io::Result<(QemuRun, LockstepReport)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut cpu =
        crate::load_elf(elf, config).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let stem = format!(
        "rv32-lockstep-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir();
    let elf_path = dir.join(format!("{stem}.elf"));
    let log_path = dir.join(format!("{stem}.log"));
    std::fs::write(&elf_path, elf)?;
    #[cfg(unix)]
    {
        // qemu-riscv32, like the kernel, only runs files with execute permission.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&elf_path, std::fs::Permissions::from_mode(0o755))?;
    }
    let result = (|| {
        let qemu = run_qemu(&elf_path, &log_path)?;
        if !log_path.exists() || std::fs::metadata(&log_path)?.len() == 0 {
            return Err(io::Error::other(format!(
                "qemu-riscv32 wrote no trace (status {:?}): {}",
                qemu.status,
                String::from_utf8_lossy(&qemu.stderr)
            )));
        }
        let file = std::fs::File::open(&log_path)?;
        let reader = TraceReader::new(io::BufReader::with_capacity(1 << 20, file));
        let report = lockstep(&mut cpu, reader, tail_limit)?;
        Ok((qemu, report))
    })();
    let _ = std::fs::remove_file(&elf_path);
    let _ = std::fs::remove_file(&log_path);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = " pc       00010000
 x0/zero  00000000 x1/ra    00000000 x2/sp    40800990 x3/gp    00000000
 x4/tp    00000000 x5/t0    00000000 x6/t1    00000000 x7/t2    00000000
 x8/s0    00000000 x9/s1    00000000 x10/a0   00000000 x11/a1   00000000
 x12/a2   00000000 x13/a3   00000000 x14/a4   00000000 x15/a5   00000000
 x16/a6   00000000 x17/a7   00000000 x18/s2   00000000 x19/s3   00000000
 x20/s4   00000000 x21/s5   00000000 x22/s6   00000000 x23/s7   00000000
 x24/s8   00000000 x25/s9   00000000 x26/s10  00000000 x27/s11  00000000
 x28/t3   00000000 x29/t4   00000000 x30/t5   00000000 x31/t6   deadbeef
";

    #[test]
    fn parses_qemu_7_2_dump() {
        let text = format!("{DUMP}{}", DUMP.replace("00010000", "00010004"));
        let states: Vec<_> = TraceReader::new(text.as_bytes())
            .collect::<io::Result<_>>()
            .unwrap();
        assert_eq!(states.len(), 2);
        assert_eq!(states[0].pc, 0x10000);
        assert_eq!(states[1].pc, 0x10004);
        assert_eq!(states[0].x[2], 0x4080_0990);
        assert_eq!(states[0].x[31], 0xdead_beef);
    }

    #[test]
    fn truncated_dump_is_an_error() {
        let cut = &DUMP[..DUMP.len() - 40];
        let r: Vec<_> = TraceReader::new(cut.as_bytes()).take(5).collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
    }
}
