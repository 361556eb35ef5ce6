//! `phyz throw` (the default): optimize a ball's launch velocity and spin, through a bounce off
//! the floor, so that it lands on a target. Each iteration carries the five launch directions
//! through the whole flight in one forward dual pass per step (the bounce differentiated by the
//! implicit function theorem), which gives the landing point's exact Jacobian, and takes a
//! Levenberg–Marquardt step.

use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::{DMatrix, DVector, Matrix2, Vector2};
use phyz::contact::SolverConfig;
use phyz::dual::{Cost, CostFunctions, Objective, RolloutDirection, rollout_directional};
use phyz::sim::ContactState;
use phyz::{Model, State, scenes};

use super::CliError;
use super::plot::{Panel, Series, plot_throw};

#[derive(Args)]
pub struct ThrowArgs {
    /// Most Levenberg–Marquardt iterations (it stops earlier once the ball lands on target).
    #[arg(long, default_value_t = 30)]
    iterations: usize,
    /// Folder for the plot and the loss history (created if needed).
    #[arg(long, default_value = "phyz-out/throw")]
    out: PathBuf,
}

impl Default for ThrowArgs {
    fn default() -> Self {
        ThrowArgs { iterations: 30, out: PathBuf::from("phyz-out/throw") }
    }
}

/// Where the ball must come down: on the floor, 3 m ahead and 0.5 m to the left.
const TARGET: [f64; 3] = [3.0, 0.5, RADIUS];
/// The flight: 1.19 s of 1 ms steps, when a ball launched upwards at [`LIFT`] from 1 m comes
/// down after its one bounce.
const STEPS: usize = 1190;
/// The upward launch speed, held: it sets when the ball bounces and comes down, and the step in
/// which a stepped simulation first touches the floor is a discrete event — its exact derivative
/// within a step carries the penetration of that first step (a saw-tooth), which says nothing
/// about where a slightly different throw would land.
const LIFT: f64 = 1.0;
/// The ball's radius ([`scenes::bouncing_ball`]): spin is optimized as the surface speed `ω·r`,
/// in the units of the launch velocity.
const RADIUS: f64 = 0.12;

/// The launch variables: horizontal velocity `(v_x, v_y)` and the surface speed of the spin
/// `(w_x, w_y, w_z)`; the ball's free-joint velocity is `(v_x, v_y, LIFT, w / r)`.
fn launch_state(model: &Model<f64>, launch: &DVector<f64>) -> State<f64> {
    let mut state = model.default_state();
    state.qvel[0] = launch[0];
    state.qvel[1] = launch[1];
    state.qvel[2] = LIFT;
    for i in 0..3 {
        state.qvel[3 + i] = launch[2 + i] / RADIUS;
    }
    state
}

/// The horizontal miss `(x_T, y_T) − target`.
fn miss_of(s: &State<f64>) -> Vector2<f64> {
    Vector2::new(s.qpos[0] - TARGET[0], s.qpos[1] - TARGET[1])
}

/// `½ |miss|²`: only where the flight ends matters.
fn landing_error(nv: usize) -> impl Objective {
    CostFunctions {
        running: move |_t: usize, _s: &State<f64>, _u: &[f64]| Cost::zeros(nv, 0),
        terminal: move |s: &State<f64>| {
            let miss = miss_of(s);
            let mut dq = DVector::zeros(nv);
            dq.rows_mut(0, 2).copy_from(&miss);
            Cost { value: 0.5 * miss.norm_squared(), dq, dv: DVector::zeros(nv), du: DVector::zeros(0) }
        },
    }
}

/// The ball's path, `(x, y, z)` per step.
fn path(states: &[State<f64>]) -> Vec<[f64; 3]> {
    states.iter().map(|s| [s.qpos[0], s.qpos[1], s.qpos[2]]).collect()
}

/// One flight: the loss, the miss, its Jacobian with respect to the launch variables (2 × 5)
/// and the states.
struct Flight {
    loss: f64,
    miss: Vector2<f64>,
    jacobian: DMatrix<f64>,
    states: Vec<State<f64>>,
}

