//! The device step's backward (`phyz_gpu::stages::Stages::step_backward`) against the CPU.
//!
//! - Its stages: inverse dynamics at the step's acceleration against the CPU's
//!   `inverse_dynamics`, and its adjoint `λᵀ ∂τ/∂(q, q̇)` against the CPU's analytical
//!   derivatives (`RneaDerivatives`) times the same random `λ`, on every gymnasium model the
//!   device takes, worlds at random states.
//! - The whole backward: the cotangents of a step's start and controls, from random cotangents
//!   of its end, against the transposed step Jacobians that forward-mode dual numbers push
//!   through the CPU's whole step (`phyz_dual::step_jacobians`, an independent method): the
//!   gymnasium models' trees without constraints and a model of what they lack (a ball joint, a
//!   free body, springs, armature, servos with control and force ranges, an affine gain), with
//!   and without Euler's implicit damping; through joint limits; through contacts with the
//!   floor, between moving spheres, capsules and boxes and with a moving plane; under
//!   semi-implicit Euler and RK4.
//! - A world that presses a contact with no derivative (coincident centres) fails alone.
//!
//! Tolerances, fixed before measuring, relative to `max(1, the largest expected entry)`, worst
//! over worlds: stages `f64` (Vulkan, lavapipe) 1e-10, `f32` (OpenGL, llvmpipe) 1e-4; the
//! step's cotangents `f64` 1e-9, `f32` 1e-3.

use burn::tensor::Device;
use nalgebra::DVector;
use phyz_core::contact::SolverConfig;
use phyz_core::dynamics::{RneaDerivatives, forward_kinematics, integrate_position, inverse_dynamics};
use phyz_core::model::Integrator;
use phyz_core::sim::ContactState;
use phyz_core::{Model, State, mjcf};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::layout::Array;
use phyz_gpu::stages::{Failure, Stages};

mod common;
use common::{FEATURES, GYMNASIUM, Rng, gymnasium, has_f64};

/// A ball joint below a hinge (its dofs' parent moving, so their perturbations' `ψ` terms are
/// not zero), a slide below it driven through its parent's frame, and a control range.
const BALL_BELOW: &str = "
<mujoco>
  <option timestep='0.005'/>
  <worldbody>
    <body name='arm' pos='0 0 1'>
      <joint name='shoulder' axis='0 1 0' damping='0.2'/>
      <geom type='capsule' size='0.04' fromto='0 0 0 0.3 0 0' mass='1'/>
      <body name='forearm' pos='0.3 0 0' quat='0.8 0.2 0.4 0.1'>
        <joint name='ball' type='ball' armature='0.02'/>
        <geom type='box' size='0.15 0.04 0.03' pos='0.15 0 0' mass='0.6'/>
        <body name='hand' pos='0.3 0 0'>
          <joint name='slide' type='slide' axis='0.3 1 0.2' stiffness='10'/>
          <geom type='sphere' size='0.05' mass='0.3'/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint='shoulder' gear='3' ctrlrange='-1 1' ctrllimited='true'/>
    <position joint='slide' kp='20'/>
  </actuator>
</mujoco>";

/// [`BALL_BELOW`] under semi-implicit Euler without constraints.
fn ball_below() -> Model<f64> {
    let mut model = mjcf::parse(BALL_BELOW, "ball_below.xml").expect("the model loads");
    model.enabled.constraint = false;
    model
}

/// [`FEATURES`] under semi-implicit Euler without constraints.
fn features() -> Model<f64> {
    let mut model = mjcf::parse(FEATURES, "features.xml").expect("the features model loads");
    model.integrator = Integrator::Euler;
    model.enabled.constraint = false;
    model
}

/// The gymnasium models the device takes (not the swimmer, whose medium is viscous), without
/// constraints.
fn gymnasium_models() -> impl Iterator<Item = (String, Model<f64>)> {
    GYMNASIUM.into_iter().filter(|&name| name != "swimmer").map(|name| {
        let mut model = gymnasium(name);
        model.enabled.constraint = false;
        (name.to_string(), model)
    })
}

/// The gymnasium models the device takes, [`FEATURES`] and [`BALL_BELOW`], without constraints.
fn stage_models() -> impl Iterator<Item = (String, Model<f64>)> {
    gymnasium_models().chain([("features".to_string(), features()), ("ball below".to_string(), ball_below())])
}

/// A random state: every joint moved by up to ±0.5 in tangent coordinates from the model's
/// default (quaternions stay of unit length), velocities within ±2.
fn random_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = model.default_state();
    let turn = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
    s.qpos = integrate_position(model, &s.qpos, &turn, 1.0);
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-2.0, 2.0));
    s
}

/// `count` random vectors of `len` numbers within ±`reach`.
fn random(rng: &mut Rng, count: usize, len: usize, reach: f64) -> Vec<Vec<f64>> {
    (0..count).map(|_| (0..len).map(|_| rng.uniform(-reach, reach)).collect()).collect()
}

fn slices(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(|x| x.as_slice()).collect()
}

/// The largest difference of `gpu` from `cpu`, relative to `max(1, cpu's largest entry)`.
fn worst(gpu: &[f64], cpu: &[f64]) -> f64 {
    assert_eq!(gpu.len(), cpu.len());
    assert!(gpu.iter().all(|x| x.is_finite()), "the kernel wrote a number that is not finite");
    let scale = cpu.iter().fold(1.0_f64, |m, c| m.max(c.abs()));
    gpu.iter().zip(cpu).map(|(g, c)| (g - c).abs()).fold(0.0, f64::max) / scale
}

