//! A pressed contact row's share in the constraint solve's backward, for every pair the
//! collision stage takes (`pairs::kind`), either geom or both moving: a plane against a sphere,
//! a capsule's end or a box's corner; two spheres or capsules; a box and a sphere.
//!
//! A plane's contact lies between the plane and the sphere of radius `r` (zero for a box's
//! corner) centred at `c` on the other geom: depth `r − (c − p)·n`, point `c − n (r − depth/2)`;
//! the plane turns and moves with its body, `c` with the other ([`plane_shift`]). Its frame's
//! reference is fixed by the normal, or for a capsule its axis, which turns with it.
//!
//! The closed form (`collision::segments`) puts the contact between the points
//! `P_i = c_i + x_i a_i` of the two core segments (`c_i` a geom's centre, `a_i` its half axis, a
//! sphere's zero): `gap = P₂ − P₁`, normal `n = gap/|gap|`, depth `r₁ + r₂ − |gap|`, point
//! `P₁ + n (r₁ − depth/2)`, first tangent from a fixed reference `r` made orthogonal to `n`,
//! second `n × t₁`. Each `x_i` is either held (at a segment's end, or an end the parallel rule
//! picked) or free: strictly inside and the closest for the other point (`gap · a_i = 0`).
//! Moving the geoms (`∂c_i`, `∂a_i = ω_i × a_i`) moves the free ones by the derivative of
//! those conditions, and with them the gap, the frame, the point and the depth ([`moved`]).
//! A box against a sphere (`collision::box_feature`) is either a face, which turns and moves
//! with the box, or the box's closest point, which moves with the box and, along its free
//! axes, with the sphere's centre ([`box_shift`]).
//!
//! A row's value is `d · (v_B(p) − v_A(p)) + e · (ω_B − ω_A)` (`A`, `B` MuJoCo's first and
//! second geoms' bodies; `d` the normal or a sliding pyramid edge, `e` a torsional or rolling
//! edge's `± μ a` about the normal or a tangent, both in the stored frame), so its change with a
//! degree of freedom `k` at fixed `w` is the directions' change along the relative velocity and
//! spin, the direction along the relative spin about the point's move, and each body's own
//! motions turning with `k` ([`twist_share`]); plus the depth's share.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::collision::{MIN_VALUE, box_feature, contact_float, contact_int, geom_pose, touch};
use super::constraint_adjoint::{Pressed, depth_weight, pulled_velocity, velocity_share};
use super::impedance::{edge_regularizer, pair_material, unilateral_slopes};
use super::layout::{Array, header, link_int, status};
use super::pairs::{kind, pair_float, pair_int};
use super::real::{M3, V3, exact};
use super::world::{Spatial, World, fail, start};

/// The contact's geometry as the closed form left it, in its own orientation (from the first
/// geom it tests to the second).
#[derive(CubeType, Clone)]
struct Geometry<F: Float> {
    c1: V3<F>,
    c2: V3<F>,
    a1: V3<F>,
    a2: V3<F>,
    x1: F,
    x2: F,
    free1: bool,
    free2: bool,
    r1: F,
    gap: V3<F>,
    distance: F,
    normal: V3<F>,
    depth: F,
    reference: V3<F>,
    t1: V3<F>,
    /// `|r − (r·n) n|`: the first tangent is fixed (the world's x axis) where it is too short.
    length: F,
    /// The trees' origins the two geoms' motions are about.
    o1: V3<F>,
    o2: V3<F>,
    /// A box (the first geom) against a sphere of radius `r2` ([`box_feature`]): over a face,
    /// or at the box's closest point, whose local axes `free` follow the centre; the box's
    /// rotation.
    boxed: bool,
    face: bool,
    anchor: V3<F>,
    free: V3<F>,
    rot1: M3<F>,
    r2: F,
    /// A plane (the first geom) against the sphere of radius `r2` centred at `anchor` (a
    /// sphere, a capsule's end, a box's corner: `r2` zero) on the second; whether the frame's
    /// reference turns with the second geom (a capsule's axis).
    planar: bool,
    turning_reference: bool,
}

