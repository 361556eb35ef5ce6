//! Actuator transmissions: an actuator's length and its moment — how a scalar actuator force
//! reaches the joints — as MuJoCo's `mj_transmission` forms them (`actuator_length`,
//! `actuator_moment`; the gear is part of both).

use nalgebra::{DVector, Vector3};

use super::kinematics::{Kinematics, add_relative_rows, qpos_quat};
use super::tendon::{DofRow, TendonJacobian};
use crate::Scalar;
use crate::math::{Pose, Quat, zero_vector};
use crate::model::{Actuator, JointKind, Model, Transmission};

/// How an actuator's force reaches the generalized forces: `f += moment · force`.
pub(crate) enum Moment<'a, S: Scalar> {
    /// The gear on one degree of freedom (a hinge or slide).
    Dof(usize, S),
    /// The gear on a ball joint's three or a free joint's six degrees of freedom, from the
    /// first.
    Dofs(usize, [S; 6], usize),
    /// The gear times a tendon's Jacobian.
    Tendon(TendonJacobian<'a, S>, S),
    /// A row of `nv` numbers (a site), in the caller's storage.
    Row(&'a DVector<S>),
}

impl<S: Scalar> DofRow<S> for Moment<'_, S> {
    fn for_each(&self, model: &Model<S>, mut each: impl FnMut(usize, S)) {
        match *self {
            Moment::Dof(dof, gear) => each(dof, gear),
            Moment::Dofs(first, gear, count) => (0..count).for_each(|k| each(first + k, gear[k])),
            Moment::Tendon(jacobian, gear) => jacobian.for_each(model, |dof, c| each(dof, gear * c)),
            Moment::Row(row) => row.for_each(model, each),
        }
    }
}

/// An actuator's length at `qpos` and its moment; a site transmission writes its moment into
/// `row` (`kin` at the same configuration).
pub(crate) fn transmission<'a, S: Scalar>(
    model: &'a Model<S>,
    kin: &'a Kinematics<S>,
    actuator: &Actuator<S>,
    qpos: &DVector<S>,
    row: &'a mut DVector<S>,
) -> (S, Moment<'a, S>) {
    let gear = actuator.gear[0];
    match actuator.transmission() {
        Transmission::Joint(j) | Transmission::JointInParent(j) => {
            let joint = &model.joints()[j];
            let (q, dof) = (joint.qpos_adr(), joint.dof_adr());
            match joint.kind() {
                JointKind::Hinge | JointKind::Slide => (gear * qpos[q], Moment::Dof(dof, gear)),
                // As MuJoCo: the rotation vector along the gear's first three numbers, which
                // are the moment on the joint's local angular velocity.
                JointKind::Ball => {
                    let g = joint_gear(actuator, qpos, q, 0);
                    let turn = qpos_quat(qpos, q).normalize().to_rotation_vector();
                    (turn.dot(&Vector3::new(g[0], g[1], g[2])), Moment::Dofs(dof, g, 3))
                }
                // A free joint's has no length; its gear is a force (world axes) and a torque.
                JointKind::Free => (S::zero(), Moment::Dofs(dof, joint_gear(actuator, qpos, q, 3), 6)),
            }
        }
        Transmission::Tendon(t) => (gear * kin.tendons.length[t], Moment::Tendon(kin.tendons.jacobian(model, t), gear)),
        Transmission::Site { body, site, reference } => {
            let length = site_transmission(model, kin, &actuator.gear, (body, site), reference, row);
            (length, Moment::Row(row))
        }
        Transmission::SliderCrank { crank, slider } => {
            let length = slider_crank(model, kin, (crank, slider), actuator.crank_length, row);
            *row *= gear;
            (gear * length, Moment::Row(row))
        }
    }
}

/// A ball or free joint's gear, its torque (the three numbers from `torque_at`: the first three
/// on a ball joint, the last three on a free one) in the joint's frame: turned from the
/// parent's for `jointinparent` (the joint's quaternion in `qpos` from `q + torque_at`).
fn joint_gear<S: Scalar>(actuator: &Actuator<S>, qpos: &DVector<S>, q: usize, torque_at: usize) -> [S; 6] {
    let mut g = actuator.gear;
    if matches!(actuator.transmission, Transmission::JointInParent(_)) {
        let rotation = qpos_quat(qpos, q + torque_at).normalize();
        let turned = rotation.conjugate().rotate(&Vector3::new(g[torque_at], g[torque_at + 1], g[torque_at + 2]));
        g[torque_at..torque_at + 3].copy_from_slice(turned.as_slice());
    }
    g
}

