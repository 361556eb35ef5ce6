//! The step's stage kernels (`phyz_gpu::stages`) against the CPU stages they transcribe, on
//! every gymnasium model, worlds at different random states and controls: forward kinematics
//! (link poses, dof motions, placed inertias), the mass matrix, its factor's solves, RNEA's bias
//! forces, the smooth forces and the unconstrained acceleration (a solve's, held as solves are).
//!
//! Tolerances, fixed before measuring, on each array of each world relative to
//! `max(1, its largest entry)`: `f64` (Vulkan, lavapipe) 1e-10; `f32` (OpenGL, llvmpipe) 1e-4.
//! A solve in `f32` is held by its backward error instead, `|M x − b| / (|M| |x| + |b|)` ≤ 1e-5
//! (infinity norms): its forward error grows with the condition of `M`, which the kernel does
//! not choose.
//!
//! The first `f32` run measured entry by entry, each relative to `max(1, |x|)`, and slid the
//! slides as far as the hinges turn (±40): it failed at 1.7e-3 (2.3e-4 by arrays) on
//! half_cheetah's mass matrix, its torso lifted 40 m by the root's vertical slide. The trees'
//! rooted frames are about the root link's origin, so a body far from it makes each entry a
//! difference of terms `m p²` thousands of times the entry's size, whose `f32` rounding is
//! theirs (MuJoCo's frames are about the subtree's centre of mass, which a slide carries
//! along). Slides now stay within ±2 m; the angles still cross the sine's reduction.

use burn::tensor::{DType, Device};
use nalgebra::DVector;
use phyz_core::dynamics::Smooth;
use phyz_core::dynamics::crba::mass_matrix_into;
use phyz_core::dynamics::integrator::euler_damping;
use phyz_core::dynamics::{MassFactor, TreeMatrix, bias_forces, forward_kinematics, place_inertias};
use phyz_core::model::{JointKind, Point};
use phyz_core::{Model, State};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::Stages;
use phyz_gpu::stages::layout::Array;

mod common;
use common::{GYMNASIUM, Rng, gymnasium};

/// World `w`'s state: the model's default for world 0, then random angles (up to ±40 radians
/// in world 1, so the sine's reduction is crossed, else ±2), slides (±2 m), quaternions not of
/// unit length, velocities.
fn state(model: &Model<f64>, rng: &mut Rng, w: usize) -> State<f64> {
    let mut s = model.default_state();
    if w == 0 {
        return s;
    }
    let reach = if w == 1 { 40.0 } else { 2.0 };
    for joint in model.joints() {
        let a = joint.qpos_adr();
        let quat = |rng: &mut Rng, q: &mut DVector<f64>, at: usize| {
            for k in 0..4 {
                q[at + k] = rng.uniform(-1.5, 1.5);
            }
        };
        match joint.kind() {
            JointKind::Hinge => s.qpos[a] += rng.uniform(-reach, reach),
            JointKind::Slide => s.qpos[a] += rng.uniform(-2.0, 2.0),
            JointKind::Ball => quat(rng, &mut s.qpos, a),
            JointKind::Free => {
                for k in 0..3 {
                    s.qpos[a + k] += rng.uniform(-3.0, 3.0);
                }
                quat(rng, &mut s.qpos, a + 3);
            }
        }
    }
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-3.0, 3.0));
    s
}

/// The largest difference of `gpu` from `cpu`, relative to `max(1, cpu's largest entry)`.
fn worst(gpu: &[f64], cpu: &[f64]) -> f64 {
    assert_eq!(gpu.len(), cpu.len());
    // `f64::max` would pass over a NaN.
    assert!(gpu.iter().all(|x| x.is_finite()), "the kernel wrote a number that is not finite");
    let scale = cpu.iter().fold(1.0_f64, |m, c| m.max(c.abs()));
    gpu.iter().zip(cpu).map(|(g, c)| (g - c).abs()).fold(0.0, f64::max) / scale
}

/// What the CPU stages make of one state, in the device arrays' order, and the matrix the
/// factor solves with (the mass matrix, plus Euler's implicit damping).
struct Cpu {
    arrays: Vec<(Array, Vec<f64>)>,
    mass: TreeMatrix<f64>,
}

