//! The board around the woven 2A03 (`--cpu network`): host devices that read the decoded trace of the NES-map
//! machine and inject its inputs. They compute no instruction: they answer the IO reads the machine requests
//! (port `IO_READ`, answered on input `IO_DATA`), apply its IO writes (`IO_WRITE`) and OAM DMA bytes
//! (`OAM_DMA`), clock the board from the `CYC` register, and drive the `NMI` and `IRQ` inputs.

use crate::board::{Board, Frame, Lines};
use isa_6502::circuit::{BUSY_DMA, Mos6502Options, PrgBanking, bank_byte_address, input, io_read_port, mem, reg};
use isa_6502::front::fault_summary;
use isa_api::StepEvents;
use isa_api::front::{Devices, EXIT_FAULT, EXIT_STEP_LIMIT, Finish, RunEnd};

/// Where frames and samples go as they are finished (files, a window, a test's hash list).
pub trait Recorder {
    /// A finished frame.
    fn frame(&mut self, frame: &Frame);
    /// Audio samples (mono, signed 16-bit, [`crate::apu::SAMPLE_RATE`] Hz) in order.
    fn samples(&mut self, samples: &[i16]);
    /// Whether the run should end now (a window closed); checked at instruction boundaries.
    fn stop(&self) -> bool {
        false
    }
}

/// A recorder that keeps nothing.
pub struct Discard;

impl Recorder for Discard {
    fn frame(&mut self, _frame: &Frame) {}
    fn samples(&mut self, _samples: &[i16]) {}
}

/// The host devices of a NES-map run on the network.
pub struct NetworkDevices {
    pub board: Board,
    recorder: Box<dyn Recorder>,
    /// Stop once this many frames are finished.
    frames: Option<u64>,
    io_read: u32,
    io_write: u32,
    oam: u32,
    /// The cycle count of register CYC ([`isa_6502::face::cycles_of`]) extended to 64 bits.
    cycle: Option<u64>,
    /// The lines sampled at the last instruction boundary, to inject; and those injected.
    lines: Option<Lines>,
    injected: Lines,
    dma: Option<(u64, Vec<u8>)>,
    /// Whether the last step ended an instruction (not a DMA step): runs stop only there.
    at_boundary: bool,
    instructions: u64,
    fault: Option<u64>,
    /// The machine's memory as the trace writes it (for blargg's $6000 protocol).
    shadow: Vec<u8>,
    latest: [Option<(u16, u8)>; 4],
    result: Option<(u8, String)>,
    console: Vec<u8>,
    /// When the devices were made: seconds per frame for the progress line.
    started: std::time::Instant,
    /// The PRG windows the machine's memory holds (the mapper's at power-on), and why the run stopped when a
    /// mapper write moved them: the circuit does not switch PRG banks yet, so the memory would no longer be the
    /// cartridge's.
    prg_windows: [usize; 4],
    bank_switch: Option<String>,
    /// The machine's options (the NES map's bank layout).
    opts: Mos6502Options,
}

impl NetworkDevices {
    /// Devices for the NES-map machine built with `opts`, around `board`, stopping after `frames` frames (or
    /// at blargg's final status when `frames` is `None`). `memory` is the program's 64 KiB image. Panics when
    /// `opts` is not the NES map (it has no IO ports to serve).
    pub fn new(opts: &Mos6502Options, board: Board, memory: Vec<u8>, frames: Option<u64>, recorder: Box<dyn Recorder>) -> Self {
        let io_read = io_read_port(opts).expect("the NES map has IO ports");
        let prg_windows = board.ppu.cart.prg_windows();
        NetworkDevices {
            board,
            recorder,
            frames,
            io_read,
            io_write: io_read - 1,
            oam: io_read + 1,
            cycle: None,
            lines: None,
            injected: Lines::default(),
            dma: None,
            at_boundary: false,
            instructions: 0,
            fault: None,
            shadow: memory,
            latest: [None; 4],
            result: None,
            console: Vec::new(),
            started: std::time::Instant::now(),
            prg_windows,
            bank_switch: None,
            opts: opts.clone(),
        }
    }

    /// The PRG RAM ($6000-$7FFF) as the trace wrote it.
    pub fn prg_ram(&self) -> &[u8] {
        &self.shadow[0x6000..0x8000]
    }

    /// Why the run stopped early: the program switched the PRG banks, which the woven CPU does not do yet.
    pub fn bank_switch(&self) -> Option<&str> {
        self.bank_switch.as_deref()
    }

    /// blargg's status and text, once final.
    pub fn test_result(&self) -> Option<&(u8, String)> {
        self.result.as_ref()
    }

    fn extend(&mut self, cycles: u64) -> u64 {
        let c = match self.cycle {
            None => cycles,
            Some(prev) => prev + ((cycles.wrapping_sub(prev)) & isa_6502::face::CYCLE_MASK),
        };
        self.cycle = Some(c);
        c
    }

    fn drain(&mut self) {
        for f in self.board.take_frames() {
            self.recorder.frame(&f);
        }
        let s = self.board.take_samples();
        if !s.is_empty() {
            self.recorder.samples(&s);
        }
    }
}

impl Devices for NetworkDevices {
    /// An IO read (port `IO_READ`: the register's code, and the cycle within the instruction in bits 4-7;
    /// `isa_6502::face::nes_io_read_request`): the board run to that cycle (the instruction starts where the
    /// last step ended) answers it.
    fn answer(&mut self, port: u32, request: u64) -> u64 {
        if port != self.io_read {
            return 0;
        }
        let (addr, k) = isa_6502::face::nes_io_read_request(request);
        u64::from(self.board.read(addr, self.cycle.unwrap_or(0) + u64::from(k)))
    }

