//! Pictures and sound to files: a PNG per frame, an animated GIF, a WAV file, and a hash of every frame and of
//! the audio (to compare runs).

use crate::apu::SAMPLE_RATE;
use crate::board::Frame;
use crate::network::Recorder;
use crate::ppu::{HEIGHT, NTSC_PALETTE, WIDTH};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// An output error: the file and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}")]
pub struct OutputError {
    pub path: String,
    pub what: String,
}

fn err(path: &Path, what: impl std::fmt::Display) -> OutputError {
    OutputError { path: path.display().to_string(), what: what.to_string() }
}

/// FNV-1a, 64 bits: a frame's or the audio's hash (stable across runs and machines).
pub fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A frame as RGB bytes (256 x 240 x 3).
pub fn rgb(pixels: &[u8]) -> Vec<u8> {
    pixels.iter().flat_map(|&p| NTSC_PALETTE[usize::from(p & 0x3F)]).collect()
}

/// Write a frame as a PNG.
pub fn write_png(path: &Path, pixels: &[u8]) -> Result<(), OutputError> {
    let f = std::fs::File::create(path).map_err(|e| err(path, e))?;
    let mut enc = png::Encoder::new(BufWriter::new(f), WIDTH as u32, HEIGHT as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().map_err(|e| err(path, e))?;
    w.write_image_data(&rgb(pixels)).map_err(|e| err(path, e))?;
    w.finish().map_err(|e| err(path, e))
}

/// Refuse to replace `path` unless `force`: nothing the user had is overwritten by accident.
pub fn check_new(path: &Path, force: bool) -> Result<(), OutputError> {
    if path.exists() && !force {
        return Err(err(path, "exists; give --force to replace it"));
    }
    Ok(())
}

/// Whether `d` can take a run's frames (`frame-00000.png`, ...): not a file, and (without `force`) holding no
/// frames yet. Changes nothing.
pub fn check_frame_dir(d: &Path, force: bool) -> Result<(), OutputError> {
    if d.exists() && !d.is_dir() {
        return Err(err(d, "is a file; --png takes a directory for the frames"));
    }
    if !force && d.join("frame-00000.png").exists() {
        return Err(err(d, "holds frame-00000.png already; give --force to replace the frames"));
    }
    Ok(())
}

/// Remove the frames (`frame-NNNNN.png`) an earlier run left in `d`, so that it holds the next run's only;
/// nothing else in it is touched.
pub fn clear_frames(d: &Path) -> Result<(), OutputError> {
    for e in std::fs::read_dir(d).map_err(|e| err(d, e))? {
        let p = e.map_err(|e| err(d, e))?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let frame = name.len() == 15 && name.starts_with("frame-") && name.ends_with(".png") && name[6..11].bytes().all(|b| b.is_ascii_digit());
        if frame && p.is_file() {
            std::fs::remove_file(&p).map_err(|e| err(&p, e))?;
        }
    }
    Ok(())
}

/// What a run writes.
#[derive(Clone, Debug, Default)]
pub struct OutputSpec {
    /// A PNG per recorded frame in this directory (`frame-00000.png`, ...).
    pub png_dir: Option<PathBuf>,
    /// An animated GIF of the recorded frames.
    pub gif: Option<PathBuf>,
    /// The whole run's audio.
    pub wav: Option<PathBuf>,
    /// Record every K-th frame (1: every frame).
    pub every: u64,
    /// Replace existing files.
    pub force: bool,
}

/// A recorder writing the files of an [`OutputSpec`], keeping every frame's hash and the audio's.
pub struct FileRecorder {
    spec: OutputSpec,
    gif: Option<gif::Encoder<BufWriter<std::fs::File>>>,
    wav: Option<hound::WavWriter<BufWriter<std::fs::File>>>,
    /// (frame number, hash of its palette indices) of every frame.
    pub hashes: Vec<(u64, u64)>,
    audio_hash: u64,
    /// Audio samples seen.
    pub sample_count: u64,
    /// The last frame (palette indices), for a final picture.
    pub last: Option<Frame>,
    gif_time: u64,
    /// The first write error (recording stops there; the run reports it).
    pub error: Option<OutputError>,
}

impl FileRecorder {
    /// Open the outputs of `spec`: existing files are refused unless `spec.force`; the PNG directory is
    /// created. With `spec.force`, the frames (`frame-NNNNN.png`) a directory holds from an earlier run are
    /// removed first, so it holds this run's frames only; nothing else in it is touched.
    pub fn new(spec: OutputSpec) -> Result<Self, OutputError> {
        let spec = OutputSpec { every: spec.every.max(1), ..spec };
        if let Some(d) = &spec.png_dir {
            check_frame_dir(d, spec.force)?;
            std::fs::create_dir_all(d).map_err(|e| err(d, e))?;
            if spec.force {
                clear_frames(d)?;
            }
        }
        for p in [&spec.gif, &spec.wav].into_iter().flatten() {
            check_new(p, spec.force)?;
        }
        let gif = match &spec.gif {
            Some(p) => {
                let f = std::fs::File::create(p).map_err(|e| err(p, e))?;
                let palette: Vec<u8> = NTSC_PALETTE.iter().flatten().copied().collect();
                let mut g = gif::Encoder::new(BufWriter::new(f), WIDTH as u16, HEIGHT as u16, &palette).map_err(|e| err(p, e))?;
                g.set_repeat(gif::Repeat::Infinite).map_err(|e| err(p, e))?;
                Some(g)
            }
            None => None,
        };
        let wav = match &spec.wav {
            Some(p) => {
                let ws = hound::WavSpec { channels: 1, sample_rate: SAMPLE_RATE, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
                Some(hound::WavWriter::create(p, ws).map_err(|e| err(p, e))?)
            }
            None => None,
        };
        Ok(FileRecorder { spec, gif, wav, hashes: Vec::new(), audio_hash: fnv1a([]), sample_count: 0, last: None, gif_time: 0, error: None })
    }

    /// The hash of the audio so far.
    pub fn audio_hash(&self) -> u64 {
        self.audio_hash
    }

    fn record(&mut self, frame: &Frame) -> Result<(), OutputError> {
        if let Some(d) = &self.spec.png_dir {
            write_png(&d.join(format!("frame-{:05}.png", frame.number)), &frame.pixels)?;
        }
        if let (Some(g), Some(p)) = (self.gif.as_mut(), &self.spec.gif) {
            // GIF delays are in 1/100 s; the NES shows 60.0988 frames/s. Delays follow the frames' times.
            let t0 = self.gif_time;
            self.gif_time = (frame.number + self.spec.every) * 10_000 / 6_010;
            let mut f = gif::Frame::from_indexed_pixels(WIDTH as u16, HEIGHT as u16, frame.pixels.clone(), None);
            f.delay = (self.gif_time - t0).max(1) as u16;
            g.write_frame(&f).map_err(|e| err(p, e))?;
        }
        Ok(())
    }

    /// Close the files (the GIF's trailer, the WAV's header sizes).
    pub fn finish(&mut self) -> Result<(), OutputError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.gif = None;
        if let (Some(w), Some(p)) = (self.wav.take(), &self.spec.wav) {
            w.finalize().map_err(|e| err(p, e))?;
        }
        Ok(())
    }
}

impl Recorder for FileRecorder {
    fn frame(&mut self, frame: &Frame) {
        self.hashes.push((frame.number, fnv1a(frame.pixels.iter().copied())));
        if self.error.is_none() && frame.number.is_multiple_of(self.spec.every) {
            self.error = self.record(frame).err();
        }
        self.last = Some(frame.clone());
    }

    fn samples(&mut self, samples: &[i16]) {
        self.sample_count += samples.len() as u64;
        self.audio_hash = samples.iter().flat_map(|s| s.to_le_bytes()).fold(self.audio_hash, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        if let (Some(w), Some(p)) = (self.wav.as_mut(), &self.spec.wav) {
            for &s in samples {
                if let Err(e) = w.write_sample(s) {
                    self.error.get_or_insert(err(p, e));
                    break;
                }
            }
        }
    }
}
