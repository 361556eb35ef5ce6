//! MuJoCo's inverse weights at the reference pose (`body_invweight0`, `dof_invweight0`,
//! `tendon_invweight0`): how hard each body's centre of mass, each degree of freedom and each
//! tendon is to accelerate. The soft-constraint regularizer is scaled by them, which is what
//! makes a resting body settle at MuJoCo's depth. With them, the tendons' lengths there
//! (`tendon_length0`), which tendon couplings are measured from. They depend on the model's
//! numbers, so they are computed in the step's scalar when a parameter carries a derivative.

use nalgebra::{DMatrix, DVector, Vector3};

use crate::Scalar;
use crate::dynamics::DofRow;
use crate::dynamics::{Kinematics, MassFactor, forward_kinematics, mass_matrix};
use crate::error::StepError;
use crate::model::{JointKind, Model};

/// The inverse weights of a model's bodies, degrees of freedom and tendons.
#[derive(Clone, Debug)]
pub(super) struct InverseWeights<S> {
    /// Each body's translational and rotational weight (MuJoCo's `body_invweight0` pair).
    pub body: Vec<S>,
    pub body_rotation: Vec<S>,
    pub dof: Vec<S>,
    pub tendon: Vec<S>,
    /// Each tendon's length at the reference pose.
    pub tendon_length0: Vec<S>,
    /// The mean diagonal of the mass matrix (MuJoCo's `meaninertia`), which scales the solver's
    /// convergence test.
    pub mean_inertia: S,
}

impl<S: Scalar> Default for InverseWeights<S> {
    fn default() -> Self {
        let empty = Vec::new;
        InverseWeights {
            body: empty(),
            body_rotation: empty(),
            dof: empty(),
            tendon: empty(),
            tendon_length0: empty(),
            mean_inertia: S::zero(),
        }
    }
}

impl<S: Scalar> InverseWeights<S> {
    pub fn new(model: &Model<S>) -> Result<Self, StepError> {
        let q0 = model.qpos0();
        let kin = forward_kinematics(model, &q0);
        let mass = mass_matrix(model, &kin);
        let mean_inertia =
            mass.diagonal().iter().fold(S::zero(), |a, &b| a + b) / S::from_f64(model.nv().max(1) as f64);
        let factor = MassFactor::new(model, &mass)?;
        let simple = simple_bodies(model);
        let weight = |jac: &DMatrix<S>| {
            let rows = jac.nrows();
            let sum = (0..rows)
                .map(|r| jac.row(r).transpose().dot(&factor.solve(&jac.row(r).transpose())))
                .fold(S::zero(), |a, b| a + b);
            sum / S::from_f64(rows as f64)
        };
        let (body, body_rotation) = (0..model.bodies().len())
            .map(|b| {
                if b == 0 {
                    return (S::zero(), S::zero());
                }
                if simple[b] {
                    return (S::one() / model.bodies()[b].mass, S::zero());
                }
                let pose = kin.body_pose(model, b);
                let com = pose.transform_point(&model.bodies()[b].com);
                // A body that can only turn about its centre has no translational weight, as in
                // MuJoCo (its constraints' regularizers then come from the other side).
                (weight(&point_jacobian(model, &kin, b, &com)), weight(&angular_jacobian(model, &kin, b)))
            })
            .unzip();
        let diagonal = |d: usize| {
            let mut e = DVector::zeros(model.nv());
            e[d] = S::one();
            factor.solve(&e)[d]
        };
        // Per joint, as MuJoCo: a ball's three dofs share their mean, a free joint's
        // translations and rotations theirs.
        let mut dof = vec![S::zero(); model.nv()];
        for joint in model.joints() {
            let first = joint.dof_adr();
            // (first dof, count) of each group.
            let groups: &[(usize, usize)] = match joint.kind() {
                JointKind::Free => &[(0, 3), (3, 3)],
                JointKind::Ball => &[(0, 3)],
                JointKind::Hinge | JointKind::Slide => &[(0, 1)],
            };
            for &(start, count) in groups {
                let dofs = first + start..first + start + count;
                let weight = if simple[joint.body()] {
                    S::one() / model.bodies()[joint.body()].mass
                } else {
                    dofs.clone().map(diagonal).fold(S::zero(), |a, b| a + b) / S::from_f64(dofs.len() as f64)
                };
                dofs.for_each(|d| dof[d] = weight);
            }
        }
        let tendon = (0..model.tendons().len())
            .map(|t| {
                let mut jac = DVector::zeros(model.nv());
                kin.tendons.jacobian(model, t).apply(model, S::one(), jac.as_mut_slice());
                weight(&DMatrix::from_row_slice(1, model.nv(), jac.as_slice()))
            })
            .collect();
        let tendon_length0 = kin.tendons.length.clone();
        Ok(InverseWeights { body, body_rotation, dof, tendon, tendon_length0, mean_inertia })
    }
}

