//! The pairs of geoms the collision kernel tests, packed once per model.
//!
//! Which geoms may touch is fixed by the model (`contype`, `conaffinity`, the parent filter,
//! excluded bodies, explicit pairs), so the host lists the candidate pairs once, in MuJoCo's
//! order, and each pair's record carries both geoms' shapes and poses in their bodies: a unit
//! per world and pair reads one record and the two links' poses, nothing else. The bounding
//! volumes of the CPU's broad phase are left out: they only skip pairs whose closed form finds
//! nothing anyway, and on the device each pair is one unit of one launch either way.
//!
//! The pairs the kernel has closed forms for are those of the CPU's detector
//! (`phyz_core::collision`) between planes, spheres, capsules and boxes, except a capsule
//! against a box and a box against a box; a model with another pair that may collide is refused
//! by name.

use phyz_core::Model;
use phyz_core::collision::can_collide;
use phyz_core::math::Pose;
use phyz_core::model::{Geom, Shape};

/// What the kernel does with a pair, by code.
pub mod kind {
    /// A plane against a sphere, a capsule's two end spheres, or a box's corners.
    pub const PLANE_SPHERE: u32 = 0;
    pub const PLANE_CAPSULE: u32 = 1;
    pub const PLANE_BOX: u32 = 2;
    /// Two spheres or a sphere and a capsule: the closest points of their core segments.
    pub const SPHERES: u32 = 3;
    /// Two capsules: as [`SPHERES`] when their axes cross, two contacts when parallel.
    pub const CAPSULES: u32 = 4;
    /// A box against a sphere.
    pub const BOX_SPHERE: u32 = 5;
}

/// A pair's integers: each geom's link plus one (zero: the world), the [`kind`], and 1 where
/// the contact's frame is turned round, the geom tested first being MuJoCo's second.
pub mod pair_int {
    pub const LINK1: usize = 0;
    pub const LINK2: usize = 1;
    pub const KIND: usize = 2;
    pub const FLIPPED: usize = 3;
    pub const LEN: usize = 4;
}

/// A pair's floats: each geom's pose in its link's frame (rotation by rows, then position) and
/// its size (a sphere's radius; a capsule's radius and half length; a box's half extents),
/// and the margin within which the pair's contacts count.
pub mod pair_float {
    pub const ROT1: usize = 0;
    pub const POS1: usize = 9;
    pub const SIZE1: usize = 12;
    pub const ROT2: usize = 15;
    pub const POS2: usize = 24;
    pub const SIZE2: usize = 27;
    pub const MARGIN: usize = 30;
    pub const LEN: usize = 31;
}

/// A candidate pair as the host reads its contacts back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Global geom indices in MuJoCo's orientation: the contact's normal points from the first
    /// to the second.
    pub geoms: [usize; 2],
    /// The explicit contact pair (`Model::contact_pairs`) it comes from, if any.
    pub explicit: Option<usize>,
    /// The most contacts it makes.
    pub points: usize,
}

/// A geom with its body and global index.
struct Entry<'a> {
    body: usize,
    index: usize,
    geom: &'a Geom<f64>,
}

/// The candidate pairs of `model`, their integers and floats appended to `ints` and `floats`;
/// `Err` names a pair the kernel has no closed form for. None where contacts are disabled.
pub fn pack(model: &Model<f64>, ints: &mut Vec<usize>, floats: &mut Vec<f64>) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    if !(model.enabled.constraint && model.enabled.contact) {
        return Ok(pairs);
    }
    let entries: Vec<Entry> = model
        .bodies()
        .iter()
        .enumerate()
        .flat_map(|(body, b)| b.geoms.iter().map(move |geom| (body, geom)))
        .enumerate()
        .map(|(index, (body, geom))| Entry { body, index, geom })
        .collect();
    let named = |i: usize, j: usize| model.contact_pairs().iter().any(|p| p.geoms == [i, j] || p.geoms == [j, i]);
    for (k, g1) in entries.iter().enumerate() {
        for g2 in &entries[k + 1..] {
            let collides = g1.body != g2.body && can_collide(model, g1.body, g1.geom, g2.body, g2.geom);
            if collides && !named(g1.index, g2.index) {
                let margin = g1.geom.margin + g2.geom.margin;
                push(model, [g1, g2], margin, None, (ints, floats), &mut pairs)?;
            }
        }
    }
    for (k, pair) in model.contact_pairs().iter().enumerate() {
        let [a, b] = pair.geoms.map(|g| &entries[g]);
        push(model, [a, b], pair.margin, Some(k), (ints, floats), &mut pairs)?;
    }
    Ok(pairs)
}

