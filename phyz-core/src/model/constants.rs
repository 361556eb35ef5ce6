//! What a model's numbers fix for every step (MuJoCo's `mj_setConst`): each link's inertia,
//! fixed offset and motion subspace, and MuJoCo's inverse weights at the reference pose. They
//! are computed when a model is made or its numbers are set, in the model's own scalar (so a
//! parameter's derivative reaches them), and the step reads them as they are: nothing a model
//! fixes is looked up or recomputed per step.
//!
//! The link constants read the model alone and are made here. The inverse weights need the
//! dynamics at the reference pose, so they are computed above the model, where a model is made
//! from new numbers (`dynamics::constants`); here they are only stored and carried from one
//! scalar to another.

use nalgebra::Vector3;

use super::tree::{Link, LinkJoint};
use super::{JointKind, Model};
use crate::Scalar;
use crate::math::{Motion, Pose, SpatialInertia, Subspace};

/// Everything a step reads that the model's numbers alone fix.
#[derive(Clone, Debug, PartialEq)]
pub struct Constants<S> {
    /// Each link's inertia, fixed offset and motion subspace.
    pub links: LinkConstants<S>,
    /// MuJoCo's inverse weights and the tendons' lengths at the reference pose.
    pub weights: InverseWeights<S>,
}

impl<S: Scalar> Default for Constants<S> {
    /// None yet: a model being made, before its constants are computed.
    fn default() -> Self {
        Constants { links: LinkConstants::default(), weights: InverseWeights::default() }
    }
}

/// What the model fixes for each link, in the link's own frame.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConstants<S> {
    /// The inertia the link carries: its body's for the body's last link, else none.
    pub inertia: Vec<SpatialInertia<S>>,
    /// The link's pose in its parent's frame before its joint moves: its body's offset for the
    /// body's first link, else none.
    pub offset: Vec<Pose<S>>,
    /// The link's motion subspace: the motions of its degrees of freedom after its
    /// [`Link::world_dofs`] (those turn with the link; the world dofs are the world's axes).
    pub subspace: Vec<Subspace<S>>,
}

impl<S> Default for LinkConstants<S> {
    fn default() -> Self {
        LinkConstants { inertia: Vec::new(), offset: Vec::new(), subspace: Vec::new() }
    }
}

impl<S: Scalar> LinkConstants<S> {
    /// The link constants of `model`.
    pub fn new(model: &Model<S>) -> Self {
        let links = &model.tree().links;
        LinkConstants {
            inertia: links.iter().map(|l| link_inertia(model, l)).collect(),
            offset: links.iter().map(|l| link_offset(model, l)).collect(),
            subspace: links.iter().map(|l| subspace(model, l)).collect(),
        }
    }
}

/// MuJoCo's inverse weights at the reference pose (`body_invweight0`, `dof_invweight0`,
/// `tendon_invweight0`): how hard each body's centre of mass, each degree of freedom and each
/// tendon is to accelerate. The soft-constraint regularizer is scaled by them, which is what
/// makes a resting body settle at MuJoCo's depth. With them, the tendons' lengths there
/// (`tendon_length0`), which tendon couplings are measured from.
#[derive(Clone, Debug, PartialEq)]
pub struct InverseWeights<S> {
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
        InverseWeights {
            body: Vec::new(),
            body_rotation: Vec::new(),
            dof: Vec::new(),
            tendon: Vec::new(),
            tendon_length0: Vec::new(),
            mean_inertia: S::zero(),
        }
    }
}

impl<S: Copy> InverseWeights<S> {
    /// Every number mapped by `f`.
    pub fn map<T>(&self, mut f: impl FnMut(S) -> T) -> InverseWeights<T> {
        let mut each = |v: &Vec<S>| v.iter().map(|&x| f(x)).collect();
        InverseWeights {
            body: each(&self.body),
            body_rotation: each(&self.body_rotation),
            dof: each(&self.dof),
            tendon: each(&self.tendon),
            tendon_length0: each(&self.tendon_length0),
            mean_inertia: f(self.mean_inertia),
        }
    }
}

impl<S: Scalar> InverseWeights<S> {
    /// One weight per batch lane from each lane's (`lanes`: models of one structure).
    pub fn from_lanes(lanes: &[&InverseWeights<f64>]) -> Self {
        let Some(first) = lanes.first() else { return InverseWeights::default() };
        let lift = |get: &dyn Fn(&InverseWeights<f64>) -> &[f64]| -> Vec<S> {
            (0..get(first).len()).map(|i| S::from_lanes(&lanes.iter().map(|w| get(w)[i]).collect::<Vec<_>>())).collect()
        };
        InverseWeights {
            body: lift(&|w| &w.body),
            body_rotation: lift(&|w| &w.body_rotation),
            dof: lift(&|w| &w.dof),
            tendon: lift(&|w| &w.tendon),
            tendon_length0: lift(&|w| &w.tendon_length0),
            mean_inertia: S::from_lanes(&lanes.iter().map(|w| w.mean_inertia).collect::<Vec<_>>()),
        }
    }
}

/// The inertia a link carries, in its frame: its body's for the body's last link, else none.
fn link_inertia<S: Scalar>(model: &Model<S>, link: &Link) -> SpatialInertia<S> {
    if link.last_of_body { model.bodies()[link.body].spatial_inertia() } else { SpatialInertia::zero() }
}

/// The fixed part of a link's pose in its parent's frame: its body's offset for the body's
/// first link, else none.
fn link_offset<S: Scalar>(model: &Model<S>, link: &Link) -> Pose<S> {
    let body = &model.bodies()[link.body];
    if link.first_of_body { Pose::from_quat(&body.quat, body.pos) } else { Pose::identity() }
}

/// The motion subspace of a link, in its own frame, less its world dofs.
fn subspace<S: Scalar>(model: &Model<S>, link: &Link) -> Subspace<S> {
    let (o, axes) = (Vector3::zeros(), [Vector3::x(), Vector3::y(), Vector3::z()]);
    match link.joint {
        LinkJoint::Weld => Subspace::new(&[]),
        // After its world-axis translations, a free joint turns about the body's origin.
        LinkJoint::Free(_) => Subspace::new(&axes.map(|e| Motion::new(e, o))),
        LinkJoint::Joint(j) => {
            let joint = &model.joints()[j];
            let (p, a) = (joint.pos, joint.axis);
            match joint.kind() {
                JointKind::Hinge => Subspace::new(&[Motion::new(a, p.cross(&a))]),
                JointKind::Slide => Subspace::new(&[Motion::new(o, a)]),
                // Rotation about the anchor p: the origin moves with ω × (0 - p) = p × ω.
                JointKind::Ball => Subspace::new(&axes.map(|e| Motion::new(e, p.cross(&e)))),
                JointKind::Free => unreachable!("a free joint's link is `LinkJoint::Free`"),
            }
        }
    }
}
