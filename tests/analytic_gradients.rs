//! Gradients through collisions against answers worked out by hand: the cases with which Zhong
//! et al. (arXiv 2207.05060) showed that differentiable simulators return wrong gradients at
//! impacts (a ball bouncing once, a ball meeting the ground and a wall with restitution, two
//! balls colliding), and nimble's two-ball collision (issue #97 there), whose analytic
//! `∂x_f/∂(x1, x2, v0, u0)` is `(1, 0, 1, 0)`.
//!
//! # The analytic answer of the soft contact
//!
//! Every scene is gravity-free and frictionless, with MuJoCo's contact under
//! `mujoco_compat`, a direct solref `(−K, −B)` and a constant impedance (`dmin = dmax`), and
//! contacts acting from their touch ([`Onset::Touch`]: under MuJoCo's own onset a restituting
//! contact's gradient is wrong by order one, as the last test shows). MuJoCo's
//! soft model then makes the gap `s` of a pressed contact obey `s̈ = −K s − B ṡ` exactly, the
//! force ending when it would pull. That motion is linear in the approach speed `u`: a contact
//! that starts at speed `u` lasts `τ`, ends at speed `e u` with the gap `−ρ u` left, where `τ`,
//! `e` (the restitution) and `ρ` depend on `(K, B)` alone ([`Response`]). A gap that starts at
//! `s0` closing at `u` is therefore, at `T` after the start,
//! `s_T = e u (T − τ) − ρ u − e s0`, so `∂s_T/∂s0 = −e` and `∂s_T/∂ṡ0 = ρ − e (T − τ)`.
//! A rigid contact is the limit `τ, ρ → 0`: `(−e, −e T)`, Zhong et al.'s `(−1, −1)` for an
//! elastic bounce over `T = 1 s`.
//!
//! # Tolerances, stated before the measurement
//!
//! phyz's gradient is the exact derivative of its discrete step map, which is piecewise smooth:
//! each piece is where the contact's first step falls on the step grid. Inside a contact of
//! `n` steps the map turns `(s, ṡ)` by `n ω dt`, which misses the continuous half turn by up
//! to about `ω dt`; the exit speed then moves with the entry depth by about `ω² dt = K dt`, and
//! the `T` left after it carries that into the final position. So:
//! - **pointwise**, `|gradient − analytic| ≤ K dt T` (0.1 here);
//! - **averaged over the entry's phase** (the start moved across one step's travel in
//!   [`PHASES`] even parts), the first-order error cancels, and the mean is within
//!   [`AVERAGE_TOL`] of the analytic value;
//!
//! The rigid values are printed beside: the soft answer sits `e τ + ρ ≤ τ` from the rigid one in
//! the speed derivatives and on it in the position derivatives (the soft model's own physics,
//! not an error), so no separate bound on them could fail where the soft one holds.

mod common;

use common::final_coordinate;
use phyz::Model;
use phyz::contact::{Onset, SolverConfig};
use phyz::dual::rollout_gradient;
use phyz::mjcf;
use phyz::sim::ContactState;

const DT: f64 = 1e-4;
const T: f64 = 1.0;
const K: f64 = 1000.0;
/// Starts spread evenly across one step's travel.
const PHASES: usize = 16;
const AVERAGE_TOL: f64 = 0.01;

/// How a soft contact of stiffness `K` and damping `B` (per unit mass of the gap) answers an
/// approach at unit speed: its duration, its restitution, and the gap it leaves.
struct Response {
    tau: f64,
    e: f64,
    rho: f64,
}

impl Response {
    /// The normalized gap is `φ(t) = −exp(−βt) sin(ω t)/ω` (`β = B/2`, `ω² = K − β²`), pressed
    /// while the force `−K φ − B φ'` is positive; the contact ends at its first zero, found by
    /// bisection (the force is `B ≥ 0` at the start and `−B φ' ≤ 0` half a period later).
    fn of(k: f64, b: f64) -> Self {
        let beta = b / 2.0;
        let omega = (k - beta * beta).sqrt();
        let gap = |t: f64| -(-beta * t).exp() * (omega * t).sin() / omega;
        let speed = |t: f64| -(-beta * t).exp() * ((omega * t).cos() - beta / omega * (omega * t).sin());
        let force = |t: f64| -k * gap(t) - b * speed(t);
        let (mut lo, mut hi) = (1e-9, std::f64::consts::PI / omega);
        if b > 0.0 {
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if force(mid) > 0.0 { lo = mid } else { hi = mid }
            }
        }
        Response { tau: hi, e: speed(hi), rho: -gap(hi) }
    }

    /// `(∂s_T/∂s0, ∂s_T/∂ṡ0)` for a contact met before `T`.
    fn gap_gradient(&self, t: f64) -> (f64, f64) {
        (-self.e, self.rho - self.e * (t - self.tau))
    }
}

