#!/usr/bin/env python3
"""A corpus of public MuJoCo models, and MuJoCo reference data for phyz's coverage test.

The corpus (tests/corpus/, its README.md lists sources and licences) is CORPUS below: models
from MuJoCo's own repository (its model/ folder and its test models, Apache-2.0), from
dm_control's suite and locomotion walkers (Apache-2.0) and from gymnasium-robotics (MIT; the
Adroit hand Apache-2.0), each copied with the files it needs (includes, meshes, textures,
skins) into tests/corpus/<source>/ under its path in that source, so that relative paths
still resolve (tests/corpus/.gitignore keeps the PNG textures MuJoCo needs to load them,
which the repository's *.png rule would otherwise leave out).

For every corpus model (all of which MuJoCo loads: --gather checks) this writes
tests/corpus/reference/<name>/:

  model_path.txt       the model file, relative to the repository root
  sizes.csv            nq,nv,nu,na,nmocap,nbody,njnt,timestep,nmesh (one row)
  model.csv            one row per body (world first): name, mass, ipos, iquat, inertia
                       (tests/reference/README.md's format)
  smooth_in.csv        one random state, constraints disabled (mjDSBL_CONSTRAINT): qpos0
                       perturbed, qvel uniform in +-0.5, act and mocap poses as
                       tools/mujoco_reference.py draws them: time,qpos..,qvel..,act..,mpos..,mquat..
  smooth_ctrl.csv      its controls, uniform in ctrlrange (else +-1); no header
  smooth_out.csv       the state one mj_step later
  constrained_in.csv   a state with contacts or limits active (every constraint of the file on),
  constrained_ctrl.csv its controls, and the state one mj_step later with MuJoCo's solver run
  constrained_out.csv  to convergence (Newton, tolerance 1e-12, 1000 iterations, line search
                       to 1e-6 in up to 100 iterations); absent when no state of the run has a
                       constraint row
  constrained.csv      ncon,nefc,contact_rows,limit_rows,equality_rows,friction_rows,solver_niter,
                       roll_step: what is active at that state and after how many steps of the
                       run it was taken (one row)

The constrained state: from the first keyframe (else the reset state), MuJoCo steps the model as
the file sets it up ROLL_STEPS (300) times under random controls (uniform in ctrlrange, held
HOLD steps); of the states with a contact or a limit row, the last is taken, leaving out states
with a contact or limit within AMBIGUOUS of its activation distance (there rounding decides
whether it exists). Where the 300 steps have none, the run goes on until one appears, up to
MAX_ROLL_STEPS (1000). A model whose run has no contact or limit takes its last state with any
constraint row (an equality, a friction loss), and one with none has no constrained files. A
run that goes unstable (MuJoCo's mjWARN_BADQACC) stops there and keeps only states from
UNSTABLE_MARGIN steps or more before it: a blow-up grows over several steps before MuJoCo warns.

All floats are written with repr(); every random draw comes from numpy's PCG64 seeded with a
fixed constant and the CRC32 of the model's name, so a rerun reproduces the files byte for byte.

Usage:
  python3 tools/mujoco_corpus.py             (re)writes tests/corpus/reference/ for every model
  python3 tools/mujoco_corpus.py --only NAME [NAME ...]
  python3 tools/mujoco_corpus.py --check     writes nothing: re-reads every file, checks its shape
                                             and replays both steps with MuJoCo bit for bit
  python3 tools/mujoco_corpus.py --gather    copies the corpus models (and the files they need)
                                             from their sources into tests/corpus/<source>/:
                                             MuJoCo's repository at MUJOCO_COMMIT (a local git
                                             mirror, --mujoco-repo), and the pip packages
                                             dm_control, gymnasium-robotics, gym-aloha and
                                             mujoco-warp (installed with --no-deps: only
                                             their files are read)
"""

import argparse
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mujoco_reference import (  # noqa: E402  (shared conventions with the smooth-dynamics data)
    REPO, ctrl_bounds, floats, fmt, problem_list, random_extras, random_state, read_csv, rng_for,
    route_warnings, set_state, split_state, state_header, state_row, write_csv)

