//! A matrix stored by rows, each row keeping only the columns it can reach (MuJoCo's sparse
//! `efc_J`): a constraint row moves the degrees of freedom of two bodies' chains, so products
//! with it cost what those chains hold, not `nv`. The rows of one constraint share one list of
//! columns.

use nalgebra::{DMatrix, DVector};

use crate::Scalar;

/// Where one row's columns and values live.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    /// The row's columns are `columns[first..first + len]`, ascending.
    first: usize,
    len: usize,
    /// Its values are `values[values..values + len]`.
    values: usize,
}

/// A row-sparse `rows × ncols` matrix; the entries of a row outside its columns are zero.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseRows<S> {
    ncols: usize,
    rows: Vec<Span>,
    columns: Vec<usize>,
    values: Vec<S>,
}

impl<S> Default for SparseRows<S> {
    fn default() -> Self {
        SparseRows { ncols: 0, rows: Vec::new(), columns: Vec::new(), values: Vec::new() }
    }
}

impl<S: Scalar> SparseRows<S> {
    /// A matrix of no rows and `ncols` columns.
    pub fn new(ncols: usize) -> Self {
        SparseRows { ncols, ..SparseRows::default() }
    }

    /// Every entry of `dense` kept (every row reaching every column).
    pub fn dense(dense: &DMatrix<S>) -> Self {
        let mut out = SparseRows::new(dense.ncols());
        out.push_rows(0..dense.ncols(), dense.nrows());
        for (i, span) in out.rows.iter().enumerate() {
            for (k, x) in out.values[span.values..span.values + span.len].iter_mut().enumerate() {
                *x = dense[(i, k)];
            }
        }
        out
    }

    /// Back to no rows over `ncols` columns, keeping the storage.
    pub fn clear(&mut self, ncols: usize) {
        self.ncols = ncols;
        self.rows.clear();
        self.columns.clear();
        self.values.clear();
    }

    pub fn nrows(&self) -> usize {
        self.rows.len()
    }

    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Appends `count` zero rows over `columns` (ascending, below `ncols`), which they share;
    /// returns the first new row's index.
    pub fn push_rows(&mut self, columns: impl IntoIterator<Item = usize>, count: usize) -> usize {
        let first = self.columns.len();
        self.columns.extend(columns);
        let len = self.columns.len() - first;
        debug_assert!(self.columns[first..].windows(2).all(|w| w[0] < w[1]), "columns must ascend");
        debug_assert!(self.columns[first..].iter().all(|&j| j < self.ncols), "a column past the matrix");
        let at = self.rows.len();
        for _ in 0..count {
            self.rows.push(Span { first, len, values: self.values.len() });
            self.values.resize(self.values.len() + len, S::zero());
        }
        at
    }

    /// Appends a zero row over the columns of row `like`; returns its index.
    fn push_row_like(&mut self, like: usize) -> usize {
        let span = Span { values: self.values.len(), ..self.rows[like] };
        self.values.resize(self.values.len() + span.len, S::zero());
        self.rows.push(span);
        self.rows.len() - 1
    }

    /// Appends the rows `rows` of `other` (whose columns this matrix has), their values mapped
    /// by `f`; rows that follow one another there over one list of columns share one here.
    fn extend_rows<T: Scalar>(
        &mut self,
        other: &SparseRows<T>,
        rows: impl IntoIterator<Item = usize>,
        f: impl Fn(&T) -> S,
    ) {
        // The last row's columns there (where they start, how many) and where they start here.
        let mut previous: Option<(usize, usize, usize)> = None;
        for i in rows {
            let span = other.rows[i];
            let first = match previous {
                // An empty list starts where the next one does: the length tells them apart.
                Some((theirs, len, ours)) if (theirs, len) == (span.first, span.len) => ours,
                _ => {
                    self.columns.extend_from_slice(&other.columns[span.first..span.first + span.len]);
                    self.columns.len() - span.len
                }
            };
            previous = Some((span.first, span.len, first));
            self.rows.push(Span { first, len: span.len, values: self.values.len() });
            self.values.extend(other.values[span.values..span.values + span.len].iter().map(&f));
        }
    }

    /// Removes rows `rows`, pushed one after another (their values stored together); the
    /// columns they listed stay for the rows that share them.
    pub fn remove_rows(&mut self, rows: std::ops::Range<usize>) {
        if rows.is_empty() {
            return;
        }
        let (first, last) = (self.rows[rows.start], self.rows[rows.end - 1]);
        let values = first.values..last.values + last.len;
        debug_assert_eq!(self.rows[rows.clone()].iter().map(|s| s.len).sum::<usize>(), values.len());
        self.values.drain(values.clone());
        self.rows.drain(rows.clone());
        for span in &mut self.rows[rows.start..] {
            span.values -= values.len();
        }
    }

    /// This matrix made a copy of `other`, in its own storage.
    pub fn copy_from(&mut self, other: &SparseRows<S>) {
        self.ncols = other.ncols;
        self.rows.clone_from(&other.rows);
        self.columns.clone_from(&other.columns);
        self.values.clone_from(&other.values);
    }

    /// Row `i`: its columns and its values on them.
    pub fn row(&self, i: usize) -> (&[usize], &[S]) {
        let span = self.rows[i];
        (&self.columns[span.first..span.first + span.len], &self.values[span.values..span.values + span.len])
    }

    /// Row `i`, its values mutable.
    pub fn row_mut(&mut self, i: usize) -> (&[usize], &mut [S]) {
        let span = self.rows[i];
        (&self.columns[span.first..span.first + span.len], &mut self.values[span.values..span.values + span.len])
    }

