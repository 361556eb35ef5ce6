//! The GPU batch against the CPU engine (`f64`, each lane on its own) over `T` steps from
//! per-lane perturbed starts under random controls, under a solver preset: `gpu_equivalent`
//! (the traced route with the contact kernel, against the CPU's `gpu_equivalent` engine) or
//! `mujoco_compat` (the step's stages as kernels through the same API,
//! `phyz_gpu::stages_simulation`, against the CPU's `mujoco_compat` engine). Prints, last, `max difference X`: relative to `max(1, |x|)`, worst
//! over lanes, steps and coordinates.
//!
//! `cargo run --release -p phyz-gpu --example parity -- MODEL.xml [--batch B --steps T --device wgpu|opengl --preset gpu_equivalent|mujoco_compat]`

mod batch;

use batch::{Cpu, Rng, Run, controls, flat, starts, tensor, values};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run = Run::from_args()?;
    let b = run.args.batch;
    let mut rng = Rng(0x005e_ed0f_9a11);
    let starts = starts(&run.model, b, &mut rng);
    let mut cpu = Cpu::new(&starts, run.config);
    let (nq, nv, nu) = (run.model.nq(), run.model.nv(), run.model.nu());
    let (qpos, qvel) = flat(&starts);
    let mut state =
        run.sim.state(tensor(qpos, b, nq, &run.device, run.dtype), tensor(qvel, b, nv, &run.device, run.dtype))?;
    let mut worst: f64 = 0.0;
    for t in 1..=run.args.steps {
        let u = controls(&run.model, b, &mut rng);
        state = run.sim.step(&state, &tensor(u.clone(), b, nu, &run.device, run.dtype))?;
        let got: Vec<f64> = values(&state.qpos).into_iter().chain(values(&state.qvel)).collect();
        cpu.step(&run.model, &u)?;
        let (q, v) = flat(&cpu.states());
        if got.len() != q.len() + v.len() || got.iter().any(|x| !x.is_finite()) {
            return Err(format!("step {t}: the GPU batch read back short or not finite").into());
        }
        let step = got.iter().zip(q.iter().chain(&v)).fold(0.0f64, |m, (a, x)| m.max((a - x).abs() / x.abs().max(1.0)));
        worst = worst.max(step);
        if t % 10 == 0 || t == run.args.steps {
            println!("step {t}: difference {step:e}");
        }
    }
    println!("max difference {worst:e}");
    if let Some(retaken) = run.retaken() {
        println!("steps taken again after a cut solve: {retaken}");
    }
    Ok(())
}