impl<S: Scalar> InverseWeights<S> {
    /// Everything of `model` the weights read: its structure (dof count, body parents, joint
    /// kinds and bodies, tendon paths, as numbers), the bodies' placement and inertia, the
    /// joints' placement, axis, reference and armature, the tendons' numbers
    /// ([`Tendon::inputs`](crate::model::Tendon::inputs)).
    pub fn inputs(model: &Model<S>) -> impl Iterator<Item = S> + '_ {
        let index = |i: usize| S::from_f64(i as f64);
        let kind = |k: JointKind| S::from_f64(k as u8 as f64);
        let structure = [index(model.nv())]
            .into_iter()
            .chain(model.bodies().iter().map(move |b| index(b.parent())))
            .chain(model.joints().iter().flat_map(move |j| [kind(j.kind()), index(j.body())]))
            .chain(model.tendons().iter().flat_map(move |t| t.structure().map(index)));
        let quat = |q: &crate::math::Quat<S>| [q.w, q.x, q.y, q.z];
        let bodies = model.bodies().iter().flat_map(move |b| {
            let scalars = [b.mass].into_iter().chain(quat(&b.quat)).chain(quat(&b.inertia_axes));
            scalars.chain(b.pos.iter().copied()).chain(b.com.iter().copied()).chain(b.inertia.iter().copied())
        });
        let joints = model.joints().iter().flat_map(|j| {
            [j.reference, j.armature].into_iter().chain(j.pos.iter().copied()).chain(j.axis.iter().copied())
        });
        let tendons = model.tendons().iter().flat_map(|t| t.inputs(model));
        structure.chain(bodies).chain(joints).chain(tendons)
    }
}

impl InverseWeights<f64> {
    /// One value per batch lane from each lane's weights, written into `out` (reusing its
    /// storage).
    pub fn lift_into<S: Scalar>(lanes: &[InverseWeights<f64>], out: &mut InverseWeights<S>) {
        let gather = |get: &dyn Fn(&InverseWeights<f64>) -> &Vec<f64>, into: &mut Vec<S>| {
            into.clear();
            match lanes {
                [one] => into.extend(get(one).iter().map(|&x| S::from_f64(x))),
                _ => into.extend(
                    (0..get(&lanes[0]).len())
                        .map(|i| S::from_lanes(&lanes.iter().map(|w| get(w)[i]).collect::<Vec<_>>())),
                ),
            }
        };
        gather(&|w| &w.body, &mut out.body);
        gather(&|w| &w.body_rotation, &mut out.body_rotation);
        gather(&|w| &w.dof, &mut out.dof);
        gather(&|w| &w.tendon, &mut out.tendon);
        gather(&|w| &w.tendon_length0, &mut out.tendon_length0);
        out.mean_inertia = match lanes {
            [one] => S::from_f64(one.mean_inertia),
            _ => S::from_lanes(&lanes.iter().map(|w| w.mean_inertia).collect::<Vec<_>>()),
        };
    }
}

/// Per body, whether it is one of MuJoCo's "simple" bodies that only slide (its
/// `body_simple == 2`), which use their mass alone (no armature), for the body and for its
/// degrees of freedom: a leaf whose inertial frame is its own (to MuJoCo's 1e-6), hanging from
/// the world or from a static child of it, moved only by slides at its origin along one of its
/// axes. (MuJoCo reads its own inertial axes, which for a diagonal inertia off the body's axes
/// — a turned cylinder — are not phyz's principal ones: such a body is simple here only.)
pub(crate) fn simple_bodies<S: Scalar>(model: &Model<S>) -> Vec<bool> {
    const FRAME_EPS: f64 = 1e-6;
    let bodies = model.bodies();
    let mut parent_of_another = vec![false; bodies.len()];
    bodies.iter().skip(1).for_each(|b| parent_of_another[b.parent()] = true);
    let small = |x: &S| x.lane(0).abs() <= FRAME_EPS;
    (0..bodies.len())
        .map(|b| {
            let body = &bodies[b];
            let axes = &body.inertia_axes;
            let identity =
                (axes.w.lane(0).abs() - 1.0).abs() <= FRAME_EPS && [axes.x, axes.y, axes.z].iter().all(small);
            let own_frame = body.com.iter().all(small) && identity;
            let parent = body.parent();
            let placed = b > 0 && (parent == 0 || (bodies[parent].parent() == 0 && bodies[parent].joints().is_empty()));
            let along_an_axis = |j: usize| {
                let joint = &model.joints()[j];
                let components = joint.axis.iter().filter(|a| a.lane(0).abs() > 1e-14).count();
                joint.kind() == JointKind::Slide && components == 1 && joint.pos.iter().all(small)
            };
            let slides = !body.joints().is_empty() && body.joints().all(along_an_axis);
            own_frame && placed && !parent_of_another[b] && slides && body.mass.lane(0) > 0.0
        })
        .collect()
}

/// The world-frame angular-velocity Jacobian (3 × nv) of `body`.
pub(super) fn angular_jacobian<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> DMatrix<S> {
    let mut jac = DMatrix::zeros(3, model.nv());
    add_jacobian(model, kin, body, None, S::one(), &mut jac);
    jac
}

/// The world-frame linear-velocity Jacobian (3 × nv) of the point `p` moving with `body`.
pub(super) fn point_jacobian<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    body: usize,
    p: &Vector3<S>,
) -> DMatrix<S> {
    let mut jac = DMatrix::zeros(3, model.nv());
    add_jacobian(model, kin, body, Some(p), S::one(), &mut jac);
    jac
}

/// Adds `sign` times the Jacobian of `body`'s angular velocity (`point: None`) or of the
/// linear velocity of `point` moving with it to `jac`, column by column along its chain.
fn add_jacobian<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    body: usize,
    point: Option<&Vector3<S>>,
    sign: S,
    jac: &mut DMatrix<S>,
) {
    let links = &model.tree().links;
    let mut link = model.tree().body_link[body];
    // The dofs' motions are about the chain's root (one root for the whole chain).
    let point = point.zip(link).map(|(p, l)| p - kin.world[links[l].root].pos);
    while let Some(l) = link {
        for k in 0..links[l].dof_num {
            let m = &kin.dof_motion[links[l].dof_adr + k];
            let v = point.map_or(m.ang, |p| m.lin + m.ang.cross(&p));
            for r in 0..3 {
                jac[(r, links[l].dof_adr + k)] += sign * v[r];
            }
        }
        link = links[l].parent;
    }
}
