//! Articulated-body algorithm: forward dynamics in O(n), by a route independent of the step's
//! (which factorizes the mass matrix, as MuJoCo does): the check that both agree.

use nalgebra::{DVector, Matrix3, Matrix6, Vector6};

use super::kinematics::{Kinematics, dofs};
use crate::Scalar;
use crate::error::StepError;
use crate::math::{Force, Motion};
use crate::model::Model;
use crate::model::tree::LinkJoint;

/// The joint accelerations produced by the generalized forces `tau` at velocity `qvel` under
/// gravity: `M(q)⁻¹ (tau − C(q, qvel))`, with `M` including armature plus `extra_diagonal` (per
/// degree of freedom; the Euler integrator passes `dt` times the dampers' slopes there to
/// integrate damping implicitly).
///
/// A link whose articulated inertia along its own axes is not positive definite (a joint that
/// moves no mass) is a [`StepError::SingularMass`].
pub fn forward_dynamics<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
) -> Result<DVector<S>, StepError> {
    let mut qacc = DVector::zeros(model.nv());
    forward_dynamics_into(model, kin, qvel, tau, extra_diagonal, &mut AbaBuffers::default(), &mut qacc)?;
    Ok(qacc)
}

/// The per-link quantities of the articulated-body algorithm, kept between calls so that a
/// step reuses their storage.
#[derive(Clone, Debug)]
pub struct AbaBuffers<S: Scalar> {
    vel: Vec<Motion<S>>,
    bias_acc: Vec<Motion<S>>,
    inertia: Vec<Matrix6<S>>,
    bias_force: Vec<Force<S>>,
    /// Per link: `U = IA·S` (as 6-vectors), `D⁻¹` and `u = τ − Sᵀ pA`.
    u_cols: Vec<[Vector6<S>; 3]>,
    d_inv: Vec<Matrix3<S>>,
    u_res: Vec<[S; 3]>,
    acc: Vec<Motion<S>>,
}

impl<S: Scalar> Default for AbaBuffers<S> {
    fn default() -> Self {
        AbaBuffers {
            vel: Vec::new(),
            bias_acc: Vec::new(),
            inertia: Vec::new(),
            bias_force: Vec::new(),
            u_cols: Vec::new(),
            d_inv: Vec::new(),
            u_res: Vec::new(),
            acc: Vec::new(),
        }
    }
}

/// [`forward_dynamics`] written into `qacc` (length `nv`), with the links' quantities in
/// `buffers`: Featherstone's three passes.
pub fn forward_dynamics_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
    buffers: &mut AbaBuffers<S>,
    qacc: &mut DVector<S>,
) -> Result<(), StepError> {
    velocities(model, kin, qvel, buffers);
    articulate(model, kin, tau, extra_diagonal, buffers)?;
    accelerations(model, kin, buffers, qacc);
    Ok(())
}

/// Outward: each link's velocity, velocity-product acceleration, bias force and rigid inertia.
fn velocities<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>, buffers: &mut AbaBuffers<S>) {
    let AbaBuffers { vel, bias_acc, inertia, bias_force, .. } = buffers;
    vel.clear();
    bias_acc.clear();
    inertia.clear();
    bias_force.clear();
    for (i, link) in model.tree().links.iter().enumerate() {
        let vj = model.constants().links.subspace[i].apply(dofs(link, qvel));
        let v = link.parent.map_or_else(Motion::zero, |p| kin.local[i].motion_to_child(&vel[p])) + vj;
        let rigid = model.constants().links.inertia[i];
        bias_acc.push(v.cross_motion(&vj));
        bias_force.push(v.cross_force(&rigid.mul_motion(&v)));
        inertia.push(rigid.to_matrix());
        vel.push(v);
    }
}

/// Inward: through each joint, the parent sees the articulated inertia less what the joint's
/// own motion absorbs, and a bias force that includes the joint's applied force. Keeps
/// `U = IA·S`, `D⁻¹` and `u = τ − Sᵀ pA` per link for the outward pass.
fn articulate<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    tau: &DVector<S>,
    extra_diagonal: Option<&DVector<S>>,
    buffers: &mut AbaBuffers<S>,
) -> Result<(), StepError> {
    let links = &model.tree().links;
    let n = links.len();
    let AbaBuffers { bias_acc, inertia, bias_force, u_cols, d_inv, u_res, .. } = buffers;
    u_cols.clear();
    u_cols.resize(n, [Vector6::zeros(); 3]);
    d_inv.clear();
    d_inv.resize(n, Matrix3::zeros());
    u_res.clear();
    u_res.resize(n, [S::zero(); 3]);
    for (i, link) in links.iter().enumerate().rev() {
        let cols = model.constants().links.subspace[i].cols();
        let nd = cols.len();
        let mut ia = inertia[i];
        let mut joint_force = Force::zero();
        if nd > 0 {
            let armature = armature_of(model, link.joint);
            let mut d = Matrix3::identity();
            for (k, ck) in cols.iter().enumerate() {
                u_cols[i][k] = ia * ck.to_vector();
                u_res[i][k] = tau[link.dof_adr + k] - ck.dot(&bias_force[i]);
            }
            for (k, ck) in cols.iter().enumerate() {
                for l in 0..nd {
                    d[(l, k)] = ck.to_vector().dot(&u_cols[i][l]);
                }
                d[(k, k)] += armature + extra_diagonal.map_or_else(S::zero, |e| e[link.dof_adr + k]);
            }
            d_inv[i] = inverse_spd(&d, nd)
                .ok_or_else(|| StepError::SingularMass { body: model.bodies()[link.body].name.clone() })?;
            for k in 0..nd {
                for l in 0..nd {
                    let w = d_inv[i][(k, l)];
                    ia -= u_cols[i][k] * u_cols[i][l].transpose() * w;
                    joint_force += Force::from_vector(&(u_cols[i][k] * (w * u_res[i][l])));
                }
            }
        }
        let pa = bias_force[i] + Force::from_vector(&(ia * bias_acc[i].to_vector())) + joint_force;
        if let Some(p) = link.parent {
            let x = &kin.local[i];
            inertia[p] += x.inertia_to_parent(&ia);
            bias_force[p] += x.force_to_parent(&pa);
        }
    }
    Ok(())
}

