//! [`Tracked`]: an activation vector that remembers which entries the current token changed.

/// A vector of activations `[n]` kept from one token to the next, with the entries the current token changed
/// (their indices and values before the token). Stages read `ch`/`old` to update only what depends on them.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub v: Vec<f32>,
    /// Indices changed by this token (bit patterns differ), in the order first written.
    pub ch: Vec<u32>,
    /// `v[ch[k]]` before this token.
    pub old: Vec<f32>,
    stamp: Vec<u32>,
    generation: u32,
}

impl Tracked {
    /// `n` zeros, nothing changed.
    pub fn zeros(n: usize) -> Self {
        Self { v: vec![0.0; n], ch: Vec::new(), old: Vec::new(), stamp: vec![0; n], generation: 1 }
    }

    /// Start a token: forget the previous token's changes.
    #[inline]
    pub fn begin(&mut self) {
        self.ch.clear();
        self.old.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
    }

    #[inline(always)]
    fn touch(&mut self, i: usize) {
        if self.stamp[i] != self.generation {
            self.stamp[i] = self.generation;
            self.ch.push(i as u32);
            self.old.push(self.v[i]);
        }
    }

    /// Write entry `i`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, x: f32) {
        self.touch(i);
        self.v[i] = x;
    }

    /// Add `d` to entry `i`.
    #[inline(always)]
    pub fn add(&mut self, i: usize, d: f32) {
        self.touch(i);
        self.v[i] += d;
    }

    /// `v[idx[p]] += vals[p] * d` for every `p` (one CSC column times an input's change), recording the
    /// entries touched.
    #[inline]
    pub fn scatter(&mut self, idx: &[u32], vals: &[f32], d: f32) {
        let Self { v, ch, old, stamp, generation } = self;
        let g = *generation;
        for (i, w) in idx.iter().zip(vals) {
            let i = *i as usize;
            if stamp[i] != g {
                stamp[i] = g;
                ch.push(i as u32);
                old.push(v[i]);
            }
            v[i] += w * d;
        }
    }

    /// End a token's writes: keep only the entries whose bits changed.
    pub fn finish(&mut self) {
        let mut k = 0;
        for j in 0..self.ch.len() {
            let i = self.ch[j] as usize;
            if self.v[i].to_bits() != self.old[j].to_bits() {
                self.ch[k] = self.ch[j];
                self.old[k] = self.old[j];
                k += 1;
            }
        }
        self.ch.truncate(k);
        self.old.truncate(k);
    }

    /// Overwrite the whole vector (after [`Self::begin`], instead of writes), recording what changed.
    pub fn replace(&mut self, new: &[f32]) {
        for (i, (v, n)) in self.v.iter_mut().zip(new).enumerate() {
            if v.to_bits() != n.to_bits() {
                self.ch.push(i as u32);
                self.old.push(*v);
                *v = *n;
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
        t.add(1, 2.0);
        t.add(1, -2.0); // back to 0: not a change
        t.set(4, -0.0); // a different bit pattern: a change
        t.set(3, 5.0);
        t.finish();
        assert_eq!((t.ch.clone(), t.old.clone()), (vec![3, 4], vec![0.0, 0.0]));
        assert_eq!(t.v, vec![0.0, 0.0, 0.0, 5.0, -0.0]);
        t.begin();
        t.replace(&[0.0, 0.0, 7.0, 5.0, 0.0]);
        assert_eq!((t.ch.clone(), t.old.clone()), (vec![2, 4], vec![0.0, -0.0]));
        t.begin();
        t.finish();
        assert!(t.ch.is_empty());
    }
}
