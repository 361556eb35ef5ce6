//! Narrow phase: closed forms for plane against sphere, capsule, box, cylinder and ellipsoid,
//! sphere and capsule against each other, and box against sphere; an ellipsoid against any other
//! convex geom at its exact penetration ([`super::ellipsoid`]); the other convex pairs go to
//! parry3d-f64 ([`super::convex`]). A bounding-sphere test skips pairs too far apart to touch,
//! so a pair without a detector is an error only once it could touch.

use nalgebra::Vector3;

use super::MIN_VALUE;
use super::UnsupportedPair;
use super::anchor::{Anchor, Surface, tangent_reference};
use super::filter::can_collide;
use super::multiccd::quad;
use super::{box_box, capsule_box, convex, ellipsoid, hfield, multiccd, sphere_cylinder};
use crate::Scalar;
use crate::math::Pose;
use crate::model::material::{Material, SolImp, SolRef};
use crate::model::mesh::ConvexHull;
use crate::model::{CcdOptions, ContactPair, Geom, Model, Shape};

/// Most contact points one pair of geoms contributes.
pub const MAX_POINTS_PER_PAIR: usize = 4;

/// A detected contact.
#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    /// Global geom indices (bodies' geoms in order, MuJoCo's geom ids), in MuJoCo's orientation
    /// (see `flipped`).
    pub geoms: [usize; 2],
    /// Whether the anchor runs from the second geom's body to the first's: a detector pins a
    /// pair in the order its formulation needs, and the constraint stage turns the frame
    /// round (swapping the bodies, negating the normal) so that the normal points from the first
    /// geom to the second, as MuJoCo's does.
    pub flipped: bool,
    /// Which feature of the pair (corner, endpoint): with `geoms`, the contact's identity for
    /// warm starts.
    pub feature: usize,
    pub anchor: Anchor,
    /// The direction the first tangent is built from: fixed in the world, or, with
    /// `tangent_body`, fixed in that body's frame and turning with it (a capsule's axis).
    pub tangent_ref: Vector3<f64>,
    pub tangent_body: Option<usize>,
    pub material: Material,
    /// MuJoCo's contact dimension, 1, 3, 4 or 6 (the pair's, or the higher-priority or larger
    /// of the geoms'): which rows the constraint stage gives the contact.
    pub condim: u8,
    /// The explicit contact pair (`Model::contact_pairs`) whose parameters the contact takes;
    /// `None` for geoms that collide by their `contype` and `conaffinity`.
    pub pair: Option<usize>,
    /// Penetration at detection (negative: within the margin).
    pub depth: f64,
}

/// A geom (real parts) with its body, its global index and its poses.
#[derive(Clone, Debug)]
pub(super) struct Placed {
    pub body: usize,
    pub index: usize,
    pub geom: Geom<f64>,
    /// In its body's frame, and in the world.
    pub local: Pose<f64>,
    pub world: Pose<f64>,
}

/// The material a geom contributes: its friction, solref, solimp and margin, in the model's
/// scalar. (Its gap does not enter: MuJoCo 4 generates contacts out to margin + gap but leaves
/// those beyond the margin out of the solve, so the gap changes nothing the step computes.)
pub fn geom_material<S: Scalar>(g: &Geom<S>) -> Material<S> {
    Material {
        friction: g.friction[0],
        torsion: g.friction[1],
        rolling: g.friction[2],
        restitution: g.restitution,
        solref: SolRef::from_mjcf(g.solref),
        solreffriction: [S::zero(); 2],
        solimp: SolImp::raw(g.solimp),
        margin: g.margin,
        priority: g.priority,
        solmix: S::from_f64(g.solmix),
    }
}

/// The material two geoms touch with: MuJoCo's mix of the two ([`Material::combine`]), its
/// solimp then held to MuJoCo's ranges.
pub fn pair_material<S: Scalar>(g1: &Geom<S>, g2: &Geom<S>) -> Material<S> {
    let mixed = Material::combine(&geom_material(g1), &geom_material(g2));
    Material { solimp: mixed.solimp.clamped(), ..mixed }
}

/// MuJoCo's contact dimension of two geoms colliding by their `contype` and `conaffinity`: the
/// higher priority's, else the larger.
pub fn pair_condim<S, T>(g1: &Geom<S>, g2: &Geom<T>) -> u8 {
    match g1.priority.cmp(&g2.priority) {
        std::cmp::Ordering::Greater => g1.condim,
        std::cmp::Ordering::Less => g2.condim,
        std::cmp::Ordering::Equal => g1.condim.max(g2.condim),
    }
}

/// The material an explicit contact pair touches with: its own friction, solref,
/// solreffriction, solimp (held to MuJoCo's ranges) and margin; the restitution (phyz's own) the
/// geoms' larger.
pub fn contact_pair_material<S: Scalar>(pair: &ContactPair<S>, g1: &Geom<S>, g2: &Geom<S>) -> Material<S> {
    Material {
        friction: pair.friction[0],
        torsion: pair.friction[2],
        rolling: pair.friction[3],
        restitution: g1.restitution.max(g2.restitution),
        solref: SolRef::from_mjcf(pair.solref),
        solreffriction: pair.solreffriction,
        solimp: SolImp::from_mjcf(pair.solimp),
        margin: pair.margin,
        priority: 0,
        solmix: S::one(),
    }
}

