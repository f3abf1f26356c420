//! [`Tracked`]: an activation vector that remembers which entries the current token changed.

/// A vector of activations `[n]` kept from one token to the next, with the entries the current token changed
/// (their indices and values before the token). Stages read [`Self::ch`]/[`Self::old`] to update only what
/// depends on them. Changes are recorded without branches into buffers of `n + 1` entries (each index at
/// most once per token).
#[derive(Clone, Debug)]
pub struct Tracked {
    pub v: Vec<f32>,
    ch: Vec<u32>,
    old: Vec<f32>,
    len: usize,
    stamp: Vec<u32>,
    generation: u32,
}

impl Tracked {
    /// `n` zeros, nothing changed.
    pub fn zeros(n: usize) -> Self {
        Self { v: vec![0.0; n], ch: vec![0; n + 1], old: vec![0.0; n + 1], len: 0, stamp: vec![0; n], generation: 1 }
    }

    /// Indices changed by this token (bit patterns differ), in the order first written.
    #[inline]
    pub fn ch(&self) -> &[u32] {
        &self.ch[..self.len]
    }

    /// `v[ch()[k]]` before this token.
    #[inline]
    pub fn old(&self) -> &[f32] {
        &self.old[..self.len]
    }

    /// Start a token: forget the previous token's changes.
    #[inline]
    pub fn begin(&mut self) {
        self.len = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
    }

    #[inline(always)]
    fn touch(&mut self, i: usize) {
        let fresh = self.stamp[i] != self.generation;
        self.stamp[i] = self.generation;
        self.ch[self.len] = i as u32;
        self.old[self.len] = self.v[i];
        self.len += fresh as usize;
    }

    /// Write entry `i` (a write that leaves its bits as they are records nothing).
    #[inline(always)]
    pub fn set(&mut self, i: usize, x: f32) {
        if self.v[i].to_bits() != x.to_bits() {
            self.touch(i);
            self.v[i] = x;
        }
    }

    /// `v[idx[p]] += vals[p] * d` for every `p` (one CSC column times an input's change), recording the
    /// entries touched.
    #[inline]
    pub fn scatter(&mut self, idx: &[u32], vals: &[f32], d: f32) {
        self.scatter_each(idx, vals, d, |_, _| {});
    }

    /// [`Self::scatter`], also adding `|vals[p]| * da` to `abs[idx[p]]` (a row bound kept beside the sums).
    #[inline]
    pub fn scatter_with_bound(&mut self, idx: &[u32], vals: &[f32], d: f32, abs: &mut [f64], da: f64) {
        self.scatter_each(idx, vals, d, |i, w| abs[i] += w.abs() as f64 * da);
    }

    /// The scatter loop, calling `each(row, weight)` for every entry (inlined: no cost when it does nothing).
    #[inline(always)]
    fn scatter_each(&mut self, idx: &[u32], vals: &[f32], d: f32, mut each: impl FnMut(usize, f32)) {
        let Self { v, ch, old, len, stamp, generation } = self;
        let g = *generation;
        let mut n = *len;
        // One check for the whole column: every index is inside the vector (then also inside `stamp`), and
        // `n` stays below `ch.len() = old.len() = v.len() + 1` because each index is recorded at most once
        // per token.
        let size = v.len();
        assert!(stamp.len() == size && ch.len() == size + 1 && old.len() == size + 1 && n <= size);
        assert!(idx.iter().fold(0u32, |m, &i| m.max(i)) < size as u32 || idx.is_empty(), "row index out of range");
        for (i, w) in idx.iter().zip(vals) {
            let i = *i as usize;
            // SAFETY: `i < size` (checked above for every index); `n <= size` since an index is counted
            // only the first time this token touches it (`stamp`), so `n` < `size + 1` = `ch.len()`.
            unsafe {
                let fresh = *stamp.get_unchecked(i) != g;
                *stamp.get_unchecked_mut(i) = g;
                *ch.get_unchecked_mut(n) = i as u32;
                let vi = v.get_unchecked_mut(i);
                *old.get_unchecked_mut(n) = *vi;
                n += fresh as usize;
                *vi += w * d;
            }
            each(i, *w);
        }
        *len = n;
    }

    /// End a token's writes: keep only the entries whose bits changed.
    pub fn finish(&mut self) {
        let mut k = 0;
        for j in 0..self.len {
            let i = self.ch[j] as usize;
            if self.v[i].to_bits() != self.old[j].to_bits() {
                self.ch[k] = self.ch[j];
                self.old[k] = self.old[j];
                k += 1;
            }
        }
        self.len = k;
    }