/// Inverse dynamics and its adjoint on `device` against the CPU, worst over every model.
fn adjoint_stages_against_cpu(device: &Device) -> f64 {
    let mut rng = Rng(21);
    let mut overall: f64 = 0.0;
    for (name, model) in stage_models() {
        let count = 4;
        let states: Vec<State<f64>> = (0..count).map(|_| random_state(&model, &mut rng)).collect();
        let ctrls = random(&mut rng, count, model.nu(), 1.5);
        let lambdas = random(&mut rng, count, model.nv(), 1.0);
        let stages = Stages::new(&model, device).expect("packs");
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let (ctrl, lambda) = (slices(&ctrls), slices(&lambdas));
        let given = [(Array::Qpos, &qpos), (Array::Qvel, &qvel), (Array::Ctrl, &ctrl), (Array::Multiplier, &lambda)];
        let worlds = stages.upload(count, &given.map(|(a, v)| (a, v.as_slice()))).expect("sizes match");
        stages.smooth(&worlds).expect("launched");
        stages.inverse_dynamics(&worlds).expect("launched");
        stages.inverse_dynamics_adjoint(&worlds).expect("launched");
        let read = |array| stages.read(&worlds, array).expect("readable");
        let (qacc, tau) = (read(Array::SmoothAcceleration), read(Array::Vector));
        let (adjoint_q, adjoint_v) = (read(Array::AdjointQpos), read(Array::AdjointQvel));
        let mut derivatives = RneaDerivatives::default();
        let mut line = (0.0_f64, 0.0_f64);
        for w in 0..count {
            let kin = forward_kinematics(&model, &states[w].qpos);
            let a = DVector::from_column_slice(&qacc[w]);
            let expected = inverse_dynamics(&model, &kin, &states[w].qvel, &a);
            line.0 = line.0.max(worst(&tau[w], expected.as_slice()));
            derivatives.compute(&model, &kin, &states[w].qvel, &a);
            let l = DVector::from_column_slice(&lambdas[w]);
            let (q, v) = (-derivatives.dq.tr_mul(&l), -derivatives.dv.tr_mul(&l));
            let both: Vec<f64> = q.iter().chain(v.iter()).copied().collect();
            let got: Vec<f64> = adjoint_q[w].iter().chain(&adjoint_v[w]).copied().collect();
            line.1 = line.1.max(worst(&got, &both));
        }
        eprintln!("{name:>24}: inverse dynamics {:.1e}, its adjoint {:.1e}", line.0, line.1);
        overall = overall.max(line.0).max(line.1);
    }
    overall
}

/// The scenes the backward is held on: the gymnasium models' trees under Euler without
/// constraints, [`BALL_BELOW`], [`FEATURES`], and [`FEATURES`] with Euler's implicit damping,
/// control clamping or actuation switched off.
fn backward_scenes() -> Vec<(String, Model<f64>)> {
    let mut scenes: Vec<(String, Model<f64>)> = gymnasium_models()
        .map(|(name, mut model)| {
            model.integrator = Integrator::Euler;
            (name, model)
        })
        .collect();
    scenes.push(("ball below".into(), ball_below()));
    let features = features();
    type Flag = fn(&mut Model<f64>);
    let flags: [(&str, Flag); 3] = [
        ("eulerdamp", |m| m.enabled.euler_damp = false),
        ("clampctrl", |m| m.enabled.clamp_ctrl = false),
        ("actuation", |m| m.enabled.actuation = false),
    ];
    for (flag, off) in flags {
        let mut model = features.clone();
        off(&mut model);
        scenes.push((format!("features, no {flag}"), model));
    }
    scenes.push(("features".into(), features));
    scenes
}

/// The step's backward on `device` against the CPU's forward-mode step Jacobians at states
/// `state` makes, worst over every scene.
fn backward_against_cpu(
    device: &Device,
    scenes: Vec<(String, Model<f64>)>,
    state: fn(&Model<f64>, &mut Rng) -> State<f64>,
) -> f64 {
    let mut rng = Rng(22);
    let mut overall: f64 = 0.0;
    for (name, model) in scenes {
        let (count, nv) = (3, model.nv());
        let states: Vec<State<f64>> = (0..count).map(|_| state(&model, &mut rng)).collect();
        // Controls past their ranges now and then, and the first world's first exactly at 1 (the
        // bound of the control ranges of most of these models), where nothing passes.
        let mut ctrls = random(&mut rng, count, model.nu(), 1.5);
        if let Some(u) = ctrls[0].first_mut() {
            *u = 1.0;
        }
        let (bar_q, bar_v) = (random(&mut rng, count, nv, 1.0), random(&mut rng, count, nv, 1.0));
        let stages = Stages::new(&model, device).expect("packs");
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let (ctrl, q, v) = (slices(&ctrls), slices(&bar_q), slices(&bar_v));
        let given = [
            (Array::Qpos, &qpos),
            (Array::Qvel, &qvel),
            (Array::Ctrl, &ctrl),
            (Array::AdjointQpos, &q),
            (Array::AdjointQvel, &v),
        ];
        let worlds = stages.upload(count, &given.map(|(a, v)| (a, v.as_slice()))).expect("sizes match");
        stages.step_backward(&worlds).expect("the backward runs");
        let read = |array| stages.read(&worlds, array).expect("readable");
        let (adjoint_q, adjoint_v, adjoint_u) =
            (read(Array::AdjointQpos), read(Array::AdjointQvel), read(Array::AdjointCtrl));
        let mut scene: f64 = 0.0;
        for w in 0..count {
            let jacobians = phyz_dual::step_jacobians(&model, &states[w], &ctrls[w]).expect("the CPU differentiates");
            let end = DVector::from_iterator(2 * nv, bar_q[w].iter().chain(&bar_v[w]).copied());
            let (start, controls) = (jacobians.a.tr_mul(&end), jacobians.b.tr_mul(&end));
            let expected: Vec<f64> = start.iter().chain(controls.iter()).copied().collect();
            let got: Vec<f64> = adjoint_q[w].iter().chain(&adjoint_v[w]).chain(&adjoint_u[w]).copied().collect();
            scene = scene.max(worst(&got, &expected));
        }
        eprintln!("{name:>24}: the step's cotangents {scene:.1e}");
        overall = overall.max(scene);
    }
    overall
}