fn fly(model: &Model<f64>, launch: &DVector<f64>, config: SolverConfig) -> Result<Flight, CliError> {
    let nv = model.nv();
    let controls = vec![Vec::new(); STEPS];
    // The five launch directions in the ball's velocity: v_x, v_y, then ω = w / r.
    let directions: Vec<RolloutDirection> =
        [(0, 1.0), (1, 1.0), (3, 1.0 / RADIUS), (4, 1.0 / RADIUS), (5, 1.0 / RADIUS)]
            .into_iter()
            .map(|(k, scale)| {
                let mut dv0 = DVector::zeros(nv);
                dv0[k] = scale;
                RolloutDirection {
                    dq0: DVector::zeros(nv),
                    dv0,
                    dact0: DVector::zeros(0),
                    du: vec![DVector::zeros(0); STEPS],
                    dparams: DVector::zeros(0),
                }
            })
            .collect();
    let flight = rollout_directional::<8>(
        model,
        &launch_state(model, launch),
        &controls,
        &[],
        &directions,
        &landing_error(nv),
        &mut ContactState::new(config),
    )?;
    // The free joint's first tangent coordinates are the world position.
    let jacobian = DMatrix::from_fn(2, 5, |i, k| flight.final_tangents[k].qpos[i]);
    Ok(Flight { loss: flight.value, miss: miss_of(&flight.states[STEPS]), jacobian, states: flight.states })
}

pub fn run(args: ThrowArgs) -> Result<(), CliError> {
    let model = scenes::bouncing_ball()?;
    let config = SolverConfig::simulation();
    println!(
        "throw a ball (r {RADIUS} m) from 1 m so that after bouncing it lands on ({}, {}) at t = {} s, \
         optimizing its horizontal launch velocity and its spin with the exact Jacobian of the landing point",
        TARGET[0],
        TARGET[1],
        STEPS as f64 * model.timestep
    );
    let mut launch = DVector::from_vec(vec![2.0, 0.0, 0.0, 0.0, 0.0]);
    let mut flight = fly(&model, &launch, config)?;
    let first = path(&flight.states);
    let mut history = vec![flight.loss];
    println!("iteration   0: loss {:.6e} (miss {:.3e} m)", flight.loss, flight.miss.norm());
    let progress = ProgressBar::new(args.iterations as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} iterations {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut damping = 1e-3;
    for iteration in 1..=args.iterations {
        if flight.miss.norm() < 1e-9 {
            break;
        }
        // Levenberg–Marquardt on the least-norm step: Δ = −Jᵀ (J Jᵀ + λI)⁻¹ r, with λ raised
        // until the step lowers the loss.
        let jjt = &flight.jacobian * flight.jacobian.transpose();
        let mut improved = None;
        while damping < 1e6 {
            let system = Matrix2::from_iterator(jjt.iter().copied()) + Matrix2::identity() * damping;
            let Some(solved) = system.lu().solve(&flight.miss) else {
                damping *= 10.0;
                continue;
            };
            let trial = &launch - flight.jacobian.transpose() * solved;
            let next = fly(&model, &trial, config)?;
            if next.loss < flight.loss {
                improved = Some((trial, next));
                break;
            }
            damping *= 10.0;
        }
        let Some((trial, next)) = improved else {
            progress.suspend(|| println!("iteration {iteration:>3}: no step lowers the loss; stopping"));
            break;
        };
        (launch, flight) = (trial, next);
        damping = (damping / 10.0).max(1e-9);
        history.push(flight.loss);
        progress.suspend(|| {
            println!("iteration {iteration:>3}: loss {:.6e} (miss {:.3e} m)", flight.loss, flight.miss.norm())
        });
        progress.set_message(format!("loss {:.3e}", flight.loss));
        progress.inc(1);
    }
    progress.finish_and_clear();
    let after = path(&flight.states);
    println!(
        "launch velocity ({:.4}, {:.4}, {LIFT}) m/s, spin ({:.3}, {:.3}, {:.3}) rad/s; lands {:.2e} m from the target",
        launch[0],
        launch[1],
        launch[2] / RADIUS,
        launch[3] / RADIUS,
        launch[4] / RADIUS,
        flight.miss.norm()
    );
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let losses: String = history.iter().enumerate().map(|(i, l)| format!("{i},{l:e}\n")).collect();
    std::fs::write(args.out.join("loss.csv"), format!("iteration,loss\n{losses}"))?;
    let png = args.out.join("throw.png");
    plot_throw(
        &png,
        &history,
        &[
            Panel { title: "side view", axes: (0, 2), series: vec![Series::before(&first), Series::after(&after)] },
            Panel { title: "top view", axes: (0, 1), series: vec![Series::before(&first), Series::after(&after)] },
        ],
        TARGET,
    )?;
    println!("wrote {} and {}", png.display(), args.out.join("loss.csv").display());
    Ok(())
}
