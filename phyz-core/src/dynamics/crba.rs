//! Composite rigid-body algorithm: the joint-space mass matrix.
//!
//! As MuJoCo's `mj_crb`, it works in one frame per kinematic tree (world axes, about the tree's
//! root, [`Kinematics::rooted`]): each link's inertia is placed there once, composite inertias are
//! plain sums of their subtrees, and entry `(i, j)` for `j` an ancestor of `i` is `s_jᵀ I_c s_i`
//! with the degrees of freedom's motions `s` in that frame ([`Kinematics::dof_motion`]) — no
//! transform along the chain.

use nalgebra::DMatrix;

use super::kinematics::{Kinematics, place_inertias};
use super::mass::TreeMatrix;
use crate::Scalar;
use crate::math::SpatialInertia;
use crate::model::Model;

/// The joint-space mass matrix `M(q)`, armature included on the diagonal, dense.
pub fn mass_matrix<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>) -> DMatrix<S> {
    let (mut inertia, mut m) = (Vec::new(), TreeMatrix::default());
    place_inertias(model, kin, &mut inertia);
    mass_matrix_into(model, kin, &inertia, &mut Vec::new(), &mut m);
    let mut dense = DMatrix::zeros(0, 0);
    m.to_dense(&mut dense);
    dense
}

/// [`mass_matrix`] written into `m` in the tree's rows (only the entries the tree can make
/// non-zero), from the links' inertias placed in their trees' rooted frames
/// ([`place_inertias`]), with the links' composite inertias (the same frames) in `composite`.
pub fn mass_matrix_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    inertia: &[SpatialInertia<S>],
    composite: &mut Vec<SpatialInertia<S>>,
    m: &mut TreeMatrix<S>,
) {
    let tree = model.tree();
    composite.clear();
    composite.extend_from_slice(inertia);
    for (i, link) in tree.links.iter().enumerate().rev() {
        if let Some(p) = link.parent {
            let child = composite[i];
            composite[p] = composite[p] + child;
        }
    }
    m.fill_rows(&tree.dof_parent, |row, columns, values| {
        let f = composite[tree.dof_link[row]].mul_motion(&kin.dof_motion[row]);
        for (value, &col) in values.iter_mut().zip(columns) {
            *value = kin.dof_motion[col].dot(&f);
        }
    });
    for joint in model.joints() {
        let adr = joint.dof_adr();
        for d in adr..adr + joint.kind().nv() {
            m.add_diagonal(d, joint.armature);
        }
    }
}