/// A slider-crank's length and moment row (without the gear), as MuJoCo's: the slider's
/// position along its site's z axis `a` where a rod of length `r` from the crank site reaches
/// it, `l = a·v − √((a·v)² + r² − v·v)` with `v` the crank site less the slider site; where the
/// rod cannot reach the axis (the root's argument not positive), MuJoCo's `l = a·v` and its
/// slopes. The moment is `∂l/∂v` through the sites' relative Jacobian and `∂l/∂a` through the
/// axis turning with the slider's body.
fn slider_crank<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    (crank, slider): ((usize, usize), (usize, usize)),
    rod: S,
    row: &mut DVector<S>,
) -> S {
    zero_vector(row, model.nv());
    let (crank_pose, _) = site_frame(model, kin, crank);
    let (slider_pose, _) = site_frame(model, kin, slider);
    let axis: Vector3<S> = slider_pose.rot.column(2).into_owned();
    let v = crank_pose.pos - slider_pose.pos;
    let av = v.dot(&axis);
    let det = av * av + rod * rod - v.dot(&v);
    let reaches = det.greater(S::zero());
    let root = S::select(reaches, det, S::one()).sqrt();
    let length = S::select(reaches, av - root, av);
    // ∂l/∂v and ∂l/∂a; where the rod does not reach, MuJoCo's `v` and `a`.
    let along = S::one() - av / root;
    let reached = axis * along + v / root;
    let by_v = Vector3::from_fn(|i, _| S::select(reaches, reached[i], axis[i]));
    let by_a = Vector3::from_fn(|i, _| S::select(reaches, v[i] * along, v[i]));
    let points = [&slider_pose.pos, &crank_pose.pos];
    add_relative_rows(model, kin, [slider.0, crank.0], Some(points), &[by_v], row.as_mut_slice());
    // The axis turns with the slider's body: `∂a = ω × a`, so `∂l/∂a · (ω × a) = ω · (a × ∂l/∂a)`.
    add_relative_rows(model, kin, [0, slider.0], None, &[axis.cross(&by_a)], row.as_mut_slice());
    length
}

/// A site's world pose, and its world orientation as a quaternion (the body's times the
/// site's), which a reference-site length reads.
fn site_frame<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, (body, site): (usize, usize)) -> (Pose<S>, Quat<S>) {
    let pose = kin.body_pose(model, body);
    let site = &model.bodies()[body].sites[site];
    let world = pose.compose(&Pose::from_quat(&site.quat, site.pos));
    (world, Quat::from_rotation_matrix(&pose.rot) * site.quat)
}

/// A site transmission's length and moment row, as MuJoCo's: without a reference site, no
/// length and the wrench `gear` (site axes) through the site's Jacobians; with one, the site's
/// position in the reference frame and its rotation from it, along the gear, and the moment of
/// the relative Jacobians in the reference site's axes, without the degrees of freedom both
/// sites share.
fn site_transmission<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    gear: &[S; 6],
    site: (usize, usize),
    reference: Option<(usize, usize)>,
    row: &mut DVector<S>,
) -> S {
    let nv = model.nv();
    zero_vector(row, nv);
    let (world, quat) = site_frame(model, kin, site);
    let (linear, angular) = (Vector3::new(gear[0], gear[1], gear[2]), Vector3::new(gear[3], gear[4], gear[5]));
    let Some(reference) = reference else {
        let directions = [world.rot * linear];
        add_relative_rows(model, kin, [0, site.0], Some([&world.pos, &world.pos]), &directions, row.as_mut_slice());
        add_relative_rows(model, kin, [0, site.0], None, &[world.rot * angular], row.as_mut_slice());
        return S::zero();
    };
    let (ref_world, ref_quat) = site_frame(model, kin, reference);
    let offset = ref_world.rot.transpose() * (world.pos - ref_world.pos);
    let turn = (ref_quat.conjugate() * quat).to_rotation_vector();
    let length = offset.dot(&linear) + turn.dot(&angular);
    let bodies = [reference.0, site.0];
    let points = [&ref_world.pos, &world.pos];
    add_relative_rows(model, kin, bodies, Some(points), &[ref_world.rot * linear], row.as_mut_slice());
    add_relative_rows(model, kin, bodies, None, &[ref_world.rot * angular], row.as_mut_slice());
    // MuJoCo leaves out the degrees of freedom on both sites' paths.
    let last_dof = &model.tree().body_last_dof;
    if let (Some(a), Some(b)) = (last_dof[site.0], last_dof[reference.0]) {
        let mut shared = common_dof(model, a, b);
        while let Some(d) = shared {
            row[d] = S::zero();
            shared = model.tree().dof_parent[d];
        }
    }
    length
}

/// The deepest degree of freedom on both the paths ending at `a` and at `b`.
fn common_dof<S: Scalar>(model: &Model<S>, mut a: usize, mut b: usize) -> Option<usize> {
    let parent = &model.tree().dof_parent;
    while a != b {
        if a < b {
            b = parent[b]?;
        } else {
            a = parent[a]?;
        }
    }
    Some(a)
}
