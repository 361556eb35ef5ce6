//! Locomotion learned through contact: SHAC (a policy trained through phyz's differentiable
//! rollout, `phyz_burn::learn::shac`) or PPO (the model-free baseline, `learn::ppo`) on
//! gymnasium's v5 hopper, half-cheetah or ant, their models as written and stepped under
//! MuJoCo's contact model (`mujoco_compat`).
//!
//! Training runs for a wall-clock budget. Every `--eval-every` seconds of training the policy
//! (its mean action) is evaluated over whole episodes (gymnasium's 1,000 decisions, or until a
//! fall) from held-out starts; the clock stops meanwhile. The run writes, under
//! `phyz-out/locomotion/`: `TASK_RUN.csv` (env-steps, training seconds, held-out return, the
//! mean and largest gradient norm before the clip since the last point; `RUN` is the method,
//! and `_TAG` after it where `--tag` names one), `TASK.png` and `TASK_seconds.png` (the learning
//! curves of every run there of the task, against env-steps and against wall-clock), and
//! `TASK_RUN.html`, a page that plays one held-out episode of the final policy (`phyz view`).
//!
//! `cargo run --release -p phyz-burn --example locomotion -- --task hopper --method shac --minutes 10`
//! (`--onset touch` steps contacts that act from their touch; `--lanes N` sets SHAC's or PPO's
//! lanes; `--tag T` names the run's files `TASK_METHOD_T`; `--seed N`, `--eval-every S`)

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use burn::tensor::{DType, Device, Tensor};
use common::{Curve, argument, device, gymnasium};
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::DVector;
use phyz_burn::learn::{Evaluation, Gymnasium, Locomotion, Ppo, PpoConfig, Rng, Shac, ShacConfig, Task, evaluate};
use phyz_burn::{BurnError, Simulation};
use phyz_core::contact::{Onset, SolverConfig};
use plotters::style::RGBColor;

const HELD_OUT_SEED: u64 = 0x05ee_d0ff;
const EVAL_EPISODES: usize = 8;

/// The value after `name` on the command line, or `default`.
fn word(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.into())
}

