//! Forward kinematics: link poses, motion subspaces and velocities from `qpos` and `qvel`.

use nalgebra::{DVector, Vector3};

use crate::Scalar;
use crate::math::{Force, Motion, Pose, Quat, SpatialInertia};
use crate::model::tree::{Link, LinkJoint};
use crate::model::{JointKind, Model};

/// The columns of a link's motion subspace `S` (at most 3), in the link's own frame: the joint
/// velocity of the link is `Σ_k S_k q̇_k`. Constant in that frame for every joint phyz has.
#[derive(Clone, Copy, Debug)]
pub struct Subspace<S> {
    cols: [Motion<S>; 3],
    len: usize,
}

impl<S: Scalar> Subspace<S> {
    fn new(cols: &[Motion<S>]) -> Self {
        let mut all = [Motion::zero(); 3];
        all[..cols.len()].copy_from_slice(cols);
        Subspace { cols: all, len: cols.len() }
    }

    #[inline]
    pub fn cols(&self) -> &[Motion<S>] {
        &self.cols[..self.len]
    }

    /// `Σ_k S_k x_k` for the link's slice `x` of a velocity-like vector.
    #[inline]
    pub fn apply(&self, x: &[S]) -> Motion<S> {
        self.cols().iter().zip(x).fold(Motion::zero(), |acc, (s, &xk)| acc + *s * xk)
    }
}

/// The motion subspace of a link.
pub fn subspace<S: Scalar>(model: &Model<S>, link: &Link) -> Subspace<S> {
    let (o, axes) = (Vector3::zeros(), [Vector3::x(), Vector3::y(), Vector3::z()]);
    match link.joint {
        LinkJoint::Weld => Subspace::new(&[]),
        LinkJoint::FreeTranslation(_) => Subspace::new(&axes.map(|e| Motion::new(o, e))),
        LinkJoint::FreeRotation(_) => Subspace::new(&axes.map(|e| Motion::new(e, o))),
        LinkJoint::Joint(j) => {
            let joint = &model.joints()[j];
            let (p, a) = (joint.pos, joint.axis);
            match joint.kind() {
                JointKind::Hinge => Subspace::new(&[Motion::new(a, p.cross(&a))]),
                JointKind::Slide => Subspace::new(&[Motion::new(o, a)]),
                // Rotation about the anchor p: the origin moves with ω × (0 - p) = p × ω.
                JointKind::Ball => Subspace::new(&axes.map(|e| Motion::new(e, p.cross(&e)))),
                JointKind::Free => unreachable!("free joints are split into two links"),
            }
        }
    }
}

/// The unit quaternion stored at `qpos[adr..adr+4]` (normalized, as MuJoCo does before use).
pub(crate) fn qpos_quat<S: Scalar>(qpos: &DVector<S>, adr: usize) -> Quat<S> {
    Quat::new(qpos[adr], qpos[adr + 1], qpos[adr + 2], qpos[adr + 3]).normalize()
}

/// The pose of a link in its parent link's frame at configuration `qpos`: the body's offset
/// (first link of a body only) followed by the joint's motion.
pub fn link_pose<S: Scalar>(model: &Model<S>, link: &Link, qpos: &DVector<S>) -> Pose<S> {
    let body = &model.bodies()[link.body];
    let offset = || Pose::from_quat(&body.quat, body.pos);
    let q = link.qpos_adr;
    let motion = match link.joint {
        LinkJoint::Weld => return offset(),
        // A free joint places the body directly in the world frame.
        LinkJoint::FreeTranslation(_) => return Pose::translation(Vector3::new(qpos[q], qpos[q + 1], qpos[q + 2])),
        LinkJoint::FreeRotation(_) => return Pose::from_quat(&qpos_quat(qpos, q), Vector3::zeros()),
        LinkJoint::Joint(j) => {
            let joint = &model.joints()[j];
            match joint.kind() {
                JointKind::Hinge => {
                    let rot = Quat::from_axis_angle(&joint.axis, qpos[q] - joint.reference).to_rotation_matrix();
                    Pose::rotation_about(rot, &joint.pos)
                }
                JointKind::Slide => Pose::translation(joint.axis * (qpos[q] - joint.reference)),
                JointKind::Ball => Pose::rotation_about(qpos_quat(qpos, q).to_rotation_matrix(), &joint.pos),
                JointKind::Free => unreachable!("free joints are split into two links"),
            }
        }
    };
    if link.first_of_body { offset().compose(&motion) } else { motion }
}

/// The inertia a link carries, in its frame: its body's for the body's last link, else none.
pub fn link_inertia<S: Scalar>(model: &Model<S>, link: &Link) -> SpatialInertia<S> {
    if link.last_of_body { model.bodies()[link.body].spatial_inertia() } else { SpatialInertia::zero() }
}

