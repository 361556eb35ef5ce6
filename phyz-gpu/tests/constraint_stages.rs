//! The constraint stages on the device against the CPU's. The collision kernel
//! (`Stages::collide`) against the CPU's detection and contact frames
//! (`forward`'s `Data::contacts`): the same contacts in every world, each with the same point,
//! normal, tangents and depth; and the rows stage (`Stages::rows`) against the CPU's
//! constraint problem: each contact's rows (pyramid edges or elliptic rows) and the limits',
//! their targets and regularizers (MuJoCo's impedance model, at random velocities); and the
//! Newton solve (`Stages::solve_constraints`) against the CPU's, by the acceleration with the
//! constraint forces. Worlds at random poses near the ground and among each other,
//! so that they hold different contact sets, on the gymnasium models the kernel has closed
//! forms for and on a scene with every pair it handles (a plane against a sphere, a capsule and
//! a box; spheres and capsules among each other, parallel capsules, coincident spheres; a box
//! against a sphere; a margin).
//!
//! Tolerances, fixed before measuring, on each number relative to `max(1, |the CPU's|)`:
//! `f64` (Vulkan, lavapipe) 1e-10; `f32` (OpenGL, llvmpipe) 1e-4, as for the other stage
//! kernels. In `f32` a contact whose depth lies within 1e-4 of its pair's margin may be found on
//! one side and not the other: only such a contact may go unmatched. The solve's acceleration,
//! relative to `max(1, its largest entry)`: `f64` 1e-9, `f32` 1e-3 (the device's `f32` solve
//! stops at `f32`'s resolution, its tolerance held at `f32::EPSILON`).

use burn::tensor::{DType, Device};
use nalgebra::DVector;
use phyz_core::contact::{ConstraintKind, SolverConfig};
use phyz_core::math::SparseRows;
use phyz_core::model::{Cone, Integrator, JointKind};
use phyz_core::sim::{ContactPoint, ContactState, Data, forward, step_with};
use phyz_core::{Model, State, mjcf};
use phyz_gpu::device::{opengl, wgpu};
use phyz_gpu::stages::layout::Array;
use phyz_gpu::stages::{Contact, Failure, INDIRECT_FROM, Stages, WorldRows};

mod common;
use common::{GYMNASIUM, Rng, gymnasium};

/// Every pair the kernel has a closed form for, with contacts of each dimension (the capsules
/// 1 between them, the ball 4, the pebble 6, the rest 3). Boxes do not meet capsules (no closed
/// form here): the box's `contype` and `conaffinity` are the second bit alone, the capsules'
/// the first; spheres and the floor have both. Impedances of every form: a power of 3 and a
/// wider curve throughout, a direct `solref` on the ball, a mixed `solimp` on the crate, an
/// explicit pair (the pebble on the floor) with its own friction and `solreffriction`.
const PAIRS: &str = r#"
<mujoco model="primitive pairs">
  <default><geom solimp="0.8 0.95 0.01 0.3 3"/></default>
  <contact>
    <pair geom1="floor" geom2="pebble" condim="6" friction="0.7 0.7 0.02 0.003 0.003" solreffriction="0.05 0.8"/>
  </contact>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" contype="3" conaffinity="3"/>
    <geom name="post" type="capsule" fromto="0.3 0.3 0 0.3 0.3 0.6" size="0.05" contype="1" conaffinity="1"/>
    <body name="crate" pos="0 0 0.3">
      <freejoint/><geom type="box" size="0.2 0.15 0.1" solimp="0.5 0.99 0.02 0.6 3" contype="2" conaffinity="2"/>
    </body>
    <body name="ball" pos="0.3 0 0.3">
      <freejoint/><geom type="sphere" size="0.12" condim="4" solref="-5000 -50" contype="3" conaffinity="3"/>
    </body>
    <body name="rod" pos="0 0.3 0.3"><freejoint/><geom type="capsule" size="0.06 0.2" condim="1" contype="1" conaffinity="1"/></body>
    <body name="twig" pos="-0.3 0 0.3">
      <freejoint/><geom type="capsule" size="0.05 0.15" margin="0.02" condim="1" contype="1" conaffinity="1"/>
    </body>
    <body name="pebble" pos="0 -0.3 0.3">
      <freejoint/><geom name="pebble" type="sphere" size="0.08" condim="6" contype="3" conaffinity="3"/>
    </body>
  </worldbody>