/// Every contact between geoms that may collide, with the bodies at `body_poses` (world frame,
/// real parts; detection is a discrete decision taken on values).
pub fn detect<S: Scalar>(model: &Model<S>, body_poses: &[Pose<f64>]) -> Result<Vec<Contact>, UnsupportedPair> {
    detect_lane(model, 0, body_poses)
}

/// [`detect`] for batch lane `lane`: its geoms' sizes and materials, its bodies' poses.
pub fn detect_lane<S: Scalar>(
    model: &Model<S>,
    lane: usize,
    body_poses: &[Pose<f64>],
) -> Result<Vec<Contact>, UnsupportedPair> {
    let mut contacts = Vec::new();
    Detector::default().detect_lane(model, lane, body_poses, &mut contacts)?;
    Ok(contacts)
}

/// Detection's intermediate lists — the placed geoms, the broad phase's candidates, one pair's
/// points — kept from one call to the next so that detection refills storage instead of
/// allocating.
#[derive(Clone, Debug, Default)]
pub struct Detector {
    placed: Vec<Placed>,
    planes: Vec<usize>,
    boxes: Vec<(usize, Vector3<f64>, Vector3<f64>)>,
    /// Candidate pairs `(body_i, body_j, i, j)`, `i < j`: sorted, MuJoCo's order.
    pairs: Vec<Candidate>,
    /// The explicit pairs in MuJoCo's order: each pair's bodies, lower first, and its index.
    explicit: Vec<((usize, usize), usize)>,
    /// The explicit pairs' geoms, lower index first, sorted: the candidates they replace.
    named: Vec<(usize, usize)>,
    found: Vec<Found>,
}

impl Detector {
    /// [`detect_lane`], the contacts written into `contacts` (cleared first).
    pub fn detect_lane<S: Scalar>(
        &mut self,
        model: &Model<S>,
        lane: usize,
        body_poses: &[Pose<f64>],
        contacts: &mut Vec<Contact>,
    ) -> Result<(), UnsupportedPair> {
        contacts.clear();
        place(model, lane, body_poses, &mut self.placed);
        candidate_pairs(&self.placed, &mut self.planes, &mut self.boxes, &mut self.pairs);
        let Detector { placed, pairs, explicit, named, found, .. } = self;
        // MuJoCo's order: body pair by body pair, each pair's explicit pairs first.
        let bodies = |[a, b]: [usize; 2]| {
            let (a, b) = (placed.get(a).map_or(0, |g| g.body), placed.get(b).map_or(0, |g| g.body));
            (a.min(b), a.max(b))
        };
        explicit.clear();
        explicit.extend(model.contact_pairs().iter().enumerate().map(|(k, p)| (bodies(p.geoms), k)));
        explicit.sort_unstable();
        named.clear();
        named.extend(model.contact_pairs().iter().map(|p| (p.geoms[0].min(p.geoms[1]), p.geoms[0].max(p.geoms[1]))));
        named.sort_unstable();
        let mut next = 0;
        for &(_, _, i, j) in pairs.iter() {
            let (g1, g2) = (&placed[i], &placed[j]);
            while let Some(&(_, k)) = explicit.get(next).filter(|(at, _)| *at <= (g1.body, g2.body)) {
                collide_explicit(model, lane, placed, k, found, contacts)?;
                next += 1;
            }
            // Pairs named explicitly are tested with their own parameters instead.
            if g1.body == g2.body
                || named.binary_search(&(i, j)).is_ok()
                || !can_collide(model, g1.body, &g1.geom, g2.body, &g2.geom)
            {
                continue;
            }
            // The pair's margin is the sum of its geoms', as `Material::combine` has it: tested
            // before the pair's material is mixed.
            let margin = g1.geom.margin + g2.geom.margin;
            if apart(g1, g2, margin) {
                continue;
            }
            let condim = pair_condim(&g1.geom, &g2.geom);
            let material = || pair_material(&g1.geom, &g2.geom);
            collide(model, [g1, g2], (margin, material), (condim, None), found, contacts)?;
        }
        for &(_, k) in &explicit[next..] {
            collide_explicit(model, lane, placed, k, found, contacts)?;
        }
        Ok(())
    }
}

/// The contacts of explicit pair `k`, with its own parameters (batch lane `lane`'s). As MuJoCo,
/// an explicit pair collides whatever its bodies; where no degree of freedom can move its geoms
/// apart (one body, bodies welded together, two bodies without degrees of freedom) the
/// constraint stage keeps the contact without constraint rows.
fn collide_explicit<S: Scalar>(
    model: &Model<S>,
    lane: usize,
    placed: &[Placed],
    k: usize,
    found: &mut Vec<Found>,
    contacts: &mut Vec<Contact>,
) -> Result<(), UnsupportedPair> {
    let pair = &model.contact_pairs()[k];
    let [a, b] = pair.geoms;
    let (Some(g1), Some(g2), Some(s1), Some(s2)) = (placed.get(a), placed.get(b), model.geom(a), model.geom(b)) else {
        return Ok(());
    };
    let material = contact_pair_material(pair, s1, s2).map(|x| x.lane(lane));
    if !apart(g1, g2, material.margin) {
        collide(model, [g1, g2], (material.margin, || material), (pair.condim, Some(k)), found, contacts)?;
    }
    Ok(())
}