/// Per-link quantities the recursive algorithms fill (velocities, accelerations, forces,
/// composite inertias), kept between calls so that a step reuses their storage.
#[derive(Clone, Debug)]
pub struct LinkBuffers<S> {
    pub velocity: Vec<Motion<S>>,
    pub acceleration: Vec<Motion<S>>,
    pub force: Vec<Force<S>>,
    pub composite: Vec<SpatialInertia<S>>,
}

impl<S> Default for LinkBuffers<S> {
    fn default() -> Self {
        LinkBuffers { velocity: Vec::new(), acceleration: Vec::new(), force: Vec::new(), composite: Vec::new() }
    }
}

/// Poses of every link at one configuration, with the inertia each link carries.
#[derive(Clone, Debug)]
pub struct Kinematics<S> {
    /// Each link's pose in its parent link's frame (the world for root links).
    pub local: Vec<Pose<S>>,
    /// Each link's pose in the world frame.
    pub world: Vec<Pose<S>>,
    /// Each link's spatial inertia in its own frame ([`link_inertia`]): the model's numbers,
    /// not the configuration's, set by [`Kinematics::set_inertias`] (once per step) or by the
    /// first [`Kinematics::update`].
    pub inertia: Vec<SpatialInertia<S>>,
}

impl<S: Scalar> Kinematics<S> {
    /// The world pose of a body's frame.
    pub fn body_pose(&self, model: &Model<S>, body: usize) -> Pose<S> {
        model.tree().body_link[body].map_or_else(Pose::identity, |l| self.world[l])
    }
}

impl<S> Default for Kinematics<S> {
    fn default() -> Self {
        Kinematics { local: Vec::new(), world: Vec::new(), inertia: Vec::new() }
    }
}

impl<S: Scalar> Kinematics<S> {
    /// Recomputes every link's inertia from the model's bodies, reusing this value's storage.
    pub fn set_inertias(&mut self, model: &Model<S>) {
        self.inertia.clear();
        self.inertia.extend(model.tree().links.iter().map(|l| link_inertia(model, l)));
    }

    /// Recomputes every link's pose at `qpos`, reusing this value's storage. The links'
    /// inertias are taken from the model here only when this value has none for its links;
    /// after the model's numbers change, [`Kinematics::set_inertias`] takes them again.
    pub fn update(&mut self, model: &Model<S>, qpos: &DVector<S>) {
        if self.inertia.len() != model.tree().links.len() {
            self.set_inertias(model);
        }
        let (local, world) = (&mut self.local, &mut self.world);
        local.clear();
        world.clear();
        for link in &model.tree().links {
            let pose = link_pose(model, link, qpos);
            world.push(match link.parent {
                Some(p) => world[p].compose(&pose),
                None => pose,
            });
            local.push(pose);
        }
    }
}

/// Link poses at `qpos`, with the links' inertias.
pub fn forward_kinematics<S: Scalar>(model: &Model<S>, qpos: &DVector<S>) -> Kinematics<S> {
    let mut kin = Kinematics::default();
    kin.update(model, qpos);
    kin
}

/// The slice of `x` (a velocity-like vector) that belongs to `link`.
#[inline]
pub(crate) fn dofs<'a, S: Scalar>(link: &Link, x: &'a DVector<S>) -> &'a [S] {
    &x.as_slice()[link.dof_adr..link.dof_adr + link.dof_num]
}

/// Spatial velocity of every link, in the link's own frame.
pub fn link_velocities<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>) -> Vec<Motion<S>> {
    let mut vel = Vec::new();
    link_velocities_into(model, kin, qvel, &mut vel);
    vel
}

/// [`link_velocities`] written into `vel`, reusing its storage.
pub fn link_velocities_into<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    qvel: &DVector<S>,
    vel: &mut Vec<Motion<S>>,
) {
    vel.clear();
    for (i, link) in model.tree().links.iter().enumerate() {
        let inherited = link.parent.map_or_else(Motion::zero, |p| kin.local[i].motion_to_child(&vel[p]));
        vel.push(inherited + subspace(model, link).apply(dofs(link, qvel)));
    }
}

/// Spatial acceleration of every link (in the link's own frame) when every joint acceleration
/// is zero and there is no gravity: the velocity-product part `J̇ q̇` of each link's motion,
/// written into `acc`.
pub fn link_bias_accelerations<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    velocities: &[Motion<S>],
    qvel: &DVector<S>,
    acc: &mut Vec<Motion<S>>,
) {
    acc.clear();
    for (i, link) in model.tree().links.iter().enumerate() {
        let inherited = link.parent.map_or_else(Motion::zero, |p| kin.local[i].motion_to_child(&acc[p]));
        let joint = subspace(model, link).apply(dofs(link, qvel));
        acc.push(inherited + velocities[i].cross_motion(&joint));
    }
}
