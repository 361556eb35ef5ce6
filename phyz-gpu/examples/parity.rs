//! The GPU batch against the CPU engine (`f64`, each lane on its own) over `T` steps from
//! per-lane perturbed starts under random controls, under a solver preset: `gpu_equivalent`
//! (the traced route with the contact kernel, against the CPU's `gpu_equivalent` engine) or
//! `mujoco_compat` (the step's stages as kernels, `phyz_gpu::stages`, against the CPU's
//! `mujoco_compat` engine). Prints, last, `max difference X`: relative to `max(1, |x|)`, worst
//! over lanes, steps and coordinates.
//!
//! `cargo run --release -p phyz-gpu --example parity -- MODEL.xml [--batch B --steps T --device wgpu|opengl --preset gpu_equivalent|mujoco_compat]`

mod batch;

use batch::{Cpu, Rng, Run, controls, flat, starts, tensor, values};
use phyz_core::contact::SolverConfig;
use phyz_gpu::stages::Stages;
use phyz_gpu::stages::layout::Array;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run = Run::from_args()?;
    let config = match run.args.preset.as_str() {
        "gpu_equivalent" => SolverConfig::gpu_equivalent(),
        "mujoco_compat" => SolverConfig::mujoco_compat(),
        other => return Err(format!("unknown preset {other}: gpu_equivalent or mujoco_compat").into()),
    };
    let b = run.args.batch;
    let mut rng = Rng(0x005e_ed0f_9a11);
    let starts = starts(&run.model, b, &mut rng);
    let mut cpu = Cpu::new(&starts, config);
    let mut device = Lanes::new(&run, &starts, config)?;
    let mut worst: f64 = 0.0;
    for t in 1..=run.args.steps {
        let u = controls(&run.model, b, &mut rng);
        let got = device.step(&run, &u)?;
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
    Ok(())
}

/// The device's lanes under the preset: the traced route's batch state, or the stages' worlds.
enum Lanes {
    Traced(Box<phyz_burn::BatchState>),
    Stages(Box<(Stages, phyz_gpu::stages::Worlds)>),
}

impl Lanes {
    fn new(
        run: &Run,
        starts: &[phyz_core::State<f64>],
        config: SolverConfig,
    ) -> Result<Lanes, Box<dyn std::error::Error>> {
        let (b, nq, nv) = (starts.len(), run.model.nq(), run.model.nv());
        if config.mujoco_compat {
            let stages = Stages::new(&run.model, &run.device)?;
            let worlds = stages.worlds(starts)?;
            return Ok(Lanes::Stages(Box::new((stages, worlds))));
        }
        let (qpos, qvel) = flat(starts);
        let state =
            run.sim.state(tensor(qpos, b, nq, &run.device, run.dtype), tensor(qvel, b, nv, &run.device, run.dtype))?;
        Ok(Lanes::Traced(Box::new(state)))
    }

    /// One step of every lane under `u` (row by row); the lanes' positions, then velocities,
    /// lane after lane.
    fn step(&mut self, run: &Run, u: &[f64]) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
        let (b, nu) = (run.args.batch, run.model.nu());
        match self {
            Lanes::Traced(state) => {
                **state = run.sim.step(state, &tensor(u.to_vec(), b, nu, &run.device, run.dtype))?;
                Ok(values(&state.qpos).into_iter().chain(values(&state.qvel)).collect())
            }
            Lanes::Stages(lanes) => {
                let (stages, worlds) = &mut **lanes;
                let ctrl: Vec<&[f64]> = u.chunks(nu.max(1)).take(b).collect();
                if nu > 0 {
                    stages.write(worlds, Array::Ctrl, &ctrl)?;
                }
                stages.step(worlds)?;
                let failed = stages.failures(worlds)?;
                if let Some((w, why)) = failed.first() {
                    return Err(format!("world {w} failed: {why:?}").into());
                }
                let [q, v] = [Array::Qpos, Array::Qvel].map(|a| stages.read(worlds, a));
                Ok(q?.concat().into_iter().chain(v?.concat()).collect())
            }
        }
    }
}