SEED_SMOOTH = 20260701
SEED_CONSTRAINED = 20260702
ROLL_STEPS = 300
MAX_ROLL_STEPS = 1000
HOLD = 10
UNSTABLE_MARGIN = 2 * HOLD
AMBIGUOUS = 1e-9

CORPUS_DIR = os.path.join(REPO, "tests", "corpus")
REFERENCE_DIR = os.path.join(CORPUS_DIR, "reference")

MUJOCO_REPO = "/work/.mirror/google-deepmind+mujoco/repo"
MUJOCO_COMMIT = "a7255075b003506ff5f34b512d88e02df12a73c6"

# Where each source's files go under tests/corpus/, and the licence files copied with them
# (source path -> name in the destination folder).
SOURCES = {
    "mujoco": dict(dest="mujoco", licences={"LICENSE": "LICENSE"}),
    "dm_control": dict(dest="dm_control", licences={"LICENSE": "LICENSE", "AUTHORS": "AUTHORS"}),
    "gymnasium_robotics": dict(dest="gymnasium_robotics",
                               licences={"LICENSE": "LICENSE", "envs/assets/LICENSE.md": "envs/assets/LICENSE.md"}),
    "gym_aloha": dict(dest="gym_aloha", licences={"LICENSE": "LICENSE"}),
    "mujoco_warp": dict(dest="mujoco_warp", licences={"LICENSE": "LICENSE", "AUTHORS": "AUTHORS"}),
    # Models written for phyz's own tests where the public ones miss a feature; kept in
    # tests/corpus/phyz/, never gathered.
    "phyz": dict(dest="phyz", licences={}),
}