/// Every geom of `model` with its poses at `body_poses`, its numbers those of batch lane
/// `lane`, written into `placed`.
fn place<S: Scalar>(model: &Model<S>, lane: usize, body_poses: &[Pose<f64>], placed: &mut Vec<Placed>) {
    placed.clear();
    for (b, body) in model.bodies().iter().enumerate() {
        for geom in &body.geoms {
            let geom = geom.map_unnamed(&mut |x: S| x.lane(lane));
            let local = Pose::from_quat(&geom.quat, geom.pos);
            placed.push(Placed { body: b, index: placed.len(), world: body_poses[b].compose(&local), geom, local });
        }
    }
}

/// The contacts of geoms `g` within `margin`, touching with `material` (mixed only if they
/// touch) and MuJoCo's `condim`, from the explicit contact pair `pair` if any, appended to
/// `contacts`.
fn collide<S: Scalar>(
    model: &Model<S>,
    [g1, g2]: [&Placed; 2],
    (margin, material): (f64, impl FnOnce() -> Material),
    (condim, pair): (u8, Option<usize>),
    found: &mut Vec<Found>,
    contacts: &mut Vec<Contact>,
) -> Result<(), UnsupportedPair> {
    found.clear();
    self::pair(g1, g2, margin, model.contact.ccd, found).ok_or_else(|| UnsupportedPair {
        geom1: label(model, g1),
        shape1: g1.geom.shape.name(),
        geom2: label(model, g2),
        shape2: g2.geom.shape.name(),
    })?;
    if found.is_empty() {
        return Ok(());
    }
    let material = material();
    for &Found { feature, anchor, depth, normal, tangent } in found.iter() {
        let (tangent_ref, tangent_body) = match tangent {
            Some((body, axis)) => (axis, Some(body)),
            None => (tangent_reference(&normal), None),
        };
        let [first, second] = oriented(g1, g2);
        let (geoms, flipped) = ([first.index, second.index], anchor.bodies()[0] != first.body);
        contacts.push(Contact {
            geoms,
            flipped,
            feature,
            anchor,
            tangent_ref,
            tangent_body,
            material,
            condim,
            depth,
            pair,
        });
    }
    Ok(())
}

/// MuJoCo's orientation of a contact's geoms: the geom of the lower type first (of the lower
/// body, between geoms of one type); the normal points from it to the other.
fn oriented<'a>(g1: &'a Placed, g2: &'a Placed) -> [&'a Placed; 2] {
    let key = |g: &Placed| (g.geom.shape.mujoco_type(), g.body);
    if key(g2) < key(g1) { [g2, g1] } else { [g1, g2] }
}

/// A geom's name for messages: its own, or its place on its body when it has none.
fn label<S: Scalar>(model: &Model<S>, g: &Placed) -> String {
    let first = model.bodies()[..g.body].iter().map(|b| b.geoms.len()).sum::<usize>();
    let name = &model.bodies()[g.body].geoms[g.index - first].name;
    if name.is_empty() {
        format!("geom {} of body {}", g.index - first, model.bodies()[g.body].name)
    } else {
        name.clone()
    }
}

/// Pairs of geoms (indices into `placed`, ascending) whose bounds overlap: a plane against every
/// other geom, the bounded geoms by sweep and prune over their bounding boxes (bounding sphere
/// plus margin), so a scene of many separate objects does not test every pair.
fn candidate_pairs(
    placed: &[Placed],
    planes: &mut Vec<usize>,
    boxes: &mut Vec<(usize, Vector3<f64>, Vector3<f64>)>,
    pairs: &mut Vec<Candidate>,
) {
    planes.clear();
    boxes.clear();
    pairs.clear();
    for (i, g) in placed.iter().enumerate() {
        match g.geom.shape.bounding_radius() {
            None => planes.push(i),
            Some(r) => {
                let reach = r + g.geom.margin.max(0.0);
                boxes.push((i, g.world.pos.add_scalar(-reach), g.world.pos.add_scalar(reach)));
            }
        }
    }
    for &p in planes.iter() {
        pairs.extend(placed.iter().enumerate().filter(|&(i, _)| i != p).map(|(i, _)| candidate(placed, p, i)));
    }
    // Sweep and prune along the axis the boxes spread most on: boxes in order of their lower
    // bound there, each paired with those that start before it ends and overlap it on the other
    // two axes.
    let spread = |d: usize| {
        let (lo, hi) =
            boxes.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), g| (a.min(g.1[d]), b.max(g.1[d])));
        hi - lo
    };
    let axis = (0..3).max_by(|&a, &b| spread(a).total_cmp(&spread(b))).unwrap_or(0);
    // Ties in geom order, as a stable sort leaves them (an unstable sort allocates nothing).
    boxes.sort_unstable_by(|a, b| a.1[axis].total_cmp(&b.1[axis]).then(a.0.cmp(&b.0)));
    for (k, (i, lo, hi)) in boxes.iter().enumerate() {
        for (j, lo2, hi2) in boxes[k + 1..].iter().take_while(|(_, lo2, _)| lo2[axis] <= hi[axis]) {
            let overlap = (0..3).all(|d| lo2[d] <= hi[d] && lo[d] <= hi2[d]);
            if overlap {
                pairs.push(candidate(placed, *i, *j));
            }
        }
    }
    // MuJoCo's order: by the bodies, then the geoms.
    pairs.sort_unstable();
    pairs.dedup();
}

