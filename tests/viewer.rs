//! `phyz view`'s page in a real browser: Debian's Chromium, headless, with no network. The page
//! must load without an error, draw every visible geom, and show the model in a screenshot.
//!
//! Without a Chromium (`/usr/bin/chromium`, or the one `PHYZ_CHROMIUM` names) the browser tests
//! say so and pass, unless `PHYZ_REQUIRE_BROWSER=1` (CI sets it), where a missing browser fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use phyz::mjcf;
use phyz::sim::{ContactState, step_with};
use phyz::{Model, State};

/// A scene of every kind of geom phyz draws, in colours a screenshot can find: a red ball
/// falls onto a blue floor among the others (the camera follows it, off the origin), and last
/// a body whose only geom is hidden.
const SCENE: &str = "<mujoco><option timestep='0.005'/>\
    <asset><material name='floor' rgba='0.2 0.3 0.9 1'/>\
      <mesh name='tetra' vertex='0 0 0  0.2 0 0  0 0.2 0  0 0 0.2'/>\
      <hfield name='bumps' nrow='3' ncol='3' size='0.3 0.3 0.05 0.05' elevation='0 1 0 1 0 1 0 1 0'/></asset>\
    <worldbody>\
      <geom type='plane' size='3 3 0.25' material='floor'/>\
      <geom type='box' size='0.1 0.1 0.1' pos='0.6 0 0.1' rgba='0.9 0.8 0.1 1'/>\
      <geom type='cylinder' size='0.08 0.15' pos='-0.6 0 0.15' rgba='0.1 0.8 0.3 1'/>\
      <geom type='ellipsoid' size='0.15 0.1 0.05' pos='0 0.6 0.05'/>\
      <geom type='mesh' mesh='tetra' pos='0 -0.6 0'/>\
      <geom type='hfield' hfield='bumps' pos='0.9 0.9 0'/>\
      <geom type='capsule' size='0.05' fromto='-0.5 -0.5 0.05 -0.2 -0.8 0.05' group='3'/>\
      <body name='ball' pos='0.3 0.2 0.8'><freejoint/><geom type='sphere' size='0.2' rgba='1 0 0 1'/></body>\
      <body name='ghost' pos='0 0 2'><freejoint/><geom type='sphere' size='0.05' group='3'/></body>\
    </worldbody></mujoco>";

/// Drawn: every geom but the capsule and the last body's ball, in group 3 (MuJoCo's viewer hides
/// them too).
const DRAWN: usize = 7;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PHYZ_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if path.exists() {
        return Some(path);
    }
    let required = std::env::var("PHYZ_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    assert!(!required, "PHYZ_REQUIRE_BROWSER=1 but there is no Chromium at {}", path.display());
    eprintln!("no Chromium at {}: the page is not tried in a browser", path.display());
    None
}

