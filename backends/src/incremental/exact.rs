//! When an incremental sum equals the full sum bit for bit: grids of integer multiples of a power of two.
//!
//! A sum of f32 terms is exact, whatever the order of its additions, when every term and every partial sum
//! is an integer multiple of one power of two `2^-e` whose integer stays at most `2^24` (f32 has 24
//! significand bits). Then the sparse executor's sum, transformers' blocked sum and an incremental update
//! `y + Σ w (x_new - x_old)` all give the one real value. [`weight_exp`] is the weights' side (measured once,
//! when the checkpoint is compiled), [`InputGrid`] the input's (checked on every value that changes); the
//! bound on the sums is kept per output row by the projection (`Σ |w x|`, see `projection`), or bounded for
//! every row at once (the largest row `Σ |w|` times the largest input magnitude). Where any of them
//! does not hold the executor computes the full sum instead.

/// The `e` for which `v · 2^e` is an odd integer (`v` finite and nonzero): the position of `v`'s lowest set
/// bit, as a count of binary places after the point (negative for multiples of 2).
pub fn frac_exp(v: f32) -> i32 {
    let b = v.to_bits() & 0x7fff_ffff;
    let (e, m) = ((b >> 23) as i32, b & 0x7f_ffff);
    if e == 0 {
        149 - m.trailing_zeros() as i32
    } else {
        150 - e - (m | 0x80_0000).trailing_zeros() as i32
    }
}

/// The weights' side of `y = W x`: the finest binary place any nonzero weight uses (every weight is an
/// integer multiple of `2^-exp`), or `None` when a weight is not finite.
pub fn weight_exp(vals: &[f32]) -> Option<i32> {
    let mut exp = 0;
    for w in vals {
        if !w.is_finite() {
            return None;
        }
        if *w != 0.0 {
            exp = exp.max(frac_exp(*w));
        }
    }
    Some(exp)
}

/// The largest integer (in grid units) an exact f32 sum, product or partial sum may reach: 2^24.
pub const EXACT_LIMIT: f64 = (1u64 << 24) as f64;

/// The largest an input entry may be (in grid units): 2^23, so that `x_new - x_old` is exact too.
pub const ENTRY_LIMIT: f64 = (1u64 << 23) as f64;

/// The largest a sum of squares may reach (grid units): 2^23, leaving room for `ss - old² + new²`.
const SQUARES_LIMIT: f64 = (1u64 << 23) as f64;

/// The cap of an input to a sum of squares over `n` entries (RMSNorm's `Σ x²`): `n · cap² <= 2^23`.
pub fn squares_cap(n: usize) -> f64 {
    (SQUARES_LIMIT / n.max(1) as f64).sqrt()
}

/// The input's side: a grid `2^-exp` fixed when the full sum was last computed, and the count of entries
/// off it (not a multiple of `2^-exp`, or beyond `cap` units). While the count is zero, an incremental
/// update is exact.
#[derive(Clone, Debug)]
pub struct InputGrid {
    scale: f64,
    cap: f64,
    bad: usize,
}

impl Default for InputGrid {
    fn default() -> Self {
        Self { scale: 1.0, cap: 0.0, bad: 1 }
    }
}

impl InputGrid {
    /// Is `v` on the grid and within the cap?
    #[inline]
    pub fn conforms(&self, v: f32) -> bool {
        let s = v as f64 * self.scale;
        // |s| <= cap (< 2^63) first, so the i64 conversion is exact for integers (and NaN fails).
        s.abs() <= self.cap && s == (s as i64) as f64
    }

    /// Choose the grid for the whole input `x` (after a full sum): the finest binary place `x` uses, plus
    /// half of the spare range of `cap` for finer values to come; the other half is left for larger ones.
    pub fn calibrate(&mut self, x: &[f32], cap: f64) {
        self.calibrate_with(x, cap, None)
    }

