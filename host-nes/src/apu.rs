//! The NES APU: the audio half of the 2A03 (NTSC), cycle by cycle, mixed to 44.1 kHz mono PCM.
//!
//! Written from the NESdev wiki's descriptions (pages "APU", "APU Pulse", "APU Triangle", "APU Noise",
//! "APU DMC", "APU Frame Counter", "APU Length Counter", "APU Envelope", "APU Sweep", "APU Mixer").
//!
//! What is modelled:
//! - two pulse channels: four duty sequences, envelope, sweep (pulse 1 negates in one's complement, pulse 2
//!   in two's complement), muting when the period is below 8 or the sweep target above $7FF (whether or not
//!   the sweep is enabled), length counter; the timer is clocked every second CPU cycle (every APU cycle);
//! - the triangle: linear counter, length counter, 32-step sequence, timer clocked every CPU cycle; periods
//!   below 2 (ultrasonic) freeze the sequencer instead of producing an inaudible buzz;
//! - noise: 15-bit LFSR with the mode bit (tap 6 or tap 1), the NTSC period table, envelope, length counter;
//! - the DMC: NTSC rate table, sample address $C000 + A*64, length L*16 + 1, loop, IRQ enable and flag, the
//!   one-byte sample buffer, the output unit with its shift register and 7-bit counter, the direct load of
//!   $4011; wrapping of the sample address from $FFFF to $8000;
//! - the frame counter ($4017): 4-step and 5-step sequences at the NTSC step times, the IRQ inhibit flag, the
//!   frame IRQ of the 4-step mode, the immediate quarter and half frame clock of a write with bit 7 set; a $4017
//!   write sets the IRQ inhibit flag at once and the rest 3 or 4 CPU cycles after the write cycle (the wiki: 3
//!   when the write falls on an APU cycle, else 4), as blargg's cpu_interrupts_v2 3-5 measure it;
//! - $4015 writes (enables, clearing disabled length counters, DMC start and stop, DMC IRQ acknowledge) and
//!   reads (status; clears the frame IRQ flag);
//! - the nonlinear mixer, a box-filter downsampler to [`SAMPLE_RATE`] with an exact integer phase
//!   accumulator, a first-order DC-blocking high-pass at 90 Hz, and scaling to `i16` that cannot clip.
//!
//! Simplifications:
//! - the DMC's memory reader fetches the byte in the same CPU cycle in which the sample buffer becomes empty
//!   and does not stall the CPU (the caller's `dmc_read` is simply called);
//! - the noise and DMC timers are counted in CPU cycles with the wiki's CPU-cycle periods (the hardware
//!   counts half of them in APU cycles; the rate is the same);
//! - open bus (bit 5 of $4015) reads as 0; the triangle's ultrasonic periods freeze the sequencer.
//!
//! Everything is integer arithmetic except the mixer and the filter, which use the same `f64` operations in the
//! same order every time, so identical writes and clocks give bit-identical samples.

/// Audio samples per second of the mixed output (Hz), the rate of [`Apu::take_samples`].
pub const SAMPLE_RATE: u32 = 44_100;

/// NTSC CPU clock in Hz (1.789773 MHz = 21.477272 MHz master clock / 12; NESdev wiki, "Cycle reference
/// chart"). [`Apu::clock`] is to be called this many times per emulated second.
pub const CPU_HZ: f64 = 1_789_773.0;

/// [`CPU_HZ`] as an integer, for the exact sample-phase accumulator.
const CPU_HZ_INT: u32 = 1_789_773;

/// Cut-off frequency of the output's DC-blocking high-pass, in Hz.
const HIGH_PASS_HZ: f64 = 90.0;

/// Length counter load values, indexed by the 5-bit index in bits 7-3 of $4003/$4007/$400B/$400F
/// (NESdev wiki, "APU Length Counter").
const LENGTH_TABLE: [u8; 32] = [
    10, 254, 20, 2, 40, 4, 80, 6, 160, 8, 60, 10, 14, 12, 26, 14, //
    12, 16, 24, 18, 48, 20, 96, 22, 192, 24, 72, 26, 16, 28, 32, 30,
];

/// Pulse duty sequences (NESdev wiki, "APU Pulse"): row = duty (12.5 %, 25 %, 50 %, 25 % negated), column =
/// sequencer step. The sequencer starts at step 0 and counts down (0, 7, 6, ..., 1).
const DUTY_TABLE: [[u8; 8]; 4] = [
    [0, 1, 0, 0, 0, 0, 0, 0],
    [0, 1, 1, 0, 0, 0, 0, 0],
    [0, 1, 1, 1, 1, 0, 0, 0],
    [1, 0, 0, 1, 1, 1, 1, 1],
];

/// The triangle's 32-step output sequence (NESdev wiki, "APU Triangle").
const TRIANGLE_SEQUENCE: [u8; 32] = [
    15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, //
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
];

/// Noise periods in CPU cycles per LFSR shift, NTSC (NESdev wiki, "APU Noise").
const NOISE_PERIODS: [u16; 16] = [4, 8, 16, 32, 64, 96, 128, 160, 202, 254, 380, 508, 762, 1016, 2034, 4068];

/// DMC rates in CPU cycles per output bit, NTSC (NESdev wiki, "APU DMC").
const DMC_RATES: [u16; 16] = [428, 380, 340, 320, 286, 254, 226, 214, 190, 160, 142, 128, 106, 84, 72, 54];

/// Frame counter step times in CPU cycles after the reset (NESdev wiki, "APU Frame Counter": 3728.5, 7456.5,
/// 11185.5, 14914, 14914.5, 14915 APU cycles for the 4-step mode; 18640.5, 18641 for the 5-step mode's end).
const FRAME_STEP_1: u32 = 7457;
const FRAME_STEP_2: u32 = 14913;
const FRAME_STEP_3: u32 = 22371;
const FRAME_4STEP_IRQ: u32 = 29828;
const FRAME_4STEP_LAST: u32 = 29829;
/// Length of the 4-step sequence in CPU cycles (its cycle 29830 is the next sequence's cycle 0).
const FRAME_4STEP_PERIOD: u32 = 29830;
const FRAME_5STEP_LAST: u32 = 37281;
/// Length of the 5-step sequence in CPU cycles.
const FRAME_5STEP_PERIOD: u32 = 37282;

