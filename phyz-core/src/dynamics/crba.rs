//! Composite rigid-body algorithm: the joint-space mass matrix.

use nalgebra::DMatrix;

use super::kinematics::{Kinematics, subspace};
use crate::Scalar;
use crate::math::SpatialInertia;
use crate::model::Model;

/// The joint-space mass matrix `M(q)`, armature included on the diagonal.
pub fn mass_matrix<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>) -> DMatrix<S> {
    let mut m = DMatrix::zeros(model.nv(), model.nv());
    mass_matrix_into(model, kin, &mut Vec::new(), &mut m);
    m
}

/// [`mass_matrix`] written into `m` (resized to `nv × nv` if it is not), with the links'
/// composite inertias in `composite`.
pub fn mass_matrix_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    composite: &mut Vec<SpatialInertia<S>>,
    m: &mut DMatrix<S>,
) {
    let links = &model.tree().links;
    composite.clear();
    composite.extend_from_slice(&kin.inertia);
    for (i, link) in links.iter().enumerate().rev() {
        if let Some(p) = link.parent {
            let moved = composite[i].to_parent(&kin.local[i]);
            composite[p] = composite[p] + moved;
        }
    }
    let nv = model.nv();
    if m.shape() != (nv, nv) {
        *m = DMatrix::zeros(nv, nv);
    }
    m.fill(S::zero());
    for (i, link) in links.iter().enumerate() {
        let s = subspace(model, link);
        for (k, col) in s.cols().iter().enumerate() {
            let row = link.dof_adr + k;
            let mut f = composite[i].mul_motion(col);
            for (l, other) in s.cols().iter().enumerate() {
                m[(row, link.dof_adr + l)] = other.dot(&f);
            }
            let mut j = i;
            while let Some(p) = links[j].parent {
                f = kin.local[j].force_to_parent(&f);
                j = p;
                let ancestor = &links[j];
                for (l, other) in subspace(model, ancestor).cols().iter().enumerate() {
                    let col_index = ancestor.dof_adr + l;
                    let value = other.dot(&f);
                    m[(row, col_index)] = value;
                    m[(col_index, row)] = value;
                }
            }
        }
    }
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            m[(d, d)] += joint.armature;
        }
    }
}
