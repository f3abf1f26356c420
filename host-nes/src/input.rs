//! Controllers: the standard pad's serial protocol ($4016 strobe, $4016/$4017 reads; NESdev wiki, "Standard
//! controller") and button schedules read from an input file or an FCEUX movie (`.fm2`).
//!
//! Buttons are a byte in the order the pad shifts them out: bit 0 A, 1 B, 2 Select, 3 Start, 4 Up, 5 Down,
//! 6 Left, 7 Right.
//!
//! **Input file** (`--input FILE`): one line per change, `FRAME PAD1 [PAD2]`, the buttons held from that frame
//! on (frames count from 0; lines in increasing frame order). A pad is `-` (none), button names joined by `+`
//! (`A`, `B`, `Select`, `Start`, `Up`, `Down`, `Left`, `Right`, any case), or FCEUX's 8-character form `RLDUTSBA`
//! with `.` for a released button. `#` starts a comment.
//!
//! ```text
//! # frame  pad 1
//! 0        -
//! 30       Right
//! 60       Right+A
//! 90       R......A
//! ```
//!
//! **FCEUX movie** (`.fm2`): header lines `key value`, then one line per frame `|commands|RLDUTSBA|RLDUTSBA||`.

use thiserror::Error;

/// Buttons held live on pad 1 (a window's keyboard), shared between whoever reads the keys and the board, which
/// ORs them into the schedule's buttons at each frame boundary.
#[derive(Clone, Debug, Default)]
pub struct LiveButtons(std::rc::Rc<std::cell::Cell<u8>>);

impl LiveButtons {
    /// The buttons held now (see [`button`]).
    pub fn get(&self) -> u8 {
        self.0.get()
    }
    /// Hold `buttons` from the next frame on.
    pub fn set(&self, buttons: u8) {
        self.0.set(buttons);
    }
}

/// A malformed input file: the line (1-based) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{origin}, line {line}: {what}")]
pub struct InputError {
    pub origin: String,
    pub line: usize,
    pub what: String,
}

/// A pad's buttons that do not parse (a field of an input file or a movie line).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ButtonsError {
    /// Not FCEUX's eight-character `RLDUTSBA` form.
    #[error("{0:?} is not 8 characters RLDUTSBA")]
    NotFceux(String),
    /// A name that is not a button's.
    #[error("{0:?} is not a button (A, B, Select, Start, Up, Down, Left, Right)")]
    NotAButton(String),
}

/// Button bits.
pub mod button {
    pub const A: u8 = 0x01;
    pub const B: u8 = 0x02;
    pub const SELECT: u8 = 0x04;
    pub const START: u8 = 0x08;
    pub const UP: u8 = 0x10;
    pub const DOWN: u8 = 0x20;
    pub const LEFT: u8 = 0x40;
    pub const RIGHT: u8 = 0x80;
}

/// One standard controller: the buttons held and the shift register the CPU reads.
#[derive(Clone, Debug, Default)]
pub struct Pad {
    /// Buttons held now.
    pub buttons: u8,
    shift: u8,
    reads: u8,
    strobe: bool,
}

impl Pad {
    /// A write to $4016: bit 0 is the strobe; while it is high the pad reloads its buttons.
    pub fn write_strobe(&mut self, value: u8) {
        self.strobe = value & 1 != 0;
        if self.strobe {
            self.shift = self.buttons;
            self.reads = 0;
        }
    }

    /// A read of the pad's port: bit 0 is the next button (A while the strobe is high; 1 after all eight).
    pub fn read(&mut self) -> u8 {
        if self.strobe {
            return self.buttons & 1;
        }
        if self.reads >= 8 {
            return 1;
        }
        let b = self.shift & 1;
        self.shift >>= 1;
        self.reads += 1;
        b
    }
}

/// Buttons of both pads by frame: a sorted list of changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputSchedule {
    /// (first frame, pad 1, pad 2), frames increasing.
    pub changes: Vec<(u64, u8, u8)>,
}

impl InputSchedule {
    /// The buttons held at `frame`.
    pub fn at(&self, frame: u64) -> (u8, u8) {
        let i = self.changes.partition_point(|c| c.0 <= frame);
        if i == 0 { (0, 0) } else { (self.changes[i - 1].1, self.changes[i - 1].2) }
    }

    /// Parse an input file or, when `origin` ends in `.fm2`, an FCEUX movie.
    pub fn parse(origin: &str, text: &str) -> Result<Self, InputError> {
        if origin.to_ascii_lowercase().ends_with(".fm2") { Self::parse_fm2(origin, text) } else { Self::parse_lines(origin, text) }
    }

