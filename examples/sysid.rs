//! System identification through contact: a box's mass and the floor's friction coefficient,
//! recovered from an observed trajectory with the exact rollout gradient.
//!
//! The box sits on a floor and is pushed along x by a motor with a known, varying force: it
//! sticks, slides, slows and sticks again. "Observations" are its positions, simulated with the
//! true parameters. Starting from a wrong guess, BFGS on the squared position error (in
//! log-parameters, with backtracking) recovers both.
//!
//! `cargo run --release --example sysid`

use nalgebra::{DMatrix, DVector};
use phyz::dual::{Cost, CostFunctions, Parameter, rollout_gradient};
use phyz::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

const STEPS: usize = 400;
const TRUE_MASS: f64 = 2.0;
const TRUE_FRICTION: f64 = 0.4;

fn scene(mass: f64, friction: f64) -> Result<Model<f64>, Box<dyn std::error::Error>> {
    let xml = format!(
        "<mujoco><option timestep='0.002'/><worldbody>\
         <geom name='floor' type='plane' size='5 5 0.1' friction='{friction} 0.005 0.0001'/>\
         <body name='box' pos='0 0 0.1'>\
         <joint name='box_x' type='slide' axis='1 0 0'/><joint type='slide' axis='0 0 1'/>\
         <joint type='hinge' axis='0 1 0'/>\
         <geom type='box' size='0.1 0.1 0.1' mass='{mass}' friction='0.1 0.005 0.0001'/></body>\
         </worldbody><actuator><motor name='push' joint='box_x' gear='10'/></actuator></mujoco>"
    );
    Ok(mjcf::parse(&xml, "sysid.xml")?)
}

/// The push: a ramp up past what friction holds, a pause, and a shove.
fn controls() -> Vec<Vec<f64>> {
    (0..STEPS)
        .map(|t| {
            let s = t as f64 / STEPS as f64;
            vec![if s < 0.5 {
                2.0 * s * 1.8
            } else if s < 0.7 {
                0.0
            } else {
                1.5
            }]
        })
        .collect()
}

fn start(model: &Model<f64>) -> State<f64> {
    let mut s = model.default_state();
    s.qpos[1] = -2e-4;
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The observation: positions of the true system.
    let truth = scene(TRUE_MASS, TRUE_FRICTION)?;
    let controls = controls();
    let mut state = start(&truth);
    let mut observed = vec![state.qpos.clone()];
    let mut contact = ContactState::default();
    for u in &controls {
        state = step_with(&truth, &state, u, &mut contact)?.0;
        observed.push(state.qpos.clone());
    }
    println!("observed: the box travels {:.3} m under the push", observed[STEPS][0]);

    let model = scene(TRUE_MASS, TRUE_FRICTION)?;
    let params =
        Parameter::indices(&[Parameter::BodyMass("box".into()), Parameter::GeomFriction("floor".into())], &model)?;
    let nv = model.nv();
    // J = Σ_t ½ |x_t − x_obs,t|² over the box's x and z.
    let observed_for_cost = observed.clone();
    let objective = CostFunctions {
        running: move |t: usize, s: &State<f64>, _u: &[f64]| {
            let e = &s.qpos - &observed_for_cost[t];
            let mut dq = DVector::zeros(nv);
            dq[0] = e[0];
            dq[1] = e[1];
            Cost { value: 0.5 * (e[0] * e[0] + e[1] * e[1]), dq, dv: DVector::zeros(nv), du: DVector::zeros(1) }
        },
        terminal: |_s: &State<f64>| Cost::zeros(nv, 1),
    };
    // The loss and its gradient in log-parameters, for parameters `theta = ln(mass, friction)`.
    let evaluate = |theta: &DVector<f64>| -> Result<(f64, DVector<f64>), Box<dyn std::error::Error>> {
        let mut values = model.parameters();
        values[params[0]] = theta[0].exp();
        values[params[1]] = theta[1].exp();
        let guess = model.with_parameters(&values)?;
        let g = rollout_gradient(&guess, &start(&guess), &controls, &params, &objective, &mut ContactState::default())?;
        Ok((g.value, g.dparams.component_mul(&theta.map(f64::exp))))
    };
    let mut theta = DVector::from_vec(vec![1.2_f64.ln(), 0.7_f64.ln()]);
    let (mut loss, mut gradient) = evaluate(&theta)?;
    println!("start: mass {:.4} kg, friction {:.4}; loss {loss:.3e}", theta[0].exp(), theta[1].exp());
    // BFGS: the inverse Hessian estimate `h` learns the valley along which mass and friction
    // trade off, from successive exact gradients.
    let mut h = DMatrix::identity(2, 2) * (0.1 / gradient.norm().max(1e-12));
    for iteration in 1..=50 {
        let direction = -(&h * &gradient);
        let mut stepped = None;
        let mut alpha = 1.0;
        for _ in 0..30 {
            let trial = &theta + &direction * alpha;
            let (trial_loss, trial_gradient) = evaluate(&trial)?;
            if trial_loss <= loss + 1e-4 * alpha * gradient.dot(&direction) {
                stepped = Some((trial, trial_loss, trial_gradient));
                break;
            }
            alpha *= 0.5;
        }
        let Some((next, next_loss, next_gradient)) = stepped else { break };
        let (s, y) = (&next - &theta, &next_gradient - &gradient);
        let sy = s.dot(&y);
        if sy > 1e-300 {
            let rho = 1.0 / sy;
            let left = DMatrix::identity(2, 2) - &s * y.transpose() * rho;
            h = &left * &h * left.transpose() + &s * s.transpose() * rho;
        }
        (theta, loss, gradient) = (next, next_loss, next_gradient);
        println!(
            "iteration {iteration:>2}: mass {:.6} kg, friction {:.6}; loss {loss:.3e}",
            theta[0].exp(),
            theta[1].exp()
        );
        if loss < 1e-24 || gradient.norm() < 1e-14 {
            break;
        }
    }
    println!(
        "identified: mass {:.6} kg (true {TRUE_MASS}), friction {:.6} (true {TRUE_FRICTION})",
        theta[0].exp(),
        theta[1].exp()
    );
    Ok(())
}
