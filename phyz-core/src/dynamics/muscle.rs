//! MuJoCo's muscle: an active force-length-velocity curve (the gain), a passive force-length
//! curve (the bias) and an activation filter whose time constant depends on the activation.
//!
//! Every curve is piecewise quadratic in the normalized length `L` and velocity `V`, with
//! matching slopes at the joins, so it is once differentiable; each piece is evaluated and the
//! right one selected, so that batch lanes may sit on different pieces.

use crate::Scalar;
use crate::model::Muscle;

/// MuJoCo's floor on a denominator (`mjMINVAL`).
const MIN_VALUE: f64 = 1e-15;

fn floored<S: Scalar>(x: S) -> S {
    x.max(S::from_f64(MIN_VALUE))
}

/// The muscle's normalized length and velocity, and its velocity scale `L0 · vmax`, for the
/// actuator length `l`, velocity `v` and length range `[lo, hi]`.
fn normalized<S: Scalar>(muscle: &Muscle<S>, l: S, v: S, [lo, hi]: [S; 2]) -> (S, S, S) {
    let [r0, r1] = muscle.range;
    let optimal = (hi - lo) / floored(r1 - r0);
    let speed = floored(optimal * muscle.vmax);
    (r0 + (l - lo) / floored(optimal), v / speed, speed)
}

/// The active force-length curve: zero outside `[lmin, lmax]`, one at `L = 1`, two half
/// parabolas on each side meeting halfway to the ends.
fn length_curve<S: Scalar>(length: S, lmin: S, lmax: S) -> S {
    let (one, half) = (S::one(), S::from_f64(0.5));
    let (a, b) = (half * (lmin + one), half * (one + lmax));
    let rising = half * ((length - lmin) / floored(a - lmin)).square();
    let top_below = one - half * ((one - length) / floored(one - a)).square();
    let top_above = one - half * ((length - one) / floored(b - one)).square();
    let falling = half * ((lmax - length) / floored(lmax - b)).square();
    let value = S::select(
        length.less_eq(a),
        rising,
        S::select(length.less_eq(one), top_below, S::select(length.less_eq(b), top_above, falling)),
    );
    S::select(lmin.less_eq(length) & length.less_eq(lmax), value, S::zero())
}

/// The active force-velocity curve and its slope in `V`: zero at `V ≤ −1` (shortening at
/// `vmax`), one at rest, rising to `fvmax` when lengthening.
fn velocity_curve<S: Scalar>(v: S, fvmax: S) -> (S, S) {
    let (zero, one, two) = (S::zero(), S::one(), S::from_f64(2.0));
    let y = fvmax - one;
    // The pieces, from fast shortening to fast lengthening.
    let pieces = |stopped: S, shortening: S, lengthening: S, saturated: S| {
        S::select(
            v.less_eq(-one),
            stopped,
            S::select(v.less_eq(zero), shortening, S::select(v.less_eq(y), lengthening, saturated)),
        )
    };
    let value = pieces(zero, (v + one).square(), fvmax - (y - v).square() / floored(y), fvmax);
    let slope = pieces(zero, two * (v + one), two * (y - v) / floored(y), zero);
    (value, slope)
}

/// The muscle's gain at length `l` and velocity `v`: `−F0 · FL(L) · FV(V)`, negative as the
/// force pulls (MuJoCo's `mju_muscleGain`).
pub(crate) fn active_gain<S: Scalar>(muscle: &Muscle<S>, l: S, v: S, length_range: [S; 2]) -> S {
    let (length, velocity, _) = normalized(muscle, l, v, length_range);
    -muscle.force * length_curve(length, muscle.lmin, muscle.lmax) * velocity_curve(velocity, muscle.fvmax).0
}

/// The gain's derivative in the actuator velocity, which the implicit integrators take (as
/// MuJoCo's `mjd_muscleGain_vel`).
pub(crate) fn active_gain_velocity<S: Scalar>(muscle: &Muscle<S>, l: S, v: S, length_range: [S; 2]) -> S {
    let (length, velocity, speed) = normalized(muscle, l, v, length_range);
    let slope = velocity_curve(velocity, muscle.fvmax).1;
    -muscle.force * length_curve(length, muscle.lmin, muscle.lmax) * slope / speed
}

/// The muscle's passive force at length `l`: zero up to the optimal length, a half parabola
/// to halfway to `lmax` (where it is `fpmax/2` peak forces), linear beyond (MuJoCo's
/// `mju_muscleBias`).
pub(crate) fn passive_force<S: Scalar>(muscle: &Muscle<S>, l: S, length_range: [S; 2]) -> S {
    let (length, _, _) = normalized(muscle, l, S::zero(), length_range);
    let (one, half) = (S::one(), S::from_f64(0.5));
    let b = half * (one + muscle.lmax);
    let width = floored(b - one);
    let peak = -muscle.force * muscle.fpmax;
    let quadratic = peak * half * ((length - one) / width).square();
    let linear = peak * (half + (length - b) / width);
    S::select(length.less_eq(one), S::zero(), S::select(length.less_eq(b), quadratic, linear))
}

/// MuJoCo's smooth step `6x⁵ − 15x⁴ + 10x³` on `[0, 1]`, zero below and one above.
fn smooth_step<S: Scalar>(x: S) -> S {
    let inside = x * x * x * (S::from_f64(3.0) * x * (S::from_f64(2.0) * x - S::from_f64(5.0)) + S::from_f64(10.0));
    S::select(x.less_eq(S::zero()), S::zero(), S::select(x.greater_eq(S::one()), S::one(), inside))
}

/// The activation's rate under the control `c` (MuJoCo's `mju_muscleDynamics`): the control
/// clipped to `[0, 1]` filtered with a time constant that grows with the activation when it
/// rises and shrinks when it falls (Millard et al. 2013); `smoothing` > 0 blends the two time
/// constants over that width of `c − a`.
pub(crate) fn activation_rate<S: Scalar>(c: S, a: S, [activation, deactivation, smoothing]: [S; 3]) -> S {
    let (zero, one) = (S::zero(), S::one());
    let level = S::from_f64(0.5) + S::from_f64(1.5) * a.clamp(zero, one);
    let (rise, fall) = (activation * level, deactivation / level);
    let excess = c.clamp(zero, one) - a;
    let switched = S::select(excess.greater(zero), rise, fall);
    let blended = fall + (rise - fall) * smooth_step(excess / floored(smoothing) + S::from_f64(0.5));
    let tau = S::select(smoothing.less(S::from_f64(MIN_VALUE)), switched, blended);
    excess / floored(tau)
}