# name -> (source, path of the model file in that source).
CORPUS = {
    # MuJoCo's model/ folder.
    "mj_humanoid": ("mujoco", "model/humanoid/humanoid.xml"),
    "mj_car": ("mujoco", "model/car/car.xml"),
    "mj_balloons": ("mujoco", "model/balloons/balloons.xml"),
    "mj_fridge_door": ("mujoco", "model/adhesion/fridge_door.xml"),
    "mj_slider_crank": ("mujoco", "model/slider_crank/slider_crank.xml"),
    "mj_newton_cradle": ("mujoco", "model/replicate/newton_cradle.xml"),
    # MuJoCo's engine and compiler test models.
    "mjt_actearly": ("mujoco", "test/engine/testdata/actuation/actearly.xml"),
    "mjt_activation": ("mujoco", "test/engine/testdata/actuation/activation.xml"),
    "mjt_actuation_sites": ("mujoco", "test/engine/testdata/actuation/sites.xml"),
    "mjt_refsite": ("mujoco", "test/engine/testdata/actuation/refsite.xml"),
    "mjt_refsite_free": ("mujoco", "test/engine/testdata/actuation/refsite_free.xml"),
    "mjt_armature_equivalence": ("mujoco", "test/engine/testdata/armature_equivalence.xml"),
    "mjt_connect": ("mujoco", "test/engine/testdata/connect.xml"),
    "mjt_weld": ("mujoco", "test/engine/testdata/weld.xml"),
    "mjt_rotations": ("mujoco", "test/engine/testdata/rotations.xml"),
    "mjt_collisions": ("mujoco", "test/engine/testdata/collisions.xml"),
    "mjt_boxbox_deep": ("mujoco", "test/engine/testdata/collision_box/boxbox_deep.xml"),
    "mjt_sphere_cylinder": ("mujoco", "test/engine/testdata/collision_primitive/sphere_cylinder.xml"),
    "mjt_cylinder_box": ("mujoco", "test/engine/testdata/collision_convex/cylinder_box.xml"),
    "mjt_planks": ("mujoco", "test/engine/testdata/collision_driver/planks.xml"),
    "mjt_tendon_wrap_sphere": ("mujoco", "test/engine/testdata/core_smooth/tendon_wrap_sphere.xml"),
    "mjt_ten_J2": ("mujoco", "test/engine/testdata/core_smooth/ten_J2.xml"),
    "mjt_soft_weld": ("mujoco", "test/engine/testdata/core_constraint/soft_weld.xml"),
    "mjt_joint_limit_margin": ("mujoco", "test/engine/testdata/core_constraint/joint_limited_bilateral_margin.xml"),
    "mjt_damped_actuators": ("mujoco", "test/engine/testdata/derivative/damped_actuators.xml"),
    "mjt_abacus": ("mujoco", "test/engine/testdata/island/abacus.xml"),
    "mjt_poly_stiffness": ("mujoco", "test/engine/testdata/passive/poly_stiffness.xml"),
    "mjt_solver_humanoid": ("mujoco", "test/engine/testdata/solver/humanoid.xml"),
    "mjt_robot_arm": ("mujoco", "test/user/testdata/robot_arm.xml"),
    "mjt_dzhanibekov": ("mujoco", "test/user/testdata/dzhanibekov.xml"),
    "mjt_inertia_convex": ("mujoco", "test/user/testdata/inertia_convex.xml"),
    "mjx_pendula": ("mujoco", "mjx/mujoco/mjx/test_data/pendula.xml"),
    "mjx_convex": ("mujoco", "mjx/mujoco/mjx/test_data/convex.xml"),
    "mjx_quadratic_frictionloss": ("mujoco", "mjx/mujoco/mjx/test_data/quadratic_frictionloss.xml"),
    "mjx_pulley_site_wrap": ("mujoco", "mjx/mujoco/mjx/test_data/tendon/pulley_site_wrap.xml"),
    "mjx_wrap_sidesite": ("mujoco", "mjx/mujoco/mjx/test_data/tendon/wrap_sidesite.xml"),
    # dm_control's suite.
    "dmc_acrobot": ("dm_control", "suite/acrobot.xml"),
    "dmc_ball_in_cup": ("dm_control", "suite/ball_in_cup.xml"),
    "dmc_cartpole": ("dm_control", "suite/cartpole.xml"),
    "dmc_cheetah": ("dm_control", "suite/cheetah.xml"),
    "dmc_finger": ("dm_control", "suite/finger.xml"),
    "dmc_fish": ("dm_control", "suite/fish.xml"),
    "dmc_hopper": ("dm_control", "suite/hopper.xml"),
    "dmc_humanoid": ("dm_control", "suite/humanoid.xml"),
    "dmc_humanoid_CMU": ("dm_control", "suite/humanoid_CMU.xml"),
    "dmc_manipulator": ("dm_control", "suite/manipulator.xml"),
    "dmc_pendulum": ("dm_control", "suite/pendulum.xml"),
    "dmc_point_mass": ("dm_control", "suite/point_mass.xml"),
    "dmc_quadruped": ("dm_control", "suite/quadruped.xml"),
    "dmc_reacher": ("dm_control", "suite/reacher.xml"),
    "dmc_stacker": ("dm_control", "suite/stacker.xml"),
    "dmc_swimmer": ("dm_control", "suite/swimmer.xml"),
    "dmc_walker": ("dm_control", "suite/walker.xml"),
    # dm_control's locomotion walkers.
    "dmc_cmu_humanoid_2020": ("dm_control", "locomotion/walkers/assets/humanoid_CMU_V2020.xml"),
    "dmc_rodent": ("dm_control", "locomotion/walkers/assets/rodent.xml"),
    "dmc_jumping_ball": ("dm_control", "locomotion/walkers/assets/jumping_ball/jumping_ball_with_head.xml"),
    # gymnasium-robotics.
    "gr_adroit_door": ("gymnasium_robotics", "envs/assets/adroit_hand/adroit_door.xml"),
    "gr_adroit_hammer": ("gymnasium_robotics", "envs/assets/adroit_hand/adroit_hammer.xml"),
    "gr_adroit_pen": ("gymnasium_robotics", "envs/assets/adroit_hand/adroit_pen.xml"),
    "gr_adroit_relocate": ("gymnasium_robotics", "envs/assets/adroit_hand/adroit_relocate.xml"),
    "gr_point": ("gymnasium_robotics", "envs/assets/point/point.xml"),
    "gr_coupled_half_cheetah": ("gymnasium_robotics", "envs/multiagent_mujoco/assets/coupled_half_cheetah.xml"),
    "gr_hand_manipulate_egg": ("gymnasium_robotics", "envs/assets/hand/manipulate_egg.xml"),
    "gr_hand_manipulate_egg_touch": ("gymnasium_robotics", "envs/assets/hand/manipulate_egg_touch_sensors.xml"),
    # gym-aloha: the ALOHA bimanual ViperX arms' scenes.
    "aloha_transfer_cube": ("gym_aloha", "assets/bimanual_viperx_transfer_cube.xml"),
    "aloha_insertion": ("gym_aloha", "assets/bimanual_viperx_insertion.xml"),
    "aloha_ee_insertion": ("gym_aloha", "assets/bimanual_viperx_end_effector_insertion.xml"),
    # MuJoCo Warp's test models.
    "mjw_aloha_pot": ("mujoco_warp", "test_data/aloha_pot/scene.xml"),
    "mjw_constraints": ("mujoco_warp", "test_data/constraints.xml"),
    "mjw_collision": ("mujoco_warp", "test_data/collision.xml"),
    "mjw_primitives": ("mujoco_warp", "test_data/primitives.xml"),
    "mjw_humanoid": ("mujoco_warp", "test_data/humanoid/humanoid.xml"),
    "mjw_tendon_wrap": ("mujoco_warp", "test_data/tendon/wrap.xml"),
    "mjw_tendon_fixed": ("mujoco_warp", "test_data/tendon/fixed.xml"),
    "mjw_tendon_armature": ("mujoco_warp", "test_data/tendon/armature.xml"),
    "mjw_adhesion": ("mujoco_warp", "test_data/actuation/adhesion.xml"),
    # phyz's own.
    "phyz_ball_limits": ("phyz", "ball_limits.xml"),
}