/// The scenes of [`backward_scenes`] under RK4 (the gymnasium models' own integrator, but for
/// the half cheetah's), and a free body spinning so fast over a long step that RK4's last
/// increment turns it by more than π ([`SPINNER`], [`spinning_state`]).
fn rk4_scenes() -> Vec<(String, Model<f64>)> {
    backward_scenes()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("features, no eulerdamp"))
        .map(|(name, mut model)| {
            model.integrator = Integrator::Rk4;
            (name, model)
        })
        .collect()
}

/// A free box with three different moments of inertia (so its spin precesses), without
/// gravity, over a long step.
const SPINNER: &str = "
<mujoco>
  <option timestep='0.1' gravity='0 0 0' integrator='RK4'/>
  <worldbody>
    <body name='spinner'>
      <freejoint/>
      <geom type='box' size='0.3 0.2 0.1' mass='1'/>
    </body>
  </worldbody>
</mujoco>";

/// A random turn and place of [`SPINNER`], spinning at about 40 rad/s: RK4's last increment
/// `h s` is past π, where `dexp⁻¹` wraps the rotation vector.
fn spinning_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = random_state(model, rng);
    let spin = [40.0, 10.0, -5.0];
    for (k, w) in spin.into_iter().enumerate() {
        s.qvel[3 + k] = w + rng.uniform(-2.0, 2.0);
    }
    s
}

/// The gymnasium models with joint limits, contacts off, under `integrator` (Euler without
/// its implicit damping: MuJoCo's split solve, which the backward refuses): their limits' rows
/// under `mujoco_compat`.
fn limited_models(integrator: Integrator) -> Vec<(String, Model<f64>)> {
    let limited = ["ant", "half_cheetah", "hopper", "humanoid", "walker2d", "reacher"];
    limited
        .into_iter()
        .map(|name| {
            let mut model = gymnasium(name);
            model.enabled.contact = false;
            model.enabled.euler_damp = false;
            model.integrator = integrator;
            (name.to_string(), model)
        })
        .collect()
}

/// The constrained step's backward against the CPU's step Jacobians under `mujoco_compat`, on
/// [`limited_models`] at states that press their limits (joints moved by up to ±1.5 from the
/// default). Returns the worst and the worlds whose limits were pressed.
fn limits_backward_against_cpu(device: &Device, models: Vec<(String, Model<f64>)>) -> (f64, usize) {
    let mut rng = Rng(24);
    let (mut overall, mut pressed): (f64, usize) = (0.0, 0);
    for (name, model) in models {
        let (count, nv) = (4, model.nv());
        let states: Vec<State<f64>> = (0..count)
            .map(|_| {
                let mut s = model.default_state();
                let turn = DVector::from_fn(nv, |_, _| rng.uniform(-1.5, 1.5));
                s.qpos = integrate_position(&model, &s.qpos, &turn, 1.0);
                s.qvel = DVector::from_fn(nv, |_, _| rng.uniform(-2.0, 2.0));
                s
            })
            .collect();
        let ctrls = random(&mut rng, count, model.nu(), 1.0);
        let (bar_q, bar_v) = (random(&mut rng, count, nv, 1.0), random(&mut rng, count, nv, 1.0));
        let stages = Stages::new(&model, device).expect("packs");
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let (ctrl, q, v) = (slices(&ctrls), slices(&bar_q), slices(&bar_v));
        let given = [
            (Array::Qpos, &qpos),
            (Array::Qvel, &qvel),
            (Array::Ctrl, &ctrl),
            (Array::AdjointQpos, &q),
            (Array::AdjointQvel, &v),
        ];
        let worlds = stages.upload(count, &given.map(|(a, v)| (a, v.as_slice()))).expect("sizes match");
        stages.step_backward(&worlds).expect("the backward runs");
        let failed = stages.failures(&worlds).expect("readable");
        assert!(failed.is_empty(), "{name}: {failed:?}");
        let rows = stages.read_rows(&worlds).expect("readable");
        let read = |array| stages.read(&worlds, array).expect("readable");
        let (adjoint_q, adjoint_v, adjoint_u) =
            (read(Array::AdjointQpos), read(Array::AdjointQvel), read(Array::AdjointCtrl));
        let mut scene: f64 = 0.0;
        for w in 0..count {
            pressed += usize::from(!rows[w].target.is_empty());
            let mut contact = ContactState::new(SolverConfig::mujoco_compat());
            let jacobians = phyz_dual::step_jacobians_lanes::<8>(&model, &states[w], &ctrls[w], &[], &mut contact)
                .expect("the CPU differentiates");
            let end = DVector::from_iterator(2 * nv, bar_q[w].iter().chain(&bar_v[w]).copied());
            let (start, controls) = (jacobians.a.tr_mul(&end), jacobians.b.tr_mul(&end));
            let expected: Vec<f64> = start.iter().chain(controls.iter()).copied().collect();
            let got: Vec<f64> = adjoint_q[w].iter().chain(&adjoint_v[w]).chain(&adjoint_u[w]).copied().collect();
            scene = scene.max(worst(&got, &expected));
        }
        eprintln!("{name:>24}: the constrained step's cotangents {scene:.1e}");
        overall = overall.max(scene);
    }
    (overall, pressed)
}

