//! RK4's integration taken back, one unit per world, around the backward of each point's
//! acceleration (the kernels Euler's backward runs at its one point).
//!
//! RK4 evaluates the acceleration `a_k` at four points `k` (`integrate::RK4`: places `c_k`,
//! weights `w_k`): `q_k = q ⊕ h c_k s_{k−1}` and `v_k = v + h c_k a_{k−1}`, with the slope
//! `s_k = dexp⁻¹(h c_k s_{k−1}) v_k` on rotations (`v_k` elsewhere; the start's `s_0 = v`), and
//! ends at `q' = q ⊕ h S`, `v' = v + h A` with `S = Σ w_k s_k`, `A = Σ w_k a_k`. The backward
//! takes the end back ([`rk4_end_adjoint`]), then each point from the last
//! ([`rk4_point_cotangents`], the acceleration's backward at the point, [`rk4_point_pullback`]),
//! gathering the start's cotangents as it goes ([`rk4_finish_adjoint`]).
//!
//! The acceleration's backward reads the post-step velocity `x = v + h a` of the constraint
//! solve's formulation: given `ā`, it is handed `x̄ = ā/h`, and what it returns for `v` less
//! `x̄` is `(∂a/∂v)ᵀ ā` (its returns for `q` and the controls are `ā`'s already).

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::backward::{Increment, position_adjoint};
use super::integrate::{dexp_coefficient, rotation_dof, wrapped};
use super::layout::{Array, TIMESTEP, header, joint, link_int};
use super::real::{V3, exact, sin_cos};
use super::world::{World, start};

/// `c'(t²)`, the slope of [`dexp_coefficient`] along `t²`, given `c` there: a series near
/// zero, where the closed form cancels.
#[cube]
fn dexp_coefficient_slope<F: Float>(t_sq: F, c: F) -> F {
    let mut slope = exact::<F>(1.0 / 720.0)
        + t_sq
            * (exact::<F>(2.0 / 30240.0)
                + t_sq
                    * (exact::<F>(3.0 / 1_209_600.0)
                        + t_sq
                            * (exact::<F>(4.0 / 47_900_160.0) + t_sq * exact::<F>(5.0 * 691.0 / 1_307_674_368_000.0))));
    if !(t_sq < exact::<F>(0.1)) {
        // `c = u/t²` with `u = 1 − h cot h`, `h = t/2`: `u' = h/sin²h − cot h`, `dh/dt² = 1/(8h)`.
        let half = F::sqrt(t_sq) * F::new(0.5);
        let sc = sin_cos::<F>(half);
        let du = half / (sc.sin * sc.sin) - sc.cos / sc.sin;
        slope = du / (F::new(8.0) * half * t_sq) - c / t_sq;
    }
    slope
}

/// What a cotangent `ȳ` of `y = dexp⁻¹(θ) ω` gives `ω` and `θ`.
#[derive(CubeType, Clone)]
struct DexpCotangents<F: Float> {
    omega: V3<F>,
    theta: V3<F>,
}

/// `dexp⁻¹(θ) ω = ω + ½ θ×ω + c θ×(θ×ω)` (`θ` wrapped to at most π) taken back: `ω̄` by the
/// transposed map (its cross products change sign), `θ̄` by the product rule, with `c`'s
/// change `2 c'(t²) θ·δθ`, then through the wrap.
#[cube]
fn dexp_inv_adjoint<F: Float>(theta: &V3<F>, omega: &V3<F>, bar: &V3<F>) -> DexpCotangents<F> {
    let wrap = wrapped::<F>(theta);
    let th = wrap.theta.clone();
    let t_sq = th.dot(&th);
    let c = dexp_coefficient::<F>(t_sq);
    let slope = dexp_coefficient_slope::<F>(t_sq, c);
    let th_bar = th.cross(bar);
    let omega_bar = bar.sub(&th_bar.scale(F::new(0.5))).add(&th.cross(&th_bar).scale(c));
    let th_omega = th.cross(omega);
    let wrapped_bar = omega
        .cross(bar)
        .scale(F::new(0.5))
        .add(&th_omega.cross(bar).add(&omega.cross(&bar.cross(&th))).scale(c))
        .add(&th.scale(F::new(2.0) * slope * bar.dot(&th.cross(&th_omega))));
    let theta_bar = wrapped_bar.scale(wrap.scale).add(&theta.scale(wrap.slope * theta.dot(&wrapped_bar)));
    DexpCotangents::<F> { omega: omega_bar, theta: theta_bar }
}