# Sources installed as pip packages that need not import (MuJoCo Warp needs a GPU toolkit):
# source -> (distribution, package folder).
PACKAGES = {
    "gym_aloha": ("gym-aloha", "gym_aloha"),
    "mujoco_warp": ("mujoco-warp", "mujoco_warp"),
}

# The files generate() writes in a model's folder.
OUTPUTS = ["model_path.txt", "sizes.csv", "model.csv", "smooth_in.csv", "smooth_ctrl.csv", "smooth_out.csv",
           "constrained_in.csv", "constrained_ctrl.csv", "constrained_out.csv", "constrained.csv"]

SIZES_HEADER = ["nq", "nv", "nu", "na", "nmocap", "nbody", "njnt", "timestep", "nmesh"]
BODY_HEADER = ["name", "mass", "ipos_x", "ipos_y", "ipos_z", "iquat_w", "iquat_x", "iquat_y", "iquat_z",
               "inertia_x", "inertia_y", "inertia_z"]
CONSTRAINED_HEADER = ["ncon", "nefc", "contact_rows", "limit_rows", "equality_rows", "friction_rows",
                      "solver_niter", "roll_step"]

CONTACT_TYPES = {int(t) for t in (mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS,
                                  mujoco.mjtConstraint.mjCNSTR_CONTACT_PYRAMIDAL,
                                  mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC)}
LIMIT_TYPES = {int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT), int(mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON)}
EQUALITY_TYPES = {int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)}
FRICTION_TYPES = {int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF), int(mujoco.mjtConstraint.mjCNSTR_FRICTION_TENDON)}


def model_path(name):
    """The corpus model's file, relative to the repository root."""
    source, path = CORPUS[name]
    return os.path.join("tests", "corpus", SOURCES[source]["dest"], path)