/// Outward again: each link's acceleration from its parent's, and its joints' accelerations.
fn accelerations<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, buffers: &mut AbaBuffers<S>, qacc: &mut DVector<S>) {
    let AbaBuffers { bias_acc, u_cols, d_inv, u_res, acc, .. } = buffers;
    acc.clear();
    let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
    for (i, link) in model.tree().links.iter().enumerate() {
        let parent_acc = link.parent.map_or(world_acc, |p| acc[p]);
        let mut a = kin.local[i].motion_to_child(&parent_acc) + bias_acc[i];
        let cols = model.constants().links.subspace[i].cols();
        let av = a.to_vector();
        let rhs: [S; 3] =
            std::array::from_fn(|k| if k < cols.len() { u_res[i][k] - u_cols[i][k].dot(&av) } else { S::zero() });
        for k in 0..cols.len() {
            let qdd = (0..cols.len()).fold(S::zero(), |sum, l| sum + d_inv[i][(k, l)] * rhs[l]);
            qacc[link.dof_adr + k] = qdd;
            a += cols[k] * qdd;
        }
        acc.push(a);
    }
}

/// The armature of the joint behind a link (per degree of freedom).
fn armature_of<S: Scalar>(model: &Model<S>, joint: LinkJoint) -> S {
    match joint {
        LinkJoint::Weld => S::zero(),
        LinkJoint::Joint(j) | LinkJoint::FreeTranslation(j) | LinkJoint::FreeRotation(j) => model.joints()[j].armature,
    }
}

/// Inverse of the leading `n × n` block (n ≤ 3) of a symmetric matrix, or `None` where that
/// block is not positive definite in some batch lane (Sylvester's criterion on real parts).
pub(crate) fn inverse_spd<S: Scalar>(m: &Matrix3<S>, n: usize) -> Option<Matrix3<S>> {
    let minor1 = m[(0, 0)];
    let minor2 = m[(0, 0)] * m[(1, 1)] - m[(0, 1)] * m[(1, 0)];
    let minors: &[S] = match n {
        1 => &[minor1],
        2 => &[minor1, minor2],
        _ => &[minor1, minor2, determinant3(m)],
    };
    let positive = |x: &S| (0..x.lanes()).all(|l| x.lane(l) > 0.0 && x.lane(l).is_finite());
    if !minors.iter().all(positive) {
        return None;
    }
    let mut inv = Matrix3::zeros();
    match n {
        1 => inv[(0, 0)] = minor1.recip(),
        2 => {
            let det = minor2;
            inv[(0, 0)] = m[(1, 1)] / det;
            inv[(1, 1)] = m[(0, 0)] / det;
            inv[(0, 1)] = -m[(0, 1)] / det;
            inv[(1, 0)] = -m[(1, 0)] / det;
        }
        _ => {
            let det = minors[2];
            for r in 0..3 {
                for c in 0..3 {
                    // Adjugate: cofactor of (c, r).
                    let (r1, r2) = ((c + 1) % 3, (c + 2) % 3);
                    let (c1, c2) = ((r + 1) % 3, (r + 2) % 3);
                    inv[(r, c)] = (m[(r1, c1)] * m[(r2, c2)] - m[(r1, c2)] * m[(r2, c1)]) / det;
                }
            }
        }
    }
    Some(inv)
}

fn determinant3<S: Scalar>(m: &Matrix3<S>) -> S {
    m[(0, 0)] * (m[(1, 1)] * m[(2, 2)] - m[(1, 2)] * m[(2, 1)])
        - m[(0, 1)] * (m[(1, 0)] * m[(2, 2)] - m[(1, 2)] * m[(2, 0)])
        + m[(0, 2)] * (m[(1, 0)] * m[(2, 1)] - m[(1, 1)] * m[(2, 0)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn small_inverses() {
        let m = Matrix3::new(4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0);
        let inv = inverse_spd(&m, 3).expect("positive definite");
        assert_relative_eq!(inv * m, Matrix3::identity(), epsilon = 1e-14);
        let inv2 = inverse_spd(&m, 2).expect("positive definite");
        assert_relative_eq!(
            (inv2 * m).fixed_view::<2, 2>(0, 0).into_owned(),
            nalgebra::Matrix2::identity(),
            epsilon = 1e-14
        );
        assert!(inverse_spd(&Matrix3::new(1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0), 3).is_none());
        assert!(inverse_spd(&Matrix3::<f64>::zeros(), 1).is_none());
    }
}
