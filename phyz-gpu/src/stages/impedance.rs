//! Each constraint row's target velocity and regularizer, one unit per world over its block of
//! rows ([`super::rows`]): MuJoCo's soft-constraint model as the CPU assembles it under
//! `mujoco_compat` (`ContactRow::from_material`, `ContactProblem::set_rows`).
//!
//! A unilateral row (a limit's, a frictionless contact's, a pyramid's edge, an elliptic cone's
//! normal) at violation `r = depth + margin` has the impedance `d = solimp(max(r, 0))` and
//! targets the post-step velocity `v + dt (−B v + K d max(r, 0))` (`K`, `B` from `solref`),
//! `v` its pre-step velocity; its regularizer is `(1 − d)/d · w` (`w` the inverse weight,
//! MuJoCo's `diagApprox`). A pyramid's edge scales that by `(1 + μ²) 2μ² / impratio`; an elliptic
//! cone's friction rows take the normal's over `impratio` (over `impratio · f_k² / μ²` for spin
//! and roll) and target their pre-step velocity damped by `1 − dt B_f`.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::collision::{contact_float, contact_int};
use super::constraints::{limit_float, limit_int};
use super::layout::{Array, IMPRATIO, REGULARIZATION, TIMESTEP, header};
use super::pairs::{pair_float, pair_int};
use super::real::exact;
use super::rows::LIMIT_ROW;
use super::world::{World, fine, start};

/// MuJoCo's impedance bounds (`mjMINIMP`, `mjMAXIMP`), the CPU's `MIN_IMPEDANCE` and
/// `MAX_IMPEDANCE`.
const MIN_IMPEDANCE: f64 = 1e-4;
const MAX_IMPEDANCE: f64 = 0.9999;

/// The least impedance a regularizer divides by (the CPU's `normal_regularizer`).
const MIN_DIVISOR: f64 = 1e-6;

/// The smallest regularizer (MuJoCo's `mjMINVAL`, the CPU's `MIN_REGULARIZER`).
pub(crate) const MIN_REGULARIZER: f64 = 1e-15;

/// Where a constraint's numbers lie among the model's floats: its margin, `solref` (2),
/// `solimp` (5) and inverse weight.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Material {
    pub margin: usize,
    pub solref: usize,
    pub solimp: usize,
    pub weight: usize,
}

/// The material of the pair whose floats start at `pf`.
#[cube]
pub fn pair_material(pf: usize) -> Material {
    Material {
        margin: pf + pair_float::MARGIN,
        solref: pf + pair_float::SOLREF,
        solimp: pf + pair_float::SOLIMP,
        weight: pf + pair_float::WEIGHT,
    }
}

/// A side of a joint limit at a world's state: its material, its depth past the bound, its
/// degree of freedom, and the depth's change with the coordinate (−1 below, +1 above).
#[derive(CubeType, Clone)]
pub struct LimitSide<F: Float> {
    pub material: Material,
    pub depth: F,
    pub dof: usize,
    pub turn: F,
}

/// Side `side % 2` (lower, upper) of limit `side / 2` at the world's `qpos`.
#[cube]
pub fn limit_side<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    side: u32,
) -> LimitSide<F> {
    let i = (side / 2) as usize;
    let li = ints[header::LIMIT_INTS] as usize + i * limit_int::LEN;
    let lf = ints[header::LIMIT_FLOATS] as usize + i * limit_float::LEN;
    let q = data[world.at(start(ints, comptime![Array::Qpos as usize]), ints[li + limit_int::QPOS] as usize)];
    let mut depth = floats[lf + limit_float::LOWER] - q;
    let mut turn = F::new(-1.0);
    if side % 2 == 1 {
        depth = q - floats[lf + limit_float::UPPER];
        turn = F::new(1.0);
    }
    let material = Material {
        margin: lf + limit_float::MARGIN,
        solref: lf + limit_float::SOLREF,
        solimp: lf + limit_float::SOLIMP,
        weight: lf + limit_float::WEIGHT,
    };
    LimitSide::<F> { material, depth, dof: ints[li + limit_int::DOF] as usize, turn }
}

/// A unilateral row's target velocity and regularizer, and the damping `B` of its reference.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Terms<F: Float> {
    pub target: F,
    pub regularizer: F,
    pub damping: F,
}

