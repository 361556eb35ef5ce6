//! The `phyz` command end to end: its trajectory files agree with MuJoCo's reference data.

use std::path::{Path, PathBuf};
use std::process::Command;

fn phyz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_phyz"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rows(path: &Path, skip_header: bool) -> Vec<Vec<f64>> {
    std::fs::read_to_string(path)
        .expect("readable")
        .lines()
        .skip(usize::from(skip_header))
        .map(|l| l.split(',').filter(|f| !f.is_empty()).map(|f| f.parse().expect("number")).collect())
        .collect()
}

#[test]
fn simulate_reproduces_the_mujoco_trajectory() {
    let reference = root().join("tests/reference/tendons");
    let traj = rows(&reference.join("traj.csv"), true);
    let (nq, nv) = (4, 4);
    let dir = std::env::temp_dir().join(format!("phyz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, values: &[f64]| {
        let path = dir.join(name);
        std::fs::write(&path, values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")).expect("write");
        path
    };
    let qpos = write("qpos.csv", &traj[0][1..1 + nq]);
    let qvel = write("qvel.csv", &traj[0][1 + nq..1 + nq + nv]);
    let out = dir.join("out.csv");
    let status = phyz()
        .args(["simulate", "tests/models/tendons.xml", "--steps", "100", "--no-constraints"])
        .arg("--qpos")
        .arg(&qpos)
        .arg("--qvel")
        .arg(&qvel)
        .arg("--ctrl")
        .arg(reference.join("traj_ctrl.csv"))
        .arg("--out")
        .arg(&out)
        .current_dir(root())
        .status()
        .expect("runs");
    assert!(status.success());
    let header = std::fs::read_to_string(&out).expect("output").lines().next().unwrap_or_default().to_string();
    assert_eq!(header, "time,qpos0,qpos1,qpos2,qpos3,qvel0,qvel1,qvel2,qvel3");
    let ours = rows(&out, true);
    assert_eq!(ours.len(), 101);
    for (a, b) in ours.iter().zip(&traj) {
        let err = a.iter().zip(b).fold(0.0_f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(err <= 1e-9, "row differs by {err:e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn info_and_errors() {
    let info = phyz().args(["info", "../shared/models/gymnasium/ant.xml"]).current_dir(root()).output().expect("runs");
    assert!(info.status.success());
    assert!(String::from_utf8_lossy(&info.stdout).contains("nq 15  nv 14  nu 8"));
    // Contacts and limits are solved by default, with a chosen preset.
    let contact = phyz()
        .args([
            "simulate",
            "../shared/models/gymnasium/hopper.xml",
            "--steps",
            "50",
            "--preset",
            "gradients",
            "--out",
            "/dev/null",
        ])
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(contact.status.success(), "{}", String::from_utf8_lossy(&contact.stderr));
    // Presets are named as README and `SolverConfig` name them, and hyphenated too.
    for preset in ["mujoco_compat", "mujoco-compat", "gpu_equivalent"] {
        let hopper = "../shared/models/gymnasium/hopper.xml";
        let run = phyz()
            .args(["simulate", hopper, "--steps", "5", "--preset", preset, "--out", "/dev/null"])
            .current_dir(root())
            .output()
            .expect("runs");
        assert!(run.status.success(), "{preset}: {}", String::from_utf8_lossy(&run.stderr));
    }
    // `info` lists every unsupported part, then fails.
    let path = std::env::temp_dir().join(format!("phyz-cli-info-{}.xml", std::process::id()));
    let xml = "<mujoco><worldbody><body><joint name='j' springyield='1'/><geom size='.1' fluidshape='ellipsoid'/>\
               </body></worldbody><actuator><general joint='j' dyntype='user'/></actuator></mujoco>";
    std::fs::write(&path, xml).expect("temp file");
    let listed = phyz().arg("info").arg(&path).output().expect("runs");
    std::fs::remove_file(&path).ok();
    assert!(!listed.status.success());
    let text = String::from_utf8_lossy(&listed.stdout);
    for part in ["fluidshape", "springyield", "dyntype=\"user\"", "nq 1  nv 1"] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    let missing = phyz().args(["info", "nope.xml"]).output().expect("runs");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope.xml"));
}

#[test]
fn the_default_job_lands_the_ball_on_its_target_and_plots_it() {
    let dir = std::env::temp_dir().join(format!("phyz-cli-throw-{}", std::process::id()));
    // The main job (what `phyz` runs without a subcommand), into a folder of its own.
    let out = phyz().arg("throw").arg("--out").arg(&dir).output().expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("iteration   1: loss"), "{text}");
    let losses: Vec<f64> = rows(&dir.join("loss.csv"), true).iter().map(|r| r[1]).collect();
    assert!(losses.len() >= 2 && losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
    // The exact Jacobian of the landing point: Levenberg–Marquardt lands the ball within a
    // micrometre of the target.
    assert!(losses[losses.len() - 1] < 1e-12, "{losses:?}");
    let png = std::fs::read(dir.join("throw.png")).expect("plot written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn jacobian_writes_a_and_b_and_gradcheck_reports() {
    let path = std::env::temp_dir().join(format!("phyz-cli-jac-{}.json", std::process::id()));
    let out = phyz()
        .args(["jacobian", "../shared/models/gymnasium/inverted_pendulum.xml", "--out"])
        .arg(&path)
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = std::fs::read_to_string(&path).expect("written");
    // Two blocks of rows: A (4 × 4) and B (4 × 1) for the cart-pole.
    let rows_of = |key: &str| {
        let start = json.find(&format!("\"{key}\"")).expect("key");
        let block = &json[start..];
        let end = block.find("]]").expect("closing");
        block[..end].matches('[').count() - 1
    };
    assert_eq!((rows_of("A"), rows_of("B")), (4, 4));
    let first_row = json.split("[[").nth(1).expect("row").split(']').next().expect("row");
    assert_eq!(first_row.split(',').count(), 4);
    std::fs::remove_file(&path).ok();
    let check = phyz()
        .args(["gradcheck", "../shared/models/gymnasium/inverted_pendulum.xml", "--steps", "20"])
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    let report = String::from_utf8_lossy(&check.stdout);
    let worst: Vec<f64> = report
        .lines()
        .filter_map(|l| l.split("worst relative error ").nth(1))
        .map(|r| r.split_whitespace().next().expect("number").parse().expect("number"))
        .collect();
    assert_eq!(worst.len(), 2, "{report}");
    assert!(worst.iter().all(|w| *w < 1e-6), "{report}");
}

#[test]
fn simulate_and_view_write_the_same_page_for_one_trajectory() {
    // `simulate --view` pages the run it steps; `view --trajectory` pages the CSV `simulate
    // --out` wrote of the same run: both are one page, of every state, the libraries inside.
    let dir = std::env::temp_dir().join(format!("phyz-cli-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (csv, stepped, read) = (dir.join("hopper.csv"), dir.join("stepped.html"), dir.join("read.html"));
    let status = phyz()
        .args(["simulate", "../shared/models/gymnasium/hopper.xml", "--steps", "50", "--out"])
        .arg(&csv)
        .arg("--view")
        .arg(&stepped)
        .current_dir(root())
        .status()
        .expect("runs");
    assert!(status.success());
    let status = phyz()
        .args(["view", "../shared/models/gymnasium/hopper.xml", "--trajectory"])
        .arg(&csv)
        .arg("--out")
        .arg(&read)
        .current_dir(root())
        .status()
        .expect("runs");
    assert!(status.success());
    let (a, b) = (std::fs::read_to_string(&stepped).expect("page"), std::fs::read_to_string(&read).expect("page"));
    // The CSV keeps every digit, so the poses agree to the page's six places.
    assert_eq!(a, b, "the two pages differ");
    let times = a.split("\"times\":[").nth(1).and_then(|t| t.split(']').next()).expect("the times");
    assert_eq!(times.split(',').count(), 51, "51 states");
    assert!(times.starts_with("0,0.002,"), "from t = 0");
    // A trajectory that is not one is refused by name, and a model's page needs no trajectory.
    let status = phyz()
        .args(["view", "../shared/models/gymnasium/hopper.xml", "--trajectory", "Cargo.toml", "--out"])
        .arg(&read)
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(!status.status.success());
    assert!(
        String::from_utf8_lossy(&status.stderr).contains("not a trajectory"),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}
