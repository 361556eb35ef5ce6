//! Actuators compiled through stacks of default classes, as MuJoCo compiles them: each class
//! keeps one default actuator that every actuator element in it (of whatever kind) rewrites,
//! and each shortcut reads the numbers it leaves unwritten from that record. Random stacks
//! (`tools/mujoco_actuator_records.py`) with MuJoCo's compiled gain, bias, dynamics and ranges,
//! or its refusal.

use phyz::Model;
use phyz::model::{Dynamics, Term};

const CASES: &str = include_str!("reference/actuator_records/cases.txt");

/// Relative agreement asked of every number: most are copied, a damping ratio's damping and a
/// muscle's peak force go through the mass matrix.
const TOLERANCE: f64 = 1e-12;

/// MuJoCo's compiled actuator, as the reference writes it.
struct Expected {
    gain: (String, Vec<f64>),
    bias: (String, Vec<f64>),
    dynamics: (String, Vec<f64>),
    ctrl: Option<[f64; 2]>,
    act: Option<[f64; 2]>,
    /// The acceleration a unit force gives at the reference configuration: a muscle whose
    /// `force` is negative peaks at `scale / acc0`.
    acc0: f64,
}

fn expected(line: &str) -> Expected {
    let parts: Vec<(String, Vec<f64>)> = line
        .split(" | ")
        .map(|part| {
            let mut words = part.split_whitespace();
            let head = words.next().expect("a head word").to_string();
            (head, words.map(|w| w.parse().expect("a number")).collect())
        })
        .collect();
    let range = |(limited, numbers): &(String, Vec<f64>)| (limited == "1").then(|| [numbers[0], numbers[1]]);
    Expected {
        gain: parts[0].clone(),
        bias: parts[1].clone(),
        dynamics: parts[2].clone(),
        ctrl: range(&parts[3]),
        act: range(&parts[4]),
        acc0: parts[5].1[0],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOLERANCE * a.abs().max(b.abs()).max(1.0)
}

fn term_matches(term: &Term<f64>, (kind, p): &(String, Vec<f64>), acc0: f64) -> bool {
    match (kind.as_str(), term) {
        ("fixed", Term::Affine(t)) => close(t[0], p[0]) && t[1] == 0.0 && t[2] == 0.0,
        ("affine", Term::Affine(t)) => (0..3).all(|k| close(t[k], p[k])),
        ("none", Term::Affine(t)) => *t == [0.0; 3],
        ("muscle", Term::Muscle(m)) => {
            let ours = [m.range[0], m.range[1], m.force, m.lmin, m.lmax, m.vmax, m.fpmax, m.fvmax];
            let force = if p[2] < 0.0 { p[3] / acc0 } else { p[2] };
            let theirs = [p[0], p[1], force, p[4], p[5], p[6], p[7], p[8]];
            ours.iter().zip(theirs).all(|(&a, b)| close(a, b))
        }
        _ => false,
    }
}

fn dynamics_match(dynamics: &Dynamics<f64>, (kind, p): &(String, Vec<f64>)) -> bool {
    match (kind.as_str(), dynamics) {
        ("none", Dynamics::None) | ("integrator", Dynamics::Integrator) => true,
        ("filter", Dynamics::Filter { time_constant, exact: false })
        | ("filterexact", Dynamics::Filter { time_constant, exact: true }) => close(*time_constant, p[0]),
        ("muscle", Dynamics::Muscle { activation, deactivation, smoothing }) => {
            close(*activation, p[0]) && close(*deactivation, p[1]) && close(*smoothing, p[2])
        }
        _ => false,
    }
}

fn range_matches(ours: Option<[f64; 2]>, theirs: Option<[f64; 2]>) -> bool {
    match (ours, theirs) {
        (None, None) => true,
        (Some(a), Some(b)) => close(a[0], b[0]) && close(a[1], b[1]),
        _ => false,
    }
}

fn mismatch(model: &Model<f64>, want: &Expected) -> Option<String> {
    let a = &model.actuators()[0];
    let fields = [
        ("gain", term_matches(&a.gain, &want.gain, want.acc0)),
        ("bias", term_matches(&a.bias, &want.bias, want.acc0)),
        ("dynamics", dynamics_match(&a.dynamics, &want.dynamics)),
        ("ctrlrange", range_matches(a.ctrl_range, want.ctrl)),
        ("actrange", range_matches(a.act_range, want.act)),
    ];
    let wrong: Vec<&str> = fields.iter().filter(|(_, ok)| !ok).map(|(name, _)| *name).collect();
    (!wrong.is_empty()).then(|| {
        format!(
            "{wrong:?}: phyz {:?} {:?} {:?} ctrl {:?} act {:?}",
            a.gain, a.bias, a.dynamics, a.ctrl_range, a.act_range
        )
    })
}

#[test]
fn actuators_compile_through_default_stacks_as_mujoco_does() {
    let cases: Vec<&str> = CASES.split("=== ").filter(|c| !c.is_empty()).collect();
    assert!(cases.len() >= 200, "the reference holds {} cases", cases.len());
    let mut failures = Vec::new();
    for (k, case) in cases.iter().enumerate() {
        let (head, xml) = case.split_once('\n').expect("a head line");
        let loaded = phyz::mjcf::parse(xml, format!("case{k}.xml"));
        // A compiled NaN (a damping ratio on a negative gain) is a model phyz must refuse.
        let head = if head.contains("nan") { "error: MuJoCo compiles a NaN" } else { head };
        let failure = match (head.strip_prefix("ok: "), loaded) {
            (Some(line), Ok(model)) => mismatch(&model, &expected(line)),
            (Some(line), Err(e)) => Some(format!("phyz refuses ({e}); MuJoCo compiles {line}")),
            (None, Ok(model)) => Some(format!("phyz loads {:?}; MuJoCo: {head}", model.actuators()[0].gain)),
            (None, Err(_)) => None,
        };
        if let Some(failure) = failure {
            failures.push(format!("case {k}: {failure}\n{xml}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