</mujoco>
"#;

/// The scene, its friction cone pyramidal (MuJoCo's default) or elliptic.
fn pairs_scene(elliptic: bool) -> Model<f64> {
    let text =
        if elliptic { PAIRS.replace("<worldbody>", r#"<option cone="elliptic"/><worldbody>"#) } else { PAIRS.into() };
    mjcf::parse(&text, "primitive_pairs.xml").expect("the scene loads")
}

/// A random state of `model` near its ground: hinges within ±1.5 rad, slides within ±0.5 m
/// (a root's vertical one lowered by up to 1 m), free bodies within 0.4 m of the origin
/// horizontally and up to 0.5 m high (a gymnasium robot's root lowered from its rest height
/// instead), turned anyhow.
fn state(model: &Model<f64>, rng: &mut Rng, scene: bool) -> State<f64> {
    let mut s = model.default_state();
    for joint in model.joints() {
        let a = joint.qpos_adr();
        match joint.kind() {
            JointKind::Hinge => s.qpos[a] += rng.uniform(-1.5, 1.5),
            JointKind::Slide => s.qpos[a] += rng.uniform(-0.5, 0.5) - if joint.axis.z > 0.5 { 0.5 } else { 0.0 },
            JointKind::Ball => (0..4).for_each(|k| s.qpos[a + k] = rng.uniform(-1.0, 1.0)),
            JointKind::Free => {
                if scene {
                    s.qpos[a] = rng.uniform(-0.4, 0.4);
                    s.qpos[a + 1] = rng.uniform(-0.4, 0.4);
                    s.qpos[a + 2] = rng.uniform(0.0, 0.5);
                } else {
                    s.qpos[a + 2] -= rng.uniform(0.0, 1.0);
                }
                let q: [f64; 4] = std::array::from_fn(|_| rng.uniform(-1.0, 1.0));
                let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
                (0..4).for_each(|k| s.qpos[a + 3 + k] = q[k] / norm);
            }
        }
    }
    s.qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-1.0, 1.0));
    s
}

/// The scene's crafted worlds: the rod and the twig parallel and side by side, overlapping
/// along their axes; the ball and the pebble at one centre.
fn crafted(model: &Model<f64>) -> Vec<State<f64>> {
    let free =
        |body: &str| model.joints().iter().find(|j| model.bodies()[j.body()].name == body).expect("a body").qpos_adr();
    let place = |s: &mut State<f64>, body: &str, pos: [f64; 3], quat: [f64; 4]| {
        let a = free(body);
        (0..3).for_each(|k| s.qpos[a + k] = pos[k]);
        (0..4).for_each(|k| s.qpos[a + 3 + k] = quat[k]);
    };
    let level = [0.5f64.sqrt(), 0.0, 0.5f64.sqrt(), 0.0];
    let mut parallel = model.default_state();
    place(&mut parallel, "rod", [0.0, 0.5, 0.4], level);
    place(&mut parallel, "twig", [0.1, 0.5, 0.5], level);
    let mut coincident = model.default_state();
    place(&mut coincident, "ball", [-0.2, -0.2, 0.6], [1.0, 0.0, 0.0, 0.0]);
    place(&mut coincident, "pebble", [-0.2, -0.2, 0.6], [0.8, 0.6, 0.0, 0.0]);
    vec![parallel, coincident]
}

/// What the CPU's constraint stage makes of `state`.
struct Cpu {
    contacts: Vec<ContactPoint<f64>>,
    jacobian: SparseRows<f64>,
    /// Each row's target velocity and regularizer.
    target: Vec<f64>,
    regularizer: Vec<f64>,
    /// The limits' rows, in order.
    limits: Vec<usize>,
}

