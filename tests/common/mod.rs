//! Shared test fixtures: a seeded random-tree generator and finite-difference helpers.
#![allow(dead_code)]

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use phyz::contact::SolverConfig;
use phyz::dynamics::{difference_position, integrate_position};
use phyz::math::Quat;
use phyz::model::{ActuatorSpec, BodySpec, Integrator, JointKind, JointSpec, ModelBuilder};
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

/// SplitMix64: a tiny deterministic generator, so every case is reproducible from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn index(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vector(&mut self, scale: f64) -> Vector3<f64> {
        Vector3::new(self.uniform(-scale, scale), self.uniform(-scale, scale), self.uniform(-scale, scale))
    }
    pub fn unit_vector(&mut self) -> Vector3<f64> {
        loop {
            let v = self.vector(1.0);
            if v.norm() > 0.2 {
                return v.normalize();
            }
        }
    }
    pub fn quat(&mut self) -> Quat<f64> {
        let v = self.unit_vector();
        Quat::new(self.uniform(-1.0, 1.0), v.x, v.y, v.z).normalize()
    }
}

/// The joints a random body can have: welded, one joint of each kind, or several in a row.
#[derive(Clone, Copy, Debug)]
enum Mobility {
    Weld,
    Free,
    One(JointKind),
    Chain,
}

/// The structure of a random tree: each body's parent and joint kinds.
#[derive(Clone, Debug)]
pub struct TreeShape {
    bodies: Vec<(usize, Vec<JointKind>)>,
}

impl TreeShape {
    /// `n` bodies; every kind of joint shows up across bodies (the kinds cycle from a random
    /// start), free joints only on children of the world.
    pub fn random(n: usize, rng: &mut Rng) -> Self {
        let kinds = [
            Mobility::One(JointKind::Hinge),
            Mobility::One(JointKind::Slide),
            Mobility::One(JointKind::Ball),
            Mobility::Chain,
            Mobility::Weld,
            Mobility::Free,
        ];
        let start = rng.index(kinds.len());
        let mut bodies = Vec::new();
        for i in 0..n {
            let parent = if i == 0 { 0 } else { rng.index(i + 1) };
            let mut mobility = kinds[(start + i) % kinds.len()];
            if matches!(mobility, Mobility::Free) && parent != 0 {
                mobility = Mobility::One(JointKind::Hinge);
            }
            let joints = match mobility {
                Mobility::Weld => vec![],
                Mobility::Free => vec![JointKind::Free],
                Mobility::One(k) => vec![k],
                // Several joints on one body; at most one ball, since two balls on one body
                // have a redundant spin about the line through their anchors.
                Mobility::Chain => {
                    let mut chain: Vec<JointKind> =
                        (0..2 + rng.index(2)).map(|_| [JointKind::Hinge, JointKind::Slide][rng.index(2)]).collect();
                    if rng.index(2) == 0 {
                        let at = rng.index(chain.len());
                        chain[at] = JointKind::Ball;
                    }
                    chain
                }
            };
            bodies.push((parent, joints));
        }
        TreeShape { bodies }
    }

    /// A model of this shape with random parameters (positive masses, physical inertias,
    /// random anchors and axes, some armature, damping and springs, a motor on every hinge and
    /// slide).
    pub fn model(&self, rng: &mut Rng, integrator: Integrator) -> Model<f64> {
        let mut builder = ModelBuilder::new();
        builder.timestep = rng.uniform(0.001, 0.004);
        builder.integrator = integrator;
        builder.gravity = Vector3::new(rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0), -9.81);
        let mut motors = Vec::new();
        for (i, (parent, kinds)) in self.bodies.iter().enumerate() {
            let joints = kinds
                .iter()
                .enumerate()
                .map(|(k, &kind)| {
                    let name = format!("j{i}_{k}");
                    let base = match kind {
                        JointKind::Hinge => JointSpec::hinge(name.clone(), rng.unit_vector()),
                        JointKind::Slide => JointSpec::slide(name.clone(), rng.unit_vector()),
                        JointKind::Ball => JointSpec::ball(name.clone()),
                        JointKind::Free => JointSpec::free(name.clone()),
                    };
                    if matches!(kind, JointKind::Hinge | JointKind::Slide) {
                        motors.push(name);
                    }
                    JointSpec {
                        pos: if kind == JointKind::Free { Vector3::zeros() } else { rng.vector(0.3) },
                        reference: rng.uniform(-0.5, 0.5),
                        armature: if rng.index(2) == 0 { 0.0 } else { rng.uniform(0.0, 0.2) },
                        damping: if rng.index(2) == 0 { 0.0 } else { rng.uniform(0.0, 0.5) },
                        stiffness: if rng.index(3) == 0 { rng.uniform(0.0, 3.0) } else { 0.0 },
                        spring_ref: rng.uniform(-0.5, 0.5),
                        ..base
                    }
                })
                .collect();
            builder.add_body(*parent, random_body(rng, format!("b{i}"), joints)).expect("valid parent");
        }
        for (k, joint) in motors.into_iter().enumerate() {
            let mut motor = ActuatorSpec::motor(format!("m{k}"), joint);
            motor.gear[0] = rng.uniform(0.5, 2.0);
            builder.add_actuator(motor);
        }
        builder.build().expect("random model is valid")
    }
}