def converged(m):
    """MuJoCo's solver run to convergence for the recorded constrained step: Newton (every
    MuJoCo solver minimizes the same convex problem; Newton gets there), tolerance 1e-12,
    iterations and line-search iterations far beyond what it needs, a tight line search."""
    m.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    m.opt.iterations = 1000
    m.opt.tolerance = 1e-12
    m.opt.ls_iterations = 100
    m.opt.ls_tolerance = 1e-6
    return m


def unstable(d):
    return d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0


def row_counts(d):
    """(contact, limit, equality, friction) constraint rows at the current mj_forward."""
    types = [int(t) for t in d.efc_type[:d.nefc]]
    return tuple(sum(t in kinds for t in types) for kinds in (CONTACT_TYPES, LIMIT_TYPES, EQUALITY_TYPES, FRICTION_TYPES))


def robust(d):
    """No contact and no limit within AMBIGUOUS of its activation distance: a contact exists
    while dist < includemargin, a limit row while its distance < margin, and a state where either
    sits on that boundary is decided by rounding."""
    if any(abs(c.dist - c.includemargin) <= AMBIGUOUS for c in d.contact[:d.ncon]):
        return False
    for i in range(d.nefc):
        if int(d.efc_type[i]) in LIMIT_TYPES and abs(d.efc_pos[i] - d.efc_margin[i]) <= AMBIGUOUS:
            return False
    return True


def constrained_state(m, rng):
    """Runs the model as its file sets it up, from its first keyframe (else the reset state),
    under random controls; returns (qpos, qvel, ctrl, extras, counts, step) of the last state
    with a contact or limit row (else with any constraint row), or None."""
    d = mujoco.MjData(m)
    mujoco.mj_resetData(m, d)
    if m.nkey > 0:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.time = 0.0
    lo, hi = ctrl_bounds(m)
    snaps = []  # (step, has a contact or limit row, snapshot)
    for t in range(MAX_ROLL_STEPS):
        if t >= ROLL_STEPS and any(s[1] for s in snaps):
            break
        if m.nu and t % HOLD == 0:
            d.ctrl[:] = rng.uniform(lo, hi)
        mujoco.mj_forward(m, d)
        if d.nefc > 0 and robust(d):
            counts = row_counts(d)
            snaps.append((t, bool(counts[0] or counts[1]), (d.qpos.copy(), d.qvel.copy(), d.ctrl.copy(),
                          (d.act.copy(), d.mocap_pos.copy(), d.mocap_quat.copy()), counts, t)))
        mujoco.mj_step(m, d)
        if unstable(d) or not np.all(np.isfinite(d.qpos)):
            print(f"  note: run went unstable at step {t}; states before step {t - UNSTABLE_MARGIN} kept",
                  file=sys.stderr)
            snaps = [s for s in snaps if s[0] < t - UNSTABLE_MARGIN]
            break
    best = next((s[2] for s in reversed(snaps) if s[1]), None)
    fallback = snaps[-1][2] if snaps else None
    return best if best is not None else fallback


def write_sizes_and_bodies(m, out):
    write_csv(os.path.join(out, "sizes.csv"), SIZES_HEADER,
              [[str(m.nq), str(m.nv), str(m.nu), str(m.na), str(m.nmocap), str(m.nbody), str(m.njnt),
                fmt(m.opt.timestep), str(m.nmesh)]])
    rows = []
    for b in range(m.nbody):
        bname = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or ""
        rows.append([bname, m.body_mass[b], *m.body_ipos[b], *m.body_iquat[b], *m.body_inertia[b]])
    write_csv(os.path.join(out, "model.csv"), BODY_HEADER, rows)


def smooth_model(path):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m


