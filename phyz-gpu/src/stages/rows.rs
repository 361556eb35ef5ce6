//! Constraint rows (the CPU's constraint stage, `sim::gather`): the limits of hinges and slides
//! within their margins, one unit per world; then the contacts, one unit per contact of the
//! pool ([`super::collision`]), each contact's rows the relative velocity of its two bodies at
//! the contact point along its frame (`add_relative_rows`), or MuJoCo's pyramidal edges
//! `n ± f_k r_k` of those (`push_pyramid`).
//!
//! A world's rows are dense over its degrees of freedom, as MuJoCo Warp's `efc_J`, in a block of
//! its own; each unit takes its rows through its world's atomic counter, in one add made at the
//! same point by every unit (lavapipe's atomics taken in a loop's divergent branch handed two
//! units one slot), so a world's contacts lie in its block in the order they reached it. Each
//! row records where it comes from (`row_source`: a contact's pool slot, or [`LIMIT_ROW`] with
//! `2 · limit + side`). A world whose rows do not fit its block is failed
//! ([`status::ROW_OVERFLOW`]).

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::collision::{NO_ROW, contact_float, contact_int};
use super::constraints::{limit_float, limit_int};
use super::layout::{Array, header, link_int, status};
use super::pairs::{pair_float, pair_int};
use super::real::V3;
use super::world::{World, fail, fine, start};

/// The flag of a limit's row in `row_source`.
pub const LIMIT_ROW: u32 = 1 << 31;

/// Empties every world's block of rows before a rows launch.
#[cube(launch_unchecked)]
pub(crate) fn clear_rows(counts: &mut Tensor<Atomic<u32>>, worlds: u32) {
    if ABSOLUTE_POS < worlds as usize {
        counts[ABSOLUTE_POS].store(0u32);
    }
}

/// The rows of the limits within their margins, after [`super::kinematics`] (which the
/// contacts' rows follow): for each limited hinge or slide, its lower side (a row `+1` on its
/// degree of freedom) where `lower − q > −margin`, its upper side (`−1`) where
/// `q − upper > −margin`.
#[cube(launch_unchecked)]
pub(crate) fn limit_rows<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    row_source: &mut Tensor<u32>,
    per_world: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let limits = ints[header::LIMITS];
    let mut count = 0u32;
    for i in 0..limits {
        let sides = active_sides::<F>(ints, floats, data, &world, i as usize);
        count += sides % 2 + sides / 2;
    }
    let mut row = counts[world.index].fetch_add(count);
    let nv = ints[header::DOFS] as usize;
    for i in 0..limits {
        let sides = active_sides::<F>(ints, floats, data, &world, i as usize);
        let dof = ints[ints[header::LIMIT_INTS] as usize + i as usize * limit_int::LEN + limit_int::DOF] as usize;
        for side in 0..2u32 {
            // Bit `side` of `sides`: lower, upper.
            if (sides >> side) % 2 == 1 {
                if row < per_world {
                    let at = row as usize * nv;
                    for d in 0..nv {
                        jacobian[(at + d) * world.count + world.index] = F::new(0.0);
                    }
                    let mut entry = F::new(1.0);
                    if side == 1 {
                        entry = F::new(-1.0);
                    }
                    jacobian[(at + dof) * world.count + world.index] = entry;
                    row_source[row as usize * world.count + world.index] = LIMIT_ROW | (2 * i + side);
                } else {
                    fail::<F>(ints, data, &world, comptime![status::ROW_OVERFLOW]);
                }
                row += 1;
            }
        }
    }
}

/// Which sides of limit `i` are within its margin, as bits: 1 the lower, 2 the upper.
#[cube]
fn active_sides<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    i: usize,
) -> u32 {
    let li = ints[header::LIMIT_INTS] as usize + i * limit_int::LEN;
    let lf = ints[header::LIMIT_FLOATS] as usize + i * limit_float::LEN;
    let q = data[world.at(start(ints, comptime![Array::Qpos as usize]), ints[li + limit_int::QPOS] as usize)];
    let margin = floats[lf + limit_float::MARGIN];
    let mut sides = 0u32;
    if floats[lf + limit_float::LOWER] - q > -margin {
        sides += 1;
    }
    if q - floats[lf + limit_float::UPPER] > -margin {
        sides += 2;
    }
    sides
}

/// The frame of a contact, and where its rows go.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Frame<F: Float> {
    pub point: V3<F>,
    pub normal: V3<F>,
    pub t1: V3<F>,
    pub t2: V3<F>,
}