/// Free bodies on the floor: a box (its corners), a capsule (its ends, its frame along its
/// axis), a sphere without friction (condim 1), and a sphere on a hinged arm.
const FLOOR: &str = "
<mujoco>
  <option timestep='0.005'/>
  <default>
    <geom contype='1' conaffinity='0'/>
  </default>
  <worldbody>
    <geom name='floor' type='plane' size='5 5 0.1' contype='0' conaffinity='1'/>
    <body name='box' pos='0 0 0.1'>
      <freejoint/>
      <geom type='box' size='0.15 0.1 0.05' mass='1' friction='0.8'/>
    </body>
    <body name='capsule' pos='1 0 0.1'>
      <freejoint/>
      <geom type='capsule' size='0.05' fromto='-0.2 0 0 0.2 0.1 0' mass='0.5'/>
    </body>
    <body name='ball' pos='-1 0 0.1'>
      <freejoint/>
      <geom type='sphere' size='0.1' mass='0.3' condim='1'/>
    </body>
    <body name='arm' pos='0 1 0.3'>
      <joint name='swing' axis='0 1 0'/>
      <geom type='capsule' size='0.02' fromto='0 0 0 0.3 0 0' mass='0.2' contype='0' conaffinity='0'/>
      <body name='hand' pos='0.3 0 0'>
        <joint name='wrist' axis='1 0 0' limited='true' range='-0.5 0.5'/>
        <geom type='sphere' size='0.08' pos='0 0 -0.25' mass='0.3'/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint='swing' gear='2'/>
  </actuator>
</mujoco>";

/// The scenes of the backward through contacts, under `integrator` (Euler without its
/// implicit damping: MuJoCo's split solve, which the backward refuses): the ant (its torso and
/// legs on the floor: spheres and capsules), [`FLOOR`], and [`FLOOR`] soft: a solimp whose
/// sigmoid spans 0.2 of depth and a margin, so that the impedance's and the regularizer's
/// slopes are not zero at the pressed depths.
fn floor_models(integrator: Integrator) -> Vec<(String, Model<f64>)> {
    let ant = gymnasium("ant");
    let floor = mjcf::parse(FLOOR, "floor.xml").expect("the floor model loads");
    let soft = FLOOR.replace(
        "<geom contype='1' conaffinity='0'/>",
        "<geom contype='1' conaffinity='0' solimp='0.3 0.95 0.2 0.5 2' margin='0.01'/>",
    );
    let soft = mjcf::parse(&soft, "soft_floor.xml").expect("the soft floor model loads");
    let rolling = FLOOR.replace(
        "<geom contype='1' conaffinity='0'/>",
        "<geom contype='1' conaffinity='0' condim='6' friction='0.8 0.05 0.02'/>",
    );
    let rolling = mjcf::parse(&rolling, "rolling_floor.xml").expect("the rolling floor model loads");
    let mut scenes = vec![
        ("ant".into(), ant),
        ("floor".into(), floor),
        ("soft floor".into(), soft),
        ("rolling floor".into(), rolling),
    ];
    for (_, model) in &mut scenes {
        model.enabled.euler_damp = false;
        model.integrator = integrator;
    }
    scenes
}

/// A state of `model` pressed into the floor: its joints moved by up to ±0.6 from the default
/// (a free body's turn and place too), every free body lowered by up to 0.3, velocities within
/// ±1.
fn pressed_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = model.default_state();
    let turn = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.6, 0.6));
    s.qpos = integrate_position(model, &s.qpos, &turn, 1.0);
    for joint in model.joints().iter().filter(|j| j.kind() == phyz_core::model::JointKind::Free) {
        s.qpos[joint.qpos_adr() + 2] -= rng.uniform(0.0, 0.3);
    }
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-1.0, 1.0));
    s
}

/// The constrained step's backward against the CPU's step Jacobians under `mujoco_compat`.
/// Returns the worst over the worlds whose solve converged, those worlds, and the contacts they
/// had.
fn constrained_backward_against_cpu(
    device: &Device,
    scenes: Vec<(String, Model<f64>)>,
    state: fn(&Model<f64>, &mut Rng) -> State<f64>,
) -> (f64, usize, usize) {
    let mut rng = Rng(25);
    let (mut overall, mut held, mut touching): (f64, usize, usize) = (0.0, 0, 0);
    for (name, model) in scenes {
        let (count, nv) = (8, model.nv());
        let states: Vec<State<f64>> = (0..count).map(|_| state(&model, &mut rng)).collect();
        let ctrls = random(&mut rng, count, model.nu(), 1.0);
        let (bar_q, bar_v) = (random(&mut rng, count, nv, 1.0), random(&mut rng, count, nv, 1.0));
        let stages = Stages::new(&model, device).expect("packs");
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let (ctrl, q, v) = (slices(&ctrls), slices(&bar_q), slices(&bar_v));
        let given = [
            (Array::Qpos, &qpos),
            (Array::Qvel, &qvel),
            (Array::Ctrl, &ctrl),
            (Array::AdjointQpos, &q),
            (Array::AdjointQvel, &v),
        ];
        let worlds = stages.upload(count, &given.map(|(a, v)| (a, v.as_slice()))).expect("sizes match");
        stages.step_backward(&worlds).expect("the backward runs");
        let failed = stages.failures(&worlds).expect("readable");
        let contacts = stages.contacts(&worlds).expect("readable");
        let read = |array| stages.read(&worlds, array).expect("readable");
        let (adjoint_q, adjoint_v, adjoint_u) =
            (read(Array::AdjointQpos), read(Array::AdjointQvel), read(Array::AdjointCtrl));
        let mut scene: f64 = 0.0;
        let (before, mut between) = (touching, 0);
        for w in 0..count {
            if let Some((_, failure)) = failed.iter().find(|(f, _)| *f == w) {
                // Only a solve that stopped short is let pass: it has no derivative anywhere.
                assert_eq!(*failure, Failure::UnconvergedSolve, "{name}, world {w}");
                continue;
            }
            held += 1;
            touching += contacts[w].len();
            between += contacts[w].iter().filter(|c| !c.geoms.contains(&0)).count();
            let mut contact = ContactState::new(SolverConfig::mujoco_compat());
            let jacobians = phyz_dual::step_jacobians_lanes::<8>(&model, &states[w], &ctrls[w], &[], &mut contact)
                .expect("the CPU differentiates");
            let end = DVector::from_iterator(2 * nv, bar_q[w].iter().chain(&bar_v[w]).copied());
            let (start, controls) = (jacobians.a.tr_mul(&end), jacobians.b.tr_mul(&end));
            let expected: Vec<f64> = start.iter().chain(controls.iter()).copied().collect();
            let got: Vec<f64> = adjoint_q[w].iter().chain(&adjoint_v[w]).chain(&adjoint_u[w]).copied().collect();
            scene = scene.max(worst(&got, &expected));
        }
        eprintln!(
            "{name:>24}: the constrained step's cotangents {scene:.1e}, {} contacts ({between} without geom 0)",
            touching - before
        );
        overall = overall.max(scene);
    }
    (overall, held, touching)
}

