//! Soak test: every gymnasium model runs N steps (10,000 by default) of seeded random controls
//! under every CPU preset (`simulation`, `gradients`, `mujoco_compat`), and after every step the
//! state must be finite and every contact solve of the step converged.
//!
//! `cargo run --release --example gymnasium_soak -- [--steps N] [--seed S] [MODEL.xml ...]`
//!
//! With no models it runs every `*.xml` in `../shared/models/gymnasium` (next to the workspace).
//! Each model starts from its first keyframe (or its reference pose, at rest); each control is
//! drawn uniformly in its actuator's `ctrlrange` (or [-1, 1]) and held for 10 steps. Every
//! model × preset pair restarts the generator from the seed, so the presets see the same
//! controls. One line per model and preset, then `N passed, M failed`; the exit status is
//! non-zero if any step failed, left a non-finite state or did not converge.
//!
//! The GPU referee's preset (`gpu_equivalent`: a fixed budget of Gauss-Seidel sweeps, which
//! never reports convergence by construction) runs too, as an informational row marked `(info)`:
//! only its finiteness is reported, and it counts towards neither total. `--no-gpu` skips it.
//!
//! The test suite's short version is `tests/gymnasium_contact.rs`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use phyz::contact::SolverConfig;
use phyz::mjcf;
use phyz::sim::{ContactState, Simulator};

/// Steps each random control is held for (as in `tests/gymnasium_contact.rs`).
const HOLD: usize = 10;

// The tests' seeded generator, so that the example draws the controls the suite's short
// version draws.
#[path = "../tests/common/mod.rs"]
mod common;
use common::Rng;

struct Args {
    steps: usize,
    seed: u64,
    gpu: bool,
    models: Vec<PathBuf>,
}

const USAGE: &str = "usage: gymnasium_soak [--steps N] [--seed S] [--no-gpu] [MODEL.xml ...]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args { steps: 10_000, seed: 5, gpu: true, models: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--steps" => {
                let v = value("--steps")?;
                args.steps = v.parse().map_err(|e| format!("--steps {v}: {e}"))?;
            }
            "--seed" => {
                let v = value("--seed")?;
                args.seed = v.parse().map_err(|e| format!("--seed {v}: {e}"))?;
            }
            "--no-gpu" => args.gpu = false,
            "-h" | "--help" => return Err(USAGE.to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}\n{USAGE}")),
            path => args.models.push(PathBuf::from(path)),
        }
    }
    if args.models.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        args.models = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "xml"))
            .collect();
        args.models.sort();
        if args.models.is_empty() {
            return Err(format!("no models in {}", dir.display()));
        }
    }
    Ok(args)
}

/// What one model × preset run saw.
struct Run {
    steps: usize,
    iterations: usize,
    residual: f64,
    contacts: usize,
    contact_steps: usize,
    unconverged: usize,
    /// The first failure: step index and what went wrong.
    failure: Option<(usize, String)>,
}

/// Runs `steps` steps; stops at a step error or a non-finite state, and counts unconverged
/// steps (recording the first) when `need_convergence`.
fn soak(sim: &mut Simulator<f64>, steps: usize, seed: u64, need_convergence: bool) -> Run {
    let mut rng = Rng::new(seed);
    let ranges: Vec<[f64; 2]> = sim.model.actuators().iter().map(|a| a.ctrl_range.unwrap_or([-1.0, 1.0])).collect();
    let mut ctrl = vec![0.0; ranges.len()];
    let mut run =
        Run { steps: 0, iterations: 0, residual: 0.0, contacts: 0, contact_steps: 0, unconverged: 0, failure: None };
    for k in 0..steps {
        if k % HOLD == 0 {
            ctrl = ranges.iter().map(|r| rng.uniform(r[0], r[1])).collect();
        }
        if let Err(e) = sim.step(&ctrl) {
            run.failure = Some((k, format!("step error: {e}")));
            break;
        }
        run.steps = k + 1;
        let s = &sim.state;
        if let Some(i) = s.qpos.iter().position(|x| !x.is_finite()) {
            run.failure = Some((k, format!("qpos[{i}] = {}", s.qpos[i])));
            break;
        }
        if let Some(i) = s.qvel.iter().position(|x| !x.is_finite()) {
            run.failure = Some((k, format!("qvel[{i}] = {}", s.qvel[i])));
            break;
        }
        let info = &sim.info;
        run.iterations = run.iterations.max(info.iterations);
        run.residual = run.residual.max(info.residual);
        run.contacts = run.contacts.max(info.contacts);
        run.contact_steps += usize::from(info.contacts > 0);
        if !info.converged {
            run.unconverged += 1;
            if need_convergence && run.failure.is_none() {
                let detail = format!(
                    "unconverged solve ({} iterations, residual {:.3e}, {} contacts, {} limits)",
                    info.iterations, info.residual, info.contacts, info.limits
                );
                run.failure = Some((k, detail));
            }
        }
    }
    run
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let mut presets: Vec<(&str, SolverConfig, bool)> = vec![
        ("simulation", SolverConfig::simulation(), true),
        ("gradients", SolverConfig::gradients(), true),
        ("mujoco_compat", SolverConfig::mujoco_compat(), true),
    ];
    if args.gpu {
        presets.push(("gpu_equivalent", SolverConfig::gpu_equivalent(), false));
    }
    println!("gymnasium soak: {} steps, seed {}, {} models", args.steps, args.seed, args.models.len());
    println!(
        "{:<26} {:<16} {:>6} {:>8} {:>11} {:>9} {:>11} {:>9}  result",
        "model", "preset", "steps", "max iter", "max resid", "max cont", "cont steps", "wall s"
    );
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut failures = Vec::new();
    for path in &args.models {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        let model = match mjcf::load(path) {
            Ok(model) => model,
            Err(e) => {
                println!("{name:<26} {:<16} load error: {e}", "-");
                failed += 1;
                failures.push(format!("{name}: load error: {e}"));
                continue;
            }
        };
        let start = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
        for (preset, config, counted) in &presets {
            let mut sim = Simulator::new(model.clone());
            sim.state = start.clone();
            sim.contact = ContactState::new(*config);
            let clock = Instant::now();
            let run = soak(&mut sim, args.steps, args.seed, *counted);
            let wall = clock.elapsed().as_secs_f64();
            let result = match (&run.failure, counted) {
                (None, true) => {
                    passed += 1;
                    "ok".to_string()
                }
                (None, false) => format!("(info) finite, {} unconverged by design", run.unconverged),
                (Some((k, what)), true) => {
                    failed += 1;
                    let unconverged = if run.unconverged > 0 {
                        format!(" [{} unconverged steps in all]", run.unconverged)
                    } else {
                        String::new()
                    };
                    failures.push(format!("{name} / {preset}: step {k}: {what}{unconverged}"));
                    format!("FAILED at step {k}: {what}{unconverged}")
                }
                (Some((k, what)), false) => format!("(info) stopped at step {k}: {what}"),
            };
            println!(
                "{name:<26} {preset:<16} {:>6} {:>8} {:>11.3e} {:>9} {:>11} {wall:>9.2}  {result}",
                run.steps, run.iterations, run.residual, run.contacts, run.contact_steps
            );
        }
    }
    for failure in &failures {
        eprintln!("FAILED: {failure}");
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
