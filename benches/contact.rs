//! Contact-solve iterations and time: Newton on the primal problem against Gauss-Seidel sweeps
//! run to a velocity tolerance, on a redundant 32-contact ring, a 10-box stack and 100 random
//! problems. `cargo bench --bench contact` prints one table.

use std::time::Instant;

use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use phyz::contact::{
    ConstraintKind, ContactProblem, ContactRow, JointSpace, Material, Method, SolverConfig, Warm, solve,
};
use phyz::dynamics::TreeMatrix;
use phyz::math::SparseRows;

const G: f64 = 9.81;
const DT: f64 = 0.002;

/// Contact Jacobian rows for a point `p` (relative to the body's centre of mass) along `d`.
fn point_row(j: &mut DMatrix<f64>, row: usize, body: usize, p: &Vector3<f64>, d: &Vector3<f64>, sign: f64) {
    for k in 0..3 {
        j[(row, 6 * body + k)] += sign * d[k];
        j[(row, 6 * body + 3 + k)] += sign * p.cross(d)[k];
    }
}

/// A contact between the body below (`None`: the ground) and the body above, at points relative
/// to each one's centre of mass.
type BoxContact = (Option<usize>, usize, Vector3<f64>, Vector3<f64>);

/// The joint-space data of contacts between rigid boxes.
fn boxes_problem(bodies: usize, contacts: &[BoxContact]) -> JointSpace<f64> {
    let frame = |n: Vector3<f64>| {
        let t1 = if n.x.abs() < 0.9 { Vector3::x().cross(&n).normalize() } else { Vector3::y().cross(&n).normalize() };
        [n, t1, n.cross(&t1)]
    };
    let mut j = DMatrix::zeros(3 * contacts.len(), 6 * bodies);
    for (c, (below, above, p_above, p_below)) in contacts.iter().enumerate() {
        for (r, d) in frame(Vector3::z()).iter().enumerate() {
            point_row(&mut j, 3 * c + r, *above, p_above, d, 1.0);
            if let Some(b) = below {
                point_row(&mut j, 3 * c + r, *b, p_below, d, -1.0);
            }
        }
    }
    let (mass, inertia) = (1.0, Matrix3::from_diagonal(&Vector3::new(0.0067, 0.0067, 0.0067)));
    let mut m = DMatrix::zeros(6 * bodies, 6 * bodies);
    for b in 0..bodies {
        m.view_mut((6 * b, 6 * b), (3, 3)).copy_from(&(Matrix3::identity() * mass));
        m.view_mut((6 * b + 3, 6 * b + 3), (3, 3)).copy_from(&inertia);
    }
    let free = DVector::from_fn(6 * bodies, |i, _| if i % 6 == 2 { -G * DT } else { 0.0 });
    JointSpace { mass: TreeMatrix::from_dense(&m), jacobian: SparseRows::dense(&j), free }
}

fn problem(joint: JointSpace<f64>, n: usize, config: &SolverConfig) -> ContactProblem<f64> {
    let material = Material { friction: 0.8, ..Material::default() };
    let rows: Vec<ContactRow> =
        (0..n).map(|_| ContactRow::from_material(ConstraintKind::Contact, &material, 4e-4, 0.0, DT, config)).collect();
    ContactProblem::from_rows(joint, None, &rows, None, config)
}

fn ring(config: &SolverConfig) -> ContactProblem<f64> {
    let contacts: Vec<_> = (0..32)
        .map(|k| {
            let a = k as f64 * std::f64::consts::TAU / 32.0;
            (None, 0, Vector3::new(0.2 * a.cos(), 0.2 * a.sin(), -0.1), Vector3::zeros())
        })
        .collect();
    problem(boxes_problem(1, &contacts), 32, config)
}

/// Ten 0.2 m boxes stacked, four corner contacts under each.
fn stack(config: &SolverConfig) -> ContactProblem<f64> {
    let mut contacts = Vec::new();
    for level in 0..10 {
        for (x, y) in [(0.1, 0.1), (0.1, -0.1), (-0.1, 0.1), (-0.1, -0.1)] {
            let below = (level > 0).then(|| level - 1);
            contacts.push((below, level, Vector3::new(x, y, -0.1), Vector3::new(x, y, 0.1)));
        }
    }
    problem(boxes_problem(10, &contacts), 40, config)
}

/// Random SPD problems, as in the solver tests.
fn random(seed: u64, config: &SolverConfig) -> ContactProblem<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let n = 2 + (seed % 5) as usize;
    let rows = 3 * n;
    let dofs = rows + 3;
    let j = DMatrix::from_fn(rows, dofs, |_, _| next());
    let l = DMatrix::from_fn(dofs, dofs, |_, _| next());
    let mass = (&l * l.transpose() + DMatrix::identity(dofs, dofs) * 0.2).try_inverse().expect("invertible");
    let free = DVector::from_fn(dofs, |_, _| 0.25 * next() - 0.05);
    problem(JointSpace { mass: TreeMatrix::from_dense(&mass), jacobian: SparseRows::dense(&j), free }, n, config)
}

/// (iterations, converged, seconds per solve) over `runs` repetitions.
fn measure(p: &ContactProblem<f64>, config: &SolverConfig, runs: usize) -> (usize, bool, f64) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        last = Some(solve(p, config, &Warm::default()).expect("solvable"));
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let s = last.expect("ran");
    (s.iterations, s.converged, times[times.len() / 2])
}

fn main() {
    let ours = SolverConfig::simulation();
    let pgs = SolverConfig { method: Method::GaussSeidel, tolerance: 1e-10, max_iterations: 20_000, ..ours };
    println!("| problem | solver | iterations | converged | time per solve |");
    println!("|---|---|---:|---|---:|");
    for (name, p) in [("ring of 32", ring(&ours)), ("10-box stack", stack(&ours))] {
        for (label, config) in [("Newton", &ours), ("Gauss-Seidel", &pgs)] {
            let (iterations, converged, t) = measure(&p, config, 11);
            println!("| {name} | {label} | {iterations} | {converged} | {:.1} µs |", t * 1e6);
        }
    }
    for (label, config) in [("Newton", &ours), ("Gauss-Seidel", &pgs)] {
        let (mut iterations, mut converged, mut time) = (0, 0, 0.0);
        for seed in 0..100 {
            let (i, c, t) = measure(&random(seed, config), config, 3);
            iterations += i;
            converged += usize::from(c);
            time += t;
        }
        println!(
            "| 100 random | {label} | {:.1} mean | {converged}/100 | {:.1} µs mean |",
            iterations as f64 / 100.0,
            time / 100.0 * 1e6
        );
    }
}
