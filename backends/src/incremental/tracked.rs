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
    /// Per entry, the generation of the token that last recorded it: one byte (wrapping every 255 tokens,
    /// when every stamp is cleared), so the stamps of a layer's vectors take a quarter of the cache lines
    /// that `u32` stamps did (the entries a token touches are scattered: each touch is a cache line).
    stamp: Vec<u8>,
    generation: u8,
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

    /// Write entry `i` (a write that leaves its bits as they are records nothing). An entry may be written
    /// several times in a token, with any values; end the token's writes with [`Self::finish`].
    #[inline(always)]
    pub fn set(&mut self, i: usize, x: f32) {
        if self.v[i].to_bits() != x.to_bits() {
            self.touch(i);
            self.v[i] = x;
        }
    }

    /// Write entry `i` its final value for this token, as a stage that computes each output from its inputs
    /// does (end with [`Self::finish_single_writes`]): an entry written again this token gets the same bits,
    /// which records nothing, so no change stamp is read or written (a token's writes are scattered: the
    /// stamp was a cache line of its own). Not for an entry [`Self::set`] or a scatter also writes this token.
    #[inline(always)]
    pub fn set_final(&mut self, i: usize, x: f32) {
        if self.v[i].to_bits() != x.to_bits() {
            self.ch[self.len] = i as u32;
            self.old[self.len] = self.v[i];
            self.len += 1;
            self.v[i] = x;
        }
    }

    /// `v[row] += w * d` for every entry `(row, w)` of column `j` of `cols` (a column times an input's change),
    /// recording the entries touched.
    #[inline]
    pub fn scatter(&mut self, cols: &Columns, j: usize, d: f32) {
        self.scatter_each(cols, j, d, |_, _| {});
    }

    /// [`Self::scatter`], also adding `|w| * da` to `abs[row]` (a row bound kept beside the sums).
    #[inline]
    pub fn scatter_with_bound(&mut self, cols: &Columns, j: usize, d: f32, abs: &mut [f64], da: f64) {
        self.scatter_each(cols, j, d, |i, w| abs[i] += w.abs() as f64 * da);
    }

    /// Column `j` of `cols`, after one check for the whole column before the unchecked scatter loops: the
    /// matrix has this vector's length in rows, so every row index is inside the vector and `stamp` (checked
    /// when `cols` was built), and `len` stays below `ch.len() = old.len() = v.len() + 1` because each index
    /// is recorded at most once per token.
    #[inline(always)]
    fn checked_column<'c>(&self, cols: &'c Columns, j: usize) -> &'c [(u32, f32)] {
        let size = self.v.len();
        assert!(cols.rows == size && self.stamp.len() == size && self.ch.len() == size + 1 && self.old.len() == size + 1 && self.len <= size);
        cols.col(j)
    }

    /// [`Self::scatter`] for an output whose one consumer maps every `quiet` value alike (an MLP's `gate_proj`
    /// or a DeltaNet's `in_proj_z` before `silu`; see [`Self::finish_except`]): an add that takes an entry this
    /// token has not recorded from a quiet value to a quiet value writes it without recording it. Such an
    /// entry's value stays quiet, so when a later add of the token makes it loud, the old value recorded then
    /// is quiet, as its value before the token was: after [`Self::finish_except`] with the same `quiet`, the
    /// change list holds the same entries as after [`Self::scatter`] (possibly in another order, with another
    /// quiet old value), and the values are the same bits. Not for an update that may be undone:
    /// [`Self::undo`] puts back only recorded entries.
    #[inline]
    pub fn scatter_quiet(&mut self, cols: &Columns, j: usize, d: f32, quiet: impl Fn(f32) -> bool) {
        let col = self.checked_column(cols, j);
        let Self { v, ch, old, len, stamp, generation } = self;
        let g = *generation;
        let mut n = *len;
        for &(i, w) in col {
            let i = i as usize;
            // SAFETY: `i < v.len()` (`checked_column`); `n` grows only when `stamp[i]` is set to `g` for the first
            // time this token, so at most `v.len()` times and `n <= v.len() < ch.len()`. Branch-free (a branch here
            // was slower): the slot past the last record is written every time and kept when recorded.
            unsafe {
                let vi = v.get_unchecked_mut(i);
                let o = *vi;
                let x = o + w * d;
                *vi = x;
                let si = stamp.get_unchecked_mut(i);
                let record = (*si != g) & !(quiet(o) & quiet(x));
                *si = if record { g } else { *si };
                *ch.get_unchecked_mut(n) = i as u32;
                *old.get_unchecked_mut(n) = o;
                n += record as usize;
            }
        }
        *len = n;
    }

    /// The scatter loop, calling `each(row, weight)` for every entry (inlined: no cost when it does nothing).
    #[inline(always)]
    fn scatter_each(&mut self, cols: &Columns, j: usize, d: f32, mut each: impl FnMut(usize, f32)) {
        let col = self.checked_column(cols, j);
        let Self { v, ch, old, len, stamp, generation } = self;
        let g = *generation;
        let mut n = *len;
        for &(i, w) in col {
            let i = i as usize;
            // SAFETY: `i < v.len()` (`checked_column`); `n <= v.len()` since an index is counted only the first
            // time this token touches it (`stamp`), so `n` < `v.len() + 1` = `ch.len()`.
            unsafe {
                let fresh = *stamp.get_unchecked(i) != g;
                *stamp.get_unchecked_mut(i) = g;
                *ch.get_unchecked_mut(n) = i as u32;
                let vi = v.get_unchecked_mut(i);
                *old.get_unchecked_mut(n) = *vi;
                n += fresh as usize;
                *vi += w * d;
            }
            each(i, w);
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
        debug_assert!(self.ch().iter().collect::<std::collections::HashSet<_>>().len() == self.len, "an entry was recorded twice");
    }

    /// Put back the values from before this token (after writes, before [`Self::finish`]) and forget them.
    pub fn undo(&mut self) {
        for j in 0..self.len {
            self.v[self.ch[j] as usize] = self.old[j];
        }
        self.begin();
    }

    /// Overwrite the whole vector (after [`Self::begin`], instead of writes), recording what changed: each
    /// entry's final value, once ([`Self::set_final`]).
    pub fn replace(&mut self, new: &[f32]) {
        new.iter().enumerate().for_each(|(i, n)| self.set_final(i, *n));
    }
}

