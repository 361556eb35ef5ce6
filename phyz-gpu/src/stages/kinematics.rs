//! Forward kinematics, one unit per world (`dynamics::kinematics::Kinematics::update`): each
//! link's pose relative to its tree's root and in the world, and each degree of freedom's
//! motion in its tree's rooted frame, parents before children.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, INERTIA, dof_float, header, joint, link_float, link_int};
use super::real::{M3, Pose, Quat, V3, sin_cos};
use super::world::{Inertia, World, start};

/// A rotation `rot` about the point `anchor`.
#[cube]
fn rotation_about<F: Float>(rot: M3<F>, anchor: &V3<F>) -> Pose<F> {
    let pos = anchor.sub(&rot.apply(anchor));
    Pose::<F> { rot, pos }
}

/// The pose in its parent link's frame, at the world's `qpos`, of the link whose integers and
/// floats start at `li` and `lf` (`kinematics::joint_pose`).
#[cube]
fn joint_pose<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    li: usize,
    lf: usize,
) -> Pose<F> {
    let code = ints[li + link_int::JOINT];
    let q = world.at(start(ints, comptime![Array::Qpos as usize]), ints[li + link_int::QPOS_ADR] as usize);
    let offset = Pose::<F> {
        rot: M3::load(floats, lf + link_float::OFFSET_ROT, 1),
        pos: V3::load(floats, lf + link_float::OFFSET_POS, 1),
    };
    let axis = V3::<F>::load(floats, lf + link_float::AXIS, 1);
    let anchor = V3::<F>::load(floats, lf + link_float::ANCHOR, 1);
    let angle = data[q] - floats[lf + link_float::REFERENCE];
    let mut motion = Pose::<F> { rot: M3::<F>::identity(), pos: V3::<F>::zero() };
    if code == joint::HINGE {
        let sc = sin_cos::<F>(angle * F::new(0.5));
        let s = sc.sin;
        motion = rotation_about::<F>(M3::<F>::from_quat(sc.cos, axis.x * s, axis.y * s, axis.z * s), &anchor);
    } else if code == joint::SLIDE {
        motion.pos = axis.scale(angle);
    } else if code == joint::BALL {
        motion = rotation_about::<F>(Quat::<F>::load_normalized(data, q, world.count).to_matrix(), &anchor);
    } else if code == joint::FREE {
        // A free joint places its body in the world frame directly.
        motion.rot = Quat::<F>::load_normalized(data, q + 3 * world.count, world.count).to_matrix();
        motion.pos = V3::load(data, q, world.count);
    }
    let mut pose = motion.clone();
    if code == joint::WELD {
        pose = offset.clone();
    } else if code != joint::FREE && ints[li + link_int::FIRST_OF_BODY] == 1 {
        pose = offset.compose(&motion);
    }
    pose
}

/// Fills [`Array::Rotation`], [`Array::Rooted`], [`Array::Position`] and [`Array::Motion`]
/// from [`Array::Qpos`], and [`Array::Inertia`]: each link's inertia placed in its tree's
/// rooted frame (`kinematics::place_inertias`), which the mass matrix and RNEA share.
#[cube(launch_unchecked)]
pub(crate) fn kinematics<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let n = world.count;
    let rotation = start(ints, comptime![Array::Rotation as usize]);
    let rooted = start(ints, comptime![Array::Rooted as usize]);
    let position = start(ints, comptime![Array::Position as usize]);
    let motion = start(ints, comptime![Array::Motion as usize]);
    let inertia = start(ints, comptime![Array::Inertia as usize]);
    let dof_floats = ints[header::DOF_FLOATS] as usize;
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let lf = ints[header::LINK_FLOATS] as usize + i * link_float::LEN;
        let pose = joint_pose::<F>(ints, floats, data, &world, li, lf);
        let parent = ints[li + link_int::PARENT] as usize;
        // Relative to the root (composed along the chain from the root's rotation alone), and
        // the root's origin in the world: a root link's own.
        let mut rot = pose.rot.clone();
        let mut pos = V3::<F>::zero();
        let mut origin = pose.pos.clone();
        if parent > 0 {
            let p = parent - 1;
            let up = Pose::<F> {
                rot: M3::load(data, world.at(rotation, 9 * p), n),
                pos: V3::load(data, world.at(rooted, 3 * p), n),
            };
            let relative = up.compose(&pose);
            rot = relative.rot;
            pos = relative.pos;
            origin = V3::<F>::load(data, world.at(position, 3 * ints[li + link_int::ROOT] as usize), n);
        }
        rot.store(data, world.at(rotation, 9 * i), n);
        pos.store(data, world.at(rooted, 3 * i), n);
        pos.add(&origin).store(data, world.at(position, 3 * i), n);
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let world_dofs = ints[li + link_int::WORLD_DOFS] as usize;
        for t in 0..ints[li + link_int::DOF_NUM] as usize {
            let d = adr + t;
            let at = world.at(motion, 6 * d);
            if t < world_dofs {
                // A world dof moves along the world's axis t.
                for c in 0..6 {
                    data[at + c * n] = F::new(0.0);
                }
                data[at + (3 + t) * n] = F::new(1.0);
            } else {
                let df = dof_floats + d * dof_float::LEN + dof_float::MOTION;
                let ang = rot.apply(&V3::load(floats, df, 1));
                let lin = rot.apply(&V3::load(floats, df + 3, 1)).add(&pos.cross(&ang));
                ang.store(data, at, n);
                lin.store(data, at + 3 * n, n);
            }
        }
        let placed = world.at(inertia, INERTIA * i);
        if ints[li + link_int::LAST_OF_BODY] == 1 {
            Inertia::<F>::load(floats, lf + link_float::INERTIA, 1).to_parent(&rot, &pos).store(data, placed, n);
        } else {
            Inertia::<F>::zero().store(data, placed, n);
        }
    }
}