/// Two geoms `(body_i, body_j, i, j)`, the lower index first: ordered as MuJoCo takes them.
type Candidate = (usize, usize, usize, usize);

/// Geoms `a` and `b` as a [`Candidate`].
fn candidate(placed: &[Placed], a: usize, b: usize) -> Candidate {
    let (i, j) = (a.min(b), a.max(b));
    (placed[i].body, placed[j].body, i, j)
}

/// Whether the bounding spheres of two geoms (a plane's half-space) are farther apart than
/// `margin`, so that the pair cannot touch.
fn apart(g1: &Placed, g2: &Placed, margin: f64) -> bool {
    match (g1.geom.shape.bounding_radius(), g2.geom.shape.bounding_radius()) {
        (Some(r1), Some(r2)) => (g2.world.pos - g1.world.pos).norm() > r1 + r2 + margin,
        (None, Some(r)) => plane_height(g1, &g2.world.pos) > r + margin,
        (Some(r), None) => plane_height(g2, &g1.world.pos) > r + margin,
        (None, None) => false,
    }
}

/// Height of a world point above a plane geom.
fn plane_height(plane: &Placed, point: &Vector3<f64>) -> f64 {
    (point - plane.world.pos).dot(&(plane.world.rot * Vector3::z()))
}

/// One contact of a pair, before its material is attached.
#[derive(Clone, Copy, Debug)]
pub(super) struct Found {
    /// Which corner, end or rim point of the pair: stable while the pair stays in contact, so
    /// that warm starts find the same contact again whatever the depth order.
    pub feature: usize,
    pub anchor: Anchor,
    pub depth: f64,
    /// World normal at detection, from the anchor's first body to its second (a detector may
    /// take the pair in MuJoCo's order, not the caller's).
    pub normal: Vector3<f64>,
    /// The direction MuJoCo aligns the contact's first tangent with, where its detector sets
    /// one (a capsule's axis on a plane), as a body and the direction in its frame; otherwise
    /// [`tangent_reference`]'s default.
    pub tangent: Option<(usize, Vector3<f64>)>,
}

/// The contacts of one pair within `margin` (general convex pairs found as `ccd` says), or
/// `None` for a pair of shapes without a detector.
fn pair(g1: &Placed, g2: &Placed, margin: f64, ccd: CcdOptions, out: &mut Vec<Found>) -> Option<()> {
    use Shape::*;
    match (&g1.geom.shape, &g2.geom.shape) {
        // As MuJoCo: a height field meets neither a plane nor another height field.
        (Plane | HeightField { .. }, Plane | HeightField { .. }) => {}
        (HeightField { field }, _) => hfield::contacts(g1, field, g2, margin, out)?,
        (_, HeightField { field }) => hfield::contacts(g2, field, g1, margin, out)?,
        (Plane, _) => aligned(plane_against(&PlaneFrame::of(g1), g2, margin, out)?, g2),
        (_, Plane) => aligned(plane_against(&PlaneFrame::of(g2), g1, margin, out)?, g1),
        (Ellipsoid { .. }, _) | (_, Ellipsoid { .. }) => ellipsoid::contacts(g1, g2, margin, out)?,
        (s1, s2) if multiccd::handles(s1, s2) => multiccd::contacts(g1, g2, margin, ccd, out)?,
        (Capsule { .. }, Capsule { .. }) => capsules(g1, g2, margin, out)?,
        // MuJoCo's pair order: the sphere first (which sets coincident centres' normal).
        (Capsule { .. }, Sphere { .. }) => out.push(spheres(g2, g1)?),
        (Sphere { .. }, Sphere { .. } | Capsule { .. }) => out.push(spheres(g1, g2)?),
        (Box { .. }, Box { .. }) => box_box::contacts(g1, g2, margin, out)?,
        (Capsule { .. }, Box { .. }) | (Box { .. }, Capsule { .. }) => capsule_box::contacts(g1, g2, margin, out)?,
        (Box { half_extents }, Sphere { radius }) => out.push(box_sphere(g1, half_extents, g2, *radius)),
        (Sphere { radius }, Box { half_extents }) => out.push(box_sphere(g2, half_extents, g1, *radius)),
        (&Sphere { radius }, &Cylinder { radius: r, half_length }) => {
            out.push(sphere_cylinder::contact(g1, radius, g2, r, half_length))
        }
        (&Cylinder { radius: r, half_length }, &Sphere { radius }) => {
            out.push(sphere_cylinder::contact(g2, radius, g1, r, half_length))
        }
        _ => out.extend(convex::manifold(g1, g2, margin)?),
    }
    out.retain(|c| c.depth > -margin);
    Some(())
}