/// A set of indices `[n]` as bits: a token tests scattered indices, and `n` bits take an eighth of the cache
/// lines that `n` bools do.
#[derive(Clone, Debug)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The indices where `mask` is true.
    pub fn of(mask: &[bool]) -> Self {
        let mut words = vec![0u64; mask.len().div_ceil(64)];
        mask.iter().enumerate().filter(|(_, m)| **m).for_each(|(i, _)| words[i / 64] |= 1 << (i % 64));
        Self { words }
    }

    /// Whether `i` is in the set (panics where `i` is beyond the mask's length rounded up to 64).
    #[inline(always)]
    pub fn has(&self, i: usize) -> bool {
        (self.words[i / 64] >> (i % 64)) & 1 != 0
    }
}

/// A matrix `[rows, cols]` by columns as [`Tracked`] scatters it: column `j`'s nonzeros `(row, weight)`,
/// each row index beside its weight (one stream of cache lines per column, where
/// separate index and weight arrays were two: a token touches scattered columns, so each is a cache miss).
/// Every row index is checked below `rows` when built.
pub struct Columns {
    rows: usize,
    ptr: Vec<u32>,
    entries: Vec<(u32, f32)>,
}

impl Columns {
    /// The columns of a CSC matrix; `None` for a row-major one.
    pub fn of(m: &crate::cpu::SparseMatrix) -> Option<Self> {
        let (ptr, idx, vals) = m.csc()?;
        let rows = m.shape().0;
        assert!(idx.iter().all(|&i| (i as usize) < rows), "row index out of range");
        Some(Self { rows, ptr: ptr.to_vec(), entries: idx.iter().copied().zip(vals.iter().copied()).collect() })
    }

    /// Column `j`'s nonzeros.
    #[inline(always)]
    pub fn col(&self, j: usize) -> &[(u32, f32)] {
        &self.entries[self.ptr[j] as usize..self.ptr[j + 1] as usize]
    }

    /// Ask the cache for column `j`'s offset (a hint; no effect on values). With [`Self::prefetch_col`] a few
    /// columns later, a scatter over scattered columns overlaps their misses instead of waiting on each.
    #[inline(always)]
    pub fn prefetch_ptr(&self, j: usize) {
        if let Some(p) = self.ptr.get(j) {
            prefetch(p);
        }
    }

    /// Ask the cache for column `j`'s first nonzeros (a hint).
    #[inline(always)]
    pub fn prefetch_col(&self, j: usize) {
        if let Some(e) = self.ptr.get(j).and_then(|&p| self.entries.get(p as usize)) {
            prefetch(e);
        }
    }
}