/// The envelope generator shared by the pulse and noise channels (NESdev wiki, "APU Envelope").
#[derive(Clone, Debug, Default)]
struct Envelope {
    start: bool,
    looping: bool,
    constant: bool,
    /// The 4-bit volume / divider period parameter.
    volume: u8,
    divider: u8,
    decay: u8,
}

impl Envelope {
    /// Quarter-frame clock.
    fn clock(&mut self) {
        if self.start {
            self.start = false;
            self.decay = 15;
            self.divider = self.volume;
        } else if self.divider == 0 {
            self.divider = self.volume;
            if self.decay > 0 {
                self.decay -= 1;
            } else if self.looping {
                self.decay = 15;
            }
        } else {
            self.divider -= 1;
        }
    }

    fn output(&self) -> u8 {
        if self.constant { self.volume } else { self.decay }
    }
}

/// A length counter (NESdev wiki, "APU Length Counter").
#[derive(Clone, Debug, Default)]
struct LengthCounter {
    counter: u8,
    halt: bool,
    enabled: bool,
}

impl LengthCounter {
    fn load(&mut self, index: u8) {
        if self.enabled {
            self.counter = LENGTH_TABLE[usize::from(index & 0x1F)];
        }
    }

    fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
        if !enabled {
            self.counter = 0;
        }
    }

    /// Half-frame clock.
    fn clock(&mut self) {
        if !self.halt && self.counter > 0 {
            self.counter -= 1;
        }
    }

    fn active(&self) -> bool {
        self.counter > 0
    }
}

/// A pulse channel (NESdev wiki, "APU Pulse", "APU Sweep").
#[derive(Clone, Debug, Default)]
struct Pulse {
    /// Pulse 1 negates in one's complement (subtracts one more than pulse 2).
    ones_complement: bool,
    duty: u8,
    step: u8,
    period: u16,
    timer: u16,
    envelope: Envelope,
    length: LengthCounter,
    sweep_enabled: bool,
    sweep_period: u8,
    sweep_negate: bool,
    sweep_shift: u8,
    sweep_divider: u8,
    sweep_reload: bool,
}

impl Pulse {
    fn new(ones_complement: bool) -> Self {
        Pulse { ones_complement, ..Default::default() }
    }

    fn write(&mut self, reg: u16, value: u8) {
        match reg & 3 {
            0 => {
                self.duty = value >> 6;
                self.length.halt = value & 0x20 != 0;
                self.envelope.looping = value & 0x20 != 0;
                self.envelope.constant = value & 0x10 != 0;
                self.envelope.volume = value & 0x0F;
            }
            1 => {
                self.sweep_enabled = value & 0x80 != 0;
                self.sweep_period = (value >> 4) & 7;
                self.sweep_negate = value & 0x08 != 0;
                self.sweep_shift = value & 7;
                self.sweep_reload = true;
            }
            2 => self.period = (self.period & 0x700) | u16::from(value),
            _ => {
                self.period = (self.period & 0xFF) | (u16::from(value & 7) << 8);
                self.length.load(value >> 3);
                self.step = 0;
                self.envelope.start = true;
            }
        }
    }

    /// The sweep unit's target period, computed continuously.
    fn sweep_target(&self) -> u16 {
        let change = self.period >> self.sweep_shift;
        if self.sweep_negate {
            let extra = u16::from(self.ones_complement);
            self.period.saturating_sub(change + extra)
        } else {
            self.period + change
        }
    }

    fn muted(&self) -> bool {
        self.period < 8 || self.sweep_target() > 0x7FF
    }

    /// APU-cycle (every second CPU cycle) timer clock.
    fn clock_timer(&mut self) {
        if self.timer == 0 {
            self.timer = self.period;
            self.step = self.step.wrapping_sub(1) & 7;
        } else {
            self.timer -= 1;
        }
    }

    /// Half-frame sweep clock.
    fn clock_sweep(&mut self) {
        if self.sweep_divider == 0 && self.sweep_enabled && self.sweep_shift != 0 && !self.muted() {
            self.period = self.sweep_target();
        }
        if self.sweep_divider == 0 || self.sweep_reload {
            self.sweep_divider = self.sweep_period;
            self.sweep_reload = false;
        } else {
            self.sweep_divider -= 1;
        }
    }

    fn output(&self) -> u8 {
        if !self.length.active() || self.muted() || DUTY_TABLE[usize::from(self.duty)][usize::from(self.step)] == 0 {
            0
        } else {
            self.envelope.output()
        }
    }
}

/// The triangle channel (NESdev wiki, "APU Triangle").
#[derive(Clone, Debug, Default)]
struct Triangle {
    /// Bit 7 of $4008: length counter halt and linear counter control.
    control: bool,
    linear_reload_value: u8,
    linear_counter: u8,
    linear_reload: bool,
    period: u16,
    timer: u16,
    step: u8,
    length: LengthCounter,
}

impl Triangle {
    fn write(&mut self, reg: u16, value: u8) {
        match reg & 3 {
            0 => {
                self.control = value & 0x80 != 0;
                self.length.halt = self.control;
                self.linear_reload_value = value & 0x7F;
            }
            1 => {}
            2 => self.period = (self.period & 0x700) | u16::from(value),
            _ => {
                self.period = (self.period & 0xFF) | (u16::from(value & 7) << 8);
                self.length.load(value >> 3);
                self.linear_reload = true;
            }
        }
    }

    /// CPU-cycle timer clock.
    fn clock_timer(&mut self) {
        if self.timer == 0 {
            self.timer = self.period;
            if self.length.active() && self.linear_counter > 0 && self.period >= 2 {
                self.step = (self.step + 1) & 31;
            }
        } else {
            self.timer -= 1;
        }
    }

    /// Quarter-frame linear counter clock.
    fn clock_linear(&mut self) {
        if self.linear_reload {
            self.linear_counter = self.linear_reload_value;
        } else if self.linear_counter > 0 {
            self.linear_counter -= 1;
        }
        if !self.control {
            self.linear_reload = false;
        }
    }

    fn output(&self) -> u8 {
        TRIANGLE_SEQUENCE[usize::from(self.step)]
    }
}

