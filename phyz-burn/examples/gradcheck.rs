//! Gradients of a batched rollout objective from burn's backward (phyz-burn's step operation),
//! against phyz-dual's forward-mode tangents (the engine on num-dual numbers) and central
//! differences of `f64` rollouts, contact on.
//!
//! The lanes start from the model's default state moved by a small random displacement (in
//! tangent coordinates: quaternions stay unit) and velocity, under random controls within
//! their ranges; the objective is `Σ wq ⊙ q_T + ½ Σ wv ⊙ v_T²` with random weights. Errors are
//! relative to `Σ |gᵢ| |dᵢ|` along each random direction `d`.
//!
//! `cargo run --release -p phyz-burn --example gradcheck -- MODEL.xml [--batch B --steps T]`

mod common;

use common::{Rng, device};
use nalgebra::DVector;
use phyz_burn::Simulation;
use phyz_burn::check::{Direction, RolloutCase};
use phyz_core::dynamics::integrate_position;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .iter()
        .find(|a| !a.starts_with("--") && !is_value(&args, a))
        .ok_or("usage: gradcheck MODEL.xml [--batch B --steps T]")?;
    let option = |name: &str, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        match args.iter().position(|a| a == name) {
            Some(i) => Ok(args.get(i + 1).ok_or(format!("{name} needs a value"))?.parse()?),
            None => Ok(default),
        }
    };
    let (batch, steps) = (option("--batch", 4)?, option("--steps", 20)?);
    let model = phyz_core::mjcf::load(path)?;
    let sim = Simulation::new(model.clone());
    let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
    let mut rng = Rng(0x9c4e);
    let mut case = RolloutCase {
        qpos: Vec::new(),
        qvel: Vec::new(),
        ctrl: Vec::new(),
        params: None,
        wq: Vec::new(),
        wv: Vec::new(),
    };
    let start = model.default_state();
    for _ in 0..batch {
        let delta = DVector::from_fn(nv, |_, _| rng.symmetric(0.05));
        case.qpos.extend(integrate_position(&model, &start.qpos, &delta, 1.0).iter());
        case.qvel.extend((0..nv).map(|_| rng.symmetric(0.2)));
        case.wq.extend((0..nq).map(|_| rng.symmetric(1.0)));
        case.wv.extend((0..nv).map(|_| rng.symmetric(1.0)));
    }
    let ranges: Vec<[f64; 2]> = model.actuators().iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
    for _ in 0..steps {
        // Inside the ranges, off their clamps.
        let u = (0..batch).flat_map(|_| {
            ranges.iter().map(|[lo, hi]| 0.5 * (lo + hi) + 0.4 * (hi - lo) * rng.symmetric(1.0)).collect::<Vec<_>>()
        });
        case.ctrl.push(u.collect());
    }
    let g = case.burn_gradient(&sim, &device()?)?;
    println!(
        "{path}: batch {batch}, {steps} steps, objective {:.6e}; contacts per lane over the rollout {:?}, limits {:?}",
        g.value, g.contacts, g.limits
    );
    let (mut worst_dual, mut worst_fd) = (0.0f64, 0.0f64);
    for k in 0..4 {
        let d = Direction {
            qpos: (0..batch * nq).map(|_| rng.symmetric(1.0)).collect(),
            qvel: (0..batch * nv).map(|_| rng.symmetric(1.0)).collect(),
            ctrl: (0..steps).map(|_| (0..batch * nu).map(|_| rng.symmetric(1.0)).collect()).collect(),
            params: Vec::new(),
        };
        let (ours, scale) = g.along(&d);
        let (_, tangent) = case.dual_derivative(&sim, &d)?;
        let central = case.central_difference(&sim, &d, 1e-6)?;
        let (e_dual, e_fd) = ((ours - tangent).abs() / scale, (ours - central).abs() / scale);
        (worst_dual, worst_fd) = (worst_dual.max(e_dual), worst_fd.max(e_fd));
        println!(
            "direction {k}: burn {ours:.12e}  forward tangent {tangent:.12e} ({e_dual:.1e})  central difference {central:.12e} ({e_fd:.1e})"
        );
    }
    println!(
        "against forward tangents: worst {worst_dual:.2e}; against central differences (h = 1e-6): worst {worst_fd:.2e}"
    );
    println!("worst relative error {:.2e}", worst_dual.max(worst_fd));
    Ok(())
}

/// Whether `arg` is the value of an option.
fn is_value(args: &[String], arg: &String) -> bool {
    args.iter().position(|a| std::ptr::eq(a, arg)).is_some_and(|i| i > 0 && args[i - 1].starts_with("--"))
}