/// A cache hint for the line holding `*r` (x86-64's `prefetcht0`; nothing elsewhere).
#[inline(always)]
fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault; `r` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((r as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_real_changes() {
        let mut t = Tracked::zeros(5);
        t.begin();
        t.set(3, 1.0);
        t.scatter(&Columns { rows: 5, ptr: vec![0, 2], entries: vec![(1, 2.0), (1, -2.0)] }, 0, 1.0); // back to 0: not a change
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

    /// `scatter_quiet` then `finish_except` keeps what `scatter` then `finish_except` keeps: the same values
    /// bit for bit, the same changed entries, each with the same old value or, where the two differ, quiet
    /// ones; over 2,000 random tokens of columns that move entries between quiet values (`±0`, below -89) and
    /// loud ones, several columns per token touching the same entries.
    #[test]
    fn quiet_scatter_keeps_what_scatter_and_finish_except_keep() {
        let quiet = |x: f32| (x < -89.0) | (x == 0.0);
        let n = 12;
        let (mut a, mut b) = (Tracked::zeros(n), Tracked::zeros(n));
        let mut rnd = testing::below(0x2545_f491_4f6c_dd1d);
        let (mut recorded, mut skipped) = (0usize, 0usize);
        for _ in 0..2000 {
            a.begin();
            b.begin();
            for _ in 0..1 + rnd(4) {
                let len = 1 + rnd(5) as usize;
                let idx: Vec<u32> = (0..len).map(|_| rnd(n as u64) as u32).collect();
                let vals: Vec<f32> = (0..len).map(|_| [1.0, -1.0, 0.5, 2.0][rnd(4) as usize]).collect();
                let d = [64.0, -64.0, 128.0, -128.0, 1.0, -0.5][rnd(6) as usize];
                let col = Columns { rows: n, ptr: vec![0, len as u32], entries: idx.iter().copied().zip(vals.iter().copied()).collect() };
                a.scatter(&col, 0, d);
                let before = b.len;
                b.scatter_quiet(&col, 0, d, quiet);
                recorded += b.len - before;
                skipped += len - (b.len - before);
            }
            a.finish_except(quiet);
            b.finish_except(quiet);
            assert_eq!(testing::bits(&a.v), testing::bits(&b.v));
            let sorted = |t: &Tracked| {
                let mut e: Vec<(u32, f32)> = t.ch().iter().copied().zip(t.old().iter().copied()).collect();
                e.sort_by_key(|p| p.0);
                e
            };
            let (ea, eb) = (sorted(&a), sorted(&b));
            assert_eq!(ea.iter().map(|p| p.0).collect::<Vec<_>>(), eb.iter().map(|p| p.0).collect::<Vec<_>>());
            for ((_, oa), (_, ob)) in ea.iter().zip(&eb) {
                assert!(oa.to_bits() == ob.to_bits() || (quiet(*oa) && quiet(*ob)), "old values {oa} and {ob}");
            }
        }
        // Both paths ran: adds recorded and adds left unrecorded.
        assert!(recorded > 1000 && skipped > 1000, "recorded {recorded}, skipped {skipped}");
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
        // The same writes without change stamps record the same changes, values and old values.
        let mut f = Tracked::zeros(4);
        f.begin();
        for i in [1usize, 3, 1, 2] {
            f.set_final(i, [0.0, 2.0, 0.0, -1.0][i]);
        }
        f.finish_single_writes();
        assert_eq!((f.ch().to_vec(), f.old().to_vec()), kept);
        assert_eq!(testing::bits(&f.v), testing::bits(&t.v));
        f.begin();
        f.set_final(3, -0.0); // -1 -> -0: a change; 2 -> 2: none
        f.set_final(1, 2.0);
        f.finish_single_writes();
        assert_eq!((f.ch().to_vec(), f.old().to_vec()), (vec![3], vec![-1.0]));
    }

    /// `Bits` holds exactly the mask's true indices, across word boundaries.
    #[test]
    fn bits_hold_the_mask() {
        let mut rnd = testing::below(0x9e37_79b9_7f4a_7c15);
        for n in [1usize, 63, 64, 65, 130, 1155] {
            let mask: Vec<bool> = (0..n).map(|_| rnd(3) == 0).collect();
            let b = Bits::of(&mask);
            assert!((0..n).all(|i| b.has(i) == mask[i]), "n = {n}");
            assert_eq!((0..n).filter(|&i| b.has(i)).count(), mask.iter().filter(|m| **m).count());
        }
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

    /// A deterministic xorshift generator: each call gives the next state modulo `k` (for `k > 0`).
    pub fn below(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |k| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k
        }
    }

    /// The bit patterns of `u` (to compare f32 vectors exactly, signed zeros included).
    pub fn bits(u: &[f32]) -> Vec<u32> {
        u.iter().map(|e| e.to_bits()).collect()
    }
}
