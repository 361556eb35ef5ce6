//! The kinematic tree the dynamics algorithms walk.
//!
//! MuJoCo lets a body carry several joints, applied in order. The tree expands each body into a
//! chain of *links*, one per joint (the last link carries the body's inertia and frame; the ones
//! before it are massless), and a welded body into a single link with no degrees of freedom.
//! Links are numbered so that a parent precedes its children.
//!
//! A free joint is one link of six degrees of freedom, as MuJoCo's free body is one body: three
//! translations along the world's axes (MuJoCo's coordinates: world-frame linear velocity),
//! which do not turn with the link ([`Link::world_dofs`]), then three rotations about the
//! body's own axes.

/// What moves a link relative to its parent link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkJoint {
    /// Rigidly attached.
    Weld,
    /// A ball, hinge or slide joint (by joint index).
    Joint(usize),
    /// A free joint (by joint index): translations along the world's axes, then rotations.
    Free(usize),
}

impl LinkJoint {
    /// The joint behind the link, if any.
    pub fn index(self) -> Option<usize> {
        match self {
            LinkJoint::Weld => None,
            LinkJoint::Joint(j) | LinkJoint::Free(j) => Some(j),
        }
    }
}

/// One node of the kinematic tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Parent link, `None` for links attached to the world.
    pub parent: Option<usize>,
    /// The link attached to the world at the base of this link's chain (itself for such a
    /// link): the root of its kinematic tree.
    pub root: usize,
    /// The body this link belongs to.
    pub body: usize,
    pub joint: LinkJoint,
    /// The first link of a body starts from the body's offset in its parent's frame.
    pub first_of_body: bool,
    /// The last link of a body carries its inertia, and its frame is the body frame.
    pub last_of_body: bool,
    /// First degree of freedom, and how many.
    pub dof_adr: usize,
    pub dof_num: usize,
    /// First `qpos` coordinate used by this link.
    pub qpos_adr: usize,
    /// The first of its degrees of freedom after its world dofs ([`Link::world_dofs`]).
    turning_adr: usize,
}

impl Link {
    /// How many of the link's first degrees of freedom move it along the world's axes (a free
    /// joint's translations): their motions never turn, so they bring no velocity product, and
    /// the link's other motions turn as if these came before them.
    #[inline]
    pub fn world_dofs(&self) -> usize {
        self.turning_adr - self.dof_adr
    }

    /// The link's world dofs, by index.
    #[inline]
    pub fn world_range(&self) -> std::ops::Range<usize> {
        self.dof_adr..self.turning_adr
    }

    /// The link's other degrees of freedom, whose motions turn with it, by index.
    #[inline]
    pub fn turning_range(&self) -> std::ops::Range<usize> {
        self.turning_adr..self.dof_adr + self.dof_num
    }
}

/// The compiled tree: links, and the maps between bodies, links and degrees of freedom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub links: Vec<Link>,
    /// The link whose frame is each body's frame (`None` for the world).
    pub body_link: Vec<Option<usize>>,
    /// For each degree of freedom, the closest ancestor degree of freedom (the sparsity of the
    /// mass matrix, as MuJoCo's `dof_parentid`).
    pub dof_parent: Vec<Option<usize>>,
    /// For each degree of freedom, the first one of its kinematic tree (MuJoCo's
    /// `dof_treeid`, named by the tree's root degree of freedom): constraint islands join trees.
    pub dof_root: Vec<usize>,
    /// The link each degree of freedom belongs to.
    pub dof_link: Vec<usize>,
    /// The last degree of freedom on the path from the root to each body (`None` where there is
    /// none: the world, and bodies welded to it or to a mocap body): where the body's chain
    /// starts, as MuJoCo walks `dof_parentid` from it. Two bodies with the same one cannot move
    /// against each other.
    pub body_last_dof: Vec<Option<usize>>,
    /// The body each body moves with: the nearest body on its path to the root that has joints
    /// or is a mocap body, or the world (0) (MuJoCo's `body_weldid`).
    pub body_weld: Vec<usize>,
}

