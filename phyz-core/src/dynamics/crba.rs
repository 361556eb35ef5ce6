//! Composite rigid-body algorithm: the joint-space mass matrix.
//!
//! As MuJoCo's `mj_crb`, it works in one frame per kinematic tree (world axes, about the tree's
//! root, [`Kinematics::rooted`]): each link's inertia is placed there once, composite inertias are
//! plain sums of their subtrees, and entry `(i, j)` for `j` an ancestor of `i` is `s_jᵀ I_c s_i`
//! with the degrees of freedom's motions `s` in that frame ([`Kinematics::dof_motion`]) — no
//! transform along the chain.

use nalgebra::DMatrix;

use super::kinematics::Kinematics;
use super::mass::TreeMatrix;
use crate::Scalar;
use crate::math::SpatialInertia;
use crate::model::Model;

/// The joint-space mass matrix `M(q)`, armature included on the diagonal, dense.
pub fn mass_matrix<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>) -> DMatrix<S> {
    let mut m = TreeMatrix::default();
    mass_matrix_into(model, kin, &mut Vec::new(), &mut m);
    let mut dense = DMatrix::zeros(0, 0);
    m.to_dense(&mut dense);
    dense
}

/// [`mass_matrix`] written into `m` in the tree's rows (only the entries the tree can make
/// non-zero), with the links' composite inertias (each in its tree's root frame) in
/// `composite`.
pub fn mass_matrix_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    composite: &mut Vec<SpatialInertia<S>>,
    m: &mut TreeMatrix<S>,
) {
    let tree = model.tree();
    composite.clear();
    composite.extend(tree.links.iter().enumerate().map(|(i, link)| {
        if link.last_of_body {
            model.constants().links.inertia[i].to_parent(&kin.rooted[i])
        } else {
            SpatialInertia::zero()
        }
    }));
    for (i, link) in tree.links.iter().enumerate().rev() {
        if let Some(p) = link.parent {
            let child = composite[i];
            composite[p] = composite[p] + child;
        }
    }
    // Row by row, the diagonal then each ancestor nearest first: the rows' own order.
    m.clear_for(&tree.dof_parent);
    for row in 0..model.nv() {
        let f = composite[tree.dof_link[row]].mul_motion(&kin.dof_motion[row]);
        m.push(kin.dof_motion[row].dot(&f));
        let mut ancestor = tree.dof_parent[row];
        while let Some(col) = ancestor {
            m.push(kin.dof_motion[col].dot(&f));
            ancestor = tree.dof_parent[col];
        }
    }
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            m.add_diagonal(d, joint.armature);
        }
    }
}
