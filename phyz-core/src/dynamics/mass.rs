//! The mass matrix's tree-structured LDLᵀ factorization, as MuJoCo's `mj_factorM`.
//!
//! `M` is dense only along ancestor chains: entry `(i, j)` can be non-zero only if one degree
//! of freedom is an ancestor of the other. Eliminating from the leaves up along `dof_parent`
//! keeps that sparsity, so the factorization costs O(n·depth²) and its solves O(n·depth), and it
//! needs no pivoting, which is what lets it run in any scalar.

use nalgebra::{DMatrix, DVector};

use crate::Scalar;
use crate::error::StepError;
use crate::model::Model;

/// `M = Lᵀ D L` with `L` unit lower-triangular along the tree (MuJoCo's `qLD` convention).
#[derive(Clone, Debug)]
pub struct MassFactor<S> {
    /// Strictly lower part: `L`; diagonal: `D`.
    ld: DMatrix<S>,
    dof_parent: Vec<Option<usize>>,
}

impl<S: Scalar> Default for MassFactor<S> {
    /// The factor of the empty matrix, storage for [`MassFactor::factorize`] to fill.
    fn default() -> Self {
        MassFactor { ld: DMatrix::zeros(0, 0), dof_parent: Vec::new() }
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
        self.dof_parent.clone_from(&model.tree().dof_parent);
        self.eliminate(m).map_err(|k| {
            let link = &model.tree().links[model.tree().dof_link[k]];
            StepError::SingularMass { body: model.bodies()[link.body].name.clone() }
        })
    }

    /// Copies `m` and eliminates from the leaves up along `dof_parent`; a non-positive pivot is
    /// `Err(dof)`.
    fn eliminate(&mut self, m: &DMatrix<S>) -> Result<(), usize> {
        if self.ld.shape() != m.shape() {
            self.ld = m.clone();
        } else {
            self.ld.copy_from(m);
        }
        let (ld, dof_parent) = (&mut self.ld, &self.dof_parent);
        for k in (0..ld.nrows()).rev() {
            let pivot = ld[(k, k)];
            if !(0..pivot.lanes()).all(|l| pivot.lane(l) > 0.0 && pivot.lane(l).is_finite()) {
                return Err(k);
            }
            let mut i = dof_parent[k];
            while let Some(ii) = i {
                let factor = ld[(k, ii)] / pivot;
                let mut j = Some(ii);
                while let Some(jj) = j {
                    let update = factor * ld[(k, jj)];
                    ld[(ii, jj)] -= update;
                    j = dof_parent[jj];
                }
                ld[(k, ii)] = factor;
                i = dof_parent[ii];
            }
        }
        Ok(())
    }

    /// Factorizes a dense symmetric positive definite matrix (every degree of freedom the
    /// parent of the next: no sparsity to keep), or `None` if a pivot is not positive.
    pub fn dense(m: &DMatrix<S>) -> Option<Self> {
        let mut factor =
            MassFactor { dof_parent: (0..m.nrows()).map(|k| k.checked_sub(1)).collect(), ..Self::default() };
        factor.eliminate(m).ok().map(|()| factor)
    }

    /// `M⁻¹ b`.
    pub fn solve(&self, b: &DVector<S>) -> DVector<S> {
        let mut x = b.clone();
        self.solve_in_place(&mut x);
        x
    }

    /// `x ← M⁻¹ x`.
    pub fn solve_in_place(&self, x: &mut DVector<S>) {
        let n = x.len();
        // x ← L⁻ᵀ x
        for k in (0..n).rev() {
            let mut i = self.dof_parent[k];
            while let Some(ii) = i {
                let update = self.ld[(k, ii)] * x[k];
                x[ii] -= update;
                i = self.dof_parent[ii];
            }
        }
        // x ← D⁻¹ x
        for k in 0..n {
            x[k] /= self.ld[(k, k)];
        }
        // x ← L⁻¹ x
        for k in 0..n {
            let mut i = self.dof_parent[k];
            while let Some(ii) = i {
                let update = self.ld[(k, ii)] * x[ii];
                x[k] -= update;
                i = self.dof_parent[ii];
            }
        }
    }
}
