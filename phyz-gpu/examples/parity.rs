//! The GPU batch against the CPU `gpu_equivalent` engine (`f64`, each lane on its own) over
//! `T` steps from per-lane perturbed starts under random controls. Prints, last,
//! `max difference X`: relative to `max(1, |x|)`, worst over lanes, steps and coordinates.
//!
//! `cargo run --release -p phyz-gpu --example parity -- MODEL.xml [--batch B --steps T --device wgpu|opengl]`

mod batch;

use batch::{Cpu, Rng, Run, controls, flat, starts, tensor, values};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Run { args, model, device, sim, dtype } = Run::from_args()?;
    let (b, nq, nv, nu) = (args.batch, model.nq(), model.nv(), model.nu());
    let mut rng = Rng(0x005e_ed0f_9a11);
    let starts = starts(&model, b, &mut rng);
    let mut cpu = Cpu::new(&starts);
    let (qpos, qvel) = flat(&starts);
    let mut state = sim.state(tensor(qpos, b, nq, &device, dtype), tensor(qvel, b, nv, &device, dtype))?;
    let mut worst: f64 = 0.0;
    for t in 1..=args.steps {
        let u = controls(&model, b, &mut rng);
        state = sim.step(&state, &tensor(u.clone(), b, nu, &device, dtype))?;
        cpu.step(&model, &u)?;
        let (q, v) = flat(&cpu.states());
        let got: Vec<f64> = values(&state.qpos).into_iter().chain(values(&state.qvel)).collect();
        if got.len() != q.len() + v.len() || got.iter().any(|x| !x.is_finite()) {
            return Err(format!("step {t}: the GPU batch read back short or not finite").into());
        }
        let step = got.iter().zip(q.iter().chain(&v)).fold(0.0f64, |m, (a, x)| m.max((a - x).abs() / x.abs().max(1.0)));
        worst = worst.max(step);
        if t % 10 == 0 || t == args.steps {
            println!("step {t}: difference {step:e}");
        }
    }
    println!("max difference {worst:e}");
    Ok(())
}