fn cpu_contacts(model: &Model<f64>, state: &State<f64>) -> Cpu {
    let mut data = Data::default();
    let ctrl = vec![0.0; model.nu()];
    forward(model, state, &ctrl, &SolverConfig::mujoco_compat(), &mut data).expect("the CPU forward pass");
    let problem = data.constraint_problem();
    let jacobian = data.constraint_jacobian().clone();
    let limits = problem.constraints.iter().zip(problem.offsets()).filter(|(c, _)| c.kind == ConstraintKind::Limit);
    Cpu {
        contacts: data.contacts().to_vec(),
        jacobian,
        target: problem.target.iter().copied().collect(),
        regularizer: problem.regularizer.iter().copied().collect(),
        limits: limits.map(|(_, at)| at).collect(),
    }
}

/// The largest difference of `gpu` from `cpu`, each relative to `max(1, |the CPU's|)`.
fn relative(gpu: &[f64], cpu: &[f64]) -> f64 {
    assert!(gpu.iter().all(|x| x.is_finite()), "a number not finite");
    gpu.iter().zip(cpu).map(|(g, c)| (g - c).abs() / c.abs().max(1.0)).fold(0.0, f64::max)
}

/// The worst difference between device row `g` of `rows` and the CPU's row `c` (its Jacobian,
/// target and regularizer; the regularizer relative to itself, as the solve reads its inverse,
/// and a pyramid edge's of a small friction is far below 1).
fn row_difference(rows: &WorldRows, g: usize, cpu: &Cpu, c: usize) -> f64 {
    let jacobian = relative(&rows.jacobian[g], cpu.jacobian.dense_row(c).as_slice());
    let target = relative(&[rows.target[g]], &[cpu.target[c]]);
    let (r, expected) = (rows.regularizer[g], cpu.regularizer[c]);
    assert!(r.is_finite() && expected > 0.0, "a regularizer not finite or not positive");
    jacobian.max(target).max((r - expected).abs() / expected)
}

/// The worst difference between the device's limit rows (the first of its block, in the CPU's
/// order) and the CPU's; the rest of the device's rows must be its contacts' (`contact_rows`).
fn compare_limits(rows: &WorldRows, cpu: &Cpu, contact_rows: usize) -> f64 {
    assert_eq!(rows.jacobian.len(), cpu.limits.len() + contact_rows, "rows that are neither limits' nor contacts'");
    cpu.limits.iter().enumerate().map(|(g, &c)| row_difference(rows, g, cpu, c)).fold(0.0, f64::max)
}

/// The rows a contact of dimension `condim` takes under `model`'s cone.
fn dimension(model: &Model<f64>, condim: u8) -> usize {
    match (condim, model.contact.cone) {
        (1, _) => 1,
        (c, Cone::Pyramidal) => 2 * (usize::from(c) - 1),
        (c, Cone::Elliptic) => usize::from(c),
    }
}

/// The largest difference between a device contact and a CPU one, each number relative to
/// `max(1, |the CPU's|)`.
fn difference(gpu: &Contact, cpu: &ContactPoint<f64>) -> f64 {
    let f = &cpu.frame;
    let pairs = [
        (gpu.point, f.point),
        (gpu.normal, f.normal),
        (gpu.tangents[0], f.tangents[0]),
        (gpu.tangents[1], f.tangents[1]),
        ([gpu.depth, 0.0, 0.0], nalgebra::Vector3::new(f.depth, 0.0, 0.0)),
    ];
    pairs.iter().flat_map(|(g, c)| (0..3).map(move |i| (g[i] - c[i]).abs() / c[i].abs().max(1.0))).fold(0.0, f64::max)
}

