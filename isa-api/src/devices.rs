//! The generic host devices a machine declares in its face ([`crate::DeviceDesc`]): a monochrome display kept
//! from the trace's writes, a keypad fed from an input schedule, a clock whose ticks are the frames, a beeper.
//! [`DeviceHost`] serves them for any machine (the generic front's [`crate::front::PortPrinter`] holds one);
//! it reads the decoded trace and injects inputs, and never evaluates an instruction.

use crate::front::LoadImage;
use crate::{DeviceDesc, MachineFace, StepEvents};

/// One frame of a display: `width` x `height` pixels, row-major, `true` = lit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<bool>,
}

impl Frame {
    /// Pixel `(x, y)`.
    pub fn lit(&self, x: u32, y: u32) -> bool {
        self.pixels[(y * self.width + x) as usize]
    }
    /// The frame as text, one line per row (`#` lit, `.` dark), for tests and logs.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for y in 0..self.height {
            s.extend((0..self.width).map(|x| if self.lit(x, y) { '#' } else { '.' }));
            s.push('\n');
        }
        s
    }
}

/// A malformed key schedule ([`KeySchedule::parse`]): the line (1-based) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct KeyScheduleError {
    pub line: usize,
    pub problem: KeyLineProblem,
}

/// What is wrong with one line of a key schedule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyLineProblem {
    /// The line (comment stripped) does not start with a frame number.
    #[error("{0:?} does not start with a frame number")]
    NoFrame(String),
    #[error("a frame without keys (use - for none)")]
    NoKeys,
    /// The line (comment stripped) has more than `FRAME KEYS`.
    #[error("{0:?}: one FRAME KEYS pair per line")]
    ExtraFields(String),
    /// A key that is not a hex number.
    #[error("{0:?} is not a key number (hex)")]
    NotAKey(String),
    #[error("key {key:X} is not on a keypad of {keys} keys")]
    NoSuchKey { key: u32, keys: u32 },
    /// The line's frame is not after the previous line's.
    #[error("frame {0} is not after the previous line's")]
    NotAfter(u64),
}

/// Keys pressed by frame: `(first frame, mask)` entries, frames ascending; a mask holds until the next entry.
/// Text form (`loom run --input FILE`): one `FRAME KEYS` line per change, KEYS being key numbers in hex joined
/// by `+` (`5`, `1+A`) or `-` for none; `#` starts a comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeySchedule(pub Vec<(u64, u64)>);

impl KeySchedule {
    /// Parse the text form; errors name the line and what is wrong.
    pub fn parse(text: &str, keys: u32) -> Result<Self, KeyScheduleError> {
        let mut v: Vec<(u64, u64)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |problem| KeyScheduleError { line: n + 1, problem };
            let mut parts = line.split_whitespace();
            let frame: u64 = parts.next().unwrap_or("").parse().map_err(|_| err(KeyLineProblem::NoFrame(line.into())))?;
            let spec = parts.next().ok_or_else(|| err(KeyLineProblem::NoKeys))?;
            if parts.next().is_some() {
                return Err(err(KeyLineProblem::ExtraFields(line.to_string())));
            }
            let mut mask = 0u64;
            if spec != "-" {
                for k in spec.split('+') {
                    let key = u32::from_str_radix(k, 16).map_err(|_| err(KeyLineProblem::NotAKey(k.to_string())))?;
                    if key >= keys {
                        return Err(err(KeyLineProblem::NoSuchKey { key, keys }));
                    }
                    mask |= 1 << key;
                }
            }
            if v.last().is_some_and(|(f, _)| *f >= frame) {
                return Err(err(KeyLineProblem::NotAfter(frame)));
            }
            v.push((frame, mask));
        }
        Ok(Self(v))
    }

    /// The keys pressed during `frame`.
    pub fn at(&self, frame: u64) -> u64 {
        self.0.iter().take_while(|(f, _)| *f <= frame).last().map_or(0, |(_, m)| *m)
    }
}

/// The state of a machine's declared devices during a run.
pub struct DeviceHost {
    display: Option<(u32, u32, u32, Vec<u64>)>,
    keypad: Option<(u32, KeySchedule, Option<u64>)>,
    /// Input, instructions per tick, input width, ticks so far, instructions since the last tick.
    ticks: Option<(u32, u64, u32, u64, u64)>,
    beeper: Option<(u32, bool, u64)>,
    frames: Vec<Frame>,
    frame_limit: Option<u64>,
    micro_step: Option<u32>,
}