impl Tree {
    /// Whether degrees of freedom `a` and `b` lie on one path from the root (one is the other's
    /// ancestor, or they are the same): the mass matrix's sparsity.
    pub fn on_one_path(&self, a: usize, b: usize) -> bool {
        let (high, mut low) = (a.min(b), Some(a.max(b)));
        while let Some(d) = low {
            if d == high {
                return true;
            }
            if d < high {
                return false;
            }
            low = self.dof_parent[d];
        }
        false
    }

    /// The degrees of freedom that move either body of `bodies` (the union of their chains),
    /// ascending, written into `out`: the columns a constraint between them reaches.
    pub fn chains(&self, bodies: [usize; 2], out: &mut Vec<usize>) {
        out.clear();
        let [mut a, mut b] = bodies.map(|body| self.body_last_dof[body]);
        // Both chains descend towards the root; the larger of their heads comes next.
        while let Some(top) = a.max(b) {
            if a == Some(top) {
                a = self.dof_parent[top];
            }
            if b == Some(top) {
                b = self.dof_parent[top];
            }
            out.push(top);
        }
        out.reverse();
    }

    /// Builds the tree from each body's parent and its joints' kinds and addresses. Bodies must be
    /// numbered parents first, body 0 being the world.
    pub(crate) fn build<S: crate::Scalar>(bodies: &[super::Body<S>], joints: &[super::Joint<S>]) -> Tree {
        use super::JointKind;
        let mut links: Vec<Link> = Vec::new();
        let mut body_link = vec![None; bodies.len()];
        let mut dof_parent = Vec::new();
        let mut dof_link = Vec::new();
        // Last degree of freedom on the path from the root to each link (inclusive).
        let mut last_dof: Vec<Option<usize>> = Vec::new();

        for (b, body) in bodies.iter().enumerate().skip(1) {
            let mut parent = body_link[body.parent];
            let mut parts = Vec::new();
            for j in body.joints() {
                let joint = &joints[j];
                let link_joint = if joint.kind == JointKind::Free { LinkJoint::Free(j) } else { LinkJoint::Joint(j) };
                parts.push((link_joint, joint.dof_adr, joint.kind.nv(), joint.qpos_adr));
            }
            if parts.is_empty() {
                parts.push((LinkJoint::Weld, 0, 0, 0));
            }
            let count = parts.len();
            for (k, (joint, dof_adr, dof_num, qpos_adr)) in parts.into_iter().enumerate() {
                let index = links.len();
                let mut previous = parent.and_then(|p| last_dof[p]);
                for d in dof_adr..dof_adr + dof_num {
                    dof_parent.push(previous);
                    dof_link.push(index);
                    previous = Some(d);
                }
                last_dof.push(previous);
                links.push(Link {
                    parent,
                    root: parent.map_or(index, |p| links[p].root),
                    body: b,
                    joint,
                    first_of_body: k == 0,
                    last_of_body: k + 1 == count,
                    dof_adr,
                    dof_num,
                    qpos_adr,
                    turning_adr: dof_adr + if matches!(joint, LinkJoint::Free(_)) { 3 } else { 0 },
                });
                parent = Some(index);
            }
            body_link[b] = parent;
        }
        let dof_root = (0..dof_parent.len())
            .map(|mut dof| {
                while let Some(parent) = dof_parent[dof] {
                    dof = parent;
                }
                dof
            })
            .collect();
        let body_last_dof = body_link.iter().map(|link| link.and_then(|l: usize| last_dof[l])).collect();
        let mut body_weld = vec![0; bodies.len()];
        for (b, body) in bodies.iter().enumerate().skip(1) {
            let moves = !body.joints().is_empty() || body.mocap().is_some();
            body_weld[b] = if moves { b } else { body_weld[body.parent] };
        }
        Tree { links, body_link, dof_parent, dof_root, dof_link, body_last_dof, body_weld }
    }
}