/// The exact gradients of `qpos[coordinate]` at `T` with respect to `(q0, v0)`, one row per
/// start phase: the start moved back along `v0` by `j/PHASES` of one step's travel.
fn gradients_over_phases(model: &Model<f64>, q0: &[f64], v0: &[f64], coordinate: usize, onset: Onset) -> Vec<Vec<f64>> {
    let steps = (T / DT).round() as usize;
    let controls = vec![Vec::new(); steps];
    let config = SolverConfig { onset, ..SolverConfig::mujoco_compat() };
    let objective = final_coordinate(model.nv(), coordinate);
    (0..PHASES)
        .map(|j| {
            let mut start = model.default_state();
            for (i, (q, v)) in q0.iter().zip(v0).enumerate() {
                start.qpos[i] = q - v * DT * j as f64 / PHASES as f64;
                start.qvel[i] = *v;
            }
            let g = rollout_gradient(model, &start, &controls, &[], &objective, &mut ContactState::new(config))
                .expect("a gravity-free bounce rolls out");
            g.dq0.iter().chain(g.dv0.iter()).copied().collect()
        })
        .collect()
}

/// Checks every phase's gradient pointwise and their mean against the soft analytic answer
/// (printing the rigid one beside); `names` label the gradient's entries.
fn check(case: &str, rows: &[Vec<f64>], soft: &[f64], rigid: &[f64], names: &[&str]) {
    let pointwise = K * DT * T;
    let mut failures = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let values: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let worst = values.iter().map(|v| (v - soft[i]).abs()).fold(0.0, f64::max);
        eprintln!(
            "{case}: ∂/∂{name}: mean {mean:+.5} (soft analytic {:+.5}, rigid {:+.5}), worst phase off by {worst:.4}",
            soft[i], rigid[i]
        );
        if worst > pointwise {
            failures.push(format!("{name}: a phase is {worst:e} off the soft answer (bound {pointwise:e})"));
        }
        if (mean - soft[i]).abs() > AVERAGE_TOL {
            failures.push(format!("{name}: mean {mean} vs soft {}", soft[i]));
        }
    }
    assert!(failures.is_empty(), "{case}: {failures:#?}");
}

/// A gravity-free, frictionless scene with constant impedance.
fn scene(body: &str, world: &str) -> Model<f64> {
    let xml = format!(
        "<mujoco><option timestep='{DT}' gravity='0 0 0'/>\
         <default><geom condim='1' solimp='0.9 0.9 0.001'/></default>\
         <worldbody>{world}{body}</worldbody></mujoco>"
    );
    mjcf::parse(&xml, "scene.xml").expect("valid scene")
}

#[test]
fn a_ball_bouncing_once_reverses_its_start() {
    // Zhong et al.'s first case: a ball at height y0 falling at vy0 onto an elastic floor.
    let model = scene(
        "<body pos='0 0 0.1'><joint type='slide' axis='0 0 1'/><geom type='sphere' size='0.1' mass='1' solref='-1000 0'/></body>",
        "<geom type='plane' size='1 1 0.1' solref='-1000 0'/>",
    );
    let response = Response::of(K, 0.0);
    let rows = gradients_over_phases(&model, &[0.5], &[-1.0], 0, Onset::Touch);
    let (ds, dv) = response.gap_gradient(T);
    check("bounce", &rows, &[ds, dv], &[-1.0, -T], &["y0", "vy0"]);
}

