//! The mass matrix's tree-structured LDLᵀ factorization, as MuJoCo's `mj_factorM`.
//!
//! `M` is dense only along ancestor chains: entry `(i, j)` can be non-zero only if one degree
//! of freedom is an ancestor of the other. Eliminating from the leaves up along `dof_parent`
//! keeps that sparsity, so the factorization costs O(n·depth²) and its solves O(n·depth), and it
//! needs no pivoting, which is what lets it run in any scalar.
//!
//! The factor is stored by rows, each row holding only its ancestor chain, nearest first (as
//! MuJoCo's compressed `qLD`). A degree of freedom's ancestors are then a tail of each of its
//! descendants' rows, so eliminating one row updates an ancestor's row with one contiguous
//! `axpy` instead of a walk over the tree.

use nalgebra::{DMatrix, DVector};

use crate::Scalar;
use crate::error::StepError;
use crate::math::zero_matrix;
use crate::model::Model;

/// The error for the degree of freedom `k`'s non-positive pivot: its body moves no mass.
fn singular<S: Scalar>(model: &Model<S>, k: usize) -> StepError {
    let link = &model.tree().links[model.tree().dof_link[k]];
    StepError::SingularMass { body: model.bodies()[link.body].name.clone() }
}

/// A symmetric matrix with the mass matrix's tree sparsity, stored as MuJoCo's compressed `qM`:
/// row `k` holds entry `(k, k)`, then `(k, a)` for each ancestor `a` of `k`, nearest first.
/// The composite rigid-body algorithm writes `M` in this order, and the factor keeps it: no
/// `nv × nv` storage is touched on a step that does not need it.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeMatrix<S> {
    /// Row `k` at `start[k]..start[k + 1]`.
    values: Vec<S>,
    /// The column of each entry of `values` (`k` itself for the diagonal), and where that
    /// column's own row starts.
    columns: Vec<usize>,
    column_start: Vec<usize>,
    start: Vec<usize>,
    /// The structure the rows were laid out for.
    dof_parent: Vec<Option<usize>>,
}

impl<S> Default for TreeMatrix<S> {
    /// The empty matrix.
    fn default() -> Self {
        TreeMatrix {
            values: Vec::new(),
            columns: Vec::new(),
            column_start: Vec::new(),
            start: vec![0],
            dof_parent: Vec::new(),
        }
    }
}

impl<S: Scalar> TreeMatrix<S> {
    /// Lays the rows out for the tree `dof_parent` (kept while the tree stays the same) and
    /// clears the values.
    pub(crate) fn clear_for(&mut self, dof_parent: &[Option<usize>]) {
        self.values.clear();
        if self.dof_parent == dof_parent {
            return;
        }
        self.dof_parent.clear();
        self.dof_parent.extend_from_slice(dof_parent);
        self.columns.clear();
        self.start.clear();
        self.start.push(0);
        for k in 0..dof_parent.len() {
            let mut column = Some(k);
            while let Some(c) = column {
                self.columns.push(c);
                column = dof_parent[c];
            }
            self.start.push(self.columns.len());
        }
        self.column_start.clear();
        self.column_start.extend(self.columns.iter().map(|&c| self.start[c]));
    }

    /// `from`'s entries as constants of `S` (no derivative), laid out as `from` is.
    pub fn set_constant(&mut self, from: &TreeMatrix<f64>) {
        self.clear_for(&from.dof_parent);
        self.values.extend(from.values.iter().map(|&x| S::from_f64(x)));
    }

    /// Lays the rows out for the tree `dof_parent` and fills each with `row(k, columns, values)`:
    /// row `k`'s columns (`k`, then its ancestors nearest first) and the values to write.
    pub(crate) fn fill_rows(&mut self, dof_parent: &[Option<usize>], mut row: impl FnMut(usize, &[usize], &mut [S])) {
        self.clear_for(dof_parent);
        self.values.resize(self.columns.len(), S::zero());
        let TreeMatrix { values, columns, start, .. } = self;
        for (k, range) in start.windows(2).enumerate() {
            row(k, &columns[range[0]..range[1]], &mut values[range[0]..range[1]]);
        }
    }

    /// Adds `d` to the diagonal entry `(k, k)`.
    pub fn add_diagonal(&mut self, k: usize, d: S) {
        self.values[self.start[k]] += d;
    }

    /// The tree's entries of the dense symmetric `m`, laid out for `dof_parent`.
    fn copy_dense(&mut self, dof_parent: &[Option<usize>], m: &DMatrix<S>) {
        self.clear_for(dof_parent);
        for k in 0..self.start.len() - 1 {
            let TreeMatrix { values, columns, start, .. } = self;
            values.extend(columns[start[k]..start[k + 1]].iter().map(|&c| m[(k, c)]));
        }
    }