/// A body with random pose and box-like mass properties (which obey the triangle inequality).
pub fn random_body(rng: &mut Rng, name: String, joints: Vec<JointSpec>) -> BodySpec {
    let mass = rng.uniform(0.5, 3.0);
    let [a, b, c] = [rng.uniform(0.1, 0.6), rng.uniform(0.1, 0.6), rng.uniform(0.1, 0.6)];
    let principal = Matrix3::from_diagonal(&Vector3::new(b * b + c * c, a * a + c * c, a * a + b * b)) * (mass / 12.0);
    let r = rng.quat().to_rotation_matrix();
    BodySpec {
        pos: rng.vector(0.5),
        quat: rng.quat(),
        mass,
        com: rng.vector(0.2),
        inertia: r * principal * r.transpose(),
        joints,
        ..BodySpec::new(name)
    }
}

/// A random state of `model`: angles and slides in [-1, 1], random unit quaternions, velocities
/// in [-1, 1].
pub fn random_state(model: &Model<f64>, rng: &mut Rng) -> State<f64> {
    let mut qpos = DVector::zeros(model.nq());
    for joint in model.joints() {
        let a = joint.qpos_adr();
        match joint.kind() {
            JointKind::Hinge | JointKind::Slide => qpos[a] = rng.uniform(-1.0, 1.0),
            JointKind::Ball | JointKind::Free => {
                let offset = if joint.kind() == JointKind::Free {
                    qpos.rows_mut(a, 3).copy_from(&rng.vector(1.0));
                    3
                } else {
                    0
                };
                let q = rng.quat();
                for (k, c) in [q.w, q.x, q.y, q.z].into_iter().enumerate() {
                    qpos[a + offset + k] = c;
                }
            }
        }
    }
    let qvel = DVector::from_fn(model.nv(), |_, _| rng.uniform(-1.0, 1.0));
    State::new(qpos, qvel)
}

pub fn random_vector(n: usize, rng: &mut Rng, scale: f64) -> DVector<f64> {
    DVector::from_fn(n, |_, _| rng.uniform(-scale, scale))
}

/// Largest absolute entry.
pub fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// A random contact problem: up to `max_contacts` frictional contacts (friction drawn from
/// `friction`) and up to `max_limits` limits, over a random SPD mass matrix and a random
/// Jacobian with more degrees of freedom than rows (so `A = J M⁻¹ Jᵀ` is SPD), and a random
/// free velocity.
pub fn random_contact_problem(
    rng: &mut Rng,
    config: &phyz::contact::SolverConfig,
    max_contacts: usize,
    max_limits: usize,
    friction: (f64, f64),
) -> phyz::contact::ContactProblem<f64> {
    use phyz::contact::{ConstraintKind, ContactProblem, ContactRow, JointSpace, Material};
    let contacts = 1 + rng.index(max_contacts);
    let limits = rng.index(max_limits + 1);
    let rows = 3 * contacts + limits;
    let dofs = rows + 1 + rng.index(5);
    let jacobian = DMatrix::from_fn(rows, dofs, |_, _| rng.uniform(-1.0, 1.0));
    let l = DMatrix::from_fn(dofs, dofs, |_, _| rng.uniform(-1.0, 1.0));
    let mass = &l * l.transpose() + DMatrix::identity(dofs, dofs) * 0.1;
    let free = DVector::from_fn(dofs, |_, _| rng.uniform(-0.3, 0.2));
    let mut specs = Vec::new();
    for _ in 0..contacts {
        let material = Material { friction: rng.uniform(friction.0, friction.1), ..Material::default() };
        let (depth, v_n) = (rng.uniform(-5e-4, 2e-3), rng.uniform(-0.5, 0.5));
        specs.push(ContactRow::from_material(ConstraintKind::Contact, &material, depth, v_n, 0.002, config));
    }
    for _ in 0..limits {
        let depth = rng.uniform(0.0, 1e-3);
        specs.push(ContactRow::from_material(ConstraintKind::Limit, &Material::default(), depth, 0.0, 0.002, config));
    }
    let jacobian = phyz::math::SparseRows::dense(&jacobian);
    let mass = phyz::dynamics::TreeMatrix::from_dense(&mass);
    ContactProblem::from_rows(JointSpace { mass, jacobian, free }, None, &specs, None, config)
}

