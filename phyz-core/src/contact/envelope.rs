//! The Cholesky factorization `H = L Lᵀ` of the Newton Hessian `H = M + Jᵀ B J` within its
//! envelope: row `i` of `L` is nonzero only from column `first[i]` on, where `first[i]` is the
//! earliest column row `i` of `H` touches — the root of its dof's chain in the kinematic tree
//! (the mass matrix couples a dof to its ancestors only), moved earlier by every contact that
//! couples it to another body's dofs. Cholesky creates no fill outside the envelope, so a scene
//! of many separate bodies (a stack of free boxes, each touching its neighbours) factorizes in
//! `O(n b²)` for its bandwidth `b` instead of `O(n³)`; a single tree degenerates to the dense
//! factorization.

use nalgebra::{DMatrix, DVector};

use crate::dynamics::TreeMatrix;

/// The Hessian is not positive definite (a non-positive or non-finite pivot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the contact problem's Hessian is not positive definite (singular mass matrix)")]
pub struct IndefiniteHessian;

/// A symmetric matrix's lower triangle within its envelope, column-major, ready to factorize.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope {
    n: usize,
    /// The last row each column may hold below the diagonal: the envelope seen by columns.
    last: Vec<usize>,
    /// Column-major `n × n`; entries above the diagonal and below `last[j]` are unused.
    lower: Vec<f64>,
}

impl Envelope {
    /// A zero matrix of order `n` whose row `i` spans columns `first[i]..=i`.
    pub fn new(first: &[usize]) -> Self {
        let mut envelope = Envelope::default();
        envelope.reset(first);
        envelope
    }

    /// [`Envelope::new`]'s shape in this value's storage, its entries left over from earlier
    /// use: call [`Envelope::fill`] before [`Envelope::add`] or [`Envelope::factorize`]. (`fill`
    /// sets every entry the factorization reads, so clearing `n²` numbers first would be wasted.)
    pub(crate) fn reset(&mut self, first: &[usize]) {
        let n = first.len();
        self.n = n;
        self.last.clear();
        self.last.extend(0..n);
        for (i, &f) in first.iter().enumerate() {
            for l in &mut self.last[f..i] {
                *l = (*l).max(i);
            }
        }
        self.lower.resize(n * n, 0.0);
    }

    /// The envelope of the symmetric `m` (each row from its first nonzero), widened so that
    /// each group of `columns` couples all its members: the first column of each row.
    pub fn spanning<'a>(m: &TreeMatrix<f64>, columns: impl IntoIterator<Item = &'a [usize]>) -> Vec<usize> {
        let mut first = Vec::new();
        Self::spanning_into(m, columns, &mut first);
        first
    }

    /// [`Envelope::spanning`] written into `first`.
    pub fn spanning_into<'a>(
        m: &TreeMatrix<f64>,
        columns: impl IntoIterator<Item = &'a [usize]>,
        first: &mut Vec<usize>,
    ) {
        first.clear();
        first.extend((0..m.dim()).map(|i| m.row(i).filter(|&(_, v)| v != 0.0).map(|(c, _)| c).fold(i, usize::min)));
        for group in columns {
            if let Some(&lowest) = group.iter().min() {
                for &i in group {
                    first[i] = first[i].min(lowest);
                }
            }
        }
    }

    /// The matrix's storage back, to fill again (the factor is spent).
    pub fn reuse(factor: EnvelopeCholesky) -> Self {
        factor.factor
    }

    /// Sets the lower triangle to that of `m` (within the envelope, which holds its rows).
    pub fn fill(&mut self, m: &TreeMatrix<f64>) {
        let n = self.n;
        for j in 0..n {
            self.lower[j * n + j..j * n + self.last[j] + 1].fill(0.0);
        }
        for i in 0..n {
            for (j, value) in m.row(i) {
                self.lower[j * n + i] = value;
            }
        }
    }

    /// Adds `value` to entry `(i, j)`, `j ≤ i` within the envelope (after [`Envelope::fill`]).
    #[inline]
    pub fn add(&mut self, i: usize, j: usize, value: f64) {
        debug_assert!(j <= i && i <= self.last[j], "({i}, {j}) outside the envelope");
        self.lower[j * self.n + i] += value;
    }

    /// Factorizes in place, column by column: the pivot's column of `L`, then its outer
    /// product taken from the columns it reaches (contiguous updates down each column, within
    /// the envelope, where all fill stays).
    pub fn factorize(mut self) -> Result<EnvelopeCholesky, IndefiniteHessian> {
        let n = self.n;
        // Half-open ranges throughout: an inclusive range's iterator checks its exhaustion at
        // every step, which this loop nest pays per entry.
        for k in 0..n {
            let end = self.last[k] + 1;
            let (done, rest) = self.lower.split_at_mut((k + 1) * n);
            let column = &mut done[k * n + k..k * n + end];
            let pivot = column[0];
            if !(pivot > 0.0 && pivot.is_finite()) {
                return Err(IndefiniteHessian);
            }
            let root = pivot.sqrt();
            column[0] = root;
            column[1..].iter_mut().for_each(|x| *x /= root);
            let below = &column[1..];
            for (offset, target) in rest.chunks_exact_mut(n).take(below.len()).enumerate() {
                let ljk = below[offset];
                if ljk != 0.0 {
                    let j = k + 1 + offset;
                    axpy(-ljk, &below[offset..], &mut target[j..end]);
                }
            }
        }
        Ok(EnvelopeCholesky { factor: self })
    }
}