/// Pairs of spheres and capsules pressed into each other: on free bodies, two spheres (one
/// frictionless), a sphere on a capsule, two capsules that cross; a capsule sliding along a
/// fixed one, parallel (MuJoCo 4's two points); two spheres whose pair MuJoCo turns round (an
/// explicit pair listed from the later body); and two hinged capsules below one free body
/// (their contact moves with the dofs they share); a free box against a free sphere over a face,
/// an edge and a corner; a plane on a free body under a sphere, a capsule and a box.
const SELF_CONTACTS: [&str; 10] = [
    "<body pos='0 0 1'><freejoint/><geom type='sphere' size='0.1' mass='1'/></body>
     <body pos='0.16 0.03 1.02'><freejoint/><geom type='sphere' size='0.08' mass='0.7' condim='1'/></body>",
    "<body pos='1 0 1'><freejoint/><geom type='capsule' size='0.05' fromto='-0.2 0 0 0.2 0 0' mass='0.5'/></body>
     <body pos='1.05 0.02 1.1'><freejoint/><geom type='sphere' size='0.07' mass='0.4'/></body>",
    "<body pos='2 0 1'><freejoint/><geom type='capsule' size='0.05' fromto='-0.2 0 0 0.2 0 0' mass='0.5'/></body>
     <body pos='2.03 0.02 1.07'><freejoint/><geom type='capsule' size='0.04' fromto='0 -0.15 0 0.03 0.15 0.02' mass='0.4'/></body>",
    "<geom type='capsule' size='0.05' fromto='2.8 0 1 3.2 0 1'/>
     <body pos='3.05 0 1.09'>
       <joint type='slide' axis='1 0 0'/><joint type='slide' axis='0 1 0'/><joint type='slide' axis='0 0 1'/>
       <geom type='capsule' size='0.05' fromto='-0.1 0 0 0.1 0 0' mass='0.3'/>
     </body>",
    "<body pos='4 0 1'><freejoint/><geom name='early' type='sphere' size='0.1' mass='1' contype='0' conaffinity='0'/></body>
     <body pos='4.15 0.05 1'><freejoint/><geom name='late' type='sphere' size='0.1' mass='1' contype='0' conaffinity='0'/></body>",
    "<body pos='5 0 1'>
       <freejoint/>
       <geom type='sphere' size='0.05' mass='1' contype='0' conaffinity='0'/>
       <body pos='0 0.1 0'>
         <joint type='hinge' axis='0 1 0'/>
         <geom type='capsule' size='0.04' fromto='0 0 0 0.3 0 -0.05' mass='0.3'/>
       </body>
       <body pos='0 -0.05 0'>
         <joint type='hinge' axis='1 0 0'/>
         <geom type='capsule' size='0.04' fromto='0.15 0 0.1 0.15 0.2 -0.1' mass='0.3'/>
       </body>
     </body>",
    "<body pos='6 0 1' euler='12 6 18'><freejoint/><geom type='box' size='0.1 0.12 0.08' mass='1'/></body>
     <body pos='6.17 0.02 1.01'><freejoint/><geom type='sphere' size='0.09' mass='0.5'/></body>",
    "<body pos='7 0 1'><freejoint/><geom type='box' size='0.1 0.1 0.1' mass='1'/></body>
     <body pos='7.15 0.15 1.02'><freejoint/><geom type='sphere' size='0.08' mass='0.5'/></body>",
    "<body pos='8 0 1'><freejoint/><geom type='box' size='0.1 0.1 0.1' mass='1'/></body>
     <body pos='8.14 0.14 1.14'><freejoint/><geom type='sphere' size='0.08' mass='0.5'/></body>",
    "<body pos='9 0 1'>
       <freejoint/>
       <geom type='plane' size='1 1 0.1'/>
       <geom type='sphere' size='0.05' mass='1' contype='0' conaffinity='0'/>
     </body>
     <body pos='9.3 0 1.08'><freejoint/><geom type='sphere' size='0.1' mass='0.5'/></body>
     <body pos='8.6 0.1 1.04'>
       <freejoint/>
       <geom type='capsule' size='0.05' fromto='-0.1 0 0 0.1 0.02 0' mass='0.5' contype='2' conaffinity='1'/>
     </body>
     <body pos='9 0.5 1.09'><freejoint/><geom type='box' size='0.1 0.1 0.1' mass='0.5' contype='2' conaffinity='1'/></body>",
];

/// A model of one of the [`SELF_CONTACTS`] groups, without gravity.
fn self_contacts(group: &str) -> Model<f64> {
    self_contacts_of(group, 3)
}

