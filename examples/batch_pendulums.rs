//! Four double pendulums with different masses, stepped together as batch lanes: one run of the
//! engine on `Lanes<4>` instead of four runs on `f64`.
//!
//! `cargo run --release --example batch_pendulums`

use phyz::{Lanes, Model, State, scenes, step};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (base, start) = scenes::double_pendulum()?;
    let masses = [0.5, 1.0, 2.0, 4.0];
    let models: Vec<Model<f64>> = masses
        .iter()
        .map(|&m| {
            let mut model = base.clone();
            model.edit(|parts| {
                let lower = &mut parts.bodies[2];
                let scale = m / lower.mass;
                lower.mass *= scale;
                lower.inertia *= scale;
            })?;
            Ok(model)
        })
        .collect::<Result<_, phyz::ModelError>>()?;
    let batch: Model<Lanes<4>> = Model::batch(&models)?;
    let mut state: State<Lanes<4>> = State::batch(&vec![start; 4]);
    let ctrl = [Lanes([0.0; 4]); 2];
    for _ in 0..2000 {
        state = step(&batch, &state, &ctrl)?;
    }
    for (lane, mass) in masses.iter().enumerate() {
        let s = state.lane(lane);
        println!("lower mass {mass:>3} kg: after {:.1} s, q = ({:+.4}, {:+.4})", s.time, s.qpos[0], s.qpos[1]);
    }
    Ok(())
}
