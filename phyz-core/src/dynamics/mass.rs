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

impl<S: Scalar> MassFactor<S> {
    /// Factorizes the mass matrix `m` of `model`. A non-positive pivot (a degree of freedom that
    /// moves no mass) is a [`StepError::SingularMass`].
    pub fn new(model: &Model<S>, m: &DMatrix<S>) -> Result<Self, StepError> {
        Self::eliminate(m.clone(), model.tree().dof_parent.clone()).map_err(|k| {
            let link = &model.tree().links[model.tree().dof_link[k]];
            StepError::SingularMass { body: model.bodies()[link.body].name.clone() }
        })
    }

    /// Eliminates from the leaves up along `dof_parent`; a non-positive pivot is `Err(dof)`.
    fn eliminate(mut ld: DMatrix<S>, dof_parent: Vec<Option<usize>>) -> Result<Self, usize> {
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
        Ok(MassFactor { ld, dof_parent })
    }

    /// Factorizes a dense symmetric positive definite matrix (every degree of freedom the
    /// parent of the next: no sparsity to keep), or `None` if a pivot is not positive.
    pub fn dense(m: &DMatrix<S>) -> Option<Self> {
        let dof_parent = (0..m.nrows()).map(|k| k.checked_sub(1)).collect();
        Self::eliminate(m.clone(), dof_parent).ok()
    }

    /// `M⁻¹ b`.
    pub fn solve(&self, b: &DVector<S>) -> DVector<S> {
        let mut x = b.clone();
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
        x
    }
}