/// Runs Chromium headless on `page` with `mode` (`--dump-dom` or `--screenshot=…`), software
/// WebGL, no network, a fresh profile; returns its standard output.
fn browse(chromium: &Path, dir: &Path, page: &Path, mode: &str) -> String {
    let profile = dir.join("profile");
    let _ = std::fs::remove_dir_all(&profile);
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=800,600",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .current_dir(dir)
        .output()
        .expect("Chromium runs");
    assert!(output.status.success(), "Chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn trajectory(model: &Model<f64>, steps: usize) -> Vec<State<f64>> {
    let mut contact = ContactState::default();
    let mut states = vec![model.default_state()];
    for _ in 0..steps {
        let next = step_with(model, states.last().expect("a state"), &[], &mut contact).expect("steps").0;
        states.push(next);
    }
    states
}

/// A fresh directory under the target directory's temporary space.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[test]
fn the_page_carries_its_libraries_and_the_trajectory() {
    let model = mjcf::parse(SCENE, "scene.xml").expect("valid scene");
    let states = trajectory(&model, 40);
    let page = phyz::view::page(&model, &states, "a <scene>").expect("a page");
    // Nothing is fetched: no external script, style or link; the libraries are inline.
    for outside in ["<script src", "<link", "http://", "https://"] {
        let inline = page.split("<script id=\"phyz-three\"").next().expect("the head");
        assert!(!inline.contains(outside), "the page's own markup names `{outside}`");
    }
    assert!(page.contains("const t=\"170\""), "three.js r170 is inlined");
    assert!(page.contains("class OrbitControls"), "the orbit controls are inlined");
    assert!(page.contains("<title>a &lt;scene&gt; · phyz</title>"));
    assert_eq!(page.matches("\"kind\":").count(), 9, "every geom is in the data");
    assert!(matches!(phyz::view::page(&model, &[], "empty"), Err(phyz::view::ViewError::Empty)));
    let mut bad = states[3].clone();
    bad.qpos[2] = f64::NAN;
    assert!(matches!(phyz::view::page(&model, &[bad], "nan"), Err(phyz::view::ViewError::NonFinite { index: 0 })));
}

#[test]
fn the_page_plays_in_chromium_and_shows_the_model() {
    let Some(chromium) = chromium() else { return };
    let model = mjcf::parse(SCENE, "scene.xml").expect("valid scene");
    let states = trajectory(&model, 40);
    let dir = scratch("viewer");
    let page = dir.join("scene.html");
    phyz::view::write(&page, &model, &states, "scene").expect("the page is written");

    let url = |fragment: &str| PathBuf::from(format!("{}{fragment}", page.display()));
    let body = |fragment: &str| {
        let dom = browse(&chromium, &dir, &url(fragment), "--dump-dom");
        let body = dom.split("<body").nth(1).and_then(|b| b.split('>').next()).expect("a body element").to_string();
        eprintln!("<body{body}>");
        assert!(!body.contains("data-errors"), "the page reported errors: {body}");
        assert!(body.contains("data-status=\"ready\""), "the page did not draw: {body}");
        assert!(body.contains(&format!("data-frames=\"{}\"", states.len())), "{body}");
        assert!(body.contains(&format!("data-meshes=\"{DRAWN}\"")), "{body}");
        body
    };
    assert!(body("").contains("data-frame=\"0\""));
    assert!(body("#frame=last").contains(&format!("data-frame=\"{}\"", states.len() - 1)));

    // The ball in the first frame and in the last, 0.2 s of falling later: it is there, and
    // lower on the screen (the camera follows it across the floor, not down).
    let first = screenshot(&chromium, &dir, &url(""), "first.png");
    let last = screenshot(&chromium, &dir, &url("#frame=last"), "last.png");
    let total = first.pixels;
    eprintln!("{total} pixels: red (the ball) {} then {}, blue (the floor) {}", first.red, last.red, first.blue);
    assert!(first.red > total / 500 && last.red > total / 500, "the ball is not in the screenshots");
    assert!(first.blue > total / 20, "the floor is not in the screenshot ({} blue pixels)", first.blue);
    eprintln!("the ball's centre on the screen: row {:.1}, then {:.1}", first.red_row, last.red_row);
    assert!(last.red_row > first.red_row + 5.0, "the ball did not fall on the screen");
}

/// What a screenshot shows: its pixels, how many are the ball's red (and their mean row) and
/// the floor's blue.
struct Shot {
    pixels: usize,
    red: usize,
    red_row: f64,
    blue: usize,
}

fn screenshot(chromium: &Path, dir: &Path, page: &Path, name: &str) -> Shot {
    let shot = dir.join(name);
    browse(chromium, dir, page, &format!("--screenshot={}", shot.display()));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).expect("a screenshot")));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut pixels).expect("pixels");
    let channels = info.color_type.samples();
    let width = info.width as usize;
    let (mut red, mut rows, mut blue) = (0, 0.0, 0);
    for (k, p) in pixels[..info.buffer_size()].chunks(channels).enumerate() {
        let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
        // The red ball and the blue floor, lit: red well above the rest; blue above both.
        if r > 120 && g < 60 && b < 60 {
            red += 1;
            rows += (k / width) as f64;
        }
        if b > 100 && b > r + 40 && b > g + 20 {
            blue += 1;
        }
    }
    Shot { pixels: (info.width * info.height) as usize, red, red_row: rows / red.max(1) as f64, blue }
}