/// The worst difference over one world's contacts, each CPU contact matched to the device
/// contact of its geoms nearest it. Unmatched contacts on either side panic, unless (`slack`)
/// their depth lies within `slack` of the margin `margin(geoms)` the pair's contacts are
/// kept within.
fn compare<'a>(
    gpu: &'a [Contact],
    cpu: &'a [ContactPoint<f64>],
    slack: f64,
    margin: impl Fn([usize; 2]) -> f64,
) -> (f64, Vec<(&'a Contact, &'a ContactPoint<f64>)>) {
    assert!(gpu.iter().all(|c| c.point.iter().chain(&c.normal).all(|x| x.is_finite())), "a number not finite");
    let mut left: Vec<&Contact> = gpu.iter().collect();
    let mut worst: f64 = 0.0;
    let mut matched = Vec::new();
    for c in cpu {
        let nearest = left
            .iter()
            .enumerate()
            .filter(|(_, g)| g.geoms == c.geoms)
            .map(|(i, g)| (i, difference(g, c)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match nearest {
            Some((i, d)) => {
                worst = worst.max(d);
                matched.push((left.swap_remove(i), c));
            }
            None => {
                let edge = (c.frame.depth + margin(c.geoms)).abs();
                assert!(
                    edge <= slack,
                    "the device missed the CPU's contact {:?} at depth {:e}",
                    c.geoms,
                    c.frame.depth
                );
            }
        }
    }
    for g in left {
        let edge = (g.depth + margin(g.geoms)).abs();
        assert!(edge <= slack, "the device found a contact {:?} at depth {:e} the CPU did not", g.geoms, g.depth);
    }
    (worst, matched)
}

/// The worst difference between the rows of matched contacts, each entry relative to
/// `max(1, |the CPU's|)`: the device's rows of world `rows` against the CPU's Jacobian rows
/// `jacobian` (a contact's `dim` rows from its first). Both or neither have rows.
fn compare_rows(
    matched: &[(&Contact, &ContactPoint<f64>)],
    rows: &WorldRows,
    cpu: &Cpu,
    dim: impl Fn(u8) -> usize,
) -> f64 {
    let mut worst: f64 = 0.0;
    for (g, c) in matched {
        assert_eq!(g.row.is_some(), c.row.is_some(), "rows of {:?}: device {:?}, CPU {:?}", c.geoms, g.row, c.row);
        let (Some(gr), Some(cr)) = (g.row, c.row) else { continue };
        for k in 0..dim(c.condim) {
            worst = worst.max(row_difference(rows, gr + k, cpu, cr + k));
        }
    }
    worst
}

/// The margin of the pair of geoms `g`: an explicit pair's own, else the sum of the geoms'.
fn margin(model: &Model<f64>, g: [usize; 2]) -> f64 {
    let explicit = model.contact_pairs().iter().find(|p| p.geoms == g || p.geoms == [g[1], g[0]]);
    explicit.map_or_else(|| g.iter().map(|&g| model.geom(g).expect("a geom").margin).sum(), |p| p.margin)
}

/// The device's contacts against the CPU's on every model the kernel has closed forms for, 12
/// random worlds each (and the scene's crafted ones); the worst difference, and the contacts
/// compared.
fn against_cpu(device: &Device, slack: f64) -> (f64, usize) {
    let mut models: Vec<(String, Model<f64>)> = GYMNASIUM.iter().map(|n| (n.to_string(), gymnasium(n))).collect();
    models.push(("primitive pairs".into(), pairs_scene(false)));
    models.push(("primitive pairs, elliptic".into(), pairs_scene(true)));
    let (mut worst, mut compared): (f64, usize) = (0.0, 0);
    let mut rng = Rng(0x5eed_c011);
    for (name, model) in &models {
        let stages = Stages::new(model, device).expect("packs");
        let scene = name.starts_with("primitive pairs");
        let mut states: Vec<State<f64>> = (0..12).map(|_| state(model, &mut rng, scene)).collect();
        if scene {
            states.extend(crafted(model));
        }
        let worlds = stages.worlds(&states).expect("uploads");
        stages.kinematics(&worlds).expect("launched");
        if let Err(e) = stages.collide(&worlds) {
            // The pushers' cylinders meet capsules and spheres: no closed form here.
            assert!(name.starts_with("pusher") && e.to_string().contains("cylinder"), "{name}: {e}");
            continue;
        }
        stages.rows(&worlds).expect("launched");
        let found = stages.contacts(&worlds).expect("readable");
        let rows = stages.read_rows(&worlds).expect("readable");
        let (mut line, mut row_line, mut count, mut limits) = (0.0_f64, 0.0_f64, 0, 0);
        let (mut shapes, mut condims) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for (w, s) in states.iter().enumerate() {
            let expected = cpu_contacts(model, s);
            let cpu = &expected.contacts;
            let (difference, matched) = compare(&found[w], cpu, slack, |g| margin(model, g));
            line = line.max(difference);
            row_line = row_line.max(compare_rows(&matched, &rows[w], &expected, |c| dimension(model, c)));
            let contact_rows = cpu.iter().filter(|c| c.row.is_some()).map(|c| dimension(model, c.condim)).sum();
            row_line = row_line.max(compare_limits(&rows[w], &expected, contact_rows));
            limits += expected.limits.len();
            count += cpu.len();
            shapes.extend(cpu.iter().map(|c| c.geoms.map(|g| model.geom(g).expect("a geom").shape.name())));
            condims.extend(cpu.iter().map(|c| c.condim));
        }
        if scene {
            let every = [
                ["plane", "sphere"],
                ["plane", "capsule"],
                ["plane", "box"],
                ["sphere", "sphere"],
                ["sphere", "capsule"],
                ["capsule", "capsule"],
                ["sphere", "box"],
            ];
            assert!(
                every.iter().all(|p| shapes.contains(p)),
                "the scene's worlds did not touch every pair: {shapes:?}"
            );
            assert!([1, 3, 4, 6].iter().all(|c| condims.contains(c)), "not every contact dimension: {condims:?}");
        }
        eprintln!("{name:>26}: {count} contacts, worst {line:.1e}; their rows {row_line:.1e}; {limits} limit rows");
        worst = worst.max(line).max(row_line);
        compared += count;
    }
    (worst, compared)
}

#[test]
fn collision_kernel_agrees_with_cpu_detection_in_f32() {
    let (worst, compared) = against_cpu(&opengl(), 1e-4);
    eprintln!("f32 contacts against the CPU: worst {worst:e} over {compared}");
    assert!(compared > 200, "too few contacts to compare: {compared}");
    assert!(worst <= 1e-4, "{worst:e}");
}

#[test]
fn collision_kernel_agrees_with_cpu_detection_in_f64() {
    if !wgpu().supports_dtype(DType::F64) {
        assert!(std::env::var_os("PHYZ_GPU_REQUIRE_F64").is_none(), "the device has no f64, and CI requires it");
        eprintln!("skipped: this wgpu device has no f64 (Vulkan's shaderFloat64)");
        return;
    }
    let (worst, compared) = against_cpu(&wgpu(), 0.0);
    eprintln!("f64 contacts against the CPU: worst {worst:e} over {compared}");
    assert!(compared > 200, "too few contacts to compare: {compared}");
    assert!(worst <= 1e-10, "{worst:e}");
}

/// A pool too small for every world's contacts fails the worlds whose contacts did not fit, and
/// holds every contact of the others; a world uploaded with a number that is not finite makes
/// no contacts and takes no slot.
#[test]
fn a_full_pool_and_a_non_finite_world_fail_their_worlds_alone() {
    let device = opengl();
    let model = pairs_scene(false);
    let mut rng = Rng(7);
    let mut states: Vec<State<f64>> = (0..16).map(|_| state(&model, &mut rng, true)).collect();
    states[3].qpos[0] = f64::NAN;
    let expected: Vec<usize> =
        states.iter().map(|s| if s.qpos[0].is_nan() { 0 } else { cpu_contacts(&model, s).contacts.len() }).collect();
    let total: usize = expected.iter().sum();
    let mut stages = Stages::new(&model, &device).expect("packs");
    // Half the contacts the worlds make.
    stages.set_pool(total / 2 / states.len());
    let worlds = stages.worlds(&states).expect("uploads");
    stages.kinematics(&worlds).expect("launched");
    stages.collide(&worlds).expect("launched");
    let found = stages.contacts(&worlds).expect("readable");
    let failures = stages.failures(&worlds).expect("readable");
    let failed = |w: usize| failures.iter().find(|(f, _)| *f == w).map(|(_, why)| *why);
    assert_eq!(failed(3), Some(Failure::NonFiniteInput));
    assert!(found[3].is_empty(), "the non-finite world made contacts");
    let overflowed = failures.iter().filter(|(_, why)| *why == Failure::PoolOverflow).count();
    assert!(overflowed > 0, "no world overflowed a pool of half the contacts");
    for (w, s) in states.iter().enumerate().filter(|&(w, _)| failed(w).is_none()) {
        let cpu = cpu_contacts(&model, s).contacts;
        assert_eq!(found[w].len(), cpu.len(), "world {w} lost contacts without failing");
        assert!(compare(&found[w], &cpu, 1e-4, |g| margin(&model, g)).0 <= 1e-4, "world {w}");
    }
    let stored: usize = found.iter().map(Vec::len).sum();
    assert_eq!(stored, total / 2 / states.len() * states.len(), "the pool is not full");
}

/// A pair without a closed form on the device is refused by name when the stage runs.
#[test]
fn a_pair_without_a_closed_form_is_refused_by_name() {
    let model = mjcf::parse(
        r#"<mujoco><worldbody>
             <body><freejoint/><geom name="brick" type="box" size="0.1 0.1 0.1"/></body>
             <body pos="0 0 1"><freejoint/><geom name="stick" type="capsule" size="0.05 0.2"/></body>
           </worldbody></mujoco>"#,
        "box_capsule.xml",
    )
    .expect("loads");
    let stages = Stages::new(&model, &opengl()).expect("packs");
    let worlds = stages.worlds(&[model.default_state()]).expect("uploads");
    let error = stages.collide(&worlds).expect_err("refused").to_string();
    assert!(error.contains("box ('brick')") && error.contains("capsule ('stick')"), "{error}");
    // Powers 2 and 3 mixed half and half: the device raises to whole powers only.
    let model = mjcf::parse(
        r#"<mujoco><worldbody>
             <geom name="ground" type="plane" size="1 1 0.1" solimp="0.9 0.95 0.001 0.5 3"/>
             <body><freejoint/><geom name="ball" size="0.1"/></body>
           </worldbody></mujoco>"#,
        "mixed_power.xml",
    )
    .expect("loads");
    let stages = Stages::new(&model, &opengl()).expect("packs");
    let worlds = stages.worlds(&[model.default_state()]).expect("uploads");
    let error = stages.collide(&worlds).expect_err("refused").to_string();
    assert!(error.contains("solimp power 2.5") && error.contains("'ground'"), "{error}");
}

/// A constraint the rows stage does not build is refused by name when the stage runs.
#[test]
fn a_constraint_without_rows_is_refused_by_name() {
    let model = mjcf::parse(
        r#"<mujoco><worldbody>
             <body name="a"><joint name="hinge" type="hinge" frictionloss="0.1"/><geom size="0.1"/></body>
           </worldbody></mujoco>"#,
        "friction_loss.xml",
    )
    .expect("loads");
    let stages = Stages::new(&model, &opengl()).expect("packs");
    let worlds = stages.worlds(&[model.default_state()]).expect("uploads");
    let error = stages.rows(&worlds).expect_err("refused").to_string();
    assert!(error.contains("friction loss of joint 'hinge'"), "{error}");
}

/// The CPU's acceleration with the constraint forces at `state` under `ctrl`, solved cold under
/// `mujoco_compat`, as a step takes it: `forward`'s, but under Euler's implicit damping (which
/// `forward` leaves out, as `mj_forward` does, and the device's factor holds) the step's
/// `(v′ − v)/dt`.
fn cpu_qacc(model: &Model<f64>, state: &State<f64>, ctrl: &[f64]) -> Vec<f64> {
    let config = SolverConfig::mujoco_compat();
    if model.integrator == Integrator::Euler && model.enabled.euler_damp && model.enabled.damper {
        let (next, info) = step_with(model, state, ctrl, &mut ContactState::new(config)).expect("the CPU step");
        assert!(info.converged, "the CPU's solve did not converge");
        return next.qvel.iter().zip(&state.qvel).map(|(v1, v0)| (v1 - v0) / model.timestep).collect();
    }
    let mut data = Data::default();
    let info = forward(model, state, ctrl, &config, &mut data).expect("the CPU forward pass");
    assert!(info.converged, "the CPU's solve did not converge");
    data.qacc().iter().copied().collect()
}

/// The device's constraint solve (`Stages::solve_constraints`, after the smooth stages,
/// collision and the rows) against the CPU's forward pass under `mujoco_compat`: each world's
/// acceleration `qacc` relative to `max(1, its largest entry)`, on every gymnasium model the
/// device takes and the pyramidal scene; the worst, and the worlds compared. The humanoid
/// (its Hessian built a unit per column) and the scene run enough worlds that the device sizes
/// the iterations' launches itself ([`INDIRECT_FROM`]).
fn solve_against_cpu(device: &Device) -> (f64, usize) {
    let mut models: Vec<(String, Model<f64>)> = GYMNASIUM.iter().map(|n| (n.to_string(), gymnasium(n))).collect();
    models.push(("primitive pairs".into(), pairs_scene(false)));
    let mut rng = Rng(0x50_1e);
    let (mut worst, mut compared): (f64, usize) = (0.0, 0);
    for (name, model) in &models {
        let stages = Stages::new(model, device).expect("packs");
        let batch = if name == "humanoid" || name.starts_with("primitive") { INDIRECT_FROM } else { 12 };
        let states: Vec<State<f64>> =
            (0..batch).map(|_| state(model, &mut rng, name.starts_with("primitive"))).collect();
        let ctrls: Vec<Vec<f64>> =
            states.iter().map(|_| (0..model.nu()).map(|_| rng.uniform(-1.0, 1.0)).collect()).collect();
        let qpos: Vec<&[f64]> = states.iter().map(|s| s.qpos.as_slice()).collect();
        let qvel: Vec<&[f64]> = states.iter().map(|s| s.qvel.as_slice()).collect();
        let ctrl: Vec<&[f64]> = ctrls.iter().map(Vec::as_slice).collect();
        let given = [(Array::Qpos, &qpos), (Array::Qvel, &qvel), (Array::Ctrl, &ctrl)];
        let worlds = stages.upload(states.len(), &given.map(|(a, v)| (a, v.as_slice()))).expect("uploads");
        if let Err(e) = stages.smooth(&worlds).and_then(|_| stages.collide(&worlds)) {
            // The swimmer's medium is viscous; the pushers' cylinders have no closed form here.
            assert!(name == "swimmer" || name.starts_with("pusher"), "{name}: {e}");
            continue;
        }
        stages.rows(&worlds).expect("launched");
        stages.solve_constraints(&worlds).expect("launched");
        assert_eq!(stages.failures(&worlds).expect("readable"), vec![], "{name}: failed worlds");
        let qacc = stages.read(&worlds, Array::Qacc).expect("readable");
        let mut line: f64 = 0.0;
        for (w, (s, u)) in states.iter().zip(&ctrls).enumerate() {
            let cpu = cpu_qacc(model, s, u);
            let scale = cpu.iter().fold(1.0_f64, |m, x| m.max(x.abs()));
            assert!(qacc[w].iter().all(|x| x.is_finite()), "{name}: a qacc not finite");
            let d = qacc[w].iter().zip(&cpu).map(|(g, c)| (g - c).abs()).fold(0.0, f64::max) / scale;
            line = line.max(d);
        }
        eprintln!("{name:>26}: qacc worst {line:.1e}");
        worst = worst.max(line);
        compared += states.len();
    }
    (worst, compared)
}

#[test]
fn constraint_solve_agrees_with_the_cpu_in_f64() {
    if !wgpu().supports_dtype(DType::F64) {
        assert!(std::env::var_os("PHYZ_GPU_REQUIRE_F64").is_none(), "the device has no f64, and CI requires it");
        eprintln!("skipped: this wgpu device has no f64 (Vulkan's shaderFloat64)");
        return;
    }
    let (worst, compared) = solve_against_cpu(&wgpu());
    eprintln!("f64 constraint solve against the CPU: worst {worst:e} over {compared} worlds");
    assert!(worst <= 1e-9, "{worst:e}");
}

#[test]
fn constraint_solve_agrees_with_the_cpu_in_f32() {
    let (worst, compared) = solve_against_cpu(&opengl());
    eprintln!("f32 constraint solve against the CPU: worst {worst:e} over {compared} worlds");
    assert!(worst <= 1e-3, "{worst:e}");
}