/// The targets and regularizers of every world's rows, after [`super::rows`] (at the same
/// `qpos`, with `qvel`): into `target` and `regularizer`, row `r` of world `w` at
/// `r · worlds + w`.
#[cube(launch_unchecked)]
pub(crate) fn row_terms<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    found: &mut Tensor<u32>,
    geometry: &mut Tensor<F>,
    capacity: u32,
    counts: &mut Tensor<Atomic<u32>>,
    jacobian: &mut Tensor<F>,
    source: &mut Tensor<u32>,
    per_world: u32,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    if !fine::<F>(ints, data, &world) {
        terminate!();
    }
    let n = world.count;
    let m = capacity as usize;
    let mut count = counts[world.index].load();
    if per_world < count {
        count = per_world;
    }
    let mut r = 0u32;
    while r < count {
        let from = source[r as usize * n + world.index];
        if from >= LIMIT_ROW {
            let limit = limit_side::<F>(ints, floats, data, &world, from - LIMIT_ROW);
            let v = pre_step::<F>(ints, data, jacobian, &world, r);
            let terms = unilateral::<F>(floats, &limit.material, limit.depth, v);
            store::<F>(target, regularizer, &world, r, terms.target, terms.regularizer);
            r += 1;
        } else {
            let c = from as usize;
            let pair = found[contact_int::PAIR * m + c] as usize;
            let pi = ints[header::PAIR_INTS] as usize + pair * pair_int::LEN;
            let pf = ints[header::PAIR_FLOATS] as usize + pair * pair_float::LEN;
            let rows = ints[pi + pair_int::ROWS];
            let depth = geometry[contact_float::DEPTH * m + c];
            let material = pair_material(pf);
            if ints[pi + pair_int::PYRAMID] == 1 || rows == 1 {
                edge_terms::<F>(
                    ints,
                    floats,
                    data,
                    jacobian,
                    target,
                    regularizer,
                    &world,
                    r,
                    rows,
                    pf,
                    depth,
                    &material,
                );
            } else {
                cone_terms::<F>(
                    ints,
                    floats,
                    data,
                    jacobian,
                    target,
                    regularizer,
                    &world,
                    r,
                    rows,
                    pf,
                    depth,
                    &material,
                );
            }
            r += rows;
        }
    }
}

/// The pre-step velocity `J_r · qvel` of world `world`'s row `r`.
#[cube]
fn pre_step<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, jacobian: &mut Tensor<F>, world: &World, r: u32) -> F {
    let nv = ints[header::DOFS] as usize;
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let at = r as usize * nv;
    let mut sum = F::new(0.0);
    for d in 0..nv {
        sum += jacobian[(at + d) * world.count + world.index] * data[world.at(qvel, d)];
    }
    sum
}

/// Writes row `r`'s target and regularizer, the regularizer held at least [`MIN_REGULARIZER`].
#[cube]
fn store<F: Float>(target: &mut Tensor<F>, regularizer: &mut Tensor<F>, world: &World, r: u32, t: F, reg: F) {
    let at = r as usize * world.count + world.index;
    target[at] = t;
    let mut held = exact::<F>(MIN_REGULARIZER);
    if reg > held {
        held = reg;
    }
    regularizer[at] = held;
}

/// A unilateral row of the constraint whose numbers `material` places, at `depth`, pre-step
/// velocity `v` (the CPU's `ContactRow::from_material` and `normal_regularizer` under
/// `mujoco_compat`, where nothing impacts).
#[cube]
fn unilateral<F: Float>(floats: &mut Tensor<F>, material: &Material, depth: F, v: F) -> Terms<F> {
    let dt = floats[TIMESTEP];
    let pressed = F::max(depth + floats[material.margin], F::new(0.0));
    let d = impedance::<F>(floats, material.solimp, pressed);
    let dmax = floats[material.solimp + 1];
    let stiffness = spring::<F>(floats, material.solref, dmax, dt);
    let damping = damper::<F>(floats, material.solref, dmax, dt);
    let target = v + dt * (-damping * v + stiffness * d * pressed);
    let held = F::max(exact::<F>(MIN_DIVISOR), F::min(d, F::new(1.0)));
    let w = floats[material.weight];
    let live = (F::new(1.0) - held) / held * w;
    let floor = w * floats[REGULARIZATION];
    let mut regularizer = floor;
    if live > floor {
        regularizer = live;
    }
    Terms::<F> { target, regularizer, damping }
}

/// How a unilateral row's terms change with its depth (at pre-step velocity `v`, the target
/// changes with `v` by `1 − dt B`): the backward's share of [`unilateral`].
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Slopes<F: Float> {
    /// The damping `B` of its reference.
    pub damping: F,
    /// `∂ target / ∂ depth` and `∂ R / ∂ depth` (of the regularizer before a pyramid's scale).
    pub target: F,
    pub regularizer: F,
}