/// The sphere centres (body frame) standing for a sphere, the two ends of a capsule (its axis's
/// end first), a box's corners (bit 1 of the index the x sign, bit 2 y, bit 4 z) or a mesh's hull
/// vertices, each passed to `each` in that order (MuJoCo's), and their radius (`None`: another
/// shape, nothing passed).
fn points_of(g: &Placed, mut each: impl FnMut(Vector3<f64>, f64)) -> Option<()> {
    let along = |h: f64| g.local.transform_point(&Vector3::new(0.0, 0.0, h));
    match g.geom.shape {
        Shape::Sphere { radius } => each(g.local.pos, radius),
        Shape::Capsule { radius, half_length } => {
            each(along(half_length), radius);
            each(along(-half_length), radius);
        }
        Shape::Box { half_extents: e } => {
            for k in 0..8 {
                let s = |bit: usize| if k & bit == 0 { -1.0 } else { 1.0 };
                each(g.local.transform_point(&Vector3::new(s(1) * e.x, s(2) * e.y, s(4) * e.z)), 0.0);
            }
        }
        Shape::Mesh { ref hull } => hull.vertices.iter().for_each(|v| each(g.local.transform_point(v), 0.0)),
        _ => return None,
    }
    Some(())
}

/// Below this sine of the tilt between a cylinder's discs and a plane, the deepest rim point is
/// ill-defined (it swings round the rim): the rim points are frozen material points instead.
const MIN_TILT: f64 = 1e-6;

/// Points on a cylinder's rim (geom frame) that can touch a plane with world normal `normal`:
/// the deepest point of each end disc's rim (re-found live when the cylinder is tilted), and the
/// two further corners of an equilateral triangle inscribed in the nearer disc, so that a
/// standing cylinder rests on three points.
fn cylinder_rim(
    cylinder: &Placed,
    radius: f64,
    half_length: f64,
    normal: &Vector3<f64>,
) -> [(Vector3<f64>, Option<Surface>); 4] {
    // The plane normal in the cylinder's own frame, where the axis is z.
    let n = cylinder.world.rot.transpose() * normal;
    let near_end = if n.z > 0.0 { -1.0 } else { 1.0 };
    let axis = Vector3::z() * near_end;
    // In the disc's plane, the direction towards the plane, scaled to the radius; any direction
    // when the discs lie parallel to the plane.
    let towards = axis * n.dot(&axis) - n;
    let tilted = towards.norm() > MIN_TILT;
    let towards = if tilted { towards * (radius / towards.norm()) } else { Vector3::x() * radius };
    let across = towards.cross(&axis) * (3f64.sqrt() / 2.0);
    let near = axis * half_length;
    let rim =
        |end: f64, point: Vector3<f64>| (point, tilted.then_some(Surface::CylinderRim { radius, half_length, end }));
    [
        rim(near_end, near + towards),
        rim(-near_end, -near + towards),
        (near - towards * 0.5 + across, None),
        (near - towards * 0.5 - across, None),
    ]
}

/// A plane against the sphere points of another geom (a box's corners, a cylinder's rim points,
/// an ellipsoid's support point), appended to `out` in MuJoCo's order (the order a Gauss-Seidel
/// pass sweeps them in): a box's first four corners on the plane's side of its centre within the
/// margin, a mesh its hull's points as [`plane_mesh_points`] picks them. Returns `out` (`None` for a geom without
/// such points).
fn plane_against<'a>(
    plane: &PlaneFrame,
    other: &Placed,
    margin: f64,
    out: &'a mut Vec<Found>,
) -> Option<&'a mut [Found]> {
    let normal_body = plane.local.rot * Vector3::z();
    let normal = plane.world.rot * Vector3::z();
    let start = out.len();
    // A point in the geom's frame, with the surface it is re-found on, if curved; `feature`
    // names it among the geom's points.
    let mut push = |feature: usize, (point, surface): (Vector3<f64>, Option<Surface>), radius: f64| {
        let depth = radius - (other.world.transform_point(&point) - plane.world.pos).dot(&normal);
        let (a, b, origin) = (plane.body, other.body, plane.local.pos);
        let anchor = match surface {
            Some(surface) => Anchor::PlaneSupport { a, normal: normal_body, origin, b, geom: other.local, surface },
            None => {
                let center = other.local.transform_point(&point);
                Anchor::Plane { a, normal: normal_body, origin, b, center, radius }
            }
        };
        out.push(Found { feature, anchor, depth, normal, tangent: None });
    };
    match other.geom.shape {
        Shape::Cylinder { radius, half_length } => {
            let rim = cylinder_rim(other, radius, half_length, &normal);
            rim.into_iter().enumerate().for_each(|(k, p)| push(k, p, 0.0))
        }
        Shape::Ellipsoid { radii } => {
            let surface = Surface::Ellipsoid { radii };
            let down = -(other.world.rot.transpose() * normal);
            push(0, (surface.support(&down), Some(surface)), 0.0);
        }
        Shape::Mesh { ref hull } => {
            // The height above the plane, as a function of the geom-frame vertex.
            let (up, offset) = (other.world.rot.transpose() * normal, (other.world.pos - plane.world.pos).dot(&normal));
            for k in plane_mesh_points(hull, &up, offset, margin) {
                push(k, (hull.vertices[k], None), 0.0);
            }
        }
        _ => {
            let (to_geom, mut k) = (other.local.inverse(), 0);
            // As MuJoCo's `mjc_PlaneBox`: a box's corners on the plane's side of its centre.
            let corners = matches!(other.geom.shape, Shape::Box { .. });
            let down = |point: &Vector3<f64>| (other.world.rot * point).dot(&normal) <= 0.0;
            points_of(other, |c, radius| {
                let point = to_geom.transform_point(&c);
                if !corners || down(&point) {
                    push(k, (point, None), radius);
                }
                k += 1;
            })?;
        }
    }
    // MuJoCo's order, the points within the margin; a box keeps its first four.
    let mut kept = start;
    for i in start..out.len() {
        if out[i].depth > -margin && kept < start + MAX_POINTS_PER_PAIR {
            out.swap(kept, i);
            kept += 1;
        }
    }
    out.truncate(kept);
    Some(&mut out[start..])
}