fn cpu(model: &Model<f64>, s: &State<f64>, ctrl: &[f64]) -> Cpu {
    let kin = forward_kinematics(model, &s.qpos);
    let mut inertia = Vec::new();
    place_inertias(model, &kin, &mut inertia);
    let mut mass = TreeMatrix::default();
    mass_matrix_into(model, &kin, &inertia, &mut Vec::new(), &mut mass);
    let rotation = kin.rooted.iter().flat_map(|p| (0..9).map(move |k| p.rot[(k / 3, k % 3)])).collect();
    let rooted = kin.rooted.iter().flat_map(|p| p.pos.iter().copied().collect::<Vec<_>>()).collect();
    let position = kin.world.iter().flat_map(|p| p.pos.iter().copied().collect::<Vec<_>>()).collect();
    let motion =
        kin.dof_motion.iter().flat_map(|m| m.ang.iter().chain(m.lin.iter()).copied().collect::<Vec<_>>()).collect();
    let inertia = inertia
        .iter()
        .flat_map(|i| {
            let r = &i.rot_inertia;
            [
                i.mass,
                i.first_moment.x,
                i.first_moment.y,
                i.first_moment.z,
                r[(0, 0)],
                r[(1, 1)],
                r[(2, 2)],
                r[(0, 1)],
                r[(0, 2)],
                r[(1, 2)],
            ]
        })
        .collect();
    let bias = bias_forces(model, &kin, &s.qvel).as_slice().to_vec();
    let mut smooth = Smooth::default();
    // Euler takes damping implicitly: the factor is of M + dt·B (`integrator::euler_damping`).
    let mut damping = DVector::zeros(0);
    let implicit = euler_damping(model, &s.qvel, &mut damping).then_some(&damping);
    smooth.position(model, &s.qpos, implicit).expect("a positive definite mass matrix");
    smooth.forces(model, Point { qpos: &s.qpos, qvel: &s.qvel, act: &s.act }, ctrl);
    smooth.acceleration();
    let arrays = vec![
        (Array::Rotation, rotation),
        (Array::Rooted, rooted),
        (Array::Position, position),
        (Array::Motion, motion),
        (Array::Inertia, inertia),
        (Array::Mass, mass.values().to_vec()),
        (Array::Bias, bias),
        (Array::Force, smooth.force.as_slice().to_vec()),
        (Array::SmoothAcceleration, smooth.acceleration.as_slice().to_vec()),
    ];
    // The matrix the factor solves with.
    for (k, &d) in implicit.into_iter().flatten().enumerate() {
        mass.add_diagonal(k, d);
    }
    Cpu { arrays, mass }
}