/// [`unilateral`]'s terms differentiated along the depth: the target through `K d(r) r`, the
/// regularizer `(1 − d)/d · w` through the impedance; nothing where the row is not pressed past
/// its margin or a bound holds the number (the impedance's, the regularizer's floors).
#[cube]
pub fn unilateral_slopes<F: Float>(floats: &mut Tensor<F>, material: &Material, depth: F) -> Slopes<F> {
    let dt = floats[TIMESTEP];
    let zero = F::new(0.0);
    let pressed = F::max(depth + floats[material.margin], zero);
    let d = impedance::<F>(floats, material.solimp, pressed);
    let slope = impedance_slope::<F>(floats, material.solimp, pressed);
    let dmax = floats[material.solimp + 1];
    let stiffness = spring::<F>(floats, material.solref, dmax, dt);
    let damping = damper::<F>(floats, material.solref, dmax, dt);
    let w = floats[material.weight];
    // The impedance lies within [MIN_IMPEDANCE, MAX_IMPEDANCE], inside `unilateral`'s bounds on
    // the divisor: the regularizer is `(1 − d)/d · w` unless a floor holds it.
    let live = (F::new(1.0) - d) / d * w;
    let floor = F::max(w * floats[REGULARIZATION], exact::<F>(MIN_REGULARIZER));
    let mut out = Slopes::<F> { damping, target: zero, regularizer: zero };
    if pressed > zero {
        out.target = dt * stiffness * (d + slope * pressed);
        if live > floor {
            out.regularizer = -w / (d * d) * slope;
        }
    }
    out
}

/// A pyramid edge's regularizer from its cone's normal one `normal`, `normal (1 + μ²) 2μ² /
/// impratio` in the CPU's order of operations (`set_rows`), for the pair whose floats start at
/// `pf`; `normal` itself for a frictionless contact's one row. Linear in `normal`, so it scales
/// the regularizer's slope too.
#[cube]
pub fn edge_regularizer<F: Float>(floats: &mut Tensor<F>, pf: usize, rows: u32, normal: F) -> F {
    let mu = floats[pf + pair_float::FRICTION];
    let mut out = normal;
    if rows > 1 {
        out = normal * (F::new(1.0) + mu * mu) * F::new(2.0) * mu * mu / floats[IMPRATIO];
    }
    out
}

/// MuJoCo's `K` of the reference acceleration for the `solref` at `at`, impedance ceiling
/// `dmax` and step `dt` (`SolRef::stiffness_damping`): from a time constant (kept at least
/// `2 dt`) and damping ratio where the first number is positive, else direct.
#[cube]
fn spring<F: Float>(floats: &mut Tensor<F>, at: usize, dmax: F, dt: F) -> F {
    let a = floats[at];
    let b = floats[at + 1];
    let mut k = -a / (dmax * dmax);
    if a > F::new(0.0) {
        let tc = F::max(a, F::new(2.0) * dt);
        k = F::new(1.0) / (dmax * dmax * tc * tc * b * b);
    }
    k
}

/// [`spring`]'s `B`.
#[cube]
fn damper<F: Float>(floats: &mut Tensor<F>, at: usize, dmax: F, dt: F) -> F {
    let a = floats[at];
    let mut b = -floats[at + 1] / dmax;
    if a > F::new(0.0) {
        let tc = F::max(a, F::new(2.0) * dt);
        b = F::new(2.0) / (dmax * tc);
    }
    b
}

/// The damping `B` of an elliptic cone's friction rows (the CPU's `friction_damping`): the
/// pair's `solreffriction`'s where it is set (not `[0, 0]`, and not of mixed sign), else the
/// normal row's `normal`.
#[cube]
fn friction_damping<F: Float>(floats: &mut Tensor<F>, pf: usize, normal: F) -> F {
    let at = pf + pair_float::SOLREFFRICTION;
    let zero = F::new(0.0);
    let first = floats[at] > zero;
    let second = floats[at + 1] > zero;
    let mixed = (first && !second) || (!first && second);
    let set = (F::abs(floats[at]) > zero || F::abs(floats[at + 1]) > zero) && !mixed;
    let mut b = normal;
    if set {
        let dmax = floats[pf + pair_float::SOLIMP + 1];
        let dt = floats[TIMESTEP];
        b = damper::<F>(floats, at, dmax, dt);
    }
    b
}

/// MuJoCo's impedance at violation `r` for the `solimp` at `at` (`SolImp::impedance`): from
/// `dmin` at the surface to `dmax` at `width` deep along a sigmoid of the given midpoint and
/// (whole) power, then held to `[MIN_IMPEDANCE, MAX_IMPEDANCE]`; the mean of the two for a curve
/// of no width.
#[cube]
fn impedance<F: Float>(floats: &mut Tensor<F>, at: usize, r: F) -> F {
    let dmin = floats[at];
    let dmax = floats[at + 1];
    let width = floats[at + 2];
    let midpoint = floats[at + 3];
    let power = floats[at + 4];
    let one = F::new(1.0);
    let flat = width <= exact::<F>(1e-15);
    let mut scale = width;
    if flat {
        scale = one;
    }
    let x = F::abs(r) / scale;
    let inside = x > F::new(0.0) && x < one;
    let mut inner = F::new(0.5);
    if inside {
        inner = x;
    }
    let p = u32::cast_from(power);
    let rising = one / whole_power::<F>(midpoint, p - 1) * whole_power::<F>(inner, p);
    let settling = one - one / whole_power::<F>(one - midpoint, p - 1) * whole_power::<F>(one - inner, p);
    let mut y = settling;
    if inner <= midpoint {
        y = rising;
    }
    if power <= one {
        y = x;
    }
    let mut d = dmin;
    if inside {
        d = dmin + y * (dmax - dmin);
    } else if x >= one {
        d = dmax;
    }
    if flat {
        d = F::new(0.5) * (dmin + dmax);
    }
    F::max(exact::<F>(MIN_IMPEDANCE), F::min(d, exact::<F>(MAX_IMPEDANCE)))
}