    fn inject(&mut self, _steps: usize) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        if let Some(l) = self.lines.take() {
            if l.nmi_age != self.injected.nmi_age {
                v.push((input::NMI, u64::from(l.nmi_age)));
            }
            if l.irq != self.injected.irq {
                v.push((input::IRQ, u64::from(l.irq)));
            }
            self.injected = l;
        }
        v
    }

    fn step(&mut self, st: &StepEvents) {
        if st.halted {
            return;
        }
        if let Some(f) = st.output(0).filter(|&f| f != 0) {
            self.fault.get_or_insert(f);
        }
        if st.retired(Some(reg::BUSY)) {
            self.instructions += 1;
        }
        let busy = st.reg(reg::BUSY);
        let cyc = self.extend(isa_6502::face::cycles_of(st.reg(reg::CYC)));
        self.at_boundary = busy != BUSY_DMA;
        for &(port, v) in &st.outputs {
            if port == self.io_write {
                // A store's (or a read-modify-write's last) write: the instruction's last cycle. The port names
                // the register by a code (`isa_6502::face::nes_io_write`).
                let (addr, value) = isa_6502::face::nes_io_write(v);
                self.board.write(addr, value, cyc - 1);
                let now = self.board.ppu.cart.prg_windows();
                // The circuit runs UxROM's PRG banking itself; other boards' moves leave its memory behind.
                let modelled = self.opts.prg.banking != PrgBanking::Fixed;
                if addr >= 0x8000 && now != self.prg_windows && self.bank_switch.is_none() && !modelled {
                    let cart = &self.board.ppu.cart;
                    self.bank_switch = Some(format!(
                        "after {} instructions the program switched PRG banks ({} write ${value:02X} to its register at ${addr:04X}; $8000-$FFFF now shows PRG ROM offsets {}), which the woven CPU does not do yet (the {} board runs with --cpu reference)",
                        self.instructions,
                        cart.mapper.name(),
                        now.iter().map(|o| format!("${o:05X}")).collect::<Vec<_>>().join(" "),
                        cart.mapper.name()
                    ));
                }
            } else if let (true, Some((_, bytes))) = (port == self.oam, self.dma.as_mut()) {
                bytes.extend((v as u32).to_le_bytes());
            }
        }
        // PRG RAM as the trace writes it (each bank's latest write applies again at every commit).
        for w in st.writes.iter().filter(|w| mem::BANKS.contains(&w.mem)) {
            self.latest[w.mem as usize] = Some((bank_byte_address(&self.opts, w.mem, w.addr), w.data as u8));
        }
        for &(a, v) in self.latest.iter().flatten() {
            self.shadow[usize::from(a)] = v;
        }
        if busy == BUSY_DMA {
            // The store to $4014 (this step) or a DMA step: the bytes come on OAM_DMA. After the store, the lines
            // its poll sees: the first DMA step decides with them whether an interrupt follows the DMA.
            if self.dma.is_none() {
                self.dma = Some((cyc, Vec::new()));
                self.lines = Some(self.board.boundary(cyc));
            }
            return;
        }
        if let Some((start, bytes)) = self.dma.take() {
            self.board.run_to(start);
            self.board.oam_dma(&bytes);
        }
        self.lines = Some(self.board.boundary(cyc));
        if self.result.is_none() {
            self.result = crate::reference::test_result(&self.shadow);
            if let Some((_, text)) = &self.result {
                self.console = text.clone().into_bytes();
            }
        }
        self.drain();
    }

    fn instructions(&self) -> u64 {
        self.instructions
    }

    fn console(&self) -> &[u8] {
        &self.console
    }

    fn progress(&self) -> Option<String> {
        let done = self.board.frames_finished();
        let per = if done > 0 { format!(", {:.2} s/frame", self.started.elapsed().as_secs_f64() / done as f64) } else { String::new() };
        Some(match self.frames {
            Some(n) if n != u64::MAX => format!("frame {done} of {n}{per}"),
            _ => format!("frame {done}{per}"),
        })
    }

    fn done(&self) -> bool {
        self.at_boundary
            && (self.recorder.stop()
                || self.bank_switch.is_some()
                || match self.frames {
                    Some(n) => self.board.frames_finished() >= n,
                    None => self.result.is_some(),
                })
    }

    fn finish(&mut self, end: RunEnd) -> Finish {
        self.drain();
        if let Some(f) = self.fault {
            return Finish { status: EXIT_FAULT, summary: fault_summary(f) };
        }
        if let Some(why) = &self.bank_switch {
            return Finish { status: EXIT_FAULT, summary: why.clone() };
        }
        let frames = self.board.frames_finished();
        match (&self.result, end) {
            (Some((r, _)), _) if self.frames.is_none() => {
                Finish { status: *r, summary: format!("test status ${r:02X} at $6000 ({})", if *r == 0 { "passed" } else { "failed" }) }
            }
            (_, RunEnd::Devices) => Finish { status: 0, summary: format!("{frames} frames") },
            (_, RunEnd::StepLimit) => Finish { status: EXIT_STEP_LIMIT, summary: format!("step limit after {frames} frames") },
            (_, _) => Finish { status: 0, summary: format!("halted after {frames} frames") },
        }
    }
}

/// A shared recorder (the caller keeps a handle to read it after the run).
impl<R: Recorder> Recorder for std::rc::Rc<std::cell::RefCell<R>> {
    fn frame(&mut self, frame: &Frame) {
        self.borrow_mut().frame(frame);
    }
    fn samples(&mut self, samples: &[i16]) {
        self.borrow_mut().samples(samples);
    }
    fn stop(&self) -> bool {
        self.borrow().stop()
    }
}
