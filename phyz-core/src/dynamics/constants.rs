//! What a model's numbers fix, computed where a model is made from new numbers (MuJoCo's
//! `mj_setConst`, which its compiler ends with): the link constants and MuJoCo's inverse weights
//! at the reference pose ([`Constants`](crate::model::Constants)). The weights need the dynamics there (kinematics, the
//! mass matrix and its factor), so the constructors that make a model from new numbers —
//! [`ModelBuilder::build`], [`Model::with_parameters`], [`Model::edit`] — are defined here,
//! above the model, and every model they give has its constants.

use nalgebra::{DMatrix, DVector, Vector3};

use crate::dynamics::tendon::DofRow;
use crate::dynamics::{Kinematics, MassFactor, forward_kinematics, mass_matrix};
use crate::error::StepError;
use crate::model::{InverseWeights, JointKind, LinkConstants, Model, ModelBuilder, ModelError, Parts};
use crate::scalar::{Mask, Scalar, convert};

impl ModelBuilder {
    /// Checks every element and compiles the model, with its constants.
    pub fn build(self) -> Result<Model<f64>, ModelError> {
        let mut model = self.assemble()?;
        model.set_constants()?;
        Ok(model)
    }
}

impl<S: Scalar> Model<S> {
    /// Computes what the model's numbers fix (its [`Constants`](crate::model::Constants)), in its scalar: after this, a
    /// derivative carried by a mass or an axis reaches the inverse weights too.
    pub fn set_constants(&mut self) -> Result<(), ModelError> {
        // The links' first: the weights' kinematics read them.
        let links = LinkConstants::new(self);
        self.constants_mut().links = links;
        let weights = inverse_weights(self).map_err(|e| ModelError::Constants { reason: e.to_string() })?;
        self.constants_mut().weights = weights;
        Ok(())
    }

    /// A model of the same structure whose parameters are `values`, in the order of
    /// [`Model::parameters`], with the constants they fix: this model's, where `values` carry
    /// no derivative and leave every number the constants read as it is (a policy's gains, a
    /// friction, the timestep changed); else computed from them.
    pub fn with_parameters<T: Scalar>(&self, values: &[T]) -> Result<Model<T>, ModelError> {
        let own = self.parameters();
        if values.len() != own.len() {
            return Err(ModelError::ParameterCount { expected: own.len(), got: values.len() });
        }
        let mut next = values.iter().copied();
        let mut model = self.map(&mut |_| next.next().unwrap_or_else(T::zero));
        // Carried only lane for lane (or from one lane to all), bit for bit.
        let from = own.iter().map(|x| x.lanes()).max().unwrap_or(1);
        let to = values.iter().map(|x| x.lanes()).max().unwrap_or(1);
        let same = |i: usize| (0..to).all(|l| values[i].lane(l).to_bits() == own[i].lane(l.min(from - 1)).to_bits());
        let fits = from == 1 || from == to;
        let unread = |i: usize| !self.constants_read(i) || same(i);
        if !T::carries_derivatives() && fits && (0..own.len()).all(unread) {
            return Ok(self.carry_constants(model, convert));
        }
        model.set_constants()?;
        Ok(model)
    }