/// One point of a learning curve.
struct Point {
    decisions: usize,
    seconds: f64,
    held_out: f64,
    /// The mean and the largest gradient norm (before the clip) of the steps since the last
    /// point.
    gradient_norm: (f64, f64),
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (task_name, method) = (word("--task", "hopper"), word("--method", "shac"));
    let minutes: f64 = word("--minutes", "10").parse()?;
    let eval_every = Duration::from_secs(argument("--eval-every", 60) as u64);
    let kind = match task_name.as_str() {
        "hopper" => Locomotion::Hopper,
        "half_cheetah" => Locomotion::HalfCheetah,
        "ant" => Locomotion::Ant,
        other => return Err(format!("no task `{other}` (hopper, half_cheetah, ant)").into()),
    };
    // `--onset touch`: MuJoCo's contact but for how a new contact acts in its first step
    // (`Onset::Touch`, docs/contact.md).
    let onset = match word("--onset", "step").as_str() {
        "step" => Onset::Step,
        "touch" => Onset::Touch,
        other => return Err(format!("no onset `{other}` (step, touch)").into()),
    };
    let config = SolverConfig { onset, ..SolverConfig::mujoco_compat() };
    let sim = Simulation::with_config(gymnasium(&task_name)?, config);
    let task = Gymnasium::new(kind, sim)?;
    let train = device()?;
    let plain = phyz_burn::f64_device(Device::flex())?;
    let seed = argument("--seed", 1) as u64;
    println!(
        "{}: {method} for {minutes} min of training, held-out evaluation every {} s",
        kind.name(),
        eval_every.as_secs()
    );
    let budget = Duration::from_secs_f64(minutes * 60.0);
    let progress = ProgressBar::new(budget.as_secs());
    progress.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} s of training  {msg}")?);
    let lanes = argument("--lanes", 64);
    let mut learner: Box<dyn Learner> = match method.as_str() {
        "shac" => Box::new(Shac::new(&task, ShacConfig { seed, lanes, ..ShacConfig::default() }, &train)?),
        "ppo" => Box::new(Ppo::new(&task, PpoConfig { seed, lanes, ..PpoConfig::default() }, &plain, &train)?),
        other => return Err(format!("no method `{other}` (shac, ppo)").into()),
    };
    let run = match word("--tag", "").as_str() {
        "" => method.clone(),
        tag => format!("{method}_{tag}"),
    };
    let mut points = Vec::new();
    let (mut trained, mut since_eval, mut recent) = (Duration::ZERO, Duration::ZERO, Vec::new());
    let (mut norms, mut decisions) = (Vec::new(), 0);
    while trained < budget {
        let clock = Instant::now();
        let progress_fraction = trained.as_secs_f64() / budget.as_secs_f64();
        let step = learner.step(1.0 - progress_fraction)?;
        let spent = clock.elapsed();
        (trained, since_eval) = (trained + spent, since_eval + spent);
        decisions = step.decisions;
        norms.push(step.gradient_norm);
        recent.extend(step.finished);
        if recent.len() > 64 {
            recent.drain(..recent.len() - 64);
        }
        let mean = recent.iter().sum::<f64>() / recent.len().max(1) as f64;
        progress.set_position(trained.as_secs());
        progress.set_message(format!(
            "{decisions} env-steps, training episodes' return {mean:.1}, gradient norm {:.2e}",
            step.gradient_norm
        ));
        if since_eval >= eval_every || trained >= budget {
            since_eval = Duration::ZERO;
            let held_out = held_out(learner.as_ref(), &task, &plain, EVAL_EPISODES)?.mean_return();
            let norm =
                (norms.iter().sum::<f64>() / norms.len().max(1) as f64, norms.iter().copied().fold(0.0, f64::max));
            norms.clear();
            let line =
                format!("{decisions:>9} env-steps  {:>7.1} s  held-out return {held_out:8.1}", trained.as_secs_f64());
            // Printed whether or not the bar is drawn (it is not where the output is a file).
            progress.suspend(|| println!("{line}"));
            points.push(Point { decisions, seconds: trained.as_secs_f64(), held_out, gradient_norm: norm });
        }
    }
    progress.finish_and_clear();
    let last = held_out(learner.as_ref(), &task, &plain, 16)?;
    let zero = evaluate(&task, 16, HELD_OUT_SEED, &plain, |o| {
        Tensor::zeros([o.dims()[0], task.actions()], (&o.device(), DType::F64))
    })?;
    let mut rng = Rng::new(3);
    let random = evaluate(&task, 16, HELD_OUT_SEED, &plain, |o| {
        let lanes = o.dims()[0];
        let values: Vec<f64> = (0..lanes * task.actions()).map(|_| rng.symmetric(1.0)).collect();
        common::tensor(values, lanes, task.actions(), &o.device())
    })?;
    println!(
        "{}: held-out return over 16 episodes: {method} {:.1} (mean length {:.0}), zero control {:.1}, random policy {:.1}",
        kind.name(),
        last.mean_return(),
        last.lengths.iter().sum::<usize>() as f64 / 16.0,
        zero.mean_return(),
        random.mean_return()
    );
    let dir = Path::new("phyz-out").join("locomotion");
    std::fs::create_dir_all(&dir)?;
    write_curve(&dir.join(format!("{task_name}_{run}.csv")), &points)?;
    plot_all(&dir, &task_name, kind)?;
    let page = dir.join(format!("{task_name}_{run}.html"));
    view(&task, &last, &page, &format!("{} · {run} · held-out return {:.0}", kind.name(), last.returns[0]))?;
    println!(
        "trained {decisions} env-steps in {:.0} s; curves and the episode's page in {}",
        trained.as_secs_f64(),
        dir.display()
    );
    Ok(())
}

/// What one training step of either method reports to the loop.
struct Step {
    decisions: usize,
    gradient_norm: f64,
    finished: Vec<f64>,
}

/// A method, as the loop drives it.
trait Learner {
    /// One window (SHAC) or update (PPO), the learning rate annealed by `remaining`, the
    /// fraction of the budget left.
    fn step(&mut self, remaining: f64) -> Result<Step, Box<dyn std::error::Error>>;
    /// The policy's mean action, for held-out episodes.
    fn controller(&self) -> Box<dyn Fn(Tensor<2>) -> Tensor<2>>;
}