/// The noise channel (NESdev wiki, "APU Noise").
#[derive(Clone, Debug)]
struct Noise {
    envelope: Envelope,
    length: LengthCounter,
    /// Mode flag (bit 7 of $400E): feedback from bit 6 instead of bit 1.
    mode: bool,
    /// CPU cycles per LFSR shift.
    period: u16,
    timer: u16,
    lfsr: u16,
}

impl Default for Noise {
    fn default() -> Self {
        Noise {
            envelope: Envelope::default(),
            length: LengthCounter::default(),
            mode: false,
            period: NOISE_PERIODS[0],
            timer: NOISE_PERIODS[0] - 1,
            lfsr: 1,
        }
    }
}

impl Noise {
    fn write(&mut self, reg: u16, value: u8) {
        match reg & 3 {
            0 => {
                self.length.halt = value & 0x20 != 0;
                self.envelope.looping = value & 0x20 != 0;
                self.envelope.constant = value & 0x10 != 0;
                self.envelope.volume = value & 0x0F;
            }
            1 => {}
            2 => {
                self.mode = value & 0x80 != 0;
                self.period = NOISE_PERIODS[usize::from(value & 0x0F)];
            }
            _ => {
                self.length.load(value >> 3);
                self.envelope.start = true;
            }
        }
    }

    /// CPU-cycle timer clock.
    fn clock_timer(&mut self) {
        if self.timer == 0 {
            self.timer = self.period - 1;
            let tap = if self.mode { 6 } else { 1 };
            let feedback = (self.lfsr ^ (self.lfsr >> tap)) & 1;
            self.lfsr = (self.lfsr >> 1) | (feedback << 14);
        } else {
            self.timer -= 1;
        }
    }

    fn output(&self) -> u8 {
        if self.lfsr & 1 != 0 || !self.length.active() { 0 } else { self.envelope.output() }
    }
}

/// The delta modulation channel (NESdev wiki, "APU DMC").
#[derive(Clone, Debug)]
struct Dmc {
    irq_enabled: bool,
    looping: bool,
    /// CPU cycles per output bit.
    rate: u16,
    timer: u16,
    /// The 7-bit output level.
    level: u8,
    sample_address: u16,
    sample_length: u16,
    current_address: u16,
    bytes_remaining: u16,
    buffer: Option<u8>,
    shift: u8,
    bits_remaining: u8,
    silence: bool,
    irq_flag: bool,
}

impl Default for Dmc {
    fn default() -> Self {
        Dmc {
            irq_enabled: false,
            looping: false,
            rate: DMC_RATES[0],
            timer: DMC_RATES[0] - 1,
            level: 0,
            sample_address: 0xC000,
            sample_length: 1,
            current_address: 0xC000,
            bytes_remaining: 0,
            buffer: None,
            shift: 0,
            bits_remaining: 8,
            silence: true,
            irq_flag: false,
        }
    }
}

impl Dmc {
    fn write(&mut self, reg: u16, value: u8) {
        match reg & 3 {
            0 => {
                self.irq_enabled = value & 0x80 != 0;
                if !self.irq_enabled {
                    self.irq_flag = false;
                }
                self.looping = value & 0x40 != 0;
                self.rate = DMC_RATES[usize::from(value & 0x0F)];
            }
            1 => self.level = value & 0x7F,
            2 => self.sample_address = 0xC000 + u16::from(value) * 64,
            _ => self.sample_length = u16::from(value) * 16 + 1,
        }
    }

    fn restart(&mut self) {
        self.current_address = self.sample_address;
        self.bytes_remaining = self.sample_length;
    }

    fn set_enabled(&mut self, enabled: bool) {
        if !enabled {
            self.bytes_remaining = 0;
        } else if self.bytes_remaining == 0 {
            self.restart();
        }
        self.irq_flag = false;
    }

    /// CPU-cycle timer clock; every `rate` cycles the output unit handles one bit.
    fn clock_timer(&mut self) {
        if self.timer > 0 {
            self.timer -= 1;
            return;
        }
        self.timer = self.rate - 1;
        if !self.silence {
            if self.shift & 1 != 0 {
                if self.level <= 125 {
                    self.level += 2;
                }
            } else if self.level >= 2 {
                self.level -= 2;
            }
            self.shift >>= 1;
        }
        self.bits_remaining -= 1;
        if self.bits_remaining == 0 {
            self.bits_remaining = 8;
            match self.buffer.take() {
                Some(byte) => {
                    self.silence = false;
                    self.shift = byte;
                }
                None => self.silence = true,
            }
        }
    }

    /// The memory reader: refill an empty sample buffer.
    fn fill_buffer(&mut self, dmc_read: &mut dyn FnMut(u16) -> u8) {
        if self.buffer.is_some() || self.bytes_remaining == 0 {
            return;
        }
        self.buffer = Some(dmc_read(self.current_address));
        self.current_address = if self.current_address == 0xFFFF { 0x8000 } else { self.current_address + 1 };
        self.bytes_remaining -= 1;
        if self.bytes_remaining == 0 {
            if self.looping {
                self.restart();
            } else if self.irq_enabled {
                self.irq_flag = true;
            }
        }
    }
}

/// The frame counter (NESdev wiki, "APU Frame Counter").
#[derive(Clone, Debug, Default)]
struct FrameCounter {
    /// CPU cycles since the last reset.
    cycle: u32,
    five_step: bool,
    irq_inhibit: bool,
    irq_flag: bool,
    /// A $4017 write not applied yet: CPU cycles left and the value.
    pending: Option<(u8, u8)>,
}

/// Which frame clocks a frame counter step produces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FrameClocks {
    quarter: bool,
    half: bool,
}

impl FrameCounter {
    fn raise_irq(&mut self) {
        if !self.irq_inhibit {
            self.irq_flag = true;
        }
    }