/// How the contact's normal, point and depth move with motions `m1`, `m2` of its two geoms.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
struct Shift<F: Float> {
    normal: V3<F>,
    point: V3<F>,
    depth: F,
}

/// How the contact moves with motions `m1`, `m2` of its two geoms: its normal, tangents, point
/// and depth, in the closed form's orientation.
#[derive(CubeType, Clone)]
struct Moved<F: Float> {
    normal: V3<F>,
    t1: V3<F>,
    t2: V3<F>,
    point: V3<F>,
    depth: F,
}

#[cube]
fn moved<F: Float>(s: &Geometry<F>, m1: &Spatial<F>, m2: &Spatial<F>) -> Moved<F> {
    let shift = if s.planar {
        plane_shift::<F>(s, m1, m2)
    } else if s.boxed {
        box_shift::<F>(s, m1, m2)
    } else {
        segment_shift::<F>(s, m1, m2)
    };
    let n = s.normal.clone();
    let dnormal = shift.normal.clone();
    let mut dt1 = V3::<F>::zero();
    if s.length > exact::<F>(MIN_VALUE) {
        let r = s.reference.clone();
        let mut dreference = V3::<F>::zero();
        if s.turning_reference {
            dreference = m2.ang.cross(&r);
        }
        let dprojected = dreference.sub(&n.scale(dreference.dot(&n) + r.dot(&dnormal))).sub(&dnormal.scale(r.dot(&n)));
        dt1 = dprojected.sub(&s.t1.scale(s.t1.dot(&dprojected))).scale(F::new(1.0) / s.length);
    }
    let dt2 = dnormal.cross(&s.t1).add(&n.cross(&dt1));
    Moved::<F> { normal: dnormal, t1: dt1, t2: dt2, point: shift.point, depth: shift.depth }
}

/// [`Shift`] of two spheres or capsules: the free points move by the derivative of their
/// conditions (`gap · a_i = 0`).
#[cube]
fn segment_shift<F: Float>(s: &Geometry<F>, m1: &Spatial<F>, m2: &Spatial<F>) -> Shift<F> {
    let dc1 = m1.lin.add(&m1.ang.cross(&s.c1.sub(&s.o1)));
    let dc2 = m2.lin.add(&m2.ang.cross(&s.c2.sub(&s.o2)));
    let da1 = m1.ang.cross(&s.a1);
    let da2 = m2.ang.cross(&s.a2);
    // The gap's change with both points held, and the free points' moves.
    let e = dc2.add(&da2.scale(s.x2)).sub(&dc1).sub(&da1.scale(s.x1));
    let alpha = e.dot(&s.a1) + s.gap.dot(&da1);
    let beta = e.dot(&s.a2) + s.gap.dot(&da2);
    let (aa, bb, ab) = (s.a1.dot(&s.a1), s.a2.dot(&s.a2), s.a1.dot(&s.a2));
    let mut dx1 = F::new(0.0);
    let mut dx2 = F::new(0.0);
    if s.free1 && s.free2 {
        let det = aa * bb - ab * ab;
        dx1 = (alpha * bb - ab * beta) / det;
        dx2 = (ab * alpha - aa * beta) / det;
    } else if s.free1 {
        dx1 = alpha / aa;
    } else if s.free2 {
        dx2 = -beta / bb;
    }
    let dgap = e.add(&s.a2.scale(dx2)).sub(&s.a1.scale(dx1));
    let n = s.normal.clone();
    let dnormal = dgap.sub(&n.scale(n.dot(&dgap))).scale(F::new(1.0) / s.distance);
    let ddepth = -n.dot(&dgap);
    let dp1 = dc1.add(&da1.scale(s.x1)).add(&s.a1.scale(dx1));
    let half = F::new(0.5);
    let dpoint = dp1.add(&dnormal.scale(s.r1 - s.depth * half)).sub(&n.scale(ddepth * half));
    Shift::<F> { normal: dnormal, point: dpoint, depth: ddepth }
}