impl DeviceHost {
    /// The devices `face` declares (none: an inert host), the display starting from `image`'s loads.
    pub fn new(face: &MachineFace, image: &LoadImage, keys: KeySchedule, frame_limit: Option<u64>) -> Self {
        let mut h = DeviceHost { display: None, keypad: None, ticks: None, beeper: None, frames: Vec::new(), frame_limit, micro_step: face.micro_step };
        for d in &face.devices {
            match d {
                DeviceDesc::Display { memory, width, height } => {
                    if let Some(m) = face.memory(memory) {
                        let mut rows = vec![0u64; *height as usize];
                        for l in image.loads.iter().filter(|l| l.mem == m) {
                            for (i, w) in l.words.iter().enumerate() {
                                if let Some(r) = rows.get_mut((l.base + i as u64) as usize) {
                                    *r = *w;
                                }
                            }
                        }
                        h.display = Some((m, *width, *height, rows));
                    }
                }
                DeviceDesc::Keypad { input, .. } => h.keypad = face.input(input).map(|i| (i, keys.clone(), None)),
                DeviceDesc::Ticks { input, instructions } => {
                    h.ticks = face.input(input).map(|i| (i, *instructions, face.inputs[i as usize].width, 0, 0));
                }
                DeviceDesc::Beeper { port } => h.beeper = face.port(port).map(|p| (p, false, 0)),
            }
        }
        h
    }

    /// Does the machine have a display?
    pub fn has_display(&self) -> bool {
        self.display.is_some()
    }

    /// The display now.
    pub fn frame(&self) -> Option<Frame> {
        let (_, w, hgt, rows) = self.display.as_ref()?;
        let pixels = (0..*hgt).flat_map(|y| (0..*w).map(move |x| (rows[y as usize] >> x) & 1 == 1)).collect();
        Some(Frame { width: *w, height: *hgt, pixels })
    }

    /// Ticks so far (frames).
    pub fn ticks(&self) -> u64 {
        self.ticks.as_ref().map_or(0, |t| t.3)
    }

    /// Does the machine have a beeper?
    pub fn has_beeper(&self) -> bool {
        self.beeper.is_some()
    }

    /// Frames during which the beeper sounded.
    pub fn beep_frames(&self) -> u64 {
        self.beeper.as_ref().map_or(0, |b| b.2)
    }