/// The entries of a reference data directory (one per model), sorted.
pub fn entry_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reference data {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Rows of a CSV file of numbers (MuJoCo reference data); `header` skips the first line.
pub fn read_rows(path: &std::path::Path, header: bool) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(usize::from(header))
        .map(|line| {
            line.split(',')
                .filter(|f| !f.is_empty())
                .map(|f| f.parse().unwrap_or_else(|_| panic!("{}: bad number {f}", path.display())))
                .collect()
        })
        .collect()
}

/// The model file a reference directory `tests/reference/<name>` (and the constraint data of
/// the same name) was generated from: the file its `model_path.txt` names (a robot model,
/// relative to the repository), else `tests/models/<name>.xml`, else the shared gymnasium set.
pub fn model_file(name: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Ok(path) = std::fs::read_to_string(root.join("tests/reference").join(name).join("model_path.txt")) {
        return root.join(path.trim());
    }
    let local = root.join("tests/models").join(format!("{name}.xml"));
    if local.exists() { local } else { root.join("../shared/models/gymnasium").join(format!("{name}.xml")) }
}

/// A `time,qpos…,qvel…[,act…][,mpos…,mquat…]` row (the reference scripts' layout: activations
/// and mocap poses when the model has them) as a state of `model`.
pub fn state_from_row(model: &Model<f64>, row: &[f64]) -> State<f64> {
    let (nq, nv, na, nm) = (model.nq(), model.nv(), model.na(), model.nmocap());
    let mut rest = &row[1..];
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at(n);
        rest = tail;
        head
    };
    let qpos = DVector::from_column_slice(take(nq));
    let qvel = DVector::from_column_slice(take(nv));
    let act = DVector::from_column_slice(take(na));
    let mocap_pos = take(3 * nm).chunks(3).map(Vector3::from_column_slice).collect();
    let mocap_quat = take(4 * nm).chunks(4).map(|q| Quat::new(q[0], q[1], q[2], q[3])).collect();
    State { qpos, qvel, act, mocap_pos, mocap_quat, time: row[0] }
}

/// Largest difference of qpos, qvel and act, each relative to the reference's scale (≥ 1).
pub fn relative_error(got: &State<f64>, want: &State<f64>) -> f64 {
    let rel = |a: &DVector<f64>, b: &DVector<f64>| if b.is_empty() { 0.0 } else { (a - b).amax() / b.amax().max(1.0) };
    rel(&got.qpos, &want.qpos).max(rel(&got.qvel, &want.qvel)).max(rel(&got.act, &want.act))
}

/// The state and controls moved by `delta` along column `column` of a Jacobian over the state
/// in tangent coordinates and the controls: a position direction (through the configuration
/// manifold), a velocity, then a control.
pub fn perturbed_input(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    column: usize,
    delta: f64,
) -> (State<f64>, Vec<f64>) {
    let nv = model.nv();
    let (mut s, mut u) = (state.clone(), ctrl.to_vec());
    match column {
        c if c < nv => {
            let mut direction = DVector::zeros(nv);
            direction[c] = delta;
            s.qpos = integrate_position(model, &state.qpos, &direction, 1.0);
        }
        c if c < 2 * nv => s.qvel[c - nv] += delta,
        c => u[c - 2 * nv] += delta,
    }
    (s, u)
}

/// Central finite differences of one step in tangent coordinates, column by column.
pub fn finite_difference_jacobians(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    eps: f64,
) -> (DMatrix<f64>, DMatrix<f64>) {
    finite_difference_jacobians_with(model, state, ctrl, eps, SolverConfig::default())
}