/// The worst difference of the stages on `device` over every model, and the worst solve
/// (forward error in `f64`, backward error in `f32`).
fn stages_against_cpu(device: &Device) -> (f64, f64) {
    let mut rng = Rng(11);
    let (mut overall, mut solves): (f64, f64) = (0.0, 0.0);
    for name in GYMNASIUM {
        let model = gymnasium(name);
        let states: Vec<State<f64>> = (0..6).map(|w| state(&model, &mut rng, w)).collect();
        let rhs: Vec<Vec<f64>> =
            states.iter().map(|_| (0..model.nv()).map(|_| rng.uniform(-1.0, 1.0)).collect()).collect();
        let stages = Stages::new(&model, device).expect("a gymnasium model packs");
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let b: Vec<&[f64]> = rhs.iter().map(|b| b.as_slice()).collect();
        // Controls past their ranges now and then.
        let ctrls: Vec<Vec<f64>> =
            states.iter().map(|_| (0..model.nu()).map(|_| rng.uniform(-1.5, 1.5)).collect()).collect();
        let ctrl: Vec<&[f64]> = ctrls.iter().map(|c| c.as_slice()).collect();
        let given = [(Array::Qpos, &qpos), (Array::Qvel, &qvel), (Array::Vector, &b), (Array::Ctrl, &ctrl)];
        let worlds = stages.upload(states.len(), &given.map(|(a, v)| (a, v.as_slice()))).expect("sizes match");
        stages.kinematics(&worlds).expect("launched");
        stages.mass_matrix(&worlds).expect("launched");
        stages.factor(&worlds).expect("launched");
        stages.solve(&worlds).expect("launched");
        stages.bias_forces(&worlds).expect("launched");
        let forces = stages.smooth_acceleration(&worlds);
        // Only the swimmer has forces the stage does not compute (a viscous medium).
        assert_eq!(forces.is_err(), name == "swimmer", "{name}: {forces:?}");
        let expected: Vec<Cpu> = states.iter().zip(&ctrls).map(|(s, c)| cpu(&model, s, c)).collect();
        let mut line = format!("{name:>24}:");
        for (k, (array, _)) in expected[0].arrays.iter().enumerate() {
            // The acceleration is a solve's, held as the solves are (below).
            if *array == Array::SmoothAcceleration || (forces.is_err() && *array == Array::Force) {
                continue;
            }
            let gpu = stages.read(&worlds, *array).expect("readable");
            let w = (0..states.len()).map(|i| worst(&gpu[i], &expected[i].arrays[k].1)).fold(0.0, f64::max);
            line += &format!(" {array:?} {w:.1e}");
            overall = overall.max(w);
        }
        // The solves: of the random right sides, and the smooth acceleration's of the forces.
        let mut solve: f64 = 0.0;
        let solved = stages.read(&worlds, Array::Vector).expect("readable");
        let accelerations = forces.is_ok().then(|| stages.read(&worlds, Array::SmoothAcceleration).expect("readable"));
        for (i, x) in solved.iter().enumerate() {
            let m = &expected[i].mass;
            solve = solve.max(solve_error(m, x, &rhs[i], stages.dtype()));
            if let Some(a) = &accelerations {
                let f = &expected[i].arrays.iter().find(|(array, _)| *array == Array::Force).expect("made").1;
                solve = solve.max(solve_error(m, &a[i], f, stages.dtype()));
            }
        }
        eprintln!("{line} solves {solve:.1e}");
        solves = solves.max(solve);
    }
    (overall, solves)
}

/// The error of `x` as the solution of `M x = b`: in `f64`, against the CPU factor's solve
/// (relative to `max(1, its largest entry)`); in `f32`, its backward error
/// `|M x − b| / (|M| |x| + |b|)` (infinity norms).
fn solve_error(m: &TreeMatrix<f64>, x: &[f64], b: &[f64], dtype: DType) -> f64 {
    assert!(x.iter().all(|x| x.is_finite()), "the kernel solved to a number that is not finite");
    if dtype == DType::F64 {
        let cpu = MassFactor::of(m).expect("positive definite").solve(&DVector::from_column_slice(b));
        return worst(x, cpu.as_slice());
    }
    let mut mx = vec![0.0; x.len()];
    m.mul_add(x, &mut mx);
    let mut dense = nalgebra::DMatrix::zeros(0, 0);
    m.to_dense(&mut dense);
    let norm = dense.row_iter().map(|r| r.iter().map(|v| v.abs()).sum::<f64>()).fold(0.0, f64::max);
    let residual = mx.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let largest = |v: &[f64]| v.iter().map(|v| v.abs()).fold(0.0, f64::max);
    residual / (norm * largest(x) + largest(b))
}

#[test]
fn stage_kernels_agree_with_the_cpu_stages_in_f32() {
    let (worst, solve) = stages_against_cpu(&opengl());
    eprintln!("f32 stages against the CPU: worst {worst:e}; solves' backward error {solve:e}");
    assert!(worst <= 1e-4, "{worst:e}");
    assert!(solve <= 1e-5, "{solve:e}");
}

#[test]
fn stage_kernels_agree_with_the_cpu_stages_in_f64() {
    if !wgpu().supports_dtype(DType::F64) {
        assert!(std::env::var_os("PHYZ_GPU_REQUIRE_F64").is_none(), "the device has no f64, and CI requires it");
        eprintln!("skipped: this wgpu device has no f64 (Vulkan's shaderFloat64)");
        return;
    }
    let (worst, solve) = stages_against_cpu(&wgpu());
    eprintln!("f64 stages against the CPU: worst {worst:e}; solves {solve:e}");
    assert!(worst.max(solve) <= 1e-10, "{worst:e}, {solve:e}");
}