/// [`self_contacts`] with contacts of dimension `condim` (but where a geom says its own).
fn self_contacts_of(group: &str, condim: u8) -> Model<f64> {
    let flipped = if group.contains("'late'") {
        format!(
            "<contact><pair geom1='late' geom2='early' condim='{condim}' friction='0.7 0.7 0.05 0.02 0.02'/></contact>"
        )
    } else {
        String::new()
    };
    let xml = format!(
        "<mujoco><option timestep='0.005' gravity='0 0 0'/><default><geom contype='1' conaffinity='1' \
         condim='{condim}' friction='0.7 0.05 0.02' solimp='0.3 0.95 0.2 0.5 2'/></default><worldbody>{group}\
         </worldbody>{flipped}</mujoco>"
    );
    mjcf::parse(&xml, "self_contacts.xml").expect("the self contacts load")
}

/// A state of `model` folded into itself: its joints moved by up to ±1.2 from the default,
/// velocities within ±0.5 (the humanoid's limbs then press into each other and its torso).
fn folded_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = model.default_state();
    let turn = DVector::from_fn(model.nv(), |d, _| if d < 6 { 0.0 } else { rng.uniform(-1.2, 1.2) });
    s.qpos = integrate_position(model, &s.qpos, &turn, 1.0);
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
    s
}

/// A state of `model` near its default: joints moved by up to ±0.01, velocities within ±0.5.
fn near_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = model.default_state();
    let turn = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.01, 0.01));
    s.qpos = integrate_position(model, &s.qpos, &turn, 1.0);
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
    s
}

/// The scenes of the backward through contacts between moving bodies, under `integrator`:
/// each of the [`SELF_CONTACTS`] alone, so that each reports its own error.
fn self_contact_models(integrator: Integrator) -> Vec<(String, Model<f64>)> {
    let names = [
        "spheres",
        "sphere on capsule",
        "crossed capsules",
        "parallel capsules",
        "turned round",
        "siblings",
        "box and sphere, face",
        "box and sphere, edge",
        "box and sphere, corner",
        "a moving plane",
    ];
    let mut scenes: Vec<(String, Model<f64>)> =
        names.into_iter().zip(SELF_CONTACTS).map(|(name, group)| (name.to_string(), self_contacts(group))).collect();
    // Torsional friction, and torsional and rolling friction (condim 4 and 6).
    let rolling = [
        ("sphere on capsule, condim 6", 1, 6),
        ("crossed capsules, condim 4", 2, 4),
        ("turned round, condim 6", 4, 6),
        ("siblings, condim 6", 5, 6),
        ("a moving plane, condim 6", 9, 6),
    ];
    for (name, group, condim) in rolling {
        scenes.push((name.to_string(), self_contacts_of(SELF_CONTACTS[group], condim)));
    }
    for (_, model) in &mut scenes {
        model.integrator = integrator;
    }
    scenes
}

/// A rollout's backward through its checkpoints (`Stages::rollout`, `rollout_backward`) against
/// the CPU's step Jacobians chained backwards along the CPU's own rollout: the cotangents of
/// the start and of every step's controls, from random cotangents of the end; two worlds from
/// starts `state` makes, `steps` steps under random controls. A constrained model's steps are
/// differentiated under `mujoco_compat`, each from a fresh contact state: each step's first
/// solve cold, as the device's.
fn rollout_against_cpu(
    device: &Device,
    model: &Model<f64>,
    state: fn(&Model<f64>, &mut Rng) -> State<f64>,
    steps: usize,
) -> f64 {
    let mut rng = Rng(23);
    let (count, nv) = (2, model.nv());
    let starts: Vec<State<f64>> = (0..count).map(|_| state(model, &mut rng)).collect();
    let controls: Vec<Vec<Vec<f64>>> = (0..steps).map(|_| random(&mut rng, count, model.nu(), 1.5)).collect();
    let (bar_q, bar_v) = (random(&mut rng, count, nv, 1.0), random(&mut rng, count, nv, 1.0));
    let stages = Stages::new(model, device).expect("packs");
    let mut worlds = stages.worlds(&starts).expect("uploads");
    let tape = stages.rollout(&mut worlds, &controls).expect("steps");
    stages.write(&mut worlds, Array::AdjointQpos, &slices(&bar_q)).expect("writes");
    stages.write(&mut worlds, Array::AdjointQvel, &slices(&bar_v)).expect("writes");
    let control_bars = stages.rollout_backward(&mut worlds, &tape).expect("the backward runs");
    assert_eq!(stages.failures(&worlds).expect("readable"), vec![], "no world fails");
    let read = |array| stages.read(&worlds, array).expect("readable");
    let (adjoint_q, adjoint_v, qpos) = (read(Array::AdjointQpos), read(Array::AdjointQvel), read(Array::Qpos));
    let mut overall: f64 = 0.0;
    for w in 0..count {
        assert!(worst(&qpos[w], starts[w].qpos.as_slice()) < 1e-6, "the worlds are back at their start");
        let mut state = starts[w].clone();
        let mut jacobians = Vec::new();
        for ctrl in &controls {
            let j = if model.enabled.constraint {
                let mut contact = ContactState::new(SolverConfig::mujoco_compat());
                phyz_dual::step_jacobians_lanes::<8>(model, &state, &ctrl[w], &[], &mut contact)
            } else {
                phyz_dual::step_jacobians(model, &state, &ctrl[w])
            };
            let j = j.expect("the CPU differentiates");
            state = j.next.clone();
            jacobians.push(j);
        }
        let mut bar = DVector::from_iterator(2 * nv, bar_q[w].iter().chain(&bar_v[w]).copied());
        let mut expected = vec![Vec::new(); steps];
        for (t, j) in jacobians.iter().enumerate().rev() {
            expected[t] = j.b.tr_mul(&bar).as_slice().to_vec();
            bar = j.a.tr_mul(&bar);
        }
        let got: Vec<f64> = adjoint_q[w].iter().chain(&adjoint_v[w]).copied().collect();
        overall = overall.max(worst(&got, bar.as_slice()));
        for t in 0..steps {
            overall = overall.max(worst(&control_bars[t][w], &expected[t]));
        }
    }
    eprintln!("a rollout of {steps} steps, its cotangents against the CPU's: {overall:.1e}");
    overall
}

