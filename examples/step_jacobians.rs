//! Exact step Jacobians of the double pendulum from dual numbers, checked column by column
//! against central finite differences.
//!
//! `cargo run --release --example step_jacobians`

use nalgebra::DVector;
use phyz::dual::step_jacobians;
use phyz::{scenes, step};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (model, state) = scenes::double_pendulum()?;
    let ctrl = [0.3, -0.2];
    let jac = step_jacobians(&model, &state, &ctrl)?;
    println!("A = ∂(q', v')/∂(q, v):{:.6}", jac.a);
    println!("B = ∂(q', v')/∂u:{:.6}", jac.b);

    // Independent check: perturb each velocity and control by ±ε (the joints are hinges, so
    // position coordinates are already tangent coordinates).
    let eps = 1e-6;
    let flat = |s: &phyz::State<f64>| DVector::from_iterator(4, s.qpos.iter().chain(s.qvel.iter()).copied());
    let mut worst: f64 = 0.0;
    for column in 0..6 {
        let run = |sign: f64| -> Result<DVector<f64>, phyz::StepError> {
            let (mut s, mut u) = (state.clone(), ctrl);
            match column {
                0 | 1 => s.qpos[column] += sign * eps,
                2 | 3 => s.qvel[column - 2] += sign * eps,
                _ => u[column - 4] += sign * eps,
            }
            Ok(flat(&step(&model, &s, &u)?))
        };
        let fd = (run(1.0)? - run(-1.0)?) / (2.0 * eps);
        let exact = if column < 4 { jac.a.column(column).into_owned() } else { jac.b.column(column - 4).into_owned() };
        worst = worst.max((exact - fd).amax());
    }
    println!("largest difference from central finite differences: {worst:.2e}");
    Ok(())
}