    /// Advance one CPU cycle.
    fn step(&mut self) -> FrameClocks {
        self.cycle += 1;
        const NONE: FrameClocks = FrameClocks { quarter: false, half: false };
        const QUARTER: FrameClocks = FrameClocks { quarter: true, half: false };
        const BOTH: FrameClocks = FrameClocks { quarter: true, half: true };
        match self.cycle {
            FRAME_STEP_1 | FRAME_STEP_3 => QUARTER,
            FRAME_STEP_2 => BOTH,
            FRAME_4STEP_IRQ if !self.five_step => {
                self.raise_irq();
                NONE
            }
            FRAME_4STEP_LAST if !self.five_step => {
                self.raise_irq();
                BOTH
            }
            FRAME_4STEP_PERIOD if !self.five_step => {
                self.raise_irq();
                self.cycle = 0;
                NONE
            }
            FRAME_5STEP_LAST if self.five_step => BOTH,
            FRAME_5STEP_PERIOD if self.five_step => {
                self.cycle = 0;
                NONE
            }
            _ => NONE,
        }
    }
}

/// The NES APU (2A03 audio, NTSC): five channels, the frame counter and the mixer, clocked once per CPU cycle;
/// produces signed 16-bit mono PCM at [`SAMPLE_RATE`] Hz. See the module documentation for what is modelled.
#[derive(Clone, Debug)]
pub struct Apu {
    pulse: [Pulse; 2],
    triangle: Triangle,
    noise: Noise,
    dmc: Dmc,
    frame: FrameCounter,
    /// Toggles every CPU cycle; the pulse timers are clocked when it is set (once per APU cycle).
    apu_cycle: bool,
    /// The channel outputs the cached `mix` was computed for (packed), `u32::MAX` for none.
    mix_key: u32,
    /// The mixer output for `mix_key`, in 0.0 ..= about 1.0.
    mix: f64,
    /// Sum of the per-cycle mixer outputs since the last sample.
    sum: f64,
    /// CPU cycles summed in `sum`.
    count: u32,
    /// Sample phase: increases by SAMPLE_RATE per CPU cycle, a sample is due at each CPU_HZ_INT.
    phase: u32,
    /// High-pass filter coefficient and state.
    hp_alpha: f64,
    hp_prev_in: f64,
    hp_prev_out: f64,
    hp_primed: bool,
    /// Factor from filtered mixer output to `i16`: 32767 / the largest possible mixer output.
    scale: f64,
    samples: Vec<i16>,
}

impl Default for Apu {
    /// The power-up state, as [`Apu::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// The mixer's pulse group output (NESdev wiki, "APU Mixer"): `95.88 / (8128 / (p1 + p2) + 100)`, 0 when
/// both are 0; `p1`, `p2` are the 4-bit channel outputs.
fn pulse_mix(p1: u8, p2: u8) -> f64 {
    let sum = f64::from(p1) + f64::from(p2);
    if sum == 0.0 { 0.0 } else { 95.88 / (8128.0 / sum + 100.0) }
}

/// The mixer's triangle/noise/DMC group output (NESdev wiki, "APU Mixer"):
/// `159.79 / (1 / (t / 8227 + n / 12241 + d / 22638) + 100)`, 0 when all are 0.
fn tnd_mix(t: u8, n: u8, d: u8) -> f64 {
    let sum = f64::from(t) / 8227.0 + f64::from(n) / 12241.0 + f64::from(d) / 22638.0;
    if sum == 0.0 { 0.0 } else { 159.79 / (1.0 / sum + 100.0) }
}

impl Apu {
    /// The power-up state: all channels disabled and silent, registers zero, noise LFSR = 1, DMC output level 0,
    /// frame counter in 4-step mode with its IRQ enabled (as if $4017 had just been written with $00), no
    /// samples pending.
    pub fn new() -> Self {
        let rc = 1.0 / (2.0 * std::f64::consts::PI * HIGH_PASS_HZ);
        let dt = 1.0 / f64::from(SAMPLE_RATE);
        let max_mix = pulse_mix(15, 15) + tnd_mix(15, 15, 127);
        Apu {
            pulse: [Pulse::new(true), Pulse::new(false)],
            triangle: Triangle::default(),
            noise: Noise::default(),
            dmc: Dmc::default(),
            frame: FrameCounter::default(),
            apu_cycle: false,
            mix_key: u32::MAX,
            mix: 0.0,
            sum: 0.0,
            count: 0,
            phase: 0,
            hp_alpha: rc / (rc + dt),
            hp_prev_in: 0.0,
            hp_prev_out: 0.0,
            hp_primed: false,
            scale: 32767.0 / max_mix,
            samples: Vec::with_capacity(SAMPLE_RATE as usize / 10),
        }
    }

    /// A CPU write to $4000-$4013, $4015 or $4017 (other addresses ignored). `value` is the byte written.
    /// Register meanings follow the NESdev wiki ("APU", "APU Pulse", "APU Triangle", "APU Noise", "APU DMC",
    /// "APU Frame Counter"). A $4017 write resets the frame counter 3 or 4 CPU cycles after its write cycle.
    pub fn write(&mut self, addr: u16, value: u8) {
        match addr {
            0x4000..=0x4003 => self.pulse[0].write(addr, value),
            0x4004..=0x4007 => self.pulse[1].write(addr, value),
            0x4008..=0x400B => self.triangle.write(addr, value),
            0x400C..=0x400F => self.noise.write(addr, value),
            0x4010..=0x4013 => self.dmc.write(addr, value),
            0x4015 => {
                self.pulse[0].length.set_enabled(value & 0x01 != 0);
                self.pulse[1].length.set_enabled(value & 0x02 != 0);
                self.triangle.length.set_enabled(value & 0x04 != 0);
                self.noise.length.set_enabled(value & 0x08 != 0);
                self.dmc.set_enabled(value & 0x10 != 0);
            }
            0x4017 => {
                self.frame.irq_inhibit = value & 0x40 != 0;
                if self.frame.irq_inhibit {
                    self.frame.irq_flag = false;
                }
                // Applied 4 clocks from now when the write falls on an APU cycle, else 5 (`clock` applies it
                // before the frame step of the clock where the count ends).
                self.frame.pending = Some((if self.apu_cycle { 4 } else { 5 }, value));
            }
            _ => {}
        }
    }

    /// The delayed part of a $4017 write: the mode, the reset of the sequence, and with bit 7 an immediate
    /// quarter and half frame clock.
    fn apply_4017(&mut self, value: u8) {
        self.frame.five_step = value & 0x80 != 0;
        self.frame.cycle = 0;
        if self.frame.five_step {
            self.quarter_frame();
            self.half_frame();
        }
    }