/// [`rollout_against_cpu`] on [`FEATURES`] (12 steps, no constraints) and on the ant under its
/// own RK4 pressed into its floor (6 steps, contacts and limits solved at each of RK4's points).
fn rollouts_against_cpu(device: &Device) -> f64 {
    rollout_against_cpu(device, &features(), random_state, 12).max(rollout_against_cpu(
        device,
        &gymnasium("ant"),
        pressed_state,
        6,
    ))
}

#[test]
fn the_backward_stages_are_the_cpu_stages_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = adjoint_stages_against_cpu(&device);
        assert!(worst <= 1e-10, "{worst:e}");
    }
}

#[test]
fn the_backward_stages_follow_the_cpu_stages_in_f32() {
    let worst = adjoint_stages_against_cpu(&opengl());
    assert!(worst <= 1e-4, "{worst:e}");
}

#[test]
fn the_step_backward_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = backward_against_cpu(&device, backward_scenes(), random_state);
        assert!(worst <= 1e-9, "{worst:e}");
    }
}

#[test]
fn the_step_backward_follows_the_transposed_step_jacobian_in_f32() {
    let worst = backward_against_cpu(&opengl(), backward_scenes(), random_state);
    assert!(worst <= 1e-3, "{worst:e}");
}

/// The backward through contacts between moving bodies under `integrator`: the self contacts
/// near their start, the humanoid folded into itself.
fn self_contacts_against_cpu(device: &Device, integrator: Integrator) -> f64 {
    let (contacts, held, touching) =
        constrained_backward_against_cpu(device, self_contact_models(integrator), near_state);
    assert!(held >= 6 && touching >= 40, "{held} worlds, {touching} contacts");
    let mut humanoid = gymnasium("humanoid");
    humanoid.integrator = integrator;
    humanoid.enabled.euler_damp = false;
    let (walker, held, touching) =
        constrained_backward_against_cpu(device, vec![("humanoid, folded".into(), humanoid)], folded_state);
    // Off the floor: its contacts are its own.
    assert!(held >= 4 && touching >= 4, "{held} worlds, {touching} contacts");
    contacts.max(walker)
}

#[test]
fn the_backward_through_moving_contacts_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = self_contacts_against_cpu(&device, Integrator::Euler)
            .max(self_contacts_against_cpu(&device, Integrator::Rk4));
        assert!(worst <= 1e-9, "{worst:e}");
    }
}

#[test]
fn the_backward_through_moving_contacts_follows_the_transposed_step_jacobian_in_f32() {
    let device = opengl();
    let worst =
        self_contacts_against_cpu(&device, Integrator::Euler).max(self_contacts_against_cpu(&device, Integrator::Rk4));
    assert!(worst <= 1e-3, "{worst:e}");
}

/// RK4's backward, unconstrained, through limits and through contacts, worst over all.
fn rk4_backward_against_cpu(device: &Device) -> f64 {
    let spinner = mjcf::parse(SPINNER, "spinner.xml").expect("the spinner loads");
    let smooth = backward_against_cpu(device, rk4_scenes(), random_state).max(backward_against_cpu(
        device,
        vec![("spinner".into(), spinner)],
        spinning_state,
    ));
    let (limits, pressed) = limits_backward_against_cpu(device, limited_models(Integrator::Rk4));
    assert!(pressed >= 12, "{pressed}");
    let (contacts, held, touching) =
        constrained_backward_against_cpu(device, floor_models(Integrator::Rk4), pressed_state);
    assert!(held >= 12 && touching >= 30, "{held} worlds, {touching} contacts");
    eprintln!("RK4: smooth {smooth:.1e}, limits {limits:.1e}, contacts {contacts:.1e}");
    smooth.max(limits).max(contacts)
}

#[test]
fn the_rk4_backward_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = rk4_backward_against_cpu(&device);
        assert!(worst <= 1e-9, "{worst:e}");
    }
}

#[test]
fn the_rk4_backward_follows_the_transposed_step_jacobian_in_f32() {
    let worst = rk4_backward_against_cpu(&opengl());
    assert!(worst <= 1e-3, "{worst:e}");
}

#[test]
fn the_backward_through_limits_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let (worst, pressed) = limits_backward_against_cpu(&device, limited_models(Integrator::Euler));
        eprintln!("worlds with pressed limits: {pressed}");
        assert!(worst <= 1e-9, "{worst:e}");
        assert!(pressed >= 12, "{pressed}");
    }
}

#[test]
fn the_backward_through_limits_follows_the_transposed_step_jacobian_in_f32() {
    let (worst, pressed) = limits_backward_against_cpu(&opengl(), limited_models(Integrator::Euler));
    assert!(worst <= 1e-3, "{worst:e}");
    assert!(pressed >= 12, "{pressed}");
}

#[test]
fn the_backward_through_contacts_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let (worst, held, touching) =
            constrained_backward_against_cpu(&device, floor_models(Integrator::Euler), pressed_state);
        eprintln!("{held} worlds held, {touching} contacts");
        assert!(worst <= 1e-9, "{worst:e}");
        assert!(held >= 14 && touching >= 30, "{held} worlds, {touching} contacts");
    }
}

#[test]
fn the_backward_through_contacts_follows_the_transposed_step_jacobian_in_f32() {
    let (worst, held, touching) =
        constrained_backward_against_cpu(&opengl(), floor_models(Integrator::Euler), pressed_state);
    eprintln!("{held} worlds held, {touching} contacts");
    assert!(worst <= 1e-3, "{worst:e}");
    assert!(held >= 12 && touching >= 30, "{held} worlds, {touching} contacts");
}

