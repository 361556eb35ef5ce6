//! Forward kinematics: link poses, motion subspaces and velocities from `qpos` and `qvel`.

use nalgebra::{DVector, Vector3};

use super::tendon::TendonKinematics;
use crate::Scalar;
use crate::math::{Force, Motion, Pose, Quat, SpatialInertia};
use crate::model::tree::{Link, LinkJoint};
use crate::model::{JointKind, Model};
use crate::scalar::Inputs;

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
    joint_pose(model, link, &link_offset(model, link), qpos)
}

/// The fixed part of a link's pose in its parent's frame: its body's offset for the body's
/// first link, else none.
fn link_offset<S: Scalar>(model: &Model<S>, link: &Link) -> Pose<S> {
    let body = &model.bodies()[link.body];
    if link.first_of_body { Pose::from_quat(&body.quat, body.pos) } else { Pose::identity() }
}

/// [`link_pose`] with the link's fixed offset given.
fn joint_pose<S: Scalar>(model: &Model<S>, link: &Link, offset: &Pose<S>, qpos: &DVector<S>) -> Pose<S> {
    let q = link.qpos_adr;
    let motion = match link.joint {
        LinkJoint::Weld => return *offset,
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
    if link.first_of_body { offset.compose(&motion) } else { motion }
}

/// Every number [`link_inertia`], [`subspace`] and [`link_offset`] read, link by link, with
/// each link's joint kind and body (so that another tree with the same numbers differs).
fn constant_inputs<S: Scalar>(model: &Model<S>) -> impl Iterator<Item = S> + '_ {
    model.tree().links.iter().flat_map(move |link| {
        let body = &model.bodies()[link.body];
        let joint = match link.joint {
            LinkJoint::Joint(j) => Some(&model.joints()[j]),
            _ => None,
        };
        let kind = match link.joint {
            LinkJoint::Weld => 0.0,
            LinkJoint::FreeTranslation(_) => 1.0,
            LinkJoint::FreeRotation(_) => 2.0,
            LinkJoint::Joint(j) => 3.0 + model.joints()[j].kind() as u8 as f64,
        };
        let structure = [S::from_f64(kind), S::from_f64(link.body as f64)];
        let axis = joint.into_iter().flat_map(|j| j.pos.iter().chain(j.axis.iter()).copied());
        let quat = |q: &crate::math::Quat<S>| [q.w, q.x, q.y, q.z];
        let offset = link.first_of_body.then(|| body.pos.iter().copied().chain(quat(&body.quat))).into_iter().flatten();
        let inertia = link
            .last_of_body
            .then(|| {
                [body.mass]
                    .into_iter()
                    .chain(body.com.iter().copied())
                    .chain(quat(&body.inertia_axes))
                    .chain(body.inertia.iter().copied())
            })
            .into_iter()
            .flatten();
        structure.into_iter().chain(axis).chain(offset).chain(inertia)
    })
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

/// Poses of every link at one configuration, with what the model fixes for each link (its
/// inertia, offset and motion subspace) and each degree of freedom's motion in world axes.
#[derive(Clone, Debug)]
pub struct Kinematics<S> {
    /// Each link's pose in its parent link's frame (the world for root links).
    pub local: Vec<Pose<S>>,
    /// Each link's pose in the world frame.
    pub world: Vec<Pose<S>>,
    /// Each link's pose relative to its tree's root ([`Link::root`]): world axes, origin at the
    /// root link's origin. Composed along the chain from the root's rotation alone, it keeps its
    /// precision wherever the tree is in the world.
    pub rooted: Vec<Pose<S>>,
    /// Each link's spatial inertia in its own frame ([`link_inertia`]).
    pub inertia: Vec<SpatialInertia<S>>,
    /// Each link's motion subspace in its own frame ([`subspace`]).
    pub subspace: Vec<Subspace<S>>,
    /// Each degree of freedom's unit motion in world axes about its tree's root origin
    /// (MuJoCo's `cdof`, which is about the root's subtree centre of mass): the columns of the
    /// Jacobian of every body's spatial velocity, expressed in its tree's [`Kinematics::rooted`]
    /// frame.
    pub dof_motion: Vec<Motion<S>>,
    /// Every tendon's length and Jacobian.
    pub tendons: TendonKinematics<S>,
    /// Each link's fixed offset in its parent's frame.
    offset: Vec<Pose<S>>,
    /// The numbers the constants were taken from ([`constant_inputs`]).
    constants_from: Inputs<S>,
}

impl<S: Scalar> Kinematics<S> {
    /// The world pose of a body's frame.
    pub fn body_pose(&self, model: &Model<S>, body: usize) -> Pose<S> {
        model.tree().body_link[body].map_or_else(Pose::identity, |l| self.world[l])
    }
}

impl<S> Default for Kinematics<S> {
    fn default() -> Self {
        Kinematics {
            local: Vec::new(),
            world: Vec::new(),
            rooted: Vec::new(),
            inertia: Vec::new(),
            subspace: Vec::new(),
            dof_motion: Vec::new(),
            tendons: TendonKinematics::default(),
            offset: Vec::new(),
            constants_from: Inputs::default(),
        }
    }
}

impl<S: Scalar> Kinematics<S> {
    /// Takes what the model fixes for each link (inertia, offset, motion subspace), reusing
    /// this value's storage (see [`Kinematics::set_constants_if_changed`]).
    pub fn set_constants(&mut self, model: &Model<S>) {
        self.constants_from.forget();
        let links = &model.tree().links;
        self.inertia.clear();
        self.inertia.extend(links.iter().map(|l| link_inertia(model, l)));
        self.subspace.clear();
        self.subspace.extend(links.iter().map(|l| subspace(model, l)));
        self.offset.clear();
        self.offset.extend(links.iter().map(|l| link_offset(model, l)));
    }

    /// [`Kinematics::set_constants`] unless they were taken from the same numbers (the same
    /// values with the same derivatives): a model that did not change between steps costs a
    /// comparison, and on a tape its constants stay the nodes they were recorded as.
    pub fn set_constants_if_changed(&mut self, model: &Model<S>) {
        if self.offset.len() != model.tree().links.len() || !self.constants_from.unchanged(constant_inputs(model)) {
            self.set_constants(model);
            self.constants_from.keep(constant_inputs(model));
        }
    }

    /// Places each mocap body at its pose in `pos`, `quat` (world frame, the quaternion
    /// normalized as MuJoCo does), replacing its link's offset until the next call or
    /// [`Kinematics::set_constants`], which puts it back where the model has it. A mocap body
    /// without a pose in `pos` and `quat` (shorter than the model's mocap bodies) keeps the
    /// offset it had: the step refuses such a state before it gets here.
    pub fn set_mocap(&mut self, model: &Model<S>, pos: &[Vector3<S>], quat: &[Quat<S>]) {
        if self.offset.len() != model.tree().links.len() {
            self.set_constants(model);
        }
        for (b, body) in model.bodies().iter().enumerate() {
            let (Some(k), Some(link)) = (body.mocap(), model.tree().body_link[b]) else { continue };
            let (Some(p), Some(q)) = (pos.get(k), quat.get(k)) else { continue };
            self.offset[link] = Pose::from_quat(&q.normalize(), *p);
        }
    }

    /// Recomputes every link's pose, every degree of freedom's motion and every tendon's
    /// length and Jacobian at `qpos`,
    /// reusing this value's storage. What the model fixes is taken here only when this value
    /// has none for its links; after the model's numbers change, [`Kinematics::set_constants`]
    /// takes it again. Mocap bodies are where [`Kinematics::set_mocap`] last put them (where the
    /// model has them by default).
    pub fn update(&mut self, model: &Model<S>, qpos: &DVector<S>) {
        let links = &model.tree().links;
        if self.offset.len() != links.len() {
            self.set_constants(model);
        }
        let Kinematics { local, world, rooted, subspace, dof_motion, offset, .. } = self;
        local.clear();
        world.clear();
        rooted.clear();
        // Every entry is written below: the resize only keeps the length right.
        dof_motion.resize(model.nv(), Motion::zero());
        for (i, link) in links.iter().enumerate() {
            let pose = joint_pose(model, link, &offset[i], qpos);
            let relative = match link.parent {
                Some(p) => rooted[p].compose(&pose),
                None => Pose::new(pose.rot, Vector3::zeros()),
            };
            for (k, col) in subspace[i].cols().iter().enumerate() {
                dof_motion[link.dof_adr + k] = relative.motion_to_parent(col);
            }
            let origin = if link.parent.is_some() { world[link.root].pos } else { pose.pos };
            world.push(Pose::new(relative.rot, relative.pos + origin));
            rooted.push(relative);
            local.push(pose);
        }
        let mut tendons = std::mem::take(&mut self.tendons);
        tendons.update(model, self, qpos);
        self.tendons = tendons;
    }
}

/// Adds `d_k · (J_b(p₂) − J_a(p₁))` to row `k` of `rows` (`nv` numbers each, one after another)
/// for each direction `d_k`: the relative linear velocity of the point `p₂` moving with `b`
/// against `p₁` moving with `a` along each direction (`points: None`: the relative angular
/// velocity), one pass along each body's chain.
pub(crate) fn add_relative_rows<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    [a, b]: [usize; 2],
    points: Option<[&Vector3<S>; 2]>,
    directions: &[Vector3<S>],
    rows: &mut [S],
) {
    let nv = model.nv();
    let links = &model.tree().links;
    for (body, point, sign) in [(b, points.map(|p| p[1]), S::one()), (a, points.map(|p| p[0]), -S::one())] {
        let mut link = model.tree().body_link[body];
        // The dofs' motions are about the chain's root (one root for the whole chain).
        let point = point.zip(link).map(|(p, l)| p - kin.world[links[l].root].pos);
        while let Some(l) = link {
            for k in 0..links[l].dof_num {
                let m = &kin.dof_motion[links[l].dof_adr + k];
                let v = point.map_or(m.ang, |p| m.lin + m.ang.cross(&p)) * sign;
                for (r, d) in directions.iter().enumerate() {
                    rows[r * nv + links[l].dof_adr + k] += d.dot(&v);
                }
            }
            link = links[l].parent;
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
        vel.push(inherited + kin.subspace[i].apply(dofs(link, qvel)));
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
        let joint = kin.subspace[i].apply(dofs(link, qvel));
        acc.push(inherited + velocities[i].cross_motion(&joint));
    }
}