def generate(name, out_root):
    rel = model_path(name)
    path = os.path.join(REPO, rel)
    m = mujoco.MjModel.from_xml_path(path)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    for stale in OUTPUTS:
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    with open(os.path.join(out, "model_path.txt"), "w") as f:
        f.write(rel + "\n")
    write_sizes_and_bodies(m, out)
    header = state_header(m)

    # One smooth step.
    ms = smooth_model(path)
    d = mujoco.MjData(ms)
    rng = rng_for(name, SEED_SMOOTH)
    qpos, qvel, ctrl = random_state(ms, rng)
    set_state(ms, d, qpos, qvel, ctrl, random_extras(ms, rng))
    row_in = state_row(d)
    mujoco.mj_step(ms, d)
    smooth_ok = not unstable(d)
    write_csv(os.path.join(out, "smooth_in.csv"), header, [row_in])
    write_csv(os.path.join(out, "smooth_ctrl.csv"), None, [list(ctrl)])
    write_csv(os.path.join(out, "smooth_out.csv"), header, [state_row(d)])

    # One constrained step.
    found = constrained_state(m, rng_for(name, SEED_CONSTRAINED))
    summary = dict(name=name, nq=m.nq, nv=m.nv, nu=m.nu, na=m.na, nbody=m.nbody, smooth_ok=smooth_ok,
                   constrained=None)
    if found is not None:
        qpos, qvel, ctrl, extras, _, t = found
        mc = converged(mujoco.MjModel.from_xml_path(path))
        d = mujoco.MjData(mc)
        set_state(mc, d, qpos, qvel, ctrl, extras)
        row_in = state_row(d)
        mujoco.mj_forward(mc, d)
        counts = row_counts(d)
        ncon, nefc = int(d.ncon), int(d.nefc)
        mujoco.mj_step(mc, d)
        niter = int(d.solver_niter[0])
        write_csv(os.path.join(out, "constrained_in.csv"), header, [row_in])
        write_csv(os.path.join(out, "constrained_ctrl.csv"), None, [list(ctrl)])
        write_csv(os.path.join(out, "constrained_out.csv"), header, [state_row(d)])
        write_csv(os.path.join(out, "constrained.csv"), CONSTRAINED_HEADER,
                  [[str(x) for x in (ncon, nefc, *counts, niter, t)]])
        summary["constrained"] = (ncon, nefc, counts, niter, t, niter < mc.opt.iterations and not unstable(d))
    return summary


def check(name, out_root):
    """Re-reads one model's files, checks their shapes, and replays both steps with MuJoCo from
    the parsed text (so the text alone must reproduce the data bit for bit)."""
    out = os.path.join(out_root, name)
    probs, expect = problem_list(name)
    path = os.path.join(REPO, model_path(name))
    with open(os.path.join(out, "model_path.txt")) as f:
        expect(f.read().strip() == model_path(name), "model_path.txt")
    m = mujoco.MjModel.from_xml_path(path)
    h, rows = read_csv(os.path.join(out, "sizes.csv"))
    expect(h == SIZES_HEADER and len(rows) == 1, "sizes.csv shape")
    sizes = tuple(int(x) for x in rows[0][:7])
    expect(sizes == (m.nq, m.nv, m.nu, m.na, m.nmocap, m.nbody, m.njnt), "sizes.csv values")
    expect(float(rows[0][7]) == m.opt.timestep and int(rows[0][8]) == m.nmesh, "timestep, nmesh")
    h, rows = read_csv(os.path.join(out, "model.csv"))
    expect(h == BODY_HEADER and len(rows) == m.nbody and all(len(r) == 12 for r in rows), "model.csv shape")
    vals = floats([r[1:] for r in rows])
    expect(np.array_equal(vals[:, 0], m.body_mass) and np.array_equal(vals[:, 1:4], m.body_ipos)
           and np.array_equal(vals[:, 4:8], m.body_iquat) and np.array_equal(vals[:, 8:11], m.body_inertia),
           "model.csv values")
    hdr = state_header(m)

    def replay(model, prefix):
        h_in, rin = read_csv(os.path.join(out, f"{prefix}_in.csv"))
        h_out, rout = read_csv(os.path.join(out, f"{prefix}_out.csv"))
        _, rctrl = read_csv(os.path.join(out, f"{prefix}_ctrl.csv"), header=False)
        if not expect(h_in == hdr and h_out == hdr and len(rin) == len(rout) == len(rctrl) == 1
                      and len(rin[0]) == len(rout[0]) == len(hdr) and len(rctrl[0]) == m.nu, f"{prefix} shapes"):
            return
        x_in, x_out = floats(rin)[0], floats(rout)[0]
        u = np.array([float(v) for v in rctrl[0]])
        qpos, qvel, extras = split_state(model, x_in[1:])
        d = mujoco.MjData(model)
        set_state(model, d, qpos, qvel, u, extras)
        mujoco.mj_step(model, d)
        expect(np.array_equal(np.array(state_row(d)), x_out), f"{prefix} step does not replay exactly")

    replay(smooth_model(path), "smooth")
    if os.path.exists(os.path.join(out, "constrained_in.csv")):
        replay(converged(mujoco.MjModel.from_xml_path(path)), "constrained")
        h, rows = read_csv(os.path.join(out, "constrained.csv"))
        expect(h == CONSTRAINED_HEADER and len(rows) == 1 and len(rows[0]) == len(CONSTRAINED_HEADER), "constrained.csv")
    else:
        expect(constrained_state(m, rng_for(name, SEED_CONSTRAINED)) is None, "constrained step missing")
    return probs