/// [`Shift`] of a plane against a sphere centred at `anchor` (moving with the second geom): the
/// plane turns and moves with the first.
#[cube]
fn plane_shift<F: Float>(s: &Geometry<F>, m1: &Spatial<F>, m2: &Spatial<F>) -> Shift<F> {
    let n = s.normal.clone();
    let half = F::new(0.5);
    let dnormal = m1.ang.cross(&n);
    let at_plane = m1.lin.add(&m1.ang.cross(&s.c1.sub(&s.o1)));
    let dc = m2.lin.add(&m2.ang.cross(&s.anchor.sub(&s.o2)));
    let ddepth = -dc.sub(&at_plane).dot(&n) - s.anchor.sub(&s.c1).dot(&dnormal);
    let point = dc.sub(&dnormal.scale(s.r2 - s.depth * half)).add(&n.scale(ddepth * half));
    Shift::<F> { normal: dnormal, point, depth: ddepth }
}

/// [`Shift`] of a box against a sphere: over a face, the face turns and moves with the box;
/// at an edge or a corner, the box's closest point moves with the box and, along its free
/// axes, with the centre's move relative to the box.
#[cube]
fn box_shift<F: Float>(s: &Geometry<F>, m1: &Spatial<F>, m2: &Spatial<F>) -> Shift<F> {
    let n = s.normal.clone();
    let half = F::new(0.5);
    let at_anchor = m1.lin.add(&m1.ang.cross(&s.anchor.sub(&s.o1)));
    let dc = m2.lin.add(&m2.ang.cross(&s.c2.sub(&s.o2)));
    let mut out = Shift::<F> { normal: V3::zero(), point: V3::zero(), depth: F::new(0.0) };
    if s.face {
        let dnormal = m1.ang.cross(&n);
        let ddepth = -dc.sub(&at_anchor).dot(&n) - s.c2.sub(&s.anchor).dot(&dnormal);
        out.point = dc.sub(&dnormal.scale(s.r2 - s.depth * half)).add(&n.scale(ddepth * half));
        out.normal = dnormal;
        out.depth = ddepth;
    } else {
        let at_centre = m1.lin.add(&m1.ang.cross(&s.c2.sub(&s.o1)));
        let relative = s.rot1.apply_transpose(&dc.sub(&at_centre));
        let along = V3::<F>::new(relative.x * s.free.x, relative.y * s.free.y, relative.z * s.free.z);
        let dcorner = at_anchor.add(&s.rot1.apply(&along));
        let dgap = dc.sub(&dcorner);
        let dnormal = dgap.sub(&n.scale(n.dot(&dgap))).scale(F::new(1.0) / s.distance);
        let ddepth = -n.dot(&dgap);
        out.point = dcorner.sub(&dnormal.scale(s.depth * half)).sub(&n.scale(ddepth * half));
        out.normal = dnormal;
        out.depth = ddepth;
    }
    out
}

/// Whether link `l` is `link` or one of its ancestors (links plus one; 0 the world).
#[cube]
fn on_chain(ints: &Tensor<u32>, l: usize, link: usize) -> bool {
    let link_ints = ints[header::LINK_INTS] as usize;
    let mut at = link;
    let mut found = false;
    while at > 0 {
        if at == l {
            found = true;
        }
        at = ints[link_ints + (at - 1) * link_int::LEN + link_int::PARENT] as usize;
    }
    found
}