    /// A CPU read of $4015: bits 0-3 = length counter of pulse 1, pulse 2, triangle, noise non-zero; bit 4 = DMC
    /// bytes remaining non-zero; bit 5 (open bus) = 0; bit 6 = frame IRQ flag; bit 7 = DMC IRQ flag. Clears
    /// the frame IRQ flag (not the DMC's). NESdev wiki, "APU" ("Status").
    pub fn read_status(&mut self) -> u8 {
        let mut status = 0;
        if self.pulse[0].length.active() {
            status |= 0x01;
        }
        if self.pulse[1].length.active() {
            status |= 0x02;
        }
        if self.triangle.length.active() {
            status |= 0x04;
        }
        if self.noise.length.active() {
            status |= 0x08;
        }
        if self.dmc.bytes_remaining > 0 {
            status |= 0x10;
        }
        if self.frame.irq_flag {
            status |= 0x40;
        }
        if self.dmc.irq_flag {
            status |= 0x80;
        }
        self.frame.irq_flag = false;
        status
    }

    /// Advance one CPU cycle (1 / [`CPU_HZ`] s). `dmc_read(addr)` returns the byte the DMC's sample reader
    /// fetches from CPU memory ($8000-$FFFF); it is called only when the DMC's sample buffer is empty and bytes
    /// remain. Every [`CPU_HZ`] / [`SAMPLE_RATE`] cycles (on average; exactly `floor(N * 44100 / 1789773)`
    /// samples after N calls) one output sample is appended.
    pub fn clock(&mut self, dmc_read: &mut dyn FnMut(u16) -> u8) {
        if let Some((left, value)) = self.frame.pending {
            if left <= 1 {
                self.frame.pending = None;
                self.apply_4017(value);
            } else {
                self.frame.pending = Some((left - 1, value));
            }
        }
        let clocks = self.frame.step();
        if clocks.quarter {
            self.quarter_frame();
        }
        if clocks.half {
            self.half_frame();
        }

        self.triangle.clock_timer();
        if self.apu_cycle {
            self.pulse[0].clock_timer();
            self.pulse[1].clock_timer();
        }
        self.apu_cycle = !self.apu_cycle;
        self.noise.clock_timer();
        self.dmc.clock_timer();
        self.dmc.fill_buffer(dmc_read);

        self.accumulate();
    }

    /// The APU's IRQ output level: true while the frame counter IRQ flag or the DMC IRQ flag is set (both are
    /// visible in [`Apu::read_status`] bits 6 and 7).
    pub fn irq(&self) -> bool {
        self.frame.irq_flag || self.dmc.irq_flag
    }

    /// Take the mixed samples produced since the last call, as signed 16-bit mono PCM at [`SAMPLE_RATE`] Hz
    /// (DC removed by a 90 Hz first-order high-pass; full scale never exceeded).
    pub fn take_samples(&mut self) -> Vec<i16> {
        let capacity = self.samples.capacity();
        std::mem::replace(&mut self.samples, Vec::with_capacity(capacity))
    }

    fn quarter_frame(&mut self) {
        self.pulse[0].envelope.clock();
        self.pulse[1].envelope.clock();
        self.triangle.clock_linear();
        self.noise.envelope.clock();
    }

    fn half_frame(&mut self) {
        self.pulse[0].length.clock();
        self.pulse[0].clock_sweep();
        self.pulse[1].length.clock();
        self.pulse[1].clock_sweep();
        self.triangle.length.clock();
        self.noise.length.clock();
    }

    /// Mix this cycle's channel outputs, add them to the current sample, and emit the sample when it is due.
    fn accumulate(&mut self) {
        let p1 = self.pulse[0].output();
        let p2 = self.pulse[1].output();
        let t = self.triangle.output();
        let n = self.noise.output();
        let d = self.dmc.level;
        let key = u32::from(p1) | u32::from(p2) << 4 | u32::from(t) << 8 | u32::from(n) << 12 | u32::from(d) << 16;
        if key != self.mix_key {
            self.mix_key = key;
            self.mix = pulse_mix(p1, p2) + tnd_mix(t, n, d);
        }
        self.sum += self.mix;
        self.count += 1;
        self.phase += SAMPLE_RATE;
        if self.phase >= CPU_HZ_INT {
            self.phase -= CPU_HZ_INT;
            self.emit();
        }
    }