#[test]
fn a_rollout_backward_is_the_chained_step_jacobians_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = rollouts_against_cpu(&device);
        assert!(worst <= 1e-9, "{worst:e}");
    }
}

#[test]
fn a_rollout_backward_follows_the_chained_step_jacobians_in_f32() {
    let worst = rollouts_against_cpu(&opengl());
    assert!(worst <= 1e-3, "{worst:e}");
}

/// Two free spheres centred at the same point.
const COINCIDENT: &str = "
<mujoco>
  <option timestep='0.005' gravity='0 0 0'/>
  <worldbody>
    <body pos='0 0 1'><freejoint/><geom type='sphere' size='0.1'/></body>
    <body pos='0 0 1'><freejoint/><geom type='sphere' size='0.1'/></body>
  </worldbody>
</mujoco>";

#[test]
fn a_world_pressing_a_contact_with_no_derivative_fails_alone() {
    let model = mjcf::parse(COINCIDENT, "coincident.xml").expect("loads");
    let stages = Stages::new(&model, &opengl()).expect("packs");
    // The first world's spheres share their centre (a contact with no derivative: its normal
    // comes from the axes, not the gap); the second's are off centre (its normal the gap's).
    let mut apart = model.default_state();
    apart.qpos[7] += 0.15;
    let worlds = stages.worlds(&[model.default_state(), apart]).expect("uploads");
    stages.step_backward(&worlds).expect("the backward runs");
    assert_eq!(stages.failures(&worlds).expect("readable"), vec![(0, Failure::UndifferentiatedContact)]);
}

#[test]
fn a_constrained_model_past_a_software_drivers_loop_budget_is_refused_by_name() {
    let device = opengl();
    let far: String =
        (0..2).map(|i| format!("<body pos='{i} 5 1'><freejoint/><geom type='sphere' size='0.1'/></body>")).collect();
    // The spheres' and capsules' pairs (59 dofs), and two free bodies more.
    let pairs = SELF_CONTACTS[..6].concat();
    let big = self_contacts(&format!("{pairs}{far}"));
    assert_eq!((self_contacts(&pairs).nv(), big.nv()), (59, 71));
    // CI runs on Mesa's software drivers and says so, so that a detection that breaks fails.
    if std::env::var_os("PHYZ_GPU_SOFTWARE").is_some() {
        assert!(phyz_gpu::device::is_software(&device), "CI's OpenGL is llvmpipe");
    }
    if phyz_gpu::device::is_software(&device) {
        let refused = Stages::new(&big, &device).expect_err("71 dofs with constraints on llvmpipe");
        assert!(refused.to_string().contains("software driver"), "{refused}");
    }
    // The same pairs without the bodies added are taken.
    assert!(Stages::new(&self_contacts(&pairs), &device).is_ok());
}

/// A state of `model` at its default pose (moving, within ±0.5) or, half the time, with its
/// joints moved by up to ±1.5 from it.
fn sometimes_free(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut s = model.default_state();
    let reach = if rng.uniform(0.0, 1.0) < 0.5 { 0.0 } else { 1.5 };
    let turn = DVector::from_fn(model.nv(), |_, _| rng.uniform(-reach, reach));
    s.qpos = integrate_position(model, &s.qpos, &turn, 1.0);
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-0.5, 0.5));
    s
}

/// MuJoCo's split (Euler's implicit damping where damped dofs meet constraints) taken back: the
/// damped gymnasium models through their limits (contacts off), and the floor scene with every
/// joint damped and the half cheetah through contacts, under Euler with its implicit damping.
fn split_against_cpu(device: &Device) -> f64 {
    let limited: Vec<(String, Model<f64>)> = ["half_cheetah", "hopper", "walker2d", "humanoid"]
        .into_iter()
        .map(|name| {
            let mut model = gymnasium(name);
            model.enabled.contact = false;
            model.integrator = Integrator::Euler;
            (name.to_string(), model)
        })
        .collect();
    let (limits, pressed) = limits_backward_against_cpu(device, limited.clone());
    assert!(pressed >= 12, "{pressed}");
    // Half the worlds at their default, pressing no limit (no rows: the smooth step).
    let (mixed, _, _) = constrained_backward_against_cpu(device, limited, sometimes_free);
    let damped = FLOOR
        .replace("<geom contype='1' conaffinity='0'/>", "<geom contype='1' conaffinity='0'/><joint damping='0.4'/>");
    let mut floor = mjcf::parse(&damped, "damped_floor.xml").expect("the damped floor loads");
    floor.integrator = Integrator::Euler;
    let mut cheetah = gymnasium("half_cheetah");
    cheetah.integrator = Integrator::Euler;
    let scenes = vec![("damped floor".to_string(), floor), ("half_cheetah".to_string(), cheetah)];
    let (contacts, held, touching) = constrained_backward_against_cpu(device, scenes, pressed_state);
    assert!(held >= 12 && touching >= 20, "{held} worlds, {touching} contacts");
    eprintln!("the split: limits {limits:.1e} (some worlds free {mixed:.1e}), contacts {contacts:.1e}");
    limits.max(mixed).max(contacts)
}

#[test]
fn the_backward_through_the_split_is_the_transposed_step_jacobian_in_f64() {
    let device = wgpu();
    if has_f64(&device) {
        let worst = split_against_cpu(&device);
        assert!(worst <= 1e-9, "{worst:e}");
    }
}

#[test]
fn the_backward_through_the_split_follows_the_transposed_step_jacobian_in_f32() {
    let worst = split_against_cpu(&opengl());
    assert!(worst <= 1e-3, "{worst:e}");
}
