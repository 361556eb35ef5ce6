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
use phyz_core::collision::{can_collide, contact_pair_material, pair_condim, pair_material};
use phyz_core::contact::row::MIN_FRICTION;
use phyz_core::math::Pose;
use phyz_core::model::material::{Material, SolImp};
use phyz_core::model::{Cone, Geom, Shape};

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

/// A pair's integers: each geom's link plus one (zero: the world), the [`kind`], 1 where the
/// contact's frame is turned round (the geom tested first being MuJoCo's second), MuJoCo's
/// `condim`, and the constraint rows each contact takes (zero where no degree of freedom moves
/// one geom against the other).
pub mod pair_int {
    pub const LINK1: usize = 0;
    pub const LINK2: usize = 1;
    pub const KIND: usize = 2;
    pub const FLIPPED: usize = 3;
    pub const CONDIM: usize = 4;
    pub const ROWS: usize = 5;
    /// 1 where the rows are the edges of MuJoCo's pyramidal cone, 0 for the elliptic cone's
    /// (or a frictionless contact's) own rows.
    pub const PYRAMID: usize = 6;
    pub const LEN: usize = 7;
}

/// A pair's floats: each geom's pose in its link's frame (rotation by rows, then position) and
/// its size (a sphere's radius; a capsule's radius and half length; a box's half extents),
/// the margin within which the pair's contacts count, the friction of each friction row
/// (sliding twice, torsional, rolling twice), each held at MuJoCo's least (`MIN_FRICTION`), the
/// pair's `solref`, `solreffriction` and `solimp` (as the CPU mixes them), and the inverse
/// weight of its contacts (MuJoCo's `diagApprox`: the two bodies' translational weights).
pub mod pair_float {
    pub const ROT1: usize = 0;
    pub const POS1: usize = 9;
    pub const SIZE1: usize = 12;
    pub const ROT2: usize = 15;
    pub const POS2: usize = 24;
    pub const SIZE2: usize = 27;
    pub const MARGIN: usize = 30;
    pub const FRICTION: usize = 31;
    pub const SOLREF: usize = 36;
    pub const SOLREFFRICTION: usize = 38;
    pub const SOLIMP: usize = 40;
    pub const WEIGHT: usize = 45;
    pub const LEN: usize = 46;
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
    /// The constraint rows each of its contacts takes.
    pub rows: usize,
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
                let condim = pair_condim(g1.geom, g2.geom);
                let material = pair_material(g1.geom, g2.geom);
                push(model, [g1, g2], (material, condim, None), (ints, floats), &mut pairs)?;
            }
        }
    }
    for (k, pair) in model.contact_pairs().iter().enumerate() {
        let [a, b] = pair.geoms.map(|g| &entries[g]);
        let material = contact_pair_material(pair, a.geom, b.geom);
        push(model, [a, b], (material, pair.condim, Some(k)), (ints, floats), &mut pairs)?;
    }
    Ok(pairs)
}

/// The rows a contact of dimension `condim` takes under `cone`: a frictionless contact's normal
/// row; the pyramid's two edges per friction row; the elliptic cone's own rows.
fn rows_of(condim: u8, cone: Cone) -> usize {
    match (condim, cone) {
        (1, _) => 1,
        (c, Cone::Pyramidal) => 2 * (usize::from(c) - 1),
        (c, Cone::Elliptic) => usize::from(c),
    }
}

/// Appends the record of geoms `g` touching with `material`, or nothing for two planes or height
/// fields (MuJoCo tests none); `Err` for a pair without a closed form here, or whose `solimp`
/// the device cannot raise.
fn push(
    model: &Model<f64>,
    [g1, g2]: [&Entry; 2],
    (material, condim, explicit): (Material<f64>, u8, Option<usize>),
    (ints, floats): (&mut Vec<usize>, &mut Vec<f64>),
    pairs: &mut Vec<Pair>,
) -> Result<(), String> {
    use Shape::*;
    // Which geom the closed form takes first, its kind, and how many contacts it makes.
    let (first, second, code, points) = match (&g1.geom.shape, &g2.geom.shape) {
        // As MuJoCo: a height field meets neither a plane nor another height field.
        (Plane | HeightField { .. }, Plane | HeightField { .. }) => return Ok(()),
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
            let shape = |s: &Shape<f64>| {
                let name = s.name();
                if name.starts_with(['a', 'e', 'i', 'o', 'u']) { format!("an {name}") } else { format!("a {name}") }
            };
            return Err(format!("contacts between {} ({}) and {} ({})", shape(s1), label(g1), shape(s2), label(g2)));
        }
    };
    // MuJoCo's orientation: the geom of the lower type first, of the lower body between equals.
    let key = |g: &Entry| (g.geom.shape.mujoco_type(), g.body);
    let oriented = if key(second) < key(first) { [second, first] } else { [first, second] };
    let tree = model.tree();
    let link = |g: &Entry| tree.body_link[g.body].map_or(0, |l| l + 1);
    // The same chain of degrees of freedom behind both geoms: they cannot move apart, and
    // their contacts take no rows (as the CPU's constraint stage).
    let movable = tree.body_last_dof[g1.body] != tree.body_last_dof[g2.body];
    let rows = if movable { rows_of(condim, model.contact.cone) } else { 0 };
    let pyramid = condim > 1 && model.contact.cone == Cone::Pyramidal;
    // Turned round where MuJoCo's first geom is on another body than the one tested first (the
    // CPU's `anchor.bodies()[0] != first.body`).
    let flipped = oriented[0].body != first.body;
    ints.extend([link(first), link(second), code as usize, usize::from(flipped), usize::from(condim), rows]);
    ints.push(usize::from(pyramid));
    for g in [first, second] {
        let local = Pose::from_quat(&g.geom.quat, g.geom.pos);
        floats.extend((0..3).flat_map(|r| (0..3).map(move |c| local.rot[(r, c)])));
        floats.extend(local.pos.iter());
        floats.extend(size(&g.geom.shape));
    }
    floats.push(material.margin);
    let held = |f: f64| f.max(MIN_FRICTION);
    let (mu, torsion, rolling) = (held(material.friction), held(material.torsion), held(material.rolling));
    floats.extend([mu, mu, torsion, rolling, rolling]);
    floats.extend(material.solref.0);
    floats.extend(material.solreffriction);
    floats.extend(solimp(&material.solimp, || format!("the contacts of {}", label(first)))?);
    let weights = &model.constants().weights.body;
    floats.push(weights[g1.body] + weights[g2.body]);
    pairs.push(Pair { geoms: oriented.map(|g| g.index), explicit, points, rows });
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

/// A geom's name for messages: its own, quoted, or its index.
fn label(g: &Entry) -> String {
    match g.geom.name.as_str() {
        "" => format!("geom {}", g.index),
        name => format!("'{name}'"),
    }
}

/// The five numbers of a `solimp`, whose power the device raises to by multiplication: `Err`
/// (naming `what`, the constraints it is of) for a power that is not whole or above
/// [`MAX_POWER`].
pub(super) fn solimp(solimp: &SolImp<f64>, what: impl Fn() -> String) -> Result<[f64; 5], String> {
    let SolImp { dmin, dmax, width, midpoint, power } = *solimp;
    if power.fract() != 0.0 || power > f64::from(MAX_POWER) {
        return Err(format!("the solimp power {power} of {} (whole powers up to {MAX_POWER} only)", what()));
    }
    Ok([dmin, dmax, width, midpoint, power])
}

/// The largest `solimp` power the device takes (MuJoCo's default is 2).
pub const MAX_POWER: u32 = 16;