/// The geometry of the contact in pool slot `c` of `m`, of the pair whose records start at
/// `pi` and `pf`, the closed form evaluated again at the worlds' state.
#[cube]
#[allow(clippy::too_many_arguments)]
fn geometry_at<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    pressed: &Pressed<F>,
    found: &mut Tensor<u32>,
    m: usize,
    c: usize,
    pi: usize,
    pf: usize,
) -> Geometry<F> {
    let world = &pressed.block.world;
    let (link1, link2) = (ints[pi + pair_int::LINK1], ints[pi + pair_int::LINK2]);
    let g1 = geom_pose::<F>(ints, floats, data, world, link1, pf + pair_float::ROT1);
    let g2 = geom_pose::<F>(ints, floats, data, world, link2, pf + pair_float::ROT2);
    let size1 = V3::<F>::load(floats, pf + pair_float::SIZE1, 1);
    let size2 = V3::<F>::load(floats, pf + pair_float::SIZE2, 1);
    let found_at = touch::<F>(ints[pi + pair_int::KIND], found[contact_int::FEATURE * m + c], &g1, &size1, &g2, &size2);
    let a1 = g1.rot.z_axis().scale(size1.y);
    let a2 = g2.rot.z_axis().scale(size2.y);
    let (x1, x2) = (found_at.along1, found_at.along2);
    let mut gap = g2.pos.add(&a2.scale(x2)).sub(&g1.pos.add(&a1.scale(x1)));
    let code = ints[pi + pair_int::KIND];
    let (boxed, planar) = (code == kind::BOX_SPHERE, code <= kind::PLANE_BOX);
    let feature = box_feature::<F>(&g1, &size1, &g2.pos);
    if boxed {
        gap = g2.pos.sub(&feature.anchor);
    }
    let n = found_at.normal.clone();
    // A plane's contact: the centre of the sphere (or capsule end, or box corner) it presses,
    // from the point the closed form put midway.
    let mut radius = size2.x;
    let mut anchor = feature.anchor.clone();
    if code == kind::PLANE_BOX {
        radius = F::new(0.0);
    }
    if planar {
        anchor = found_at.point.add(&n.scale(radius - found_at.depth * F::new(0.5)));
    }
    let mut distance = gap.norm();
    if (boxed && feature.face) || planar {
        // No division by the gap over a face or a plane.
        distance = F::new(1.0);
    }
    let reference = found_at.reference.clone();
    let projected = reference.sub(&n.scale(reference.dot(&n)));
    let length = projected.norm();
    let mut t1 = V3::<F>::new(F::new(1.0), F::new(0.0), F::new(0.0));
    if length > exact::<F>(MIN_VALUE) {
        t1 = projected.scale(F::new(1.0) / length);
    }
    let mut o1 = V3::<F>::zero();
    if link1 > 0 {
        o1 = tree_origin::<F>(ints, data, world, link1 as usize);
    }
    let mut o2 = V3::<F>::zero();
    if link2 > 0 {
        o2 = tree_origin::<F>(ints, data, world, link2 as usize);
    }
    let one = F::new(1.0);
    Geometry::<F> {
        free1: a1.dot(&a1) > F::new(0.0) && F::abs(x1) < one,
        free2: a2.dot(&a2) > F::new(0.0) && F::abs(x2) < one,
        c1: g1.pos,
        c2: g2.pos,
        a1,
        a2,
        x1,
        x2,
        r1: size1.x,
        distance,
        gap,
        normal: n,
        depth: found_at.depth,
        reference,
        t1,
        length,
        o1,
        o2,
        boxed,
        face: feature.face,
        anchor,
        free: feature.free,
        rot1: g1.rot,
        r2: radius,
        planar,
        turning_reference: code == kind::PLANE_CAPSULE,
    }
}

/// What the row needs of the two bodies and of itself for each degree of freedom's share.
#[derive(CubeType, Clone)]
struct Row<F: Float> {
    /// The stored frame's turn of the closed form's (−1 where the pair is flipped), and the
    /// row's directions in the stored frame.
    sign: F,
    edge: Edge<F>,
    /// `v_B(p) − v_A(p)` and `ω_B − ω_A` under `w`, and the depth's weight.
    relative: V3<F>,
    spin: V3<F>,
    weight: F,
}

/// The share of degree of freedom `k`, moving the first geom by `m1` and the second by `m2`.
#[cube]
fn dof_share<F: Float>(s: &Geometry<F>, row: &Row<F>, m1: &Spatial<F>, m2: &Spatial<F>) -> F {
    let mv = moved::<F>(s, m1, m2);
    let edge = &row.edge;
    // The stored frame: the normal and the second tangent turned where the pair is.
    let (normal, t2) = (mv.normal.scale(row.sign), mv.t2.scale(row.sign));
    let mut tangent = mv.t1.clone();
    if edge.second > F::new(0.0) {
        tangent = t2.clone();
    }
    let mut axis = normal.clone();
    if edge.about == F::new(1.0) {
        axis = mv.t1.clone();
    } else if edge.about == F::new(2.0) {
        axis = t2;
    }
    let direction = normal.add(&tangent.scale(edge.turning));
    direction.dot(&row.relative)
        + edge.direction.dot(&row.spin.cross(&mv.point))
        + axis.scale(edge.spin).dot(&row.spin)
        + row.weight * mv.depth
}