    fn parse_lines(origin: &str, text: &str) -> Result<Self, InputError> {
        let mut changes: Vec<(u64, u8, u8)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |what: String| InputError { origin: origin.to_string(), line: i + 1, what };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 2 || fields.len() > 3 {
                return Err(err(format!("expected `FRAME PAD1 [PAD2]`, got {line:?}")));
            }
            let frame: u64 = fields[0].parse().map_err(|_| err(format!("{:?} is not a frame number", fields[0])))?;
            if changes.last().is_some_and(|c| c.0 >= frame) {
                return Err(err(format!("frame {frame} does not come after frame {}", changes.last().unwrap().0)));
            }
            let p1 = parse_buttons(fields[1]).map_err(|e| err(e.to_string()))?;
            let p2 = fields.get(2).map(|f| parse_buttons(f)).transpose().map_err(|e| err(e.to_string()))?.unwrap_or(0);
            changes.push((frame, p1, p2));
        }
        Ok(InputSchedule { changes })
    }

    fn parse_fm2(origin: &str, text: &str) -> Result<Self, InputError> {
        let mut changes: Vec<(u64, u8, u8)> = Vec::new();
        let mut frame = 0u64;
        for (i, line) in text.lines().enumerate() {
            let err = |what: String| InputError { origin: origin.to_string(), line: i + 1, what };
            if !line.starts_with('|') {
                continue; // a header line
            }
            let fields: Vec<&str> = line.split('|').collect();
            // "", commands, port 0, port 1, port 2, ""
            if fields.len() < 4 {
                return Err(err(format!("a frame line has `|commands|pad1|pad2|...`, got {line:?}")));
            }
            let pad = |f: &str| if f.is_empty() { Ok(0) } else { parse_fceux(f) };
            let p1 = pad(fields[2]).map_err(|e| err(e.to_string()))?;
            let p2 = pad(fields[3]).map_err(|e| err(e.to_string()))?;
            if changes.last().is_none_or(|c| (c.1, c.2) != (p1, p2)) {
                changes.push((frame, p1, p2));
            }
            frame += 1;
        }
        Ok(InputSchedule { changes })
    }
}

/// FCEUX's `RLDUTSBA`: eight characters, `.` or space for a released button.
fn parse_fceux(s: &str) -> Result<u8, ButtonsError> {
    if s.chars().count() != 8 {
        return Err(ButtonsError::NotFceux(s.to_string()));
    }
    Ok(s.chars().enumerate().fold(0u8, |acc, (i, c)| if c == '.' || c == ' ' { acc } else { acc | (0x80 >> i) }))
}

/// `-`, `A+Right`, or `RLDUTSBA`.
fn parse_buttons(s: &str) -> Result<u8, ButtonsError> {
    if s == "-" {
        return Ok(0);
    }
    if s.len() == 8 && s.chars().all(|c| "RLDUTSBA.".contains(c)) && s.contains('.') {
        return parse_fceux(s);
    }
    let mut b = 0;
    for name in s.split('+') {
        b |= match name.to_ascii_lowercase().as_str() {
            "a" => button::A,
            "b" => button::B,
            "select" => button::SELECT,
            "start" => button::START,
            "up" => button::UP,
            "down" => button::DOWN,
            "left" => button::LEFT,
            "right" => button::RIGHT,
            _ => return Err(ButtonsError::NotAButton(name.to_string())),
        };
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pad_shifts_out_a_b_select_start_up_down_left_right_then_ones() {
        let mut p = Pad { buttons: button::A | button::START | button::RIGHT, ..Pad::default() };
        p.write_strobe(1);
        assert_eq!(p.read(), 1);
        assert_eq!(p.read(), 1, "strobe high: A again");
        p.write_strobe(0);
        let bits: Vec<u8> = (0..10).map(|_| p.read()).collect();
        assert_eq!(bits, [1, 0, 0, 1, 0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn input_files_give_buttons_by_frame() {
        let s = InputSchedule::parse("in.txt", "# demo\n0 -\n30 Right\n60 right+A  Start\n90 R......A\n").unwrap();
        assert_eq!(s.at(0), (0, 0));
        assert_eq!(s.at(29), (0, 0));
        assert_eq!(s.at(30), (button::RIGHT, 0));
        assert_eq!(s.at(75), (button::RIGHT | button::A, button::START));
        assert_eq!(s.at(1000), (button::RIGHT | button::A, 0));
        let e = InputSchedule::parse("in.txt", "0 -\n10 Jump\n").unwrap_err();
        assert_eq!(e.to_string(), "in.txt, line 2: \"Jump\" is not a button (A, B, Select, Start, Up, Down, Left, Right)");
        assert_eq!(InputSchedule::parse("in.txt", "5 A\n5 B\n").unwrap_err().line, 2);
        assert!(InputSchedule::parse("in.txt", "x A\n").is_err());
    }

    #[test]
    fn fm2_movies_give_one_line_per_frame() {
        let movie = "version 3\nemuVersion 22020\nport0 1\n|0|........|........||\n|0|........|........||\n|0|R......A|........||\n|0|R......A|....T...||\n";
        let s = InputSchedule::parse("m.fm2", movie).unwrap();
        assert_eq!(s.at(1), (0, 0));
        assert_eq!(s.at(2), (button::RIGHT | button::A, 0));
        assert_eq!(s.at(3), (button::RIGHT | button::A, button::START));
        assert_eq!(s.changes.len(), 3);
        assert!(InputSchedule::parse("m.fm2", "|0|RL|\n").is_err());
    }
}
