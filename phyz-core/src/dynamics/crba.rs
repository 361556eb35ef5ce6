//! Composite rigid-body algorithm: the joint-space mass matrix.
//!
//! As MuJoCo's `mj_crb`, it works in one frame per kinematic tree (world axes, about the tree's
//! root, [`Kinematics::rooted`]): each link's inertia is placed there once, composite inertias are
//! plain sums of their subtrees, and entry `(i, j)` for `j` an ancestor of `i` is `s_jᵀ I_c s_i`
//! with the degrees of freedom's motions `s` in that frame ([`Kinematics::dof_motion`]) — no
//! transform along the chain.

use nalgebra::DMatrix;

use super::kinematics::Kinematics;
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
/// composite inertias (each in its tree's root frame) in `composite`.
pub fn mass_matrix_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    composite: &mut Vec<SpatialInertia<S>>,
    m: &mut DMatrix<S>,
) {
    let tree = model.tree();
    composite.clear();
    composite.extend(tree.links.iter().enumerate().map(|(i, link)| {
        if link.last_of_body { kin.inertia[i].to_parent(&kin.rooted[i]) } else { SpatialInertia::zero() }
    }));
    for (i, link) in tree.links.iter().enumerate().rev() {
        if let Some(p) = link.parent {
            let child = composite[i];
            composite[p] = composite[p] + child;
        }
    }
    let nv = model.nv();
    if m.shape() != (nv, nv) {
        *m = DMatrix::zeros(nv, nv);
    }
    m.as_mut_slice().fill(S::zero());
    for row in 0..nv {
        let f = composite[tree.dof_link[row]].mul_motion(&kin.dof_motion[row]);
        m[(row, row)] = kin.dof_motion[row].dot(&f);
        let mut ancestor = tree.dof_parent[row];
        while let Some(col) = ancestor {
            let value = kin.dof_motion[col].dot(&f);
            m[(row, col)] = value;
            m[(col, row)] = value;
            ancestor = tree.dof_parent[col];
        }
    }
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            m[(d, d)] += joint.armature;
        }
    }
}
