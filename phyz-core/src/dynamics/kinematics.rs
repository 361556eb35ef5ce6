//! Forward kinematics: link poses, motion subspaces and velocities from `qpos` and `qvel`.

use nalgebra::{DVector, Vector3};

use super::tendon::TendonKinematics;
use crate::Scalar;
use crate::math::{Force, Motion, Pose, Quat, SpatialInertia};
use crate::model::tree::{Link, LinkJoint};
use crate::model::{JointKind, Model};

/// The unit quaternion stored at `qpos[adr..adr+4]` (normalized, as MuJoCo does before use).
pub(crate) fn qpos_quat<S: Scalar>(qpos: &DVector<S>, adr: usize) -> Quat<S> {
    Quat::new(qpos[adr], qpos[adr + 1], qpos[adr + 2], qpos[adr + 3]).normalize()
}

/// The pose of a link in its parent link's frame at configuration `qpos`: its fixed offset
/// (`offset`: the body's, for the body's first link only) followed by the joint's motion.
fn joint_pose<S: Scalar>(model: &Model<S>, link: &Link, offset: &Pose<S>, qpos: &DVector<S>) -> Pose<S> {
    let q = link.qpos_adr;
    let motion = match link.joint {
        LinkJoint::Weld => return *offset,
        // A free joint places the body directly in the world frame.
        LinkJoint::Free(_) => {
            return Pose::from_quat(&qpos_quat(qpos, q + 3), Vector3::new(qpos[q], qpos[q + 1], qpos[q + 2]));
        }
        LinkJoint::Joint(j) => {
            let joint = &model.joints()[j];
            match joint.kind() {
                JointKind::Hinge => {
                    let rot = Quat::from_axis_angle(&joint.axis, qpos[q] - joint.reference).to_rotation_matrix();
                    Pose::rotation_about(rot, &joint.pos)
                }
                JointKind::Slide => Pose::translation(joint.axis * (qpos[q] - joint.reference)),
                JointKind::Ball => Pose::rotation_about(qpos_quat(qpos, q).to_rotation_matrix(), &joint.pos),
                JointKind::Free => unreachable!("a free joint's link is `LinkJoint::Free`"),
            }
        }
    };
    if link.first_of_body { offset.compose(&motion) } else { motion }
}

/// Per-link quantities in each link's own frame that the link-frame passes fill (velocities,
/// forces on links), kept between calls so that a step reuses their storage.
#[derive(Clone, Debug)]
pub struct LinkBuffers<S> {
    pub velocity: Vec<Motion<S>>,
    pub force: Vec<Force<S>>,
}

impl<S> Default for LinkBuffers<S> {
    fn default() -> Self {
        LinkBuffers { velocity: Vec::new(), force: Vec::new() }
    }
}

/// Poses of every link at one configuration and each degree of freedom's motion in world axes
/// (what the model fixes for each link, its inertia, offset and motion subspace, is the
/// model's: [`crate::model::LinkConstants`]).
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
    /// Each degree of freedom's unit motion in world axes about its tree's root origin
    /// (MuJoCo's `cdof`, which is about the root's subtree centre of mass): the columns of the
    /// Jacobian of every body's spatial velocity, expressed in its tree's [`Kinematics::rooted`]
    /// frame.
    pub dof_motion: Vec<Motion<S>>,
    /// Every tendon's length and Jacobian.
    pub tendons: TendonKinematics<S>,
    /// Each mocap body's link: the pose [`Kinematics::set_mocap`] put it at, in place of the
    /// model's offset.
    mocap: Vec<Option<Pose<S>>>,
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
            dof_motion: Vec::new(),
            tendons: TendonKinematics::default(),
            mocap: Vec::new(),
        }
    }
}

impl<S: Scalar> Kinematics<S> {
    /// Places each mocap body at its pose in `pos`, `quat` (world frame, the quaternion
    /// normalized as MuJoCo does), in place of its link's offset until the next call. A mocap
    /// body without a pose in `pos` and `quat` (shorter than the model's mocap bodies) is where
    /// the model has it: the step refuses such a state before it gets here.
    pub fn set_mocap(&mut self, model: &Model<S>, pos: &[Vector3<S>], quat: &[Quat<S>]) {
        // Nothing of another model's (or another call's) placements is kept.
        self.mocap.clear();
        self.mocap.resize(model.tree().links.len(), None);
        for (b, body) in model.bodies().iter().enumerate() {
            let (Some(k), Some(link)) = (body.mocap(), model.tree().body_link[b]) else { continue };
            let (Some(p), Some(q)) = (pos.get(k), quat.get(k)) else { continue };
            self.mocap[link] = Some(Pose::from_quat(&q.normalize(), *p));
        }
    }