    /// [`Self::calibrate`] where the spare range is set by `top(exp)` (the largest value the input's use
    /// reaches, in units of `2^-exp`) rather than by `x`'s largest entry; `cap` still bounds every entry.
    pub fn calibrate_with(&mut self, x: &[f32], cap: f64, top: Option<&dyn Fn(i32) -> f64>) {
        let (mut exp, mut amax, mut finite) = (i32::MIN, 0f32, true);
        for v in x {
            if *v != 0.0 {
                finite &= v.is_finite();
                exp = exp.max(frac_exp(*v));
                amax = amax.max(v.abs());
            }
        }
        self.cap = cap;
        if !finite || cap < 1.0 {
            (self.scale, self.bad) = (1.0, 1);
            return;
        }
        if exp == i32::MIN {
            exp = 0;
        }
        let top = match top {
            Some(f) => f(exp),
            None => amax as f64 * 2f64.powi(exp),
        }
        .max(1.0);
        let spare = if cap.is_finite() { ((cap / top).log2() / 2.0).floor().max(0.0) as i32 } else { 16 };
        self.scale = 2f64.powi((exp + spare).clamp(-1000, 1000));
        self.bad = x.iter().filter(|v| !self.conforms(**v)).count();
    }

    /// Account for one entry changing from `old` to `new`.
    #[inline]
    pub fn update(&mut self, old: f32, new: f32) {
        if (old.to_bits() ^ new.to_bits()) == 1 << 31 {
            return; // a sign flip: conformance depends on the magnitude only
        }
        match (self.conforms(old), self.conforms(new)) {
            (true, false) => self.bad += 1,
            (false, true) => self.bad -= 1,
            _ => {}
        }
    }

    /// Every entry on the grid: incremental sums over this input are exact.
    pub fn exact(&self) -> bool {
        self.bad == 0
    }

    /// `2^exp`: one grid unit is `1 / scale`.
    pub fn scale(&self) -> f64 {
        self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frac_exp_finds_the_lowest_set_bit() {
        for (v, e) in [(1.0f32, 0), (0.5, 1), (3.0, 0), (256.0, -8), (-0.375, 3), (f32::from_bits(1), 149), (2f32.powi(-126), 126), (f32::MAX, -104)] {
            assert_eq!(frac_exp(v), e, "{v}");
            assert_eq!(v as f64 * 2f64.powi(e) % 2.0, if v < 0.0 { -1.0 } else { 1.0 }, "{v}: odd");
        }
    }

    #[test]
    fn weight_exp_and_caps() {
        assert_eq!(weight_exp(&[0.5, 3.0, 0.25, 0.0]), Some(2));
        assert_eq!(weight_exp(&[256.0, 512.0]), Some(0), "never coarser than integers");
        assert_eq!(weight_exp(&[1.0, f32::INFINITY]), None);
        // Trained-looking weights need ~27 binary places.
        assert!(weight_exp(&[0.1]).unwrap() >= 26);
        assert!(squares_cap(2223).powi(2) * 2223.0 <= SQUARES_LIMIT);
    }

    #[test]
    fn input_grid_tracks_entries_off_the_grid() {
        let mut g = InputGrid::default();
        assert!(!g.exact(), "uncalibrated");
        g.calibrate(&[1.0, -1.0, 0.5, 0.0], 1024.0);
        assert!(g.exact());
        // 0.5 needs one place (top = 1 · 2^1); spare = floor(log2(1024 / 2) / 2) = 4 more.
        assert!(g.conforms(2f32.powi(-5)) && !g.conforms(2f32.powi(-6)));
        assert!(g.conforms(32.0) && !g.conforms(33.0));
        g.update(1.0, 0.1);
        assert!(!g.exact());
        g.update(0.1, 0.25);
        assert!(g.exact());
        g.calibrate(&[1.0, f32::NAN], 1024.0);
        assert!(!g.exact());
        g.calibrate(&[1.0, 2.0], 0.5);
        assert!(!g.exact(), "a cap below one unit fits no nonzero");
    }
}