    /// The recorded frames (one per tick: the display as the machine left it when the tick came).
    pub fn take_frames(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.frames)
    }

    /// Has the run reached its frame limit?
    pub fn done(&self) -> bool {
        self.frame_limit.is_some_and(|n| self.ticks() >= n)
    }

    /// One decoded step: display clears and writes, the beeper, the instruction count towards the next tick.
    pub fn step(&mut self, step: &StepEvents) {
        if step.halted {
            return;
        }
        if let Some((m, _, _, rows)) = &mut self.display {
            if step.clears.contains(m) {
                rows.fill(0);
            }
            for w in step.writes.iter().filter(|w| w.mem == *m) {
                if let Some(r) = rows.get_mut(w.addr as usize) {
                    *r = w.data;
                }
            }
        }
        if let Some((p, on, _)) = &mut self.beeper {
            if let Some(v) = step.output(*p) {
                *on = v != 0;
            }
        }
        if step.retired(self.micro_step) {
            if let Some(t) = &mut self.ticks {
                t.4 += 1;
            }
        }
    }

    /// The injections at a step boundary: a tick when one is due (recording the frame), the keys when they
    /// changed.
    pub fn inject(&mut self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        let mut ticked = false;
        if let Some((input, every, width, n, since)) = &mut self.ticks {
            if *since >= *every && !self.frame_limit.is_some_and(|lim| *n >= lim) {
                *since = 0;
                *n += 1;
                out.push((*input, *n & ((1u64 << (*width).min(63)) - 1)));
                ticked = true;
            }
        }
        if ticked {
            if let Some(f) = self.frame() {
                self.frames.push(f);
            }
            if let Some((_, on, count)) = &mut self.beeper {
                *count += u64::from(*on);
            }
        }
        let frame = self.ticks();
        if let Some((input, sched, last)) = &mut self.keypad {
            let mask = sched.at(frame);
            if *last != Some(mask) && (last.is_some() || mask != 0) {
                out.push((*input, mask));
            }
            *last = Some(mask);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemWriteEvent, MemoryDesc, PortDesc};

    fn face() -> MachineFace {
        let mut f = crate::MachineDesc::new("d", vec![], vec![MemoryDesc { name: "SCREEN".into(), word_width: 8, addr_width: 2 }], vec![PortDesc::new("BEEP", 1)], crate::CircuitBuilder::new().finish()).face.clone();
        f.inputs = vec![PortDesc::new("KEYS", 4), PortDesc::new("TICK", 2)];
        f.devices = vec![
            DeviceDesc::Display { memory: "SCREEN".into(), width: 5, height: 3 },
            DeviceDesc::Keypad { input: "KEYS".into(), keys: 4 },
            DeviceDesc::Ticks { input: "TICK".into(), instructions: 2 },
            DeviceDesc::Beeper { port: "BEEP".into() },
        ];
        f
    }

    fn step(writes: Vec<(u64, u64)>, outputs: Vec<(u32, u64)>) -> StepEvents {
        StepEvents { writes: writes.into_iter().map(|(addr, data)| MemWriteEvent { mem: 0, addr, data }).collect(), outputs, ..StepEvents::default() }
    }

    /// Display from loads and writes, a tick (the frame recorded, the count injected modulo the input's width)
    /// every two instructions, keys injected when they change, the beeper counted per frame, the frame limit.
    #[test]
    fn declared_devices_are_served_from_the_trace() {
        let image = LoadImage::of_loads(vec![crate::MemLoad { mem: 0, base: 0, words: vec![0b10001] }]);
        let keys = KeySchedule::parse("# keys\n0 -\n1 1+3\n3 -\n", 4).unwrap();
        let mut h = DeviceHost::new(&face(), &image, keys, Some(4));
        assert_eq!(h.inject(), vec![]); // no keys at frame 0, no tick yet
        h.step(&step(vec![(1, 0b00100)], vec![]));
        assert_eq!(h.inject(), vec![]);
        h.step(&step(vec![], vec![(0, 1)]));
        // Two instructions: tick 1, frame 1's keys (1 and 3).
        assert_eq!(h.inject(), vec![(1, 1), (0, 0b1010)]);
        assert_eq!(h.take_frames()[0].text(), "#...#\n..#..\n.....\n");
        for _ in 0..2 {
            h.step(&step(vec![(2, 0b11111)], vec![]));
        }
        assert_eq!(h.inject(), vec![(1, 2)]); // same keys: not injected again
        for _ in 0..2 {
            h.step(&step(vec![], vec![(0, 0)]));
        }
        assert_eq!(h.inject(), vec![(1, 3), (0, 0)]);
        for _ in 0..2 {
            h.step(&step(vec![], vec![]));
        }
        assert_eq!(h.inject(), vec![(1, 0)]); // tick 4 in a 2-bit input
        assert!(h.done());
        assert_eq!(h.beep_frames(), 2);
        let frames = h.take_frames();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[2].text(), "#...#\n..#..\n#####\n");
        for _ in 0..4 {
            h.step(&step(vec![], vec![]));
        }
        assert_eq!(h.inject(), vec![], "no tick past the frame limit");
    }

    /// paint8 on its reference evaluator, its inputs injected by the device host: 128 ticks fill the screen,
    /// one pixel each, then it halts; the beeper sounds in the frames a key is held.
    #[test]
    fn paint8_fills_its_screen_one_pixel_per_tick() {
        let d = crate::examples::paint8();
        d.validate().unwrap();
        let mut r = crate::Reference::new(d.clone());
        let keys = KeySchedule::parse("10 2\n20 -\n", 4).unwrap();
        let mut h = DeviceHost::new(&d.face, &LoadImage::default(), keys, None);
        let proto = r.protocol.clone();
        let mut dec = crate::StepDecoder::new(&proto);
        dec.push(proto.step_token).unwrap();
        let mut steps = 0;
        loop {
            for (port, v) in h.inject() {
                r.inject(port, v);
            }
            let o = r.step();
            // Decoded through the one decoder, as a host reads the trace.
            let mut last = None;
            for t in r.step_tokens(&o) {
                if let crate::trace::Decoded::Step(s) = dec.push(t).unwrap() {
                    last = Some(s);
                }
            }
            let s = last.unwrap();
            h.step(&s);
            steps += 1;
            if s.halted || steps > 10_000 {
                break;
            }
        }
        assert_eq!(h.ticks(), 128);
        let frames = h.take_frames();
        assert_eq!(frames.len(), 128);
        // Frame k (taken at tick k + 1) shows the k pixels painted before it.
        for (k, f) in frames.iter().enumerate() {
            assert_eq!(f.pixels.iter().filter(|p| **p).count(), k, "frame {k}");
        }
        assert_eq!(h.frame().unwrap().text(), "################\n".repeat(8));
        assert_eq!(h.beep_frames(), 10);
    }

    #[test]
    fn key_files_are_checked() {
        assert_eq!(KeySchedule::parse("0 F\n10 0+A\n", 16).unwrap().0, vec![(0, 1 << 15), (10, 1 | 1 << 10)]);
        assert!(KeySchedule::parse("x 1\n", 16).unwrap_err().to_string().contains("line 1"));
        assert!(KeySchedule::parse("0 G\n", 16).unwrap_err().to_string().contains("\"G\" is not a key number"));
        assert!(KeySchedule::parse("0 5\n", 4).unwrap_err().to_string().contains("key 5 is not on a keypad of 4 keys"));
        assert!(KeySchedule::parse("5 1\n5 2\n", 4).unwrap_err().to_string().contains("line 2: frame 5 is not after"));
        assert!(KeySchedule::parse("5\n", 4).unwrap_err().to_string().contains("without keys"));
    }
}
