//! Open-loop control of gymnasium's hopper to jump forward, by projected gradient descent on the
//! exact rollout gradient (through the foot's contact with the floor and the joint limits).
//!
//! The controls are 12 knots per actuator, each held for 25 steps (0.6 s in all); the objective
//! rewards the torso's forward travel and penalizes ending low (falling forward is not a jump),
//! tilted, and the control effort.
//!
//! `cargo run --release --example hopper_jump`

use nalgebra::DVector;
use phyz::State;
use phyz::dual::{Cost, CostFunctions, rollout_gradient};
use phyz::mjcf;
use phyz::sim::ContactState;

const KNOTS: usize = 12;
const HOLD: usize = 25;

/// The per-step controls of the knots (`knots[k][actuator]`).
fn expand(knots: &[DVector<f64>]) -> Vec<Vec<f64>> {
    knots.iter().flat_map(|k| std::iter::repeat_n(k.as_slice().to_vec(), HOLD)).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/models/gymnasium/hopper.xml");
    let model = mjcf::load(path)?;
    let (nv, nu) = (model.nv(), model.nu());
    let mut start = model.default_state();
    // Knees and foot a little bent, off their limits.
    start.qpos[3] = -0.1;
    start.qpos[4] = -0.1;
    start.qpos[5] = 0.05;
    let effort = 1e-2;
    // J = −x_T (travel forward) + 5·½(z_T − z_0)² (end as high as it started) + ½ pitch_T²
    // (upright) + effort · Σ ½|u|².
    let height = start.qpos[1];
    let objective = CostFunctions {
        running: |_t: usize, _s: &State<f64>, u: &[f64]| {
            let u = DVector::from_column_slice(u);
            Cost {
                value: 0.5 * effort * u.norm_squared(),
                dq: DVector::zeros(nv),
                dv: DVector::zeros(nv),
                du: u * effort,
            }
        },
        terminal: |s: &State<f64>| {
            let (low, pitch) = (s.qpos[1] - height, s.qpos[2]);
            let mut dq = DVector::zeros(nv);
            dq[0] = -1.0;
            dq[1] = 5.0 * low;
            dq[2] = pitch;
            let value = -s.qpos[0] + 2.5 * low * low + 0.5 * pitch * pitch;
            Cost { value, dq, dv: DVector::zeros(nv), du: DVector::zeros(nu) }
        },
    };
    let evaluate = |knots: &[DVector<f64>]| -> Result<_, Box<dyn std::error::Error>> {
        let g = rollout_gradient(&model, &start, &expand(knots), &[], &objective, &mut ContactState::default())?;
        // A knot's gradient is the sum over the steps it holds.
        let per_knot: Vec<DVector<f64>> =
            g.du.chunks(HOLD).map(|c| c.iter().fold(DVector::zeros(nu), |a, b| a + b)).collect();
        Ok((g.value, per_knot, g.states))
    };
    let project = |k: DVector<f64>| k.map(|u| u.clamp(-1.0, 1.0));
    let mut knots = vec![DVector::zeros(nu); KNOTS];
    let (mut value, mut gradient, mut states) = evaluate(&knots)?;
    println!(
        "hopper, {} steps: start J = {value:.4} (torso travels {:.3} m)",
        KNOTS * HOLD,
        states[KNOTS * HOLD].qpos[0]
    );
    let mut rate = 1e-3;
    for iteration in 1..=30 {
        let mut stepped = None;
        for _ in 0..20 {
            let trial: Vec<DVector<f64>> = knots.iter().zip(&gradient).map(|(k, g)| project(k - g * rate)).collect();
            match evaluate(&trial) {
                Ok((v, g, s)) if v < value => {
                    stepped = Some((trial, v, g, s));
                    break;
                }
                // A rejected step (worse, or a rollout whose contact solve did not converge and so
                // has no gradient) shortens the step.
                _ => rate *= 0.5,
            }
        }
        let Some((next, v, g, s)) = stepped else {
            println!("iteration {iteration}: no step lowers J; stopping");
            break;
        };
        (knots, value, gradient, states) = (next, v, g, s);
        rate *= 1.5;
        let end = &states[KNOTS * HOLD];
        println!(
            "iteration {iteration:>2}: J = {value:+.4}, torso travels {:+.3} m, ends {:.3} m high, pitch {:+.3} rad",
            end.qpos[0], end.qpos[1], end.qpos[2]
        );
    }
    let peak = states.iter().map(|s| s.qpos[1]).fold(f64::NEG_INFINITY, f64::max);
    println!(
        "travelled {:.3} m forward, ending {:.3} m high; the torso peaked at {:.3} m (it started at {:.3} m)",
        states[KNOTS * HOLD].qpos[0],
        states[KNOTS * HOLD].qpos[1],
        peak,
        start.qpos[1]
    );
    Ok(())
}