/// A pressed contact row's share for the contact in pool slot `c`.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn contact_share<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    capacity: u32,
    pressed: &Pressed<F>,
    c: u32,
) {
    let (m, c) = (capacity as usize, c as usize);
    let terms = contact_terms::<F>(ints, floats, data, jacobian, found, geometry, pressed, m, c);
    let (pi, pf, edge, damping) = (terms.pi, terms.pf, terms.edge.clone(), terms.damping);
    let s = geometry_at::<F>(ints, floats, data, pressed, found, m, c, pi, pf);
    let (link1, link2) = (ints[pi + pair_int::LINK1] as usize, ints[pi + pair_int::LINK2] as usize);
    let mut sign = F::new(1.0);
    if ints[pi + pair_int::FLIPPED] == 1 {
        sign = F::new(-1.0);
    }
    let v1 = chain_motion::<F>(ints, floats, data, pressed, damping, link1);
    let v2 = chain_motion::<F>(ints, floats, data, pressed, damping, link2);
    let point = V3::<F>::load(geometry, contact_float::POINT * m + c, m);
    let (p1, p2) = (point.sub(&s.o1), point.sub(&s.o2));
    let relative = v2.lin.add(&v2.ang.cross(&p2)).sub(&v1.lin.add(&v1.ang.cross(&p1))).scale(sign);
    let row =
        Row::<F> { sign, edge: edge.clone(), relative, spin: v2.ang.sub(&v1.ang).scale(sign), weight: terms.weight };
    // Each body's motions turning with the degrees of freedom behind it: the second's velocity
    // counts in the row, the first's against it (the stored frame's own orientation).
    twist_share::<F>(ints, floats, data, pressed, damping, link2, &edge, &p2, sign);
    twist_share::<F>(ints, floats, data, pressed, damping, link1, &edge, &p1, -sign);
    if s.distance < exact::<F>(MIN_VALUE) {
        // Coincident centres: the normal comes from the axes, not the gap (no derivative here).
        fail::<F>(ints, data, &pressed.block.world, comptime![status::UNDIFFERENTIATED_CONTACT]);
    } else {
        // The geometry's change: with the first geom's chain (the second's too where they
        // share it), then with the rest of the second's.
        geometry_share::<F>(ints, data, pressed, &s, &row, link1, link2, true);
        geometry_share::<F>(ints, data, pressed, &s, &row, link2, link1, false);
    }
}

/// The geometry's share ([`dof_share`]) of each degree of freedom behind link `link`: moving
/// the first geom where `first` (the second too where `other`'s chain shares the dof), else
/// the second alone, skipping the dofs `other`'s chain shares (the first's walk took them).
#[cube]
#[allow(clippy::too_many_arguments)]
fn geometry_share<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    pressed: &Pressed<F>,
    s: &Geometry<F>,
    row: &Row<F>,
    link: usize,
    other: usize,
    #[comptime] first: bool,
) {
    let world = &pressed.block.world;
    let (n, motion) = (world.count, start(ints, comptime![Array::Motion as usize]));
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let link_ints = ints[header::LINK_INTS] as usize;
    let still = Spatial::<F>::zero();
    let mut l = link;
    while l > 0 {
        let li = link_ints + (l - 1) * link_int::LEN;
        let shared = on_chain(ints, l, other);
        if first || !shared {
            let adr = ints[li + link_int::DOF_ADR] as usize;
            for k in adr..adr + ints[li + link_int::DOF_NUM] as usize {
                let axis = Spatial::<F>::load(data, world.at(motion, 6 * k), n);
                let mut m1 = still.clone();
                let mut m2 = axis.clone();
                if first {
                    m1 = axis.clone();
                    if !shared {
                        m2 = still.clone();
                    }
                }
                data[world.at(adjoint_q, k)] -= dof_share::<F>(s, row, &m1, &m2);
            }
        }
        l = ints[li + link_int::PARENT] as usize;
    }
}