/// `y += a x` over the common length of `x` and `y`, in a loop the compiler vectorizes.
#[inline]
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    for i in 0..n {
        y[i] += a * x[i];
    }
}

/// `a · b` over four running sums, which the compiler can keep in vector registers.
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let (chunks_a, chunks_b) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for k in 0..4 {
            sums[k] += x[k] * y[k];
        }
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// `H = L Lᵀ` within the envelope of `H`.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvelopeCholesky {
    factor: Envelope,
}

impl EnvelopeCholesky {
    /// Column `k` of `L` from the diagonal to the end of its envelope.
    fn column(&self, k: usize) -> &[f64] {
        let n = self.factor.n;
        &self.factor.lower[k * n + k..=k * n + self.factor.last[k]]
    }

    /// `H⁻¹ b`.
    pub fn solve(&self, b: &DVector<f64>) -> DVector<f64> {
        let mut x = b.clone();
        self.solve_in_place(x.as_mut_slice());
        x
    }

    /// `x ← H⁻¹ x`: forward substitution with `L`, back substitution with `Lᵀ`.
    pub fn solve_in_place(&self, x: &mut [f64]) {
        let n = self.factor.n;
        for k in 0..n {
            let column = self.column(k);
            x[k] /= column[0];
            let xk = x[k];
            axpy(-xk, &column[1..], &mut x[k + 1..k + column.len()]);
        }
        for k in (0..n).rev() {
            let column = self.column(k);
            let below = dot(&column[1..], &x[k + 1..k + column.len()]);
            x[k] = (x[k] - below) / column[0];
        }
    }

    /// `X ← H⁻¹ X` for `width` right-hand sides stored entry by entry (entry `i` of side `k` at
    /// `i·width + k`): one pass over the factor for all of them.
    pub fn solve_many_in_place(&self, x: &mut [f64], width: usize) {
        let n = self.factor.n;
        debug_assert_eq!(x.len(), n * width, "the right-hand sides do not fit the factor");
        for k in 0..n {
            let column = self.column(k);
            let (head, tail) = x.split_at_mut((k + 1) * width);
            let xk = &mut head[k * width..];
            xk.iter_mut().for_each(|v| *v /= column[0]);
            for (l, row) in column[1..].iter().zip(tail.chunks_exact_mut(width)) {
                row.iter_mut().zip(xk.iter()).for_each(|(r, v)| *r -= l * v);
            }
        }
        for k in (0..n).rev() {
            let column = self.column(k);
            let (head, tail) = x.split_at_mut((k + 1) * width);
            let xk = &mut head[k * width..];
            for (l, row) in column[1..].iter().zip(tail.chunks_exact(width)) {
                xk.iter_mut().zip(row).for_each(|(v, r)| *v -= l * r);
            }
            xk.iter_mut().for_each(|v| *v /= column[0]);
        }
    }

    /// The diagonal of `L`.
    pub fn pivots(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.factor.n).map(|k| self.column(k)[0])
    }

    /// `L Lᵀ`, dense.
    pub fn matrix(&self) -> DMatrix<f64> {
        let n = self.factor.n;
        let l =
            DMatrix::from_fn(
                n,
                n,
                |i, j| {
                    if j <= i && i <= self.factor.last[j] { self.factor.lower[j * n + i] } else { 0.0 }
                },
            );
        &l * l.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against nalgebra's dense Cholesky, on a matrix with a block-banded envelope (three
    /// bodies, the second and third coupled) and on a dense one.
    #[test]
    fn matches_the_dense_factorization() {
        let n = 9;
        let coupled = |i: usize, j: usize| i / 3 == j / 3 || (i >= 3 && j >= 3);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for banded in [true, false] {
            let a = DMatrix::from_fn(n, n, |i, j| if !banded || coupled(i, j) { next() } else { 0.0 });
            let h = &a * a.transpose() + DMatrix::identity(n, n) * 0.5;
            let h = DMatrix::from_fn(n, n, |i, j| if !banded || coupled(i, j) { h[(i, j)] } else { 0.0 });
            let tree = TreeMatrix::from_dense(&h);
            let mut envelope = Envelope::new(&Envelope::spanning(&tree, std::iter::empty()));
            envelope.fill(&tree);
            let factor = envelope.factorize().expect("positive definite");
            let b = DVector::from_fn(n, |i, _| i as f64 - 2.0);
            let dense = h.clone().cholesky().expect("positive definite").solve(&b);
            assert!((factor.solve(&b) - &dense).amax() < 1e-12);
            // Three right-hand sides at once, entry by entry.
            let mut many: Vec<f64> = (0..n).flat_map(|i| [b[i], 2.0 * b[i], -b[i]]).collect();
            factor.solve_many_in_place(&mut many, 3);
            let solved = |k: usize, scale: f64| (0..n).all(|i| (many[i * 3 + k] - scale * dense[i]).abs() < 1e-12);
            assert!(solved(0, 1.0) && solved(1, 2.0) && solved(2, -1.0));
            assert!((factor.matrix() - &h).amax() < 1e-12);
        }
        let mut indefinite = Envelope::new(&[0, 0]);
        indefinite.fill(&TreeMatrix::from_dense(&DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0])));
        assert_eq!(indefinite.factorize().err(), Some(IndefiniteHessian));
    }
}