# ---------------------------------------------------------------------------------------------
# Gathering the corpus from its sources.
# ---------------------------------------------------------------------------------------------

def source_root(source, tmp, mujoco_repo):
    """A directory holding the source's files under the paths CORPUS names."""
    if source == "mujoco":
        root = os.path.join(tmp, "mujoco")
        os.makedirs(root)
        archive = subprocess.run(["git", "-C", mujoco_repo, "archive", MUJOCO_COMMIT, "LICENSE", "model", "test",
                                  "mjx/mujoco/mjx/test_data"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", root], input=archive, check=True)
        return root
    if source == "dm_control":
        root = os.path.join(tmp, "dm_control")
        shutil.copytree(os.path.dirname(importlib.import_module("dm_control").__file__), root)
        lic = package_licence_dir("dm_control")
        for f in ("LICENSE", "AUTHORS"):
            shutil.copy(os.path.join(lic, f), os.path.join(root, f))
        return root
    if source in PACKAGES:
        dist, package = PACKAGES[source]
        root = os.path.join(tmp, source)
        shutil.copytree(str(importlib.metadata.distribution(dist).locate_file(package)), root)
        for f in SOURCES[source]["licences"]:
            shutil.copy(os.path.join(package_licence_dir(dist), f), os.path.join(root, f))
        return root
    if source == "gymnasium_robotics":
        root = os.path.join(tmp, "gymnasium_robotics")
        shutil.copytree(os.path.dirname(importlib.import_module("gymnasium_robotics").__file__), root)
        shutil.copy(os.path.join(package_licence_dir("gymnasium-robotics"), "LICENSE"), os.path.join(root, "LICENSE"))
        return root
    raise ValueError(source)


def package_licence_dir(dist):
    files = importlib.metadata.distribution(dist).files
    lic = [f for f in files if os.path.basename(str(f)) == "LICENSE" and ".dist-info" in str(f)]
    return os.path.dirname(str(lic[0].locate()))


def xml_dependencies(path, main_dir, seen):
    """Files an MJCF file pulls in as XML: <include file> (found as MuJoCo finds it, relative
    to the main file's directory, else to the including file's) and asset <model file>,
    recursively."""
    root = ET.parse(path).getroot()
    for el in root.iter():
        if el.tag not in ("include", "model") or "file" not in el.attrib:
            continue
        if el.tag == "model" and el is root:
            continue
        f = el.attrib["file"]
        cands = [os.path.normpath(os.path.join(main_dir, f)), os.path.normpath(os.path.join(os.path.dirname(path), f))]
        dep = next((c for c in cands if os.path.exists(c)), cands[0])
        if dep not in seen:
            seen.append(dep)
            sub_main = main_dir if el.tag == "include" else os.path.dirname(dep)
            xml_dependencies(dep, sub_main, seen)
            if el.tag == "model":
                seen.extend(asset_files(dep))
    return seen


def asset_files(path):
    """Mesh, texture, height-field and skin files the compiled model reads."""
    spec = mujoco.MjSpec.from_file(path)
    base = os.path.dirname(path)

    def resolve(sub, f):
        return os.path.normpath(os.path.join(base, sub or "", f))

    out = []
    for mesh in spec.meshes:
        if mesh.file:
            out.append(resolve(spec.meshdir, mesh.file))
    for tex in spec.textures:
        for f in [tex.file] + list(tex.cubefiles or []):
            if f:
                out.append(resolve(spec.texturedir, f))
    for h in spec.hfields:
        if h.file:
            out.append(resolve(spec.meshdir, h.file))
    for s in spec.skins:
        if s.file:
            out.append(resolve(spec.meshdir, s.file))
    return out


def gather(names, mujoco_repo):
    names = [n for n in names if CORPUS[n][0] != "phyz"]
    with tempfile.TemporaryDirectory() as tmp:
        roots = {}
        for name in names:
            source, rel = CORPUS[name]
            if source not in roots:
                roots[source] = source_root(source, tmp, mujoco_repo)
                for src, dst in SOURCES[source]["licences"].items():
                    copy(os.path.join(roots[source], src), os.path.join(CORPUS_DIR, SOURCES[source]["dest"], dst))
            root = roots[source]
            main = os.path.join(root, rel)
            deps = [main] + xml_dependencies(main, os.path.dirname(main), []) + asset_files(main)
            total = 0
            for f in dict.fromkeys(deps):
                relf = os.path.relpath(f, root)
                if relf.startswith(".."):
                    sys.exit(f"error: {name}: {f} lies outside its source")
                dst = os.path.join(CORPUS_DIR, SOURCES[source]["dest"], relf)
                copy(f, dst)
                total += os.path.getsize(f)
            print(f"{name:<30} {len(deps):>3} files {total / 1024:8.1f} KiB")
    for name in names:
        mujoco.MjModel.from_xml_path(os.path.join(REPO, model_path(name)))  # MuJoCo loads the copy
    print("MuJoCo", mujoco.__version__, "loads every gathered model")


def copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=REFERENCE_DIR, help="output directory of the reference data")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these models")
    ap.add_argument("--check", action="store_true", help="do not write: re-read the files and replay them")
    ap.add_argument("--gather", action="store_true", help="copy the corpus models from their sources")
    ap.add_argument("--mujoco-repo", default=MUJOCO_REPO, help="a git clone or mirror of google-deepmind/mujoco")
    args = ap.parse_args()
    route_warnings()
    names = sorted(CORPUS)
    if args.only:
        unknown = set(args.only) - set(names)
        if unknown:
            sys.exit(f"error: no corpus models named {sorted(unknown)}")
        names = [n for n in names if n in args.only]
    if args.gather:
        gather(names, args.mujoco_repo)
        return
    if args.check:
        probs = []
        for name in names:
            probs += check(name, args.out)
        for msg in probs:
            print(msg)
        print(f"checked {len(names)} corpus models with MuJoCo {mujoco.__version__}: "
              + ("OK" if not probs else f"{len(probs)} problem(s)"))
        sys.exit(1 if probs else 0)
    os.makedirs(args.out, exist_ok=True)
    print(f"MuJoCo {mujoco.__version__}; writing to {args.out}")
    print(f"{'model':<30} {'nq':>4} {'nv':>4} {'nu':>3} {'na':>3} {'nbody':>5}  constrained step: "
          "ncon nefc (contact limit equality friction rows) niter, roll step")
    for name in names:
        r = generate(name, args.out)
        c = r["constrained"]
        cs = "none (no constraint row in the run)" if c is None else (
            f"{c[0]:>4} {c[1]:>4} {c[2]} {c[3]:>3}, step {c[4]}" + ("" if c[5] else "  NOT CONVERGED"))
        print(f"{name:<30} {r['nq']:>4} {r['nv']:>4} {r['nu']:>3} {r['na']:>3} {r['nbody']:>5}  {cs}"
              + ("" if r["smooth_ok"] else "  (smooth step unstable)"))


if __name__ == "__main__":
    main()