/// [`finite_difference_jacobians`] of the step under the solver preset `config`, each step from
/// a cold start.
pub fn finite_difference_jacobians_with(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    eps: f64,
    config: SolverConfig,
) -> (DMatrix<f64>, DMatrix<f64>) {
    let (nv, nu) = (model.nv(), model.nu());
    let mut jac = DMatrix::zeros(2 * nv, 2 * nv + nu);
    let step = |s: &State<f64>, u: &[f64]| step_with(model, s, u, &mut ContactState::new(config)).map(|(next, _)| next);
    let reference = step(state, ctrl).expect("step");
    for column in 0..2 * nv + nu {
        let perturbed = |sign: f64| {
            let (s, u) = perturbed_input(model, state, ctrl, column, sign * eps);
            step(&s, &u).expect("step")
        };
        let (plus, minus) = (perturbed(1.0), perturbed(-1.0));
        let dq = (difference_position(model, &plus.qpos, &reference.qpos)
            - difference_position(model, &minus.qpos, &reference.qpos))
            / (2.0 * eps);
        let dv = (plus.qvel - minus.qvel) / (2.0 * eps);
        jac.view_mut((0, column), (nv, 1)).copy_from(&dq);
        jac.view_mut((nv, column), (nv, 1)).copy_from(&dv);
    }
    (jac.columns(0, 2 * nv).into_owned(), jac.columns(2 * nv, nu).into_owned())
}

/// Central differences at `h` and `h / 2` combined by Richardson extrapolation: the truncation
/// error drops to O(h⁴), so `h` can be large enough that roundoff stays small even on badly
/// conditioned mass matrices (where a plain central difference at 1e-6 loses six digits).
pub fn extrapolated_jacobians(
    model: &Model<f64>,
    state: &State<f64>,
    ctrl: &[f64],
    h: f64,
) -> (DMatrix<f64>, DMatrix<f64>) {
    let (a_coarse, b_coarse) = finite_difference_jacobians(model, state, ctrl, h);
    let (a_fine, b_fine) = finite_difference_jacobians(model, state, ctrl, h / 2.0);
    ((a_fine * 4.0 - a_coarse) / 3.0, (b_fine * 4.0 - b_coarse) / 3.0)
}

/// A gymnasium model, with constraints on or off, at a state reached by `steps` steps under one
/// random control (each within its actuator's range, held), so that no contact or limit sits
/// exactly on its activation boundary: every model of `../shared/models/gymnasium`, in name
/// order, constrained first.
pub struct GymnasiumCase {
    pub name: String,
    pub constrained: bool,
    pub model: Model<f64>,
    pub state: State<f64>,
    pub ctrl: Vec<f64>,
    /// Contacts and limits in the last step.
    pub touching: usize,
}

pub fn gymnasium_cases(rng: &mut Rng, steps: usize) -> Vec<GymnasiumCase> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/models/gymnasium");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).expect("gymnasium models").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "xml")) {
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        for constrained in [true, false] {
            let mut model = phyz::mjcf::load(file).expect("model loads");
            model.enabled.constraint = constrained;
            let mut state = model.keyframe_state(0).map_or_else(|| model.default_state(), |(s, _)| s);
            let ctrl: Vec<f64> = model
                .actuators()
                .iter()
                .map(|a| {
                    let [lo, hi] = a.ctrl_range.unwrap_or([-1.0, 1.0]);
                    rng.uniform(lo, hi)
                })
                .collect();
            let mut contact = phyz::sim::ContactState::default();
            let mut touching = 0;
            for _ in 0..steps {
                let (next, info) = phyz::sim::step_with(&model, &state, &ctrl, &mut contact).expect("step");
                touching = info.contacts + info.limits;
                state = next;
            }
            cases.push(GymnasiumCase { name: name.clone(), constrained, model, state, ctrl, touching });
        }
    }
    cases
}

/// `J = the final position coordinate `coordinate` of the state (a world coordinate of a free
/// body's position).
pub fn final_coordinate(nv: usize, coordinate: usize) -> impl phyz::dual::Objective {
    phyz::dual::CostFunctions {
        running: move |_t: usize, _s: &State<f64>, _u: &[f64]| phyz::dual::Cost::zeros(nv, 0),
        terminal: move |s: &State<f64>| {
            let mut dq = DVector::zeros(nv);
            dq[coordinate] = 1.0;
            phyz::dual::Cost { value: s.qpos[coordinate], dq, dv: DVector::zeros(nv), du: DVector::zeros(0) }
        },
    }
}