/// The slope of [`impedance`] at violation `r ≥ 0`: zero outside the sigmoid's span, for a curve
/// of no width, and where a bound holds the impedance.
#[cube]
fn impedance_slope<F: Float>(floats: &mut Tensor<F>, at: usize, r: F) -> F {
    let dmin = floats[at];
    let dmax = floats[at + 1];
    let width = floats[at + 2];
    let midpoint = floats[at + 3];
    let power = floats[at + 4];
    let one = F::new(1.0);
    let mut slope = F::new(0.0);
    if width > exact::<F>(1e-15) {
        let x = r / width;
        if x > F::new(0.0) && x < one {
            let p = u32::cast_from(power);
            let pf = F::cast_from(p);
            let mut y = x;
            let mut dy = one;
            if power > one {
                if x <= midpoint {
                    y = one / whole_power::<F>(midpoint, p - 1) * whole_power::<F>(x, p);
                    dy = pf / whole_power::<F>(midpoint, p - 1) * whole_power::<F>(x, p - 1);
                } else {
                    y = one - one / whole_power::<F>(one - midpoint, p - 1) * whole_power::<F>(one - x, p);
                    dy = pf / whole_power::<F>(one - midpoint, p - 1) * whole_power::<F>(one - x, p - 1);
                }
            }
            let d = dmin + y * (dmax - dmin);
            if d > exact::<F>(MIN_IMPEDANCE) && d < exact::<F>(MAX_IMPEDANCE) {
                slope = dy * (dmax - dmin) / width;
            }
        }
    }
    slope
}

/// `x` to the whole power `p`, by multiplication (GLSL's `pow` has no `f64` form).
#[cube]
fn whole_power<F: Float>(x: F, p: u32) -> F {
    let mut out = F::new(1.0);
    for _ in 0..p {
        out *= x;
    }
    out
}

/// The terms of a frictionless contact's normal row, or of the pyramid's edges (rows `r` on,
/// `rows` of them), of the pair whose floats start at `pf`.
#[cube]
fn edge_terms<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    world: &World,
    r: u32,
    rows: u32,
    pf: usize,
    depth: F,
    material: &Material,
) {
    for e in 0..rows {
        let v = pre_step::<F>(ints, data, jacobian, world, r + e);
        let terms = unilateral::<F>(floats, material, depth, v);
        // Each edge's matches the elliptic cone's friction impedance.
        let regularizer_e = edge_regularizer::<F>(floats, pf, rows, terms.regularizer);
        store::<F>(target, regularizer, world, r + e, terms.target, regularizer_e);
    }
}

/// The terms of an elliptic cone's rows (rows `r` on, `rows` of them): its normal row's, then
/// its friction rows' at the normal's regularizer over `impratio` (MuJoCo's `R_k f_k² = R_1 μ²`
/// on the spin and roll rows), each targeting its pre-step velocity damped by `1 − dt B_f`.
#[cube]
fn cone_terms<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    jacobian: &mut Tensor<F>,
    target: &mut Tensor<F>,
    regularizer: &mut Tensor<F>,
    world: &World,
    r: u32,
    rows: u32,
    pf: usize,
    depth: F,
    material: &Material,
) {
    let mu = floats[pf + pair_float::FRICTION];
    let v = pre_step::<F>(ints, data, jacobian, world, r);
    let terms = unilateral::<F>(floats, material, depth, v);
    store::<F>(target, regularizer, world, r, terms.target, terms.regularizer);
    let sliding = terms.regularizer / floats[IMPRATIO];
    let reference = F::new(1.0) - floats[TIMESTEP] * friction_damping::<F>(floats, pf, terms.damping);
    for k in 1..rows {
        let f = floats[pf + pair_float::FRICTION + (k - 1) as usize];
        let mut regularizer_k = sliding;
        if k > 2 {
            regularizer_k = sliding * mu * mu / (f * f);
        }
        let v_k = pre_step::<F>(ints, data, jacobian, world, r + k);
        store::<F>(target, regularizer, world, r + k, v_k * reference, regularizer_k);
    }
}