/// The hull vertices (indices) that touch a plane, as MuJoCo 4's `mjc_PlaneConvex` picks them,
/// given the plane's normal `up` in the hull's frame and the hull origin's height `offset`
/// above it: the deepest vertex (the first of equals), then the corners of the hull face
/// through it whose outward normal is most nearly opposite the plane's, from the deepest on
/// (MuJoCo's largest quadrilateral anchored at the deepest where the face has more than four).
/// A face resting on the plane so touches at its corners, an edge at its ends, a corner at
/// itself; the caller keeps those within the margin.
fn plane_mesh_points(hull: &ConvexHull, up: &Vector3<f64>, offset: f64, margin: f64) -> Vec<usize> {
    let height = |k: usize| up.dot(&hull.vertices[k]) + offset;
    let Some(deepest) = (0..hull.vertices.len()).min_by(|&a, &b| height(a).total_cmp(&height(b))) else {
        return Vec::new();
    };
    if height(deepest) > margin {
        return Vec::new();
    }
    let facing = |p: &&usize| hull.polygons[**p].normal.dot(up);
    let Some(&face) = hull.vertex_polygons[deepest].iter().min_by(|a, b| facing(a).total_cmp(&facing(b))) else {
        return vec![deepest];
    };
    let ring = &hull.polygons[face].vertices;
    let start = ring.iter().position(|&k| k == deepest).unwrap_or(0);
    let ring: Vec<usize> = (0..ring.len()).map(|i| ring[(start + i) % ring.len()]).collect();
    if ring.len() <= MAX_POINTS_PER_PAIR {
        return ring;
    }
    let corners: Vec<Vector3<f64>> = ring.iter().map(|&k| hull.vertices[k]).collect();
    quad(&corners, 1).iter().map(|&i| ring[i]).collect()
}

/// A plane geom's contacts `found` with `other`, their frames aligned as MuJoCo's
/// `mjc_PlaneCapsule` aligns a capsule's (with its axis, turning with its body); MuJoCo does
/// this for plane geoms only, not for a box face.
fn aligned(found: &mut [Found], other: &Placed) {
    if matches!(other.geom.shape, Shape::Capsule { .. }) {
        let axis = other.local.rot * Vector3::z();
        found.iter_mut().for_each(|f| f.tangent = Some((other.body, axis)));
    }
}

/// Where a plane geom is: its body and its frame (z the normal) in the body and in the world.
struct PlaneFrame {
    body: usize,
    local: Pose<f64>,
    world: Pose<f64>,
}

impl PlaneFrame {
    fn of(plane: &Placed) -> Self {
        PlaneFrame { body: plane.body, local: plane.local, world: plane.world }
    }
}