    /// The dense symmetric `m` kept whole, laid out as a chain (each degree of freedom the
    /// parent of the next): a matrix with no tree behind it.
    pub fn from_dense(m: &DMatrix<S>) -> Self {
        let mut out = TreeMatrix::default();
        out.copy_dense(&chain(m.nrows()), m);
        out
    }

    /// This matrix made `from`'s, in this value's storage (allocation-free once the layouts
    /// match).
    pub fn copy_from(&mut self, from: &TreeMatrix<S>) {
        self.clear_for(&from.dof_parent);
        self.values.extend_from_slice(&from.values);
    }

    /// Each entry mapped by `f` (a batch lane's value, a constant of another scalar).
    pub fn map<T: Scalar>(&self, f: impl Fn(S) -> T) -> TreeMatrix<T> {
        TreeMatrix {
            values: self.values.iter().map(|&x| f(x)).collect(),
            columns: self.columns.clone(),
            column_start: self.column_start.clone(),
            start: self.start.clone(),
            dof_parent: self.dof_parent.clone(),
        }
    }

    /// The stored entries, row after row.
    pub fn values(&self) -> &[S] {
        &self.values
    }

    /// The number of rows (and columns).
    pub fn dim(&self) -> usize {
        self.start.len() - 1
    }

    /// The diagonal entry `(k, k)`.
    pub fn diagonal(&self, k: usize) -> S {
        self.values[self.start[k]]
    }

    /// Row `k`'s stored entries: `(k, k)` first, then `(k, a)` for each ancestor `a`, nearest
    /// first, as `(column, value)` (the entries above the diagonal are their mirror).
    pub fn row(&self, k: usize) -> impl Iterator<Item = (usize, S)> + '_ {
        let range = self.start[k]..self.start[k + 1];
        self.columns[range.clone()].iter().copied().zip(self.values[range].iter().copied())
    }

    /// `out += M x`, both of length [`TreeMatrix::dim`]. Each entry of `out` sums its terms in
    /// ascending column order, as a dense product does (row `k` takes its ancestors' columns,
    /// farthest first, then its own; its descendants' come later, each row in turn): the
    /// result is the dense product's to the last bit.
    pub fn mul_add(&self, x: &[S], out: &mut [S]) {
        let n = self.dim();
        assert!(x.len() == n && out.len() == n, "a product with a matrix of {n} rows");
        for k in 0..n {
            let (range, xk) = (self.start[k]..self.start[k + 1], x[k]);
            let (diagonal, ancestors) = (self.values[range.start], range.start + 1..range.end);
            let (before, rest) = out.split_at_mut(k);
            let mut sum = rest[0];
            for (&v, &c) in self.values[ancestors.clone()].iter().zip(&self.columns[ancestors]).rev() {
                sum += v * x[c];
                before[c] += v * xk;
            }
            rest[0] = sum + diagonal * xk;
        }
    }

    /// `M B`, column by column.
    pub fn mul_columns(&self, b: &DMatrix<S>) -> DMatrix<S> {
        let mut out = DMatrix::zeros(b.nrows(), b.ncols());
        let n = b.nrows().max(1);
        for (column, x) in out.as_mut_slice().chunks_exact_mut(n).zip(b.as_slice().chunks_exact(n)) {
            self.mul_add(x, column);
        }
        out
    }

    /// The whole matrix, written into `out` (resized to `n × n` if it is not).
    pub fn to_dense(&self, out: &mut DMatrix<S>) {
        let n = self.start.len() - 1;
        zero_matrix(out, n, n);
        for k in 0..n {
            for (&value, &c) in self.values[self.start[k]..self.start[k + 1]].iter().zip(&self.columns[self.start[k]..])
            {
                out[(k, c)] = value;
                out[(c, k)] = value;
            }
        }
    }
}

/// The tree of a chain of `n` degrees of freedom, each the parent of the next.
fn chain(n: usize) -> Vec<Option<usize>> {
    (0..n).map(|k| k.checked_sub(1)).collect()
}

/// `M = Lᵀ D L` with `L` unit lower-triangular along the tree (MuJoCo's `qLD` convention), in
/// `M`'s own sparse rows: row `k` holds `D_k`, then `L(k, a)` for each ancestor `a`.
#[derive(Clone, Debug)]
pub struct MassFactor<S> {
    rows: TreeMatrix<S>,
}

impl<S: Scalar> Default for MassFactor<S> {
    /// The factor of the empty matrix, storage for [`MassFactor::factorize`] to fill.
    fn default() -> Self {
        MassFactor { rows: TreeMatrix::default() }
    }
}

impl<S: Scalar> MassFactor<S> {
    /// Factorizes the mass matrix `m` of `model`. A non-positive pivot (a degree of freedom that
    /// moves no mass) is a [`StepError::SingularMass`].
    pub fn new(model: &Model<S>, m: &DMatrix<S>) -> Result<Self, StepError> {
        let mut factor = MassFactor::default();
        factor.factorize(model, m)?;
        Ok(factor)
    }

