//! Composite rigid-body algorithm: the joint-space mass matrix.

use nalgebra::DMatrix;

use super::kinematics::{Kinematics, link_inertia, subspace};
use crate::Scalar;
use crate::model::Model;

/// The joint-space mass matrix `M(q)`, armature included on the diagonal.
pub fn mass_matrix<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>) -> DMatrix<S> {
    let links = &model.tree().links;
    let mut composite: Vec<_> = links.iter().map(|l| link_inertia(model, l)).collect();
    for (i, link) in links.iter().enumerate().rev() {
        if let Some(p) = link.parent {
            let moved = composite[i].to_parent(&kin.local[i]);
            composite[p] = composite[p] + moved;
        }
    }
    let mut m = DMatrix::zeros(model.nv(), model.nv());
    // Each link's motion subspace, once: the walk below reads every ancestor's for every dof.
    let subspaces: Vec<_> = links.iter().map(|l| subspace(model, l)).collect();
    for (i, link) in links.iter().enumerate() {
        let s = &subspaces[i];
        for (k, col) in s.cols().iter().enumerate() {
            let row = link.dof_adr + k;
            // The force needed to accelerate the composite body along this axis, carried up the
            // tree; its projection on each ancestor axis is one off-diagonal entry.
            let mut f = composite[i].mul_motion(col);
            for (l, other) in s.cols().iter().enumerate() {
                m[(row, link.dof_adr + l)] = other.dot(&f);
            }
            let mut j = i;
            while let Some(p) = links[j].parent {
                f = kin.local[j].force_to_parent(&f);
                j = p;
                let ancestor = &links[j];
                for (l, other) in subspaces[j].cols().iter().enumerate() {
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
    m
}