impl Learner for Shac<'_, Gymnasium> {
    fn step(&mut self, remaining: f64) -> Result<Step, Box<dyn std::error::Error>> {
        let report = self.window(remaining.max(0.05))?;
        Ok(Step { decisions: report.decisions, gradient_norm: report.gradient_norm, finished: report.finished_returns })
    }
    fn controller(&self) -> Box<dyn Fn(Tensor<2>) -> Tensor<2>> {
        Shac::controller(self)
    }
}

impl Learner for Ppo<'_, Gymnasium> {
    fn step(&mut self, remaining: f64) -> Result<Step, Box<dyn std::error::Error>> {
        let report = self.update(remaining.max(0.05))?;
        Ok(Step { decisions: report.decisions, gradient_norm: report.gradient_norm, finished: report.finished_returns })
    }
    fn controller(&self) -> Box<dyn Fn(Tensor<2>) -> Tensor<2>> {
        Ppo::controller(self)
    }
}

/// The learner's held-out episodes from the held-out starts.
fn held_out(
    learner: &dyn Learner,
    task: &Gymnasium,
    device: &Device,
    episodes: usize,
) -> Result<Evaluation, BurnError> {
    evaluate(task, episodes, HELD_OUT_SEED, device, learner.controller())
}

fn write_curve(path: &Path, points: &[Point]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "env_steps,seconds,held_out_return,gradient_norm_mean,gradient_norm_max")?;
    for p in points {
        let (mean, max) = p.gradient_norm;
        writeln!(out, "{},{:.3},{:.3},{mean:.6e},{max:.6e}", p.decisions, p.seconds, p.held_out)?;
    }
    Ok(())
}

/// The learning curves of every run with a CSV for the task (`TASK_RUN.csv`), against
/// env-steps and wall-clock, into `TASK.png` and `TASK_seconds.png`.
fn plot_all(dir: &Path, task: &str, kind: Locomotion) -> Result<(), Box<dyn std::error::Error>> {
    let colours = [
        RGBColor(30, 90, 200),
        RGBColor(200, 80, 30),
        RGBColor(40, 160, 70),
        RGBColor(150, 60, 170),
        RGBColor(120, 120, 120),
        RGBColor(220, 170, 20),
    ];
    // Each row of a run's curve: (env-steps, seconds, held-out return).
    type Rows = Vec<(f64, f64, f64)>;
    let read = |path: &Path| -> Option<Rows> {
        let text = std::fs::read_to_string(path).ok()?;
        let rows = text.lines().skip(1).filter_map(|l| {
            let f: Vec<f64> = l.split(',').filter_map(|x| x.parse().ok()).collect();
            (f.len() >= 3).then(|| (f[0], f[1], f[2]))
        });
        Some(rows.collect())
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| Some(n.strip_prefix(&format!("{task}_"))?.strip_suffix(".csv")?.to_string()))
        .collect();
    names.sort();
    let runs: Vec<(String, RGBColor, Rows)> = names
        .into_iter()
        .zip(colours.iter().cycle())
        .filter_map(|(name, &c)| read(&dir.join(format!("{task}_{name}.csv"))).map(|rows| (name, c, rows)))
        .collect();
    for (suffix, x_label, x) in [("", "env-steps", 0), ("_seconds", "training wall-clock (s)", 1)] {
        let curves: Vec<Curve> = runs
            .iter()
            .map(|(m, c, rows)| Curve {
                label: m,
                color: *c,
                points: rows.iter().map(|r| (if x == 0 { r.0 } else { r.1 }, r.2)).collect(),
            })
            .collect();
        let path = PathBuf::from(dir).join(format!("{task}{suffix}.png"));
        common::plot(
            &path,
            &format!("{}: held-out return", kind.name()),
            x_label,
            "return (1,000 decisions)",
            &curves,
        )?;
    }
    Ok(())
}

/// The held-out episode's page: the first lane's path, one frame a decision.
fn view(task: &Gymnasium, evaluation: &Evaluation, path: &Path, title: &str) -> Result<(), Box<dyn std::error::Error>> {
    let model = task.simulation().model();
    let dt = model.timestep * task.frame_skip() as f64;
    let states: Vec<_> = evaluation
        .path
        .iter()
        .enumerate()
        .map(|(k, qpos)| {
            let mut state = model.state(DVector::from_column_slice(qpos), DVector::zeros(model.nv()));
            state.time = k as f64 * dt;
            state
        })
        .collect();
    phyz::view::write(path, model, &states, title)?;
    Ok(())
}