/// Appends the record of geoms `g` (`g[0]` the lower index), or nothing for two planes
/// (MuJoCo tests none); `Err` for a pair without a closed form here.
fn push(
    model: &Model<f64>,
    [g1, g2]: [&Entry; 2],
    margin: f64,
    explicit: Option<usize>,
    (ints, floats): (&mut Vec<usize>, &mut Vec<f64>),
    pairs: &mut Vec<Pair>,
) -> Result<(), String> {
    use Shape::*;
    // Which geom the closed form takes first, its kind, and how many contacts it makes.
    let (first, second, code, points) = match (&g1.geom.shape, &g2.geom.shape) {
        (Plane, Plane) => return Ok(()),
        (Plane, Sphere { .. }) => (g1, g2, kind::PLANE_SPHERE, 1),
        (Sphere { .. }, Plane) => (g2, g1, kind::PLANE_SPHERE, 1),
        (Plane, Capsule { .. }) => (g1, g2, kind::PLANE_CAPSULE, 2),
        (Capsule { .. }, Plane) => (g2, g1, kind::PLANE_CAPSULE, 2),
        (Plane, Box { .. }) => (g1, g2, kind::PLANE_BOX, 4),
        (Box { .. }, Plane) => (g2, g1, kind::PLANE_BOX, 4),
        (Sphere { .. }, Sphere { .. } | Capsule { .. }) => (g1, g2, kind::SPHERES, 1),
        (Capsule { .. }, Sphere { .. }) => (g2, g1, kind::SPHERES, 1),
        (Capsule { .. }, Capsule { .. }) => (g1, g2, kind::CAPSULES, 2),
        (Box { .. }, Sphere { .. }) => (g1, g2, kind::BOX_SPHERE, 1),
        (Sphere { .. }, Box { .. }) => (g2, g1, kind::BOX_SPHERE, 1),
        (s1, s2) => {
            let label = |g: &Entry| match g.geom.name.as_str() {
                "" => format!("geom {}", g.index),
                name => format!("'{name}'"),
            };
            return Err(format!(
                "contacts between a {} ({}) and a {} ({})",
                s1.name(),
                label(g1),
                s2.name(),
                label(g2)
            ));
        }
    };
    // MuJoCo's orientation: the geom of the lower type first, of the lower body between equals.
    let key = |g: &Entry| (g.geom.shape.mujoco_type(), g.body);
    let oriented = if key(second) < key(first) { [second, first] } else { [first, second] };
    let link = |g: &Entry| model.tree().body_link[g.body].map_or(0, |l| l + 1);
    ints.extend([link(first), link(second), code as usize, usize::from(oriented[0].index != first.index)]);
    for g in [first, second] {
        let local = Pose::from_quat(&g.geom.quat, g.geom.pos);
        floats.extend((0..3).flat_map(|r| (0..3).map(move |c| local.rot[(r, c)])));
        floats.extend(local.pos.iter());
        floats.extend(size(&g.geom.shape));
    }
    floats.push(margin);
    pairs.push(Pair { geoms: oriented.map(|g| g.index), explicit, points });
    Ok(())
}

/// The three numbers of a shape's size the kernel reads.
fn size(shape: &Shape<f64>) -> [f64; 3] {
    match *shape {
        Shape::Sphere { radius } => [radius, 0.0, 0.0],
        Shape::Capsule { radius, half_length } => [radius, half_length, 0.0],
        Shape::Box { half_extents } => half_extents.into(),
        _ => [0.0; 3],
    }
}
