//! Frames of a machine's declared display ([`isa_api::DeviceDesc::Display`]) to files: an animated GIF and a
//! PNG per frame, each pixel a `scale` x `scale` square (lit: white, dark: black). Existing files are refused
//! unless forced, before anything runs.

use anyhow::{Context, Result, bail};
use isa_api::devices::Frame;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Where the frames go.
#[derive(Clone, Debug, Default)]
pub struct FrameOutput {
    pub gif: Option<PathBuf>,
    pub png_dir: Option<PathBuf>,
    /// Pixels per display pixel, each way.
    pub scale: u32,
    pub force: bool,
}

impl FrameOutput {
    pub fn any(&self) -> bool {
        self.gif.is_some() || self.png_dir.is_some()
    }

    /// Refuse outputs that exist (without `force`), before the run.
    pub fn check(&self) -> Result<()> {
        if self.scale == 0 || self.scale > 64 {
            bail!("--scale {}: from 1 to 64", self.scale);
        }
        if let Some(g) = self.gif.as_ref().filter(|g| g.exists() && !self.force) {
            bail!("{} exists; give --force to replace it", g.display());
        }
        if let Some(d) = &self.png_dir {
            host_nes::output::check_frame_dir(d, self.force)?;
        }
        Ok(())
    }

    /// Write `frames` (at 60 frames per second in the GIF).
    pub fn write(&self, frames: &[Frame]) -> Result<()> {
        let Some(first) = frames.first() else { bail!("the run recorded no frame (no tick came)") };
        let (w, h) = (first.width * self.scale, first.height * self.scale);
        let gray = |f: &Frame| -> Vec<u8> {
            let mut px = Vec::with_capacity((w * h) as usize);
            for y in 0..h {
                for x in 0..w {
                    px.push(if f.lit(x / self.scale, y / self.scale) { 1 } else { 0 });
                }
            }
            px
        };
        if let Some(path) = &self.gif {
            let file = std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
            let mut enc = gif::Encoder::new(BufWriter::new(file), w as u16, h as u16, &[0, 0, 0, 255, 255, 255]).with_context(|| path.display().to_string())?;
            enc.set_repeat(gif::Repeat::Infinite)?;
            for (i, f) in frames.iter().enumerate() {
                let mut g = gif::Frame::from_indexed_pixels(w as u16, h as u16, gray(f), None);
                // 60 Hz in hundredths of a second: 2, 2, 1 (5 per 3 frames).
                g.delay = if i % 3 == 2 { 1 } else { 2 };
                enc.write_frame(&g).with_context(|| path.display().to_string())?;
            }
        }
        if let Some(dir) = &self.png_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            if self.force {
                host_nes::output::clear_frames(dir)?;
            }
            for (i, f) in frames.iter().enumerate() {
                write_png(&dir.join(format!("frame-{i:05}.png")), w, h, &gray(f).iter().map(|p| p * 255).collect::<Vec<u8>>())?;
            }
        }
        Ok(())
    }
}

fn write_png(path: &Path, w: u32, h: u32, gray: &[u8]) -> Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    let mut enc = png::Encoder::new(BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(gray).with_context(|| path.display().to_string())?;
    Ok(())
}