    /// Recomputes every link's pose, every degree of freedom's motion and every tendon's
    /// length and Jacobian at `qpos`, reusing this value's storage. Mocap bodies are where
    /// [`Kinematics::set_mocap`] last put them (where the model has them by default).
    pub fn update(&mut self, model: &Model<S>, qpos: &DVector<S>) {
        let links = &model.tree().links;
        let constants = &model.constants().links;
        let Kinematics { local, world, rooted, dof_motion, mocap, .. } = self;
        local.clear();
        world.clear();
        rooted.clear();
        // Every entry is written below: the resize only keeps the length right.
        dof_motion.resize(model.nv(), Motion::zero());
        for (i, link) in links.iter().enumerate() {
            let offset = mocap.get(i).and_then(Option::as_ref).unwrap_or(&constants.offset[i]);
            let pose = joint_pose(model, link, offset, qpos);
            let relative = match link.parent {
                Some(p) => rooted[p].compose(&pose),
                None => Pose::new(pose.rot, Vector3::zeros()),
            };
            if link.world_dofs() > 0 {
                for (d, axis) in link.world_range().zip([Vector3::x(), Vector3::y(), Vector3::z()]) {
                    dof_motion[d] = Motion::new(Vector3::zeros(), axis);
                }
            }
            let turning = link.turning_range().start;
            for (k, col) in constants.subspace[i].cols().iter().enumerate() {
                dof_motion[turning + k] = relative.motion_to_parent(col);
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

/// Each link's inertia in its tree's rooted frame ([`Kinematics::rooted`]), written into `out`:
/// its body's for the body's last link, zero for the others. As MuJoCo's `cinert` (which is about
/// the subtree's centre of mass instead of the root's origin), it is placed once per position for
/// the mass matrix and inverse dynamics alike.
pub fn place_inertias<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, out: &mut Vec<SpatialInertia<S>>) {
    let inertia = &model.constants().links.inertia;
    out.clear();
    out.extend(model.tree().links.iter().zip(inertia).zip(&kin.rooted).map(|((link, inertia), pose)| {
        if link.last_of_body { inertia.to_parent(pose) } else { SpatialInertia::zero() }
    }));
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
    for (body, point, adds) in [(b, points.map(|p| p[1]), true), (a, points.map(|p| p[0]), false)] {
        let mut link = model.tree().body_link[body];
        // The dofs' motions are about the chain's root (one root for the whole chain).
        let point = point.zip(link).map(|(p, l)| p - kin.world[links[l].root].pos);
        while let Some(l) = link {
            for k in 0..links[l].dof_num {
                let m = &kin.dof_motion[links[l].dof_adr + k];
                let v = point.map_or(m.ang, |p| m.lin + m.ang.cross(&p));
                for (r, d) in directions.iter().enumerate() {
                    let entry = &mut rows[r * nv + links[l].dof_adr + k];
                    if adds {
                        *entry += d.dot(&v);
                    } else {
                        *entry -= d.dot(&v);
                    }
                }
            }
            link = links[l].parent;
        }
    }
}

/// Link poses at `qpos`.
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

/// A link's joint motion `Σ S_k x_k` in its own frame, for a velocity-like vector `x`, in two
/// parts: along its world dofs ([`Link::world_dofs`]), and along the motions that turn with it.
#[inline]
pub(crate) fn link_joint_motion<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    i: usize,
    x: &DVector<S>,
) -> (Motion<S>, Motion<S>) {
    let link = &model.tree().links[i];
    let (x, w) = (dofs(link, x), link.world_dofs());
    let world = if w == 0 {
        Motion::zero()
    } else {
        Motion::new(Vector3::zeros(), kin.world[i].rot.tr_mul(&Vector3::new(x[0], x[1], x[2])))
    };
    (world, model.constants().links.subspace[i].apply(&x[w..]))
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
        let (world, turning) = link_joint_motion(model, kin, i, qvel);
        vel.push(inherited + world + turning);
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
        // The motions that turn do so with the velocity before them; the world dofs' never turn.
        let (_, turning) = link_joint_motion(model, kin, i, qvel);
        acc.push(inherited + (velocities[i] - turning).cross_motion(&turning));
    }
}