/// The closest points of two segments `p1 + s d1`, `p2 + t d2` (`s, t ∈ [0, 1]`).
fn closest_on_segments(p1: Vector3<f64>, d1: Vector3<f64>, p2: Vector3<f64>, d2: Vector3<f64>) -> (f64, f64) {
    let r = p1 - p2;
    let (a, e, f) = (d1.dot(&d1), d2.dot(&d2), d2.dot(&r));
    if a <= 1e-15 && e <= 1e-15 {
        return (0.0, 0.0);
    }
    if a <= 1e-15 {
        return (0.0, (f / e).clamp(0.0, 1.0));
    }
    let c = d1.dot(&r);
    if e <= 1e-15 {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let b = d1.dot(&d2);
    let denom = a * e - b * b;
    let mut s = if denom > 1e-15 * a * e { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

/// A segment's two ends.
type Segment = [Vector3<f64>; 2];

/// A sphere's centre or a capsule's core segment, as its two ends in the body frame and in the
/// world, with the radius.
fn core(g: &Placed) -> Option<(Segment, Segment, f64)> {
    let (half, radius) = match g.geom.shape {
        Shape::Sphere { radius } => (0.0, radius),
        Shape::Capsule { radius, half_length } => (half_length, radius),
        _ => return None,
    };
    let end = |pose: &Pose<f64>, h: f64| pose.transform_point(&Vector3::new(0.0, 0.0, h));
    Some(([end(&g.local, -half), end(&g.local, half)], [end(&g.world, -half), end(&g.world, half)], radius))
}

/// Two spheres or capsules: the closest points of their core segments, frozen as sphere centres.
fn spheres(g1: &Placed, g2: &Placed) -> Option<Found> {
    let ([a0, a1], [p1, q1], r1) = core(g1)?;
    let ([b0, b1], [p2, q2], r2) = core(g2)?;
    let (d1, d2) = (q1 - p1, q2 - p2);
    let (s, t) = closest_on_segments(p1, d1, p2, d2);
    let centres = [a0 + (a1 - a0) * s, b0 + (b1 - b0) * t];
    let slides = [sliding(s, a1 - a0), sliding(t, b1 - b0)];
    Some(sphere_pair([g1, g2], (centres, slides), [p1 + d1 * s, p2 + d2 * t], [r1, r2], 0))
}

/// The body-frame direction a segment's closest point at parameter `s` (of `[0, 1]`) slides
/// along, `direction`; `None` at an end or on a segment of no length, where it stays put.
fn sliding(s: f64, direction: Vector3<f64>) -> Option<Vector3<f64>> {
    (s > 0.0 && s < 1.0 && direction.norm_squared() > 0.0).then_some(direction)
}

/// Two spheres of radii `r` at `centres` (body frames, with the lines they slide along;
/// `world`: the centres in the world), one on each geom, pinned as an [`Anchor::Spheres`]
/// whose normal joins the centres. Centres that coincide join along no direction: MuJoCo then
/// takes the cross product of the two geoms' z axes, or the world's x axis where they are
/// parallel (`mjraw_SphereSphere`), and so does phyz, frozen on the first body with the
/// touching points on the spheres along it ([`Anchor::Points`]), so the depth's derivative is
/// the one along that axis. Callers pass the geoms in MuJoCo's pair order (by type, then
/// index), which sets that normal's sign.
pub(super) fn sphere_pair(
    [g1, g2]: [&Placed; 2],
    (centres, [slide_a, slide_b]): (Segment, [Option<Vector3<f64>>; 2]),
    world: Segment,
    r: [f64; 2],
    feature: usize,
) -> Found {
    let gap = world[1] - world[0];
    let distance = gap.norm();
    let depth = r[0] + r[1] - distance;
    if distance < MIN_VALUE {
        let normal = (g1.world.rot * Vector3::z()).cross(&(g2.world.rot * Vector3::z()));
        let length = normal.norm();
        let normal = if length < MIN_VALUE { Vector3::x() } else { normal / length };
        return coincident([g1, g2], centres, r, normal, feature);
    }
    let anchor = Anchor::Spheres {
        a: g1.body,
        center_a: centres[0],
        slide_a,
        radius_a: r[0],
        b: g2.body,
        center_b: centres[1],
        slide_b,
        radius_b: r[1],
    };
    Found { feature, anchor, depth, normal: gap / distance, tangent: None }
}

/// Two spheres of radii `r` whose `centres` (body frames) coincide, touching along the world
/// direction `normal` (frozen on the first body), at the points of the spheres along it.
fn coincident([g1, g2]: [&Placed; 2], centres: Segment, r: [f64; 2], normal: Vector3<f64>, feature: usize) -> Found {
    let on_body = |g: &Placed| g.local.rot * g.world.rot.transpose() * normal;
    let anchor = Anchor::Points {
        a: g1.body,
        point_a: centres[0] + on_body(g1) * r[0],
        b: g2.body,
        point_b: centres[1] - on_body(g2) * r[1],
        normal: on_body(g1),
        normal_on_b: false,
    };
    Found { feature, anchor, depth: r[0] + r[1], normal, tangent: None }
}

/// Below this squared sine of the angle between two capsules' axes, MuJoCo 4 takes them as
/// parallel (measured: 1e-4 rad, whatever the lengths).
const PARALLEL: f64 = 1e-8;

/// Two capsules. Crossed, the closest points of their core segments ([`spheres`]); with
/// (nearly) parallel axes, where the closest points are a whole stretch, MuJoCo 4's rule: a
/// contact at each end of the stretch where the segments overlap along the first's axis (lower
/// end first) — the second's end where it lies within the first, else the first's end against
/// the nearest point of the second; segments that do not overlap meet at their nearest ends,
/// twice (MuJoCo's two candidates coincide there and it keeps both).
fn capsules(g1: &Placed, g2: &Placed, margin: f64, out: &mut Vec<Found>) -> Option<()> {
    let (Shape::Capsule { radius: r1, half_length: h1 }, Shape::Capsule { radius: r2, half_length: h2 }) =
        (&g1.geom.shape, &g2.geom.shape)
    else {
        return None;
    };
    // Half-axes in the world and on the bodies.
    let half_axis = |pose: &Pose<f64>, h: f64| pose.rot * Vector3::z() * h;
    let (a1, a2) = (half_axis(&g1.world, *h1), half_axis(&g2.world, *h2));
    let (aa, ab, bb) = (a1.dot(&a1), a1.dot(&a2), a2.dot(&a2));
    if aa * bb - ab * ab >= PARALLEL * aa * bb || aa == 0.0 || bb == 0.0 {
        out.push(spheres(g1, g2)?);
        return Some(());
    }
    // Each end of the second segment (`x₂ = ±1`) as the point `centre₁ + x₁ · a₁` of the first's
    // line it projects to, the lower first.
    let along = |x2: f64| (g2.world.pos + a2 * x2 - g1.world.pos).dot(&a1) / aa;
    let (mut lower, mut upper) = ((along(1.0), 1.0), (along(-1.0), -1.0));
    if upper.0 < lower.0 {
        std::mem::swap(&mut lower, &mut upper);
    }
    // The overlap's ends: the second's end where it lies within the first, else the first's end
    // (the nearer, for segments that do not overlap) against the nearest point of the second.
    let nearest = |x1: f64| ((g1.world.pos + a1 * x1 - g2.world.pos).dot(&a2) / bb).clamp(-1.0, 1.0);
    let end = |(x1, x2): (f64, f64)| {
        let x = x1.clamp(-1.0, 1.0);
        if x == x1 { (x1, x2) } else { (x, nearest(x)) }
    };
    // Two contacts always, as MuJoCo's: where the overlap is a point (or none) the same one twice.
    for (feature, (x1, x2)) in [end(lower), end(upper)].into_iter().enumerate() {
        let world = [g1.world.pos + a1 * x1, g2.world.pos + a2 * x2];
        if (world[1] - world[0]).norm() > margin + r1 + r2 {
            continue;
        }
        let (b1, b2) = (half_axis(&g1.local, *h1), half_axis(&g2.local, *h2));
        let centres = [g1.local.pos + b1 * x1, g2.local.pos + b2 * x2];
        let slides = [sliding((x1 + 1.0) / 2.0, b1), sliding((x2 + 1.0) / 2.0, b2)];
        out.push(sphere_pair([g1, g2], (centres, slides), world, [*r1, *r2], feature));
    }
    Some(())
}

/// A box against a sphere. With the sphere's centre over a face (or inside the box), the face is
/// the plane it rests on; over an edge or a corner, the closest point of the box is frozen as a
/// point (radius 0) and the normal follows the live centres.
pub(super) fn box_sphere(cube: &Placed, half_extents: &Vector3<f64>, sphere: &Placed, radius: f64) -> Found {
    let to_box = cube.world.inverse();
    let centre = to_box.transform_point(&sphere.world.pos);
    let closest = centre.zip_map(half_extents, |c, e| c.clamp(-e, e));
    let outside = (0..3).filter(|&i| centre[i].abs() > half_extents[i]).count();
    // The face the contact pushes through: the one the centre is beyond, or, from inside, the
    // nearest (either way, the least inset); `face` is its axis and `side` its sign.
    let inset = |i: usize| half_extents[i] - centre[i].abs();
    let face = (0..3).min_by(|&i, &j| inset(i).total_cmp(&inset(j))).unwrap_or(0);
    // On a tie (a centre on the box's mid-plane) MuJoCo takes the face on the negative side.
    let side = if half_extents[face] + centre[face] <= half_extents[face] - centre[face] { -1.0 } else { 1.0 };
    let (sphere_centre, centre_in_body) = (sphere.world.pos, sphere.local.pos);
    let to_body = |p: &Vector3<f64>| cube.local.transform_point(p);
    if outside <= 1 {
        let mut normal = Vector3::zeros();
        normal[face] = side;
        let mut origin = Vector3::zeros();
        origin[face] = side * half_extents[face];
        let world_normal = cube.world.rot * normal;
        let depth = radius - (sphere_centre - cube.world.transform_point(&origin)).dot(&world_normal);
        let anchor = Anchor::Plane {
            a: cube.body,
            normal: cube.local.rot * normal,
            origin: to_body(&origin),
            b: sphere.body,
            center: centre_in_body,
            radius,
        };
        Found { feature: 0, anchor, depth, normal: world_normal, tangent: None }
    } else {
        let corner = cube.world.transform_point(&closest);
        let gap = sphere_centre - corner;
        let distance = gap.norm();
        // Over an edge, the closest point slides along it (the one axis the centre is within).
        let along = (outside == 2).then(|| (0..3).find(|&i| centre[i].abs() <= half_extents[i])).flatten();
        let slide_a = along.map(|i| cube.local.rot * Vector3::ith(i, 1.0));
        let anchor = Anchor::Spheres {
            a: cube.body,
            center_a: to_body(&closest),
            slide_a,
            radius_a: 0.0,
            b: sphere.body,
            center_b: centre_in_body,
            slide_b: None,
            radius_b: radius,
        };
        Found { feature: 0, anchor, depth: radius - distance, normal: gap / distance, tangent: None }
    }
}