/// What every pressed contact row's share reads of its contact: its pair's records (at `pi`,
/// `pf`), the reference's damping at its depth, its direction ([`edge_of`]) and its depth's
/// weight ([`depth_weight`]).
#[derive(CubeType, Clone)]
struct ContactTerms<F: Float> {
    pi: usize,
    pf: usize,
    damping: F,
    weight: F,
    edge: Edge<F>,
}

/// The [`ContactTerms`] of the pressed row's contact in pool slot `c` of `m`; its share through
/// the target's pre-step velocity ([`velocity_share`]) is added on the way.
#[cube]
#[allow(clippy::too_many_arguments)]
fn contact_terms<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    pressed: &Pressed<F>,
    m: usize,
    c: usize,
) -> ContactTerms<F> {
    let pair = found[contact_int::PAIR * m + c] as usize;
    let pi = ints[header::PAIR_INTS] as usize + pair * pair_int::LEN;
    let pf = ints[header::PAIR_FLOATS] as usize + pair * pair_float::LEN;
    let rows = ints[pi + pair_int::ROWS];
    let depth = geometry[contact_float::DEPTH * m + c];
    let slopes = unilateral_slopes::<F>(floats, &pair_material(pf), depth);
    velocity_share::<F>(ints, floats, data, jacobian, pressed, slopes.damping);
    let edge = edge_of::<F>(ints, floats, found, geometry, pressed, m, c, pi, pf);
    let weight = depth_weight::<F>(pressed, &slopes, edge_regularizer::<F>(floats, pf, rows, slopes.regularizer));
    ContactTerms::<F> { pi, pf, damping: slopes.damping, weight, edge }
}

/// A contact row's directions: along the relative velocity at the point (`direction`), the
/// normal or a pyramid's sliding edge `n ± μ_k t_k`, with its tangent's coefficient (`turning`)
/// and whether that tangent is the second (`second`, 1 or 0); and along the relative angular
/// velocity (`angular`), a torsional or rolling edge's `± μ_k a` (`a` the normal, the first or
/// the second tangent: `about` 0, 1, 2), its coefficient `spin` (else zero).
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
struct Edge<F: Float> {
    direction: V3<F>,
    turning: F,
    second: F,
    angular: V3<F>,
    spin: F,
    about: F,
}

/// The directions of the pressed row of the contact in pool slot `c` (of `m`), of the pair
/// whose records start at `pi` and `pf`: its edge over friction row `k` (`rows::contact_row`'s
/// `r / 2`; the frame's row `k + 1`).
#[cube]
#[allow(clippy::too_many_arguments)]
fn edge_of<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    pressed: &Pressed<F>,
    m: usize,
    c: usize,
    pi: usize,
    pf: usize,
) -> Edge<F> {
    let normal = V3::<F>::load(geometry, contact_float::NORMAL * m + c, m);
    let zero = F::new(0.0);
    let mut out = Edge::<F> {
        direction: normal.clone(),
        turning: zero,
        second: zero,
        angular: V3::zero(),
        spin: zero,
        about: zero,
    };
    if ints[pi + pair_int::PYRAMID] == 1 {
        // Edge pairs over the friction rows: the tangents', then the spin's and the rolls'.
        let edge = pressed.row as u32 - found[contact_int::ROW * m + c];
        let k = edge / 2;
        let mut coefficient = floats[pf + pair_float::FRICTION + k as usize];
        if edge % 2 == 1 {
            coefficient = -coefficient;
        }
        let t1 = V3::<F>::load(geometry, contact_float::TANGENT1 * m + c, m);
        let t2 = V3::<F>::load(geometry, contact_float::TANGENT2 * m + c, m);
        if k < 2 {
            let mut tangent = t1.clone();
            if k == 1 {
                tangent = t2.clone();
                out.second = F::new(1.0);
            }
            out.direction = normal.add(&tangent.scale(coefficient));
            out.turning = coefficient;
        } else {
            out.about = F::cast_from(k - 2);
            let mut axis = normal.clone();
            if k == 3 {
                axis = t1.clone();
            } else if k == 4 {
                axis = t2.clone();
            }
            out.angular = axis.scale(coefficient);
            out.spin = coefficient;
        }
    }
    out
}