    /// [`Self::finish`], also forgetting the changes where both the old and the new value are `quiet` (their
    /// consumer maps every quiet value to the same output, so for it nothing changed). The values stay exact.
    pub fn finish_except(&mut self, quiet: impl Fn(f32) -> bool) {
        let mut k = 0;
        for j in 0..self.len {
            let i = self.ch[j] as usize;
            let (o, v) = (self.old[j], self.v[i]);
            if v.to_bits() != o.to_bits() && !(quiet(o) && quiet(v)) {
                self.ch[k] = self.ch[j];
                self.old[k] = o;
                k += 1;
            }
        }
        self.len = k;
    }

    /// Write entry `i` without recording it as a change (the caller's consumer cannot tell the old value from
    /// the new one; see [`Self::finish_except`]).
    #[inline(always)]
    pub fn set_quietly(&mut self, i: usize, x: f32) {
        self.v[i] = x;
    }

    /// End a token's writes when every entry written this token was written its final value (an entry
    /// written twice got the same value both times, as in a stage that computes each output from its inputs):
    /// then every recorded entry is a real change, and there is nothing to filter. Debug builds check it.
    #[inline]
    pub fn finish_single_writes(&mut self) {
        debug_assert!(self.ch().iter().zip(self.old()).all(|(&i, o)| self.v[i as usize].to_bits() != o.to_bits()), "an entry was written back to its old value");
    }

    /// Put back the values from before this token (after writes, before [`Self::finish`]) and forget them.
    pub fn undo(&mut self) {
        for j in 0..self.len {
            self.v[self.ch[j] as usize] = self.old[j];
        }
        self.begin();
    }

    /// Overwrite the whole vector (after [`Self::begin`], instead of writes), recording what changed.
    pub fn replace(&mut self, new: &[f32]) {
        for (i, n) in new.iter().enumerate() {
            if self.v[i].to_bits() != n.to_bits() {
                self.stamp[i] = self.generation;
                self.ch[self.len] = i as u32;
                self.old[self.len] = self.v[i];
                self.len += 1;
                self.v[i] = *n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_real_changes() {
        let mut t = Tracked::zeros(5);
        t.begin();
        t.set(3, 1.0);
        t.scatter(&[1, 1], &[2.0, -2.0], 1.0); // back to 0: not a change
        t.set(4, -0.0); // a different bit pattern: a change
        t.set(3, 5.0);
        t.finish();
        assert_eq!((t.ch().to_vec(), t.old().to_vec()), (vec![3, 4], vec![0.0, 0.0]));
        assert_eq!(t.v, vec![0.0, 0.0, 0.0, 5.0, -0.0]);
        t.begin();
        t.replace(&[0.0, 0.0, 7.0, 5.0, 0.0]);
        assert_eq!((t.ch().to_vec(), t.old().to_vec()), (vec![2, 4], vec![0.0, -0.0]));
        t.begin();
        t.finish();
        assert!(t.ch().is_empty());
        t.set(0, 3.0);
        t.undo();
        assert_eq!(t.v[0], 0.0);
    }

    /// Writes of final values (each entry once, or twice with the same value) record only real changes, so
    /// `finish_single_writes` keeps what `finish` would.
    #[test]
    fn single_writes_record_only_real_changes() {
        let mut t = Tracked::zeros(4);
        t.begin();
        for i in [1usize, 3, 1, 2] {
            t.set(i, [0.0, 2.0, 0.0, -1.0][i]); // entry 2 keeps its value: not recorded
        }
        t.finish_single_writes();
        let kept = (t.ch().to_vec(), t.old().to_vec());
        assert_eq!(kept, (vec![1, 3], vec![0.0, 0.0]));
        let mut u = t.clone();
        u.finish();
        assert_eq!((u.ch().to_vec(), u.old().to_vec()), kept);
    }
}

/// Helpers of the incremental executor's unit tests.
#[cfg(test)]
pub(super) mod testing {
    use super::Tracked;

    /// One token's input: `x` takes the values `v`, recording what changed.
    pub fn feed(x: &mut Tracked, v: &[f32]) {
        x.begin();
        for (i, e) in v.iter().enumerate() {
            x.set(i, *e);
        }
        x.finish();
    }

    /// The bit patterns of `u` (to compare f32 vectors exactly, signed zeros included).
    pub fn bits(u: &[f32]) -> Vec<u32> {
        u.iter().map(|e| e.to_bits()).collect()
    }
}
