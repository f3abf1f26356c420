//! The frames in a window as they are made, and pad 1 from its keyboard (`loom nes --window`), through
//! `minifb` (X11, loaded at run time). Keys: the arrows are the D-pad, X is A, Z is B, Right Shift (or Tab) is
//! Select, Enter is Start; Escape or closing the window ends the run.

use crate::NesError;
use crate::board::Frame;
use crate::input::{LiveButtons, button};
use crate::network::Recorder;
use crate::ppu::{HEIGHT, NTSC_PALETTE, WIDTH};
use minifb::{Key, Scale, Window, WindowOptions};

/// The keyboard's keys for each pad button.
pub const KEYS: [(Key, u8); 9] = [
    (Key::X, button::A),
    (Key::Z, button::B),
    (Key::RightShift, button::SELECT),
    (Key::Tab, button::SELECT),
    (Key::Enter, button::START),
    (Key::Up, button::UP),
    (Key::Down, button::DOWN),
    (Key::Left, button::LEFT),
    (Key::Right, button::RIGHT),
];

/// A window that shows each frame (scaled 2x) and holds the pressed keys as pad 1's live buttons.
pub struct WindowRecorder {
    window: Window,
    buffer: Vec<u32>,
    live: LiveButtons,
    closed: bool,
}

impl WindowRecorder {
    /// Opens the window titled `title`; the keys go to `live` (give the same to [`crate::Board::set_live`]).
    /// Errors when no window can be opened (no display).
    pub fn open(title: &str, live: LiveButtons) -> Result<Self, NesError> {
        let options = WindowOptions { scale: Scale::X2, ..WindowOptions::default() };
        let window = Window::new(title, WIDTH, HEIGHT, options).map_err(|e| NesError::Window(e.to_string()))?;
        Ok(WindowRecorder { window, buffer: vec![0; WIDTH * HEIGHT], live, closed: false })
    }

    /// The buttons the keys now held press.
    fn buttons(&self) -> u8 {
        KEYS.iter().filter(|(k, _)| self.window.is_key_down(*k)).fold(0, |b, (_, bit)| b | bit)
    }
}

impl Recorder for WindowRecorder {
    fn frame(&mut self, frame: &Frame) {
        for (dst, &p) in self.buffer.iter_mut().zip(&frame.pixels) {
            let [r, g, b] = NTSC_PALETTE[usize::from(p & 0x3F)];
            *dst = u32::from_be_bytes([0, r, g, b]);
        }
        if self.window.update_with_buffer(&self.buffer, WIDTH, HEIGHT).is_err() {
            self.closed = true;
            return;
        }
        self.live.set(self.buttons());
        self.closed |= !self.window.is_open() || self.window.is_key_down(Key::Escape);
    }

    fn samples(&mut self, _samples: &[i16]) {}

    fn stop(&self) -> bool {
        self.closed
    }
}