/// The rows of every contact in the pool (`counter`, `found`, `geometry`, `capacity` slots),
/// after [`super::collision::collide`] and [`limit_rows`]: into `jacobian`, `per_world` rows a
/// world, each row's contact into `row_source`, and each contact's first row into the pool. Row `r`'s entry for
/// degree of freedom `d` of world `w` lies at `((r · nv + d) · worlds + w)`.
#[cube(launch_unchecked)]
pub(crate) fn contact_rows<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    counter: &mut Tensor<Atomic<u32>>,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    capacity: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    row_source: &mut Tensor<u32>,
    per_world: u32,
) {
    let c = ABSOLUTE_POS;
    let m = capacity as usize;
    let mut stored = counter[0].load();
    if capacity < stored {
        stored = capacity;
    }
    if c >= stored as usize {
        terminate!();
    }
    let world = World { index: found[contact_int::WORLD * m + c] as usize, count: worlds as usize };
    found[contact_int::ROW * m + c] = NO_ROW;
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let pi = ints[header::PAIR_INTS] as usize + found[contact_int::PAIR * m + c] as usize * pair_int::LEN;
    let pf = ints[header::PAIR_FLOATS] as usize + found[contact_int::PAIR * m + c] as usize * pair_float::LEN;
    let rows = ints[pi + pair_int::ROWS];
    let first = counts[world.index].fetch_add(rows);
    if rows > 0 {
        if first + rows > per_world {
            fail::<F>(ints, data, &world, comptime![status::ROW_OVERFLOW]);
        } else {
            found[contact_int::ROW * m + c] = first;
            let frame = Frame::<F> {
                point: V3::load(geometry, contact_float::POINT * m + c, m),
                normal: V3::load(geometry, contact_float::NORMAL * m + c, m),
                t1: V3::load(geometry, contact_float::TANGENT1 * m + c, m),
                t2: V3::load(geometry, contact_float::TANGENT2 * m + c, m),
            };
            // MuJoCo's first geom's body and its second's: the rows are the second's velocity
            // less the first's.
            let mut a = ints[pi + pair_int::LINK1];
            let mut b = ints[pi + pair_int::LINK2];
            if ints[pi + pair_int::FLIPPED] == 1 {
                a = ints[pi + pair_int::LINK2];
                b = ints[pi + pair_int::LINK1];
            }
            for r in 0..rows {
                let row = (first + r) as usize;
                row_source[row * world.count + world.index] = c as u32;
                contact_row::<F>(ints, floats, data, jacobian, &world, &frame, a, b, pi, pf, r, row);
            }
        }
    }
}

/// Adds `sign` times the row's entries for the chain of degrees of freedom behind link `link`
/// (plus one; zero, the world, has none) to the row at `at`: each degree of freedom's motion
/// at the contact point (about its tree's root, as the device's motions are) along the frame
/// row `primary`, plus `coefficient` times along row `secondary` (a pyramid's edge).
#[cube]
fn add_chain<F: Float>(
    ints: &Tensor<u32>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    world: &World,
    frame: &Frame<F>,
    link: u32,
    at: usize,
    primary: u32,
    secondary: u32,
    coefficient: F,
    sign: F,
) {
    if link > 0 {
        let n = world.count;
        let link_ints = ints[header::LINK_INTS] as usize;
        let root = ints[link_ints + (link as usize - 1) * link_int::LEN + link_int::ROOT] as usize;
        let origin = V3::<F>::load(data, world.at(start(ints, comptime![Array::Position as usize]), 3 * root), n);
        let offset = frame.point.sub(&origin);
        let motion = start(ints, comptime![Array::Motion as usize]);
        let mut l = link as usize;
        while l > 0 {
            let li = link_ints + (l - 1) * link_int::LEN;
            let adr = ints[li + link_int::DOF_ADR] as usize;
            for t in 0..ints[li + link_int::DOF_NUM] as usize {
                let d = adr + t;
                let ang = V3::<F>::load(data, world.at(motion, 6 * d), n);
                let lin = V3::<F>::load(data, world.at(motion, 6 * d + 3), n).add(&ang.cross(&offset));
                let mut entry = along::<F>(frame, primary, &lin, &ang);
                if primary != secondary {
                    entry += coefficient * along::<F>(frame, secondary, &lin, &ang);
                }
                let k = (at + d) * n + world.index;
                jacobian[k] += sign * entry;
            }
            l = ints[li + link_int::PARENT] as usize;
        }
    }
}

/// A motion (`lin` the velocity at the contact point, `ang` the angular velocity) along frame
/// row `row`: normal, first and second tangent, then the same three of the angular velocity
/// (spin, and roll about each tangent).
#[cube]
fn along<F: Float>(frame: &Frame<F>, row: u32, lin: &V3<F>, ang: &V3<F>) -> F {
    let mut v = lin.clone();
    if row >= 3 {
        v = ang.clone();
    }
    let mut direction = frame.normal.clone();
    if row % 3 == 1 {
        direction = frame.t1.clone();
    } else if row % 3 == 2 {
        direction = frame.t2.clone();
    }
    direction.dot(&v)
}

/// Row `r` of a contact (of the pair whose integers and floats start at `pi`, `pf`) at row
/// `row` of its world's block: the second body's velocity at the contact point less the first's
/// along the elliptic cone's frame row `r` (normal, tangents, then spin and rolls), or along the
/// pyramid's edge `r`, the normal plus or minus friction row `r / 2 + 1` times its coefficient.
#[cube]
fn contact_row<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    world: &World,
    frame: &Frame<F>,
    first: u32,
    second: u32,
    pi: usize,
    pf: usize,
    r: u32,
    row: usize,
) {
    let mut primary = r;
    let mut secondary = r;
    let mut coefficient = F::new(0.0);
    if ints[pi + pair_int::PYRAMID] == 1 {
        primary = 0u32;
        secondary = r / 2 + 1;
        coefficient = floats[pf + pair_float::FRICTION + (r / 2) as usize];
        if r % 2 == 1 {
            coefficient = -coefficient;
        }
    }
    let at = row * ints[header::DOFS] as usize;
    for d in 0..ints[header::DOFS] as usize {
        jacobian[(at + d) * world.count + world.index] = F::new(0.0);
    }
    let one = F::new(1.0);
    add_chain::<F>(ints, data, jacobian, world, frame, second, at, primary, secondary, coefficient, one);
    add_chain::<F>(ints, data, jacobian, world, frame, first, at, primary, secondary, coefficient, -one);
}