/// The motion of the body of link `link` (plus one; 0, the world, has none) under `w`
/// ([`pulled_velocity`]), in its tree's rooted frame.
#[cube]
fn chain_motion<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    pressed: &Pressed<F>,
    damping: F,
    link: usize,
) -> Spatial<F> {
    let world = &pressed.block.world;
    let link_ints = ints[header::LINK_INTS] as usize;
    let motion = start(ints, comptime![Array::Motion as usize]);
    let mut body = Spatial::<F>::zero();
    let mut l = link;
    while l > 0 {
        let li = link_ints + (l - 1) * link_int::LEN;
        let adr = ints[li + link_int::DOF_ADR] as usize;
        for d in adr..adr + ints[li + link_int::DOF_NUM] as usize {
            let w = pulled_velocity::<F>(ints, floats, data, pressed, damping, d);
            body = body.add(&Spatial::<F>::load(data, world.at(motion, 6 * d), world.count).scale(w));
        }
        l = ints[li + link_int::PARENT] as usize;
    }
    body
}

/// The share of `∂(J_r w)/∂q_k` that the motions beyond each degree of freedom `k` behind link
/// `link` turning with it bring (`S_k × U_k`, `U_k` their sum under `w`): `sign` times the
/// row's edge's `direction` along that turned motion's velocity at `point` (from its tree's
/// origin) and its `angular` direction along its angular velocity, taken from the cotangent of
/// `qpos`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn twist_share<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    pressed: &Pressed<F>,
    damping: F,
    link: usize,
    edge: &Edge<F>,
    point: &V3<F>,
    sign: F,
) {
    let world = &pressed.block.world;
    let n = world.count;
    let link_ints = ints[header::LINK_INTS] as usize;
    let motion = start(ints, comptime![Array::Motion as usize]);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let mut beyond = Spatial::<F>::zero();
    let mut l = link;
    while l > 0 {
        let li = link_ints + (l - 1) * link_int::LEN;
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let turning = adr + ints[li + link_int::WORLD_DOFS] as usize;
        let end = adr + ints[li + link_int::DOF_NUM] as usize;
        // The link's own turning motions turn with each of its dofs (a ball's axes with the
        // link); a hinge's own `S × S` is zero.
        let mut own = Spatial::<F>::zero();
        let mut all = Spatial::<F>::zero();
        for d in adr..end {
            let w = pulled_velocity::<F>(ints, floats, data, pressed, damping, d);
            let s = Spatial::<F>::load(data, world.at(motion, 6 * d), n).scale(w);
            if d >= turning {
                own = own.add(&s);
            }
            all = all.add(&s);
        }
        let turned = beyond.add(&own);
        for k in adr..end {
            let twist = Spatial::<F>::load(data, world.at(motion, 6 * k), n).cross_motion(&turned);
            let along = edge.direction.dot(&twist.lin.add(&twist.ang.cross(point))) + edge.angular.dot(&twist.ang);
            data[world.at(adjoint_q, k)] -= sign * along;
        }
        beyond = beyond.add(&all);
        l = ints[li + link_int::PARENT] as usize;
    }
}

/// Where link `link`'s tree has its origin (the rooted frame's), in the world.
#[cube]
fn tree_origin<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World, link: usize) -> V3<F> {
    let root = ints[ints[header::LINK_INTS] as usize + (link - 1) * link_int::LEN + link_int::ROOT] as usize;
    V3::<F>::load(data, world.at(start(ints, comptime![Array::Position as usize]), 3 * root), world.count)
}