    /// Appends the row `row a + s · row b` over their columns (rows `a` and `b` share theirs);
    /// returns its index.
    pub fn push_combination(&mut self, a: usize, b: usize, s: S) -> usize {
        let (ra, rb) = (self.rows[a], self.rows[b]);
        debug_assert_eq!(ra.first, rb.first, "the rows must share their columns");
        let at = self.push_row_like(a);
        let start = self.rows[at].values;
        for k in 0..ra.len {
            self.values[start + k] = self.values[ra.values + k] + s * self.values[rb.values + k];
        }
        at
    }

    /// Every stored value (real parts of a device's numbers are read through these).
    pub fn values(&self) -> &[S] {
        &self.values
    }

    /// The columns rows `rows` share, where they share one list (rows pushed together do).
    pub fn shared_columns(&self, rows: std::ops::Range<usize>) -> Option<&[usize]> {
        let first = *self.rows.get(rows.start)?;
        let shared = self.rows[rows].iter().all(|span| span.first == first.first && span.len == first.len);
        shared.then(|| &self.columns[first.first..first.first + first.len])
    }

    /// Row `i` with its zeros written out.
    pub fn dense_row(&self, i: usize) -> DVector<S> {
        let mut out = DVector::zeros(self.ncols);
        let (columns, values) = self.row(i);
        for (&j, &a) in columns.iter().zip(values) {
            out[j] = a;
        }
        out
    }

    /// `row i · x`.
    pub fn row_dot(&self, i: usize, x: &[S]) -> S {
        let (columns, values) = self.row(i);
        columns.iter().zip(values).fold(S::zero(), |sum, (&j, &a)| sum + a * x[j])
    }

    /// `out ← A x`.
    pub fn mul_into(&self, x: &DVector<S>, out: &mut DVector<S>) {
        crate::math::zero_vector(out, self.nrows());
        for (i, y) in out.iter_mut().enumerate() {
            *y = self.row_dot(i, x.as_slice());
        }
    }

    /// `A x`.
    pub fn mul(&self, x: &DVector<S>) -> DVector<S> {
        let mut out = DVector::zeros(self.nrows());
        self.mul_into(x, &mut out);
        out
    }

    /// `Aᵀ f`.
    pub fn transpose_times(&self, f: &DVector<S>) -> DVector<S> {
        let mut out = DVector::zeros(self.ncols);
        for (i, &fi) in f.iter().enumerate() {
            let (columns, values) = self.row(i);
            for (&j, &a) in columns.iter().zip(values) {
                out[j] += a * fi;
            }
        }
        out
    }

    /// The rows `rows` of this matrix, their values mapped by `f`.
    pub fn select_rows<T: Scalar>(&self, rows: impl IntoIterator<Item = usize>, f: impl Fn(&S) -> T) -> SparseRows<T> {
        let mut out = SparseRows::new(self.ncols);
        out.extend_rows(self, rows, f);
        out
    }

    /// Every value mapped by `f`.
    pub fn map<T: Scalar>(&self, f: impl Fn(&S) -> T) -> SparseRows<T> {
        SparseRows {
            ncols: self.ncols,
            rows: self.rows.clone(),
            columns: self.columns.clone(),
            values: self.values.iter().map(f).collect(),
        }
    }

    /// The matrix with its zeros written out.
    pub fn to_dense(&self) -> DMatrix<S> {
        DMatrix::from_fn(self.nrows(), self.ncols, |i, j| {
            let (columns, values) = self.row(i);
            columns.binary_search(&j).map_or(S::zero(), |k| values[k])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_agree_with_the_dense_matrix() {
        let mut a = SparseRows::new(5);
        let first = a.push_rows([0, 2, 3], 2);
        a.row_mut(first).1.copy_from_slice(&[1.0, 2.0, 3.0]);
        a.row_mut(first + 1).1.copy_from_slice(&[-1.0, 0.5, 4.0]);
        let third = a.push_combination(first, first + 1, 2.0);
        assert_eq!(a.row(third).1, &[-1.0, 3.0, 11.0]);
        let fourth = a.push_rows([4], 1);
        a.row_mut(fourth).1[0] = 9.0;
        let dense = a.to_dense();
        assert_eq!(dense.nrows(), 4);
        assert_eq!(dense[(0, 1)], 0.0);
        assert_eq!(dense[(1, 3)], 4.0);
        let x = DVector::from_vec(vec![1.0, -2.0, 3.0, 0.25, -1.5]);
        assert_eq!(a.mul(&x), &dense * &x);
        let f = DVector::from_vec(vec![0.5, -1.0, 2.0, 3.0]);
        assert_eq!(a.transpose_times(&f), dense.tr_mul(&f));
        let picked = a.select_rows([3, 1], |&v| 2.0 * v);
        assert_eq!(picked.to_dense(), DMatrix::from_rows(&[dense.row(3) * 2.0, dense.row(1) * 2.0]));
        assert_eq!(SparseRows::dense(&dense).to_dense(), dense);
        // A row over no column, then rows over some: a copy keeps each row's own columns.
        let mut c = SparseRows::new(5);
        c.push_rows([], 1);
        let at = c.push_rows([1, 4], 2);
        c.row_mut(at).1.copy_from_slice(&[2.0, 3.0]);
        c.row_mut(at + 1).1.copy_from_slice(&[-1.0, 5.0]);
        assert_eq!(c.select_rows(0..3, |&v| v).to_dense(), c.to_dense());
        assert_eq!(c.select_rows([1, 2], |&v| v).to_dense(), c.to_dense().rows(1, 2));
        let mut b = a.clone();
        b.remove_rows(1..3);
        assert_eq!(b.to_dense(), DMatrix::from_rows(&[dense.row(0), dense.row(3)]));
    }
}