/// Where the backward's arrays start.
#[derive(CubeType, Clone)]
struct Cotangents {
    /// The cotangents of a point's `q` and `v` (the acceleration's backward reads and adds
    /// to them).
    q: usize,
    v: usize,
    start_q: usize,
    start_v: usize,
    /// Pending for the point taken back next: its slope's and its acceleration's.
    slope: usize,
    acceleration: usize,
    slope_mean: usize,
    acceleration_mean: usize,
}

#[cube]
fn cotangents(ints: &Tensor<u32>) -> Cotangents {
    Cotangents {
        q: start(ints, comptime![Array::AdjointQpos as usize]),
        v: start(ints, comptime![Array::AdjointQvel as usize]),
        start_q: start(ints, comptime![Array::AdjointStartQpos as usize]),
        start_v: start(ints, comptime![Array::AdjointStartQvel as usize]),
        slope: start(ints, comptime![Array::AdjointSlope as usize]),
        acceleration: start(ints, comptime![Array::AdjointQacc as usize]),
        slope_mean: start(ints, comptime![Array::AdjointSlopeMean as usize]),
        acceleration_mean: start(ints, comptime![Array::AdjointAccelerationMean as usize]),
    }
}

/// The increment `h c s_{k−1}` that moved the start to point `k` (none at the start).
#[cube]
fn point_increment<F: Float>(ints: &Tensor<u32>, point: u32, c: F, dt: F) -> Increment<F> {
    let nv = ints[header::DOFS] as usize;
    let mut before = 0;
    if point > 0 {
        before = point as usize - 1;
    }
    let slopes = start(ints, comptime![Array::PointSlope as usize]) + before * nv;
    Increment::<F> { velocity: slopes, acceleration: slopes, acceleration_weight: F::new(0.0), h: c * dt }
}

/// The end `q' = q ⊕ h S`, `v' = v + h A` taken back, after the forward's points were kept
/// (`integrate::rk4_keep`): from the end's cotangents in [`Array::AdjointQpos`] and
/// [`Array::AdjointQvel`], the start's are begun (`q̄` through `⊕`, `v̄ = v̄'`) with those of
/// `S` and `A`; the pending ones and the controls' are set to zero.
#[cube(launch_unchecked)]
pub(crate) fn rk4_end_adjoint<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let dt = floats[TIMESTEP];
    let at = cotangents(ints);
    for d in 0..ints[header::DOFS] as usize {
        let v_bar = data[world.at(at.v, d)];
        data[world.at(at.start_v, d)] = v_bar;
        data[world.at(at.acceleration_mean, d)] = v_bar * dt;
        data[world.at(at.slope_mean, d)] = F::new(0.0);
        data[world.at(at.slope, d)] = F::new(0.0);
        data[world.at(at.acceleration, d)] = F::new(0.0);
    }
    let mean = start(ints, comptime![Array::SlopeMean as usize]);
    let increment = Increment::<F> { velocity: mean, acceleration: mean, acceleration_weight: F::new(0.0), h: dt };
    position_adjoint::<F>(ints, data, &world, &increment, at.q, at.slope_mean);
    for d in 0..ints[header::DOFS] as usize {
        data[world.at(at.start_q, d)] = data[world.at(at.q, d)];
    }
    let adjoint_u = start(ints, comptime![Array::AdjointCtrl as usize]);
    for a in 0..ints[header::CONTROLS] as usize {
        data[world.at(adjoint_u, a)] = F::new(0.0);
    }
}

/// One degree of freedom of point `k` (place `c`) given its slope's cotangent as it reaches
/// `v_k` and its acceleration's `ā`: `x̄ = ā/h` handed to the acceleration's backward with a
/// zero `q̄_k`, `v̄_k` less `x̄` begun on the start's `v̄`, and `a_{k−1}`'s pending cotangent
/// `h c v̄_k` begun likewise (the pullback adds the rest).
#[cube]
fn begin_dof<F: Float>(
    data: &mut Tensor<F>,
    world: &World,
    at: &Cotangents,
    d: usize,
    slope_bar: F,
    acc_bar: F,
    c: F,
    dt: F,
) {
    let x_bar = acc_bar / dt;
    data[world.at(at.v, d)] = x_bar;
    data[world.at(at.q, d)] = F::new(0.0);
    data[world.at(at.start_v, d)] += slope_bar - x_bar;
    data[world.at(at.acceleration, d)] = c * dt * slope_bar - c * acc_bar;
}