    /// Changes the numbers of bodies, joints and tendons through `change`, then computes the
    /// constants they fix. If those cannot be computed, the model is left as it was.
    pub fn edit(&mut self, change: impl FnOnce(Parts<'_, S>)) -> Result<(), ModelError> {
        let before = self.clone();
        change(self.parts_mut());
        self.set_constants().inspect_err(|_| *self = before)
    }
}

/// The inverse weights of `model` at its reference configuration (its link constants set).
fn inverse_weights<S: Scalar>(model: &Model<S>) -> Result<InverseWeights<S>, StepError> {
    let q0 = model.qpos0();
    let kin = forward_kinematics(model, &q0);
    let mass = mass_matrix(model, &kin);
    let mean_inertia = mass.diagonal().iter().fold(S::zero(), |a, &b| a + b) / S::from_f64(model.nv().max(1) as f64);
    let factor = MassFactor::new(model, &mass)?;
    // Which bodies are simple, lane by lane (a batch's lanes may differ).
    let lanes = model.parameters().iter().map(|x| x.lanes()).max().unwrap_or(1);
    let simple: Vec<Vec<bool>> = (0..lanes).map(|l| simple_bodies_in(model, l)).collect();
    let simple = |b: usize| simple.iter().map(|s| s[b]).collect::<Vec<bool>>();
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
            let general = || {
                let pose = kin.body_pose(model, b);
                let com = pose.transform_point(&model.bodies()[b].com);
                // A body that can only turn about its centre has no translational weight, as in
                // MuJoCo (its constraints' regularizers then come from the other side).
                (weight(&point_jacobian(model, &kin, b, &com)), weight(&angular_jacobian(model, &kin, b)))
            };
            let lone = || (S::one() / model.bodies()[b].mass, S::zero());
            match by_lane::<S, _>(&simple(b), lone, general) {
                Chosen::One((a, r)) => (a, r),
                Chosen::Both(mask, (a, r), (c, s)) => (S::select(mask, a, c), S::select(mask, r, s)),
            }
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
            let lone = || S::one() / model.bodies()[joint.body()].mass;
            let general = || dofs.clone().map(diagonal).fold(S::zero(), |a, b| a + b) / S::from_f64(dofs.len() as f64);
            let weight = match by_lane::<S, _>(&simple(joint.body()), lone, general) {
                Chosen::One(w) => w,
                Chosen::Both(mask, a, b) => S::select(mask, a, b),
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

/// A value that depends on a per-lane condition: `when` where it holds in every lane,
/// `otherwise` where in none, both (to be selected lane by lane) where it differs.
enum Chosen<S: Scalar, T> {
    One(T),
    Both(S::Mask, T, T),
}

/// Evaluates only the side every lane of `holds` takes; both where the lanes differ.
fn by_lane<S: Scalar, T>(holds: &[bool], when: impl FnOnce() -> T, otherwise: impl FnOnce() -> T) -> Chosen<S, T> {
    if holds.iter().all(|&h| h) {
        Chosen::One(when())
    } else if !holds.iter().any(|&h| h) {
        Chosen::One(otherwise())
    } else {
        Chosen::Both(S::Mask::from_lanes(holds), when(), otherwise())
    }
}

/// Per body, whether it is one of MuJoCo's "simple" bodies that only slide (its
/// `body_simple == 2`), which use their mass alone (no armature), for the body and for its
/// degrees of freedom: a leaf whose inertial frame is its own (to MuJoCo's 1e-6), hanging from
/// the world or from a static child of it, moved only by slides at its origin along one of its
/// axes. (MuJoCo reads its own inertial axes, which for a diagonal inertia off the body's axes
/// — a turned cylinder — are not phyz's principal ones: such a body is simple here only.)
pub(crate) fn simple_bodies(model: &Model<f64>) -> Vec<bool> {
    simple_bodies_in(model, 0)
}

/// [`simple_bodies`] of batch lane `lane`'s numbers.
fn simple_bodies_in<S: Scalar>(model: &Model<S>, lane: usize) -> Vec<bool> {
    const FRAME_EPS: f64 = 1e-6;
    let bodies = model.bodies();
    let mut parent_of_another = vec![false; bodies.len()];
    bodies.iter().skip(1).for_each(|b| parent_of_another[b.parent()] = true);
    let small = |x: &S| x.lane(lane).abs() <= FRAME_EPS;
    (0..bodies.len())
        .map(|b| {
            let body = &bodies[b];
            let axes = &body.inertia_axes;
            let identity =
                (axes.w.lane(lane).abs() - 1.0).abs() <= FRAME_EPS && [axes.x, axes.y, axes.z].iter().all(small);
            let own_frame = body.com.iter().all(small) && identity;
            let parent = body.parent();
            let placed = b > 0 && (parent == 0 || (bodies[parent].parent() == 0 && bodies[parent].joints().is_empty()));
            let along_an_axis = |j: usize| {
                let joint = &model.joints()[j];
                let components = joint.axis.iter().filter(|a| a.lane(lane).abs() > 1e-14).count();
                joint.kind() == JointKind::Slide && components == 1 && joint.pos.iter().all(small)
            };
            let slides = !body.joints().is_empty() && body.joints().all(along_an_axis);
            own_frame && placed && !parent_of_another[b] && slides && body.mass.lane(lane) > 0.0
        })
        .collect()
}

/// The world-frame angular-velocity Jacobian (3 × nv) of `body`.
fn angular_jacobian<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> DMatrix<S> {
    let mut jac = DMatrix::zeros(3, model.nv());
    add_jacobian(model, kin, body, None, S::one(), &mut jac);
    jac
}

/// The world-frame linear-velocity Jacobian (3 × nv) of the point `p` moving with `body`.
fn point_jacobian<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize, p: &Vector3<S>) -> DMatrix<S> {
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