    fn emit(&mut self) {
        let x = self.sum / f64::from(self.count);
        self.sum = 0.0;
        self.count = 0;
        if !self.hp_primed {
            self.hp_primed = true;
            self.hp_prev_in = x;
        }
        let y = self.hp_alpha * (self.hp_prev_out + x - self.hp_prev_in);
        self.hp_prev_in = x;
        self.hp_prev_out = y;
        let s = (y * self.scale).round().clamp(-32767.0, 32767.0);
        self.samples.push(s as i16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_dmc(_: u16) -> u8 {
        0
    }

    fn run(apu: &mut Apu, cycles: u32) {
        let mut read = no_dmc;
        for _ in 0..cycles {
            apu.clock(&mut read);
        }
    }

    /// Rising zero crossings in `samples`, skipping the first `skip` samples.
    fn rising_crossings(samples: &[i16], skip: usize) -> usize {
        samples[skip..].windows(2).filter(|w| w[0] < 0 && w[1] >= 0).count()
    }

    #[test]
    fn apu_length_table_lookup() {
        let mut apu = Apu::new();
        apu.write(0x4015, 0x0F);
        for index in 0..32u8 {
            apu.write(0x4003, index << 3);
            apu.write(0x4007, index << 3);
            apu.write(0x400B, index << 3);
            apu.write(0x400F, index << 3);
            let expected = LENGTH_TABLE[usize::from(index)];
            assert_eq!(apu.pulse[0].length.counter, expected);
            assert_eq!(apu.pulse[1].length.counter, expected);
            assert_eq!(apu.triangle.length.counter, expected);
            assert_eq!(apu.noise.length.counter, expected);
        }
        // Spot checks against the wiki's table.
        for (index, value) in [(0u8, 10u8), (1, 254), (3, 2), (8, 160), (0x18, 192), (0x1F, 30)] {
            apu.write(0x4003, index << 3);
            assert_eq!(apu.pulse[0].length.counter, value, "index {index}");
        }
        // A disabled channel ignores the load.
        apu.write(0x4015, 0x00);
        apu.write(0x4003, 1 << 3);
        assert_eq!(apu.pulse[0].length.counter, 0);
        assert_eq!(apu.read_status() & 0x0F, 0);
    }

    #[test]
    fn apu_length_counter_expires_after_half_frames() {
        let mut apu = Apu::new();
        write_4017_now(&mut apu, 0x40); // 4-step, IRQ inhibited, counter reset now
        apu.write(0x4015, 0x01);
        apu.write(0x4000, 0x10); // no halt, constant volume 0
        apu.write(0x4003, 0 << 3); // length index 0 -> 10 half frames
        assert_eq!(apu.read_status() & 0x01, 0x01);
        // Half frames fall at 14913 and 29829 in each 29830-cycle sequence; the 10th is at 4*29830 + 29829.
        let tenth = 4 * FRAME_4STEP_PERIOD + FRAME_4STEP_LAST;
        assert_eq!(tenth, 149_149);
        run(&mut apu, tenth - 1);
        assert_eq!(apu.pulse[0].length.counter, 1);
        assert_eq!(apu.read_status() & 0x01, 0x01);
        run(&mut apu, 1);
        assert_eq!(apu.pulse[0].length.counter, 0);
        assert_eq!(apu.read_status() & 0x01, 0x00);

        // Halt (bit 5 of $4000) keeps the counter.
        apu.write(0x4000, 0x30);
        apu.write(0x4003, 0x18 << 3); // 192
        run(&mut apu, 5 * FRAME_4STEP_PERIOD);
        assert_eq!(apu.pulse[0].length.counter, 192);
        // Disabling through $4015 clears it at once.
        apu.write(0x4015, 0x00);
        assert_eq!(apu.read_status() & 0x01, 0);
    }

    #[test]
    fn apu_length_counter_all_channels_and_5step_immediate_clock() {
        let mut apu = Apu::new();
        apu.write(0x4015, 0x0F);
        apu.write(0x4008, 0x00); // triangle: no halt
        apu.write(0x400C, 0x00); // noise: no halt
        apu.write(0x4004, 0x00); // pulse 2: no halt
        apu.write(0x4007, 3 << 3); // length 2
        apu.write(0x400B, 3 << 3);
        apu.write(0x400F, 3 << 3);
        assert_eq!(apu.read_status() & 0x0E, 0x0E);
        // $4017 with bit 7 clocks a half frame immediately.
        write_4017_now(&mut apu, 0xC0);
        assert_eq!(apu.noise.length.counter, 1);
        assert_eq!(apu.read_status() & 0x0E, 0x0E);
        write_4017_now(&mut apu, 0xC0);
        assert_eq!(apu.read_status() & 0x0E, 0x00);
        // Bit 7 clear: no immediate clock.
        apu.write(0x400F, 3 << 3);
        write_4017_now(&mut apu, 0x40);
        assert_eq!(apu.noise.length.counter, 2);
        // 5-step mode: half frames at 14913 and 37281.
        write_4017_now(&mut apu, 0xC0); // -> 1, counter reset
        run(&mut apu, FRAME_STEP_2 - 1);
        assert_eq!(apu.noise.length.counter, 1);
        run(&mut apu, 1);
        assert_eq!(apu.noise.length.counter, 0);
    }

    /// A $4017 write with its delayed part applied at once (before the next clock), as a write 3-4 cycles
    /// earlier would have it.
    fn write_4017_now(apu: &mut Apu, value: u8) {
        apu.write(0x4017, value);
        let (_, v) = apu.frame.pending.take().expect("a $4017 write is pending");
        apu.apply_4017(v);
    }

    #[test]
    fn a_4017_write_resets_the_sequence_3_or_4_cycles_after_its_write_cycle() {
        for (parity, after) in [(true, 3u32), (false, 4)] {
            let mut apu = Apu::new();
            let extra = u32::from(apu.apu_cycle != parity);
            run(&mut apu, 100 + extra);
            assert_eq!(apu.apu_cycle, parity);
            apu.write(0x4017, 0x00);
            // The write cycle itself, then `after` cycles: the clock after those starts the new sequence.
            run(&mut apu, after);
            assert_ne!(apu.frame.cycle, 1, "not reset yet");
            run(&mut apu, 1);
            assert_eq!(apu.frame.cycle, 1, "reset on the clock {} cycles after the write cycle", after);
            run(&mut apu, FRAME_4STEP_IRQ - 2);
            assert!(!apu.irq());
            run(&mut apu, 1);
            assert!(apu.irq());
        }
    }

    #[test]
    fn apu_frame_irq_four_step() {
        let mut apu = Apu::new(); // power-up: 4-step, IRQ enabled
        run(&mut apu, FRAME_4STEP_IRQ - 1);
        assert!(!apu.irq());
        run(&mut apu, 1);
        assert!(apu.irq(), "frame IRQ at CPU cycle 29828");
        run(&mut apu, 2); // 29830: still set (set again on 29829, 29830)
        assert!(apu.irq());
        let status = apu.read_status();
        assert_eq!(status & 0x40, 0x40);
        assert!(!apu.irq(), "reading $4015 clears the frame IRQ");
        assert_eq!(apu.read_status() & 0x40, 0);
        // Next sequence: raised again 29830 cycles after the first.
        run(&mut apu, FRAME_4STEP_PERIOD - 3);
        assert!(!apu.irq());
        run(&mut apu, 1);
        assert!(apu.irq());
        // Inhibit clears it and keeps it clear.
        write_4017_now(&mut apu, 0x40);
        assert!(!apu.irq());
        run(&mut apu, 3 * FRAME_4STEP_PERIOD);
        assert!(!apu.irq());
        assert_eq!(apu.read_status() & 0x40, 0);
    }

    #[test]
    fn apu_frame_irq_never_in_five_step() {
        let mut apu = Apu::new();
        write_4017_now(&mut apu, 0x80);
        run(&mut apu, 5 * FRAME_5STEP_PERIOD);
        assert!(!apu.irq());
        assert_eq!(apu.read_status() & 0x40, 0);
    }

    #[test]
    fn apu_sample_count_one_second() {
        let mut apu = Apu::new();
        run(&mut apu, CPU_HZ_INT);
        // floor(1_789_773 * 44_100 / 1_789_773) = 44_100 exactly: the phase accumulator emits a sample each
        // time the running total of 44_100 per cycle passes a multiple of 1_789_773.
        assert_eq!(apu.take_samples().len(), 44_100);
        assert!(apu.take_samples().is_empty());
        // Partial spans: floor(N * 44100 / 1789773).
        let mut apu = Apu::new();
        let mut total = 0u64;
        for n in [1u32, 40, 41, 1000, 12345, 29830] {
            run(&mut apu, n);
            total += u64::from(n);
            let _ = apu.take_samples();
        }
        let mut apu2 = Apu::new();
        run(&mut apu2, total as u32);
        assert_eq!(apu2.take_samples().len() as u64, total * 44_100 / 1_789_773);
    }

    #[test]
    fn apu_pulse_square_wave_frequency() {
        for (channel, base) in [(0usize, 0x4000u16), (1, 0x4004)] {
            for period in [253u16, 100, 600] {
                let mut apu = Apu::new();
                apu.write(0x4015, 0x03);
                apu.write(base, 0xBF); // duty 50 %, halt, constant volume 15
                apu.write(base + 1, 0x00); // sweep off
                apu.write(base + 2, (period & 0xFF) as u8);
                apu.write(base + 3, (period >> 8) as u8 | 0x08);
                run(&mut apu, CPU_HZ_INT);
                let samples = apu.take_samples();
                assert_eq!(samples.len(), 44_100);
                assert!(samples.iter().any(|&s| s > 1500) && samples.iter().any(|&s| s < -1500));
                // Skip 0.1 s of filter settling and scale the count up to one second.
                let skip = 4410;
                let measured = rising_crossings(&samples, skip) as f64 * 44_100.0 / (44_100 - skip) as f64;
                let expected = CPU_HZ / (16.0 * (f64::from(period) + 1.0));
                assert!(
                    (measured - expected).abs() <= expected * 0.01,
                    "pulse {} period {period}: {measured} Hz, expected {expected} Hz",
                    channel + 1
                );
            }
        }
    }

    #[test]
    fn apu_triangle_frequency() {
        let period = 200u16;
        let mut apu = Apu::new();
        apu.write(0x4015, 0x04);
        apu.write(0x4008, 0xFF); // control (halt) set, linear reload 127
        apu.write(0x400A, (period & 0xFF) as u8);
        apu.write(0x400B, (period >> 8) as u8 | 0x08);
        run(&mut apu, CPU_HZ_INT);
        let samples = apu.take_samples();
        let skip = 4410;
        let measured = rising_crossings(&samples, skip) as f64 * 44_100.0 / (44_100 - skip) as f64;
        let expected = CPU_HZ / (32.0 * (f64::from(period) + 1.0));
        assert!((measured - expected).abs() <= expected * 0.01, "{measured} vs {expected}");
    }

    #[test]
    fn apu_triangle_linear_counter_stops_sequencer() {
        let mut apu = Apu::new();
        write_4017_now(&mut apu, 0x40);
        apu.write(0x4015, 0x04);
        apu.write(0x4008, 0x02); // control clear, linear reload 2
        apu.write(0x400A, 10);
        apu.write(0x400B, 0x08);
        // Quarter frames at 7457 (reload -> 2), 14913 (-> 1), 22371 (-> 0).
        run(&mut apu, FRAME_STEP_3);
        assert_eq!(apu.triangle.linear_counter, 0);
        let step = apu.triangle.step;
        run(&mut apu, 1000);
        assert_eq!(apu.triangle.step, step, "sequencer halted with linear counter 0");
    }

    #[test]
    fn apu_pulse_sweep_negate_and_muting() {
        let mut apu = Apu::new();
        apu.write(0x4015, 0x03);
        // Period 0x100, shift 1, negate: pulse 1 target = 0x100 - 0x80 - 1, pulse 2 = 0x100 - 0x80.
        apu.write(0x4002, 0x00);
        apu.write(0x4003, 0x01);
        apu.write(0x4006, 0x00);
        apu.write(0x4007, 0x01);
        apu.write(0x4001, 0x89);
        apu.write(0x4005, 0x89);
        assert_eq!(apu.pulse[0].sweep_target(), 0x7F);
        assert_eq!(apu.pulse[1].sweep_target(), 0x80);
        // One half frame (divider reloads at 0 -> period updated).
        write_4017_now(&mut apu, 0x80);
        assert_eq!(apu.pulse[0].period, 0x7F);
        assert_eq!(apu.pulse[1].period, 0x80);
        // Target above $7FF mutes even with the sweep disabled.
        apu.write(0x4000, 0xBF);
        apu.write(0x4001, 0x00); // shift 0 -> target = 2 * period
        apu.write(0x4002, 0x00);
        apu.write(0x4003, 0x04); // period 0x400 -> target 0x800
        assert!(apu.pulse[0].muted());
        apu.write(0x4003, 0x03); // period 0x300 -> target 0x600
        assert!(!apu.pulse[0].muted());
        apu.write(0x4002, 0x07);
        apu.write(0x4003, 0x00); // period 7
        assert!(apu.pulse[0].muted());
    }

    #[test]
    fn apu_noise_lfsr() {
        let mut noise = Noise { period: 4, timer: 0, ..Noise::default() };
        noise.clock_timer();
        // 1: feedback = bit0 ^ bit1 = 1 -> 0x4000.
        assert_eq!(noise.lfsr, 0x4000);
        // Long mode has period 32767.
        let period = |mut n: Noise| {
            let mut steps = 0;
            loop {
                n.timer = 0;
                n.clock_timer();
                steps += 1;
                if n.lfsr == 1 {
                    return steps;
                }
            }
        };
        assert_eq!(period(Noise { lfsr: 1, ..Noise::default() }), 32767);
        // Short mode (bit 6 tap) from 1 has period 93.
        assert_eq!(period(Noise { lfsr: 1, mode: true, ..Noise::default() }), 93);
    }

    #[test]
    fn apu_loudest_output_does_not_clip() {
        // Everything at full volume, the DMC swinging between 0 and 127 with alternating $FF/$00 bytes.
        let mut apu = Apu::new();
        apu.write(0x4015, 0x1F);
        for base in [0x4000u16, 0x4004] {
            apu.write(base, 0xBF);
            apu.write(base + 2, 0xFF);
            apu.write(base + 3, 0x08);
        }
        apu.write(0x4008, 0xFF);
        apu.write(0x400A, 0x40);
        apu.write(0x400B, 0x08);
        apu.write(0x400C, 0x3F);
        apu.write(0x400E, 0x0A);
        apu.write(0x400F, 0x08);
        apu.write(0x4010, 0x4F);
        apu.write(0x4013, 0x10);
        apu.write(0x4015, 0x1F);
        let mut read = |addr: u16| if addr & 0x08 == 0 { 0xFF } else { 0x00 };
        for _ in 0..CPU_HZ_INT / 2 {
            apu.clock(&mut read);
        }
        let samples = apu.take_samples();
        let peak = samples.iter().map(|&s| i32::from(s).abs()).max().unwrap();
        assert!(peak > 8000, "peak {peak}");
        assert!(peak < 32767, "peak {peak}");
    }

    #[test]
    fn apu_determinism() {
        fn script(apu: &mut Apu) -> Vec<i16> {
            let rom: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
            let mut read = |addr: u16| rom[usize::from(addr - 0xC000) % rom.len()];
            apu.write(0x4015, 0x1F);
            apu.write(0x4000, 0x9F);
            apu.write(0x4002, 0xFD);
            apu.write(0x4003, 0x08);
            apu.write(0x4004, 0x4A);
            apu.write(0x4005, 0xA2);
            apu.write(0x4006, 0x40);
            apu.write(0x4007, 0x11);
            apu.write(0x4008, 0x81);
            apu.write(0x400A, 0x80);
            apu.write(0x400B, 0x08);
            apu.write(0x400C, 0x2C);
            apu.write(0x400E, 0x05);
            apu.write(0x400F, 0x08);
            apu.write(0x4010, 0x4E);
            apu.write(0x4012, 0x00);
            apu.write(0x4013, 0x03);
            apu.write(0x4015, 0x1F);
            let mut out = Vec::new();
            for i in 0..200_000u32 {
                if i == 100_000 {
                    write_4017_now(apu, 0x80);
                    apu.write(0x4002, 0x40);
                    apu.write(0x400E, 0x85);
                }
                apu.clock(&mut read);
                if i % 10_000 == 0 {
                    out.extend(apu.take_samples());
                }
            }
            out.extend(apu.take_samples());
            out
        }
        let a = script(&mut Apu::new());
        let b = script(&mut Apu::new());
        assert_eq!(a.len(), (200_000u64 * 44_100 / 1_789_773) as usize);
        assert!(a.iter().any(|&s| s != 0));
        assert_eq!(a, b);
    }

    #[test]
    fn apu_dmc_irq_and_output_direction() {
        // 17 bytes of $FF at $C040: the level rises by 2 per 1 bit.
        let mut apu = Apu::new();
        write_4017_now(&mut apu, 0x40); // keep the frame IRQ out of the way
        apu.write(0x4011, 0x10); // level 16
        apu.write(0x4010, 0x8F); // IRQ on, no loop, rate 54
        apu.write(0x4012, 0x01); // $C040
        apu.write(0x4013, 0x01); // 17 bytes
        apu.write(0x4015, 0x10);
        assert_eq!(apu.read_status() & 0x10, 0x10);
        let mut fetched = Vec::new();
        let mut read = |addr: u16| {
            fetched.push(addr);
            0xFF
        };
        let mut cycles = 0u32;
        let mut levels = vec![apu.dmc.level];
        while !apu.irq() {
            apu.clock(&mut read);
            cycles += 1;
            if *levels.last().unwrap() != apu.dmc.level {
                levels.push(apu.dmc.level);
            }
            assert!(cycles < 20_000, "DMC IRQ never came");
        }
        assert_eq!(fetched.len(), 17);
        assert_eq!(fetched, (0xC040..0xC051).collect::<Vec<u16>>());
        // The power-up timer (rate 428) ends the first, silent output cycle at 428 + 7 * 54 cycles, which moves
        // byte 1 to the shift register; bytes 2..=16 follow every 8 * 54 cycles, and byte 17 (the last) is
        // fetched when byte 16 leaves the buffer.
        assert_eq!(cycles, 428 + 7 * 54 + 15 * 8 * 54);
        assert!(levels.windows(2).all(|w| w[1] == w[0] + 2), "{levels:?}");
        assert!(apu.dmc.level > 16);
        let status = apu.read_status();
        assert_eq!(status & 0x90, 0x80, "DMC IRQ set, no bytes remaining");
        assert!(apu.irq(), "reading $4015 does not clear the DMC IRQ");
        // Play out the buffered bytes: from 16 the level rises to 126 and stays (126 + 2 would exceed 127).
        run(&mut apu, 54 * 8 * 20);
        assert_eq!(apu.dmc.level, 126);
        apu.write(0x4015, 0x00);
        assert!(!apu.irq(), "writing $4015 clears the DMC IRQ");

        // Zero bits: the level falls by 2 per bit, down to 0 or 1, and a looping sample never raises the IRQ.
        let mut apu = Apu::new();
        write_4017_now(&mut apu, 0x40);
        apu.write(0x4011, 0x41); // 65
        apu.write(0x4010, 0xCF); // IRQ on, loop, rate 54
        apu.write(0x4012, 0x00);
        apu.write(0x4013, 0x00); // 1 byte, looping
        apu.write(0x4015, 0x10);
        let mut read = |addr: u16| {
            assert_eq!(addr, 0xC000);
            0x00
        };
        let mut previous = apu.dmc.level;
        for _ in 0..54 * 8 * 40 {
            apu.clock(&mut read);
            assert!(apu.dmc.level <= previous);
            previous = apu.dmc.level;
            assert!(!apu.irq());
        }
        assert_eq!(apu.dmc.level, 1);
        assert_eq!(apu.read_status() & 0x10, 0x10, "looping sample stays active");
    }
}