/// Point `k`'s cotangents before its acceleration's backward (the world at the point, its
/// stages evaluated): its slope's `s̄_k` (pending plus `w_k S̄`) taken back through
/// `dexp⁻¹(θ_k) v_k` (`θ_k = h c_k s_{k−1}`) to `v_k` and to `s_{k−1}`, whose pending
/// cotangent it begins; its acceleration's `ā_k` (pending plus `w_k Ā`) to `x̄` ([`begin_dof`]).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn rk4_point_cotangents<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    point: u32,
    c: InputScalar,
    w: InputScalar,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (c, w, dt, n) = (c.get::<F>(), w.get::<F>(), floats[TIMESTEP], world.count);
    let at = cotangents(ints);
    let nv = ints[header::DOFS] as usize;
    for d in 0..nv {
        let slope_bar = data[world.at(at.slope, d)] + w * data[world.at(at.slope_mean, d)];
        data[world.at(at.slope, d)] = slope_bar;
        let acc_bar = data[world.at(at.acceleration, d)] + w * data[world.at(at.acceleration_mean, d)];
        data[world.at(at.acceleration, d)] = acc_bar;
    }
    let increment = point_increment::<F>(ints, point, c, dt);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let code = ints[li + link_int::JOINT];
        let d = ints[li + link_int::DOF_ADR] as usize;
        let mut added = 0;
        if code == joint::HINGE || code == joint::SLIDE {
            added = 1;
        } else if code == joint::FREE {
            added = 3;
        }
        for k in d..d + added {
            let (slope_bar, acc_bar) = (data[world.at(at.slope, k)], data[world.at(at.acceleration, k)]);
            data[world.at(at.slope, k)] = F::new(0.0);
            begin_dof::<F>(data, &world, &at, k, slope_bar, acc_bar, c, dt);
        }
        let r = rotation_dof(ints, li);
        if r < nv {
            let theta = V3::<F>::load(data, world.at(increment.velocity, r), n).scale(increment.h);
            let omega = V3::<F>::load(data, world.at(qvel, r), n);
            let pulled = dexp_inv_adjoint::<F>(&theta, &omega, &V3::load(data, world.at(at.slope, r), n));
            let acc_bar = V3::<F>::load(data, world.at(at.acceleration, r), n);
            pulled.theta.scale(increment.h).store(data, world.at(at.slope, r), n);
            begin_dof::<F>(data, &world, &at, r, pulled.omega.x, acc_bar.x, c, dt);
            begin_dof::<F>(data, &world, &at, r + 1, pulled.omega.y, acc_bar.y, c, dt);
            begin_dof::<F>(data, &world, &at, r + 2, pulled.omega.z, acc_bar.z, c, dt);
        }
    }
}

/// Point `k`'s cotangents after its acceleration's backward: its `v̄_k` to the start's `v̄`
/// and to `a_{k−1}` (`v_k = v + h c_k a_{k−1}`), its `q̄_k` through `q_k = q ⊕ h c_k s_{k−1}`
/// to the start's `q̄` and to `s_{k−1}`.
#[cube(launch_unchecked)]
pub(crate) fn rk4_point_pullback<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    point: u32,
    c: InputScalar,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let (c, dt) = (c.get::<F>(), floats[TIMESTEP]);
    let at = cotangents(ints);
    let nv = ints[header::DOFS] as usize;
    for d in 0..nv {
        let v_bar = data[world.at(at.v, d)];
        data[world.at(at.start_v, d)] += v_bar;
        data[world.at(at.acceleration, d)] += c * dt * v_bar;
    }
    position_adjoint::<F>(ints, data, &world, &point_increment::<F>(ints, point, c, dt), at.q, at.slope);
    for d in 0..nv {
        let q_bar = data[world.at(at.q, d)];
        data[world.at(at.start_q, d)] += q_bar;
    }
}

/// The start's cotangents, gathered, into [`Array::AdjointQpos`] and [`Array::AdjointQvel`]
/// (`backward::check_cotangents` checks them after).
#[cube(launch_unchecked)]
pub(crate) fn rk4_finish_adjoint<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, worlds: u32) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let at = cotangents(ints);
    let nv = ints[header::DOFS] as usize;
    for d in 0..nv {
        data[world.at(at.q, d)] = data[world.at(at.start_q, d)];
        data[world.at(at.v, d)] = data[world.at(at.start_v, d)];
    }
}