#[test]
fn a_ball_meeting_the_ground_then_a_wall_keeps_each_restitution() {
    // Zhong et al.'s second case: the ball meets the ground (restitution from its damping)
    // at 0.3 s and a wall of other damping at 0.6 s; each axis answers to its own contact.
    let (ground_b, wall_b) = (10.0, 4.0);
    let model = scene(
        "<body pos='0 0 0.1'><joint type='slide' axis='1 0 0'/><joint type='slide' axis='0 0 1'/>\
         <geom type='sphere' size='0.1' mass='1'/></body>",
        &format!(
            "<geom type='plane' size='1 1 0.1' priority='1' solref='-1000 -{ground_b}'/>\
             <geom type='plane' size='1 1 0.1' pos='0.7 0 0' zaxis='-1 0 0' priority='1' solref='-1000 -{wall_b}'/>"
        ),
    );
    let (ground, wall) = (Response::of(K, ground_b), Response::of(K, wall_b));
    eprintln!("ground: e {:.4}, τ {:.4}; wall: e {:.4}, τ {:.4}", ground.e, ground.tau, wall.e, wall.tau);
    let (q0, v0) = ([0.0, 0.3], [1.0, -1.0]);
    // x = 0.6 − s_wall: the gap's derivatives carry over with both signs flipped, so unchanged.
    let (wx, wv) = wall.gap_gradient(T);
    let rows = gradients_over_phases(&model, &q0, &v0, 0, Onset::Touch);
    check("wall (x_T)", &rows, &[wx, 0.0, wv, 0.0], &[-wall.e, 0.0, -wall.e * T, 0.0], &["x0", "z0", "vx0", "vz0"]);
    let (gz, gv) = ground.gap_gradient(T);
    let rows = gradients_over_phases(&model, &q0, &v0, 1, Onset::Touch);
    check(
        "ground (z_T)",
        &rows,
        &[0.0, gz, 0.0, gv],
        &[0.0, -ground.e, 0.0, -ground.e * T],
        &["x0", "z0", "vx0", "vz0"],
    );
}

/// Two balls on a line, the left (`m1`) at `x1` moving at `v0`, the right (`m2`) at `x2`
/// moving at `u0`: the centre of mass moves freely and their gap answers as a soft contact,
/// `x2 = x_c + (m1/M)(s + 2r)`, which gives the right ball's final derivatives.
fn two_balls(m1: f64, m2: f64, b: f64) {
    let model = scene(
        &format!(
            "<body><joint type='slide' axis='1 0 0'/><geom type='sphere' size='0.1' mass='{m1}' solref='-1000 -{b}'/></body>\
             <body pos='0.52 0 0'><joint type='slide' axis='1 0 0'/><geom type='sphere' size='0.1' mass='{m2}' solref='-1000 -{b}'/></body>"
        ),
        "",
    );
    let response = Response::of(K, b);
    let (ds, dw) = response.gap_gradient(T);
    let (total, e) = (m1 + m2, response.e);
    // s = x2 − x1 − 2r closes at w = u0 − v0.
    let soft = [
        m1 / total * (1.0 - ds),
        m2 / total + m1 / total * ds,
        m1 / total * (T - dw),
        m2 / total * T + m1 / total * dw,
    ];
    let rigid = [m1 / total * (1.0 + e), (m2 - e * m1) / total, m1 / total * (T + e * T), (m2 - e * m1) / total * T];
    // Nimble's scene: x1 = 0, x2 = 0.52, v0 = 1, u0 = 0, T = 1.
    let rows = gradients_over_phases(&model, &[0.0, 0.0], &[1.0, 0.0], 1, Onset::Touch);
    let case = format!("two balls {m1} kg and {m2} kg, e {e:.3}");
    check(&case, &rows, &soft, &rigid, &["x1", "x2", "v0", "u0"]);
}

#[test]
fn two_equal_balls_exchange_their_motion() {
    // Nimble's scene: elastic, equal masses, so the rigid answer is (1, 0, 1, 0).
    two_balls(1.0, 1.0, 0.0);
}

#[test]
fn a_light_ball_striking_a_heavy_one_keeps_momentum() {
    // Zhong et al.'s two-ball case, with unequal masses and restitution below one.
    two_balls(1.0, 3.0, 8.0);
}

#[test]
fn mujocos_onset_misses_the_time_of_impact_of_a_damped_contact() {
    // The same damped bounce under MuJoCo's rule, a whole step's damping in a contact's first
    // step: the step map jumps by about `B u dt` each time the first step moves on the grid, a
    // jump the exact derivative cannot see, and those jumps are as dense as they are small. So
    // the mean gradient misses the analytic one by order one (stated: by more than half).
    let damping = 10.0;
    let model = scene(
        "<body pos='0 0 0.1'><joint type='slide' axis='0 0 1'/><geom type='sphere' size='0.1' mass='1'/></body>",
        &format!("<geom type='plane' size='1 1 0.1' priority='1' solref='-1000 -{damping}'/>"),
    );
    let (ds, _) = Response::of(K, damping).gap_gradient(T);
    for (onset, wrong) in [(Onset::Step, true), (Onset::Touch, false)] {
        let rows = gradients_over_phases(&model, &[0.3], &[-1.0], 0, onset);
        let mean = rows.iter().map(|r| r[0]).sum::<f64>() / rows.len() as f64;
        eprintln!("{onset:?}: mean ∂z_T/∂z0 {mean:+.4}, analytic {ds:+.4}");
        assert_eq!((mean - ds).abs() > 0.5, wrong, "{onset:?}: {mean} vs {ds}");
    }
}