    /// [`MassFactor::new`] in this value's storage.
    pub fn factorize(&mut self, model: &Model<S>, m: &DMatrix<S>) -> Result<(), StepError> {
        self.rows.copy_dense(&model.tree().dof_parent, m);
        self.eliminate().map_err(|k| singular(model, k))
    }

    /// Factorizes `m` plus the diagonal `extra` (when given), `m` in the tree's rows of
    /// `model` (as [`crate::dynamics::crba::mass_matrix_into`] writes it).
    pub fn factorize_tree(
        &mut self,
        model: &Model<S>,
        m: &TreeMatrix<S>,
        extra: Option<&DVector<S>>,
    ) -> Result<(), StepError> {
        self.rows.clear_for(&m.dof_parent);
        self.rows.values.extend_from_slice(&m.values);
        for (k, &d) in extra.into_iter().flatten().enumerate() {
            self.rows.add_diagonal(k, d);
        }
        self.eliminate().map_err(|k| singular(model, k))
    }

    /// Factorizes `m` in its own rows, or `None` if a pivot is not positive (in some batch
    /// lane).
    pub fn of(m: &TreeMatrix<S>) -> Option<Self> {
        let mut factor = Self::default();
        factor.rows.copy_from(m);
        factor.eliminate().ok().map(|()| factor)
    }

    /// Eliminates the rows from the leaves up; a non-positive pivot is `Err(dof)` (the first
    /// met from the leaves up).
    fn eliminate(&mut self) -> Result<(), usize> {
        let TreeMatrix { values, column_start, start, .. } = &mut self.rows;
        for k in (0..start.len() - 1).rev() {
            let (before, rest) = values.split_at_mut(start[k]);
            let len = start[k + 1] - start[k];
            let (row, ancestors) = (&mut rest[..len], &column_start[start[k]..start[k] + len]);
            let pivot = row[0];
            // Row `k`'s entries from position `t` on are the chain of its ancestor at `t`, which
            // is that ancestor's row whole (as long as the rest of row `k`).
            for t in 1..len {
                let factor = row[t] / pivot;
                let ancestor = &mut before[ancestors[t]..ancestors[t] + (len - t)];
                let tail = &row[t..];
                for i in 0..tail.len() {
                    ancestor[i] -= factor * tail[i];
                }
                row[t] = factor;
            }
        }
        // Checked once all are made (a bad pivot spoils only rows eliminated after it): pivots
        // on a device are then read in one transfer, not one wait each.
        let pivots = || (0..start.len().saturating_sub(1)).rev().map(|k| (k, values[start[k]]));
        S::prefetch(pivots().map(|(_, p)| p));
        match pivots().find(|(_, p)| !(0..p.lanes()).all(|l| p.lane(l) > 0.0 && p.lane(l).is_finite())) {
            Some((k, _)) => Err(k),
            None => Ok(()),
        }
    }

    /// The number of degrees of freedom.
    pub fn dim(&self) -> usize {
        self.rows.dim()
    }

    /// `M⁻¹ b`.
    pub fn solve(&self, b: &DVector<S>) -> DVector<S> {
        let mut x = b.clone();
        self.solve_in_place(&mut x);
        x
    }

    /// `x ← M⁻¹ x`.
    pub fn solve_in_place(&self, x: &mut DVector<S>) {
        self.solve_slice(x.as_mut_slice());
    }

    /// `M⁻¹ B`, column by column.
    pub fn solve_columns(&self, b: &DMatrix<S>) -> DMatrix<S> {
        let mut x = b.clone();
        let n = x.nrows();
        x.as_mut_slice().chunks_exact_mut(n.max(1)).for_each(|column| self.solve_slice(column));
        x
    }

    /// `x ← M⁻¹ x` on one vector's entries.
    pub fn solve_slice(&self, x: &mut [S]) {
        let TreeMatrix { values, columns, start, .. } = &self.rows;
        let n = start.len() - 1;
        assert_eq!(x.len(), n, "a vector of {} entries solved with the factor of {n} degrees of freedom", x.len());
        // x ← L⁻ᵀ x
        for k in (0..n).rev() {
            let (range, xk) = (start[k] + 1..start[k + 1], x[k]);
            for (&l, &c) in values[range.clone()].iter().zip(&columns[range]) {
                x[c] -= l * xk;
            }
        }
        // x ← D⁻¹ x, then x ← L⁻¹ x
        for k in 0..n {
            let range = start[k] + 1..start[k + 1];
            let below =
                values[range.clone()].iter().zip(&columns[range]).fold(S::zero(), |sum, (&l, &c)| sum + l * x[c]);
            x[k] = x[k] / values[start[k]] - below;
        }
    }
}
