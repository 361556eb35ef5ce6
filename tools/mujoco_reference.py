#!/usr/bin/env python3
"""Generate MuJoCo reference data for phyz's Rust tests.

For every model in the gymnasium set (/work/shared/models/gymnasium/*.xml, or
--gym-dir), in tests/models/*.xml and the public robot models of ROBOTS (committed
under tests/models/robots/), this loads the model with MuJoCo, disables all
constraints (contacts, limits, equality: as phyz's --no-constraints) and writes
tests/reference/<name>/:

  sizes.csv         nq,nv,nu,nbody,njnt,timestep (one row)
  model.csv         one row per body (world first): name, mass, ipos, iquat, inertia
  model_path.txt    robot models only: the model file, relative to the repository
  onestep_in.csv    K=8 random states: time,qpos0..,qvel0..,act0..,mpos0_x..,mquat0_w..
                    (act columns when na > 0, mocap columns when nmocap > 0)
  onestep_ctrl.csv  K rows of nu controls (no header; empty lines when nu == 0)
  onestep_out.csv   the states after one mj_step from each input row
  sensors.csv       models with sensors: sensordata at each input row (mj_forward), no header
  traj_ctrl.csv     100 rows of controls (no header)
  traj.csv          time,qpos..,qvel..: 101 rows, the initial state first
  meta.csv          chaotic,amplification (sensitivity of the trajectory)
  keys.csv          only for models with keyframes: name,time,qpos..,qvel..,ctrl..
  actuators.csv     only for models with muscles: name,length_lo,length_hi,acc0 per actuator
                    (the length ranges MuJoCo's compiler found, and its actuator_acc0)

All floats are written with repr() (shortest string that round-trips an f64).
The script is deterministic: every random draw comes from numpy's PCG64 seeded
with a fixed constant and a CRC32 of the model name.

Usage:  python3 tools/mujoco_reference.py [--gym-dir DIR] [--out DIR] [--check]
        (--check writes nothing: it re-reads the files and replays them exactly)
"""

import argparse
import csv
import glob
import io
import os
import shutil
import sys
import zlib

import mujoco
import numpy as np

K_ONESTEP = 8
TRAJ_STEPS = 100
CHAOS_EPS = 1e-10
CHAOS_THRESHOLD = 1000.0
SEED_ONESTEP = 20240601
SEED_TRAJ = 20240602

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_GYM_DIR = "/work/shared/models/gymnasium"

# The files generate() writes in a model's folder.
OUTPUTS = ["sizes.csv", "model.csv", "model_path.txt", "onestep_in.csv", "onestep_ctrl.csv", "onestep_out.csv",
           "sensors.csv", "traj_ctrl.csv", "traj.csv", "meta.csv", "keys.csv", "actuators.csv"]

# Public robot models committed under tests/models/robots/ (their licences are there),
# by reference name.
ROBOTS = {
    "fetch_reach": "tests/models/robots/gymnasium_robotics/fetch/reach.xml",
    "fetch_pick_and_place": "tests/models/robots/gymnasium_robotics/fetch/pick_and_place.xml",
    "hand_reach": "tests/models/robots/gymnasium_robotics/hand/reach.xml",
    "hand_manipulate_block": "tests/models/robots/gymnasium_robotics/hand/manipulate_block.xml",
    "hand_manipulate_pen": "tests/models/robots/gymnasium_robotics/hand/manipulate_pen.xml",
}


def route_warnings():
    """Send MuJoCo warnings to stderr instead of its default handler, which also appends
    them to MUJOCO_LOG.TXT in the current directory (the repository root)."""
    mujoco.set_mju_user_warning(lambda msg: print(f"MuJoCo warning: {msg}", file=sys.stderr))


def fmt(x):
    """Full-precision float text: repr() round-trips exactly."""
    return repr(float(x))


def load(path):
    """Load a model with every constraint disabled, nothing else changed."""
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m


def rng_for(name, base):
    return np.random.default_rng([base, zlib.crc32(name.encode())])


def quat_from_rotvec(v):
    angle = float(np.linalg.norm(v))
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    axis = v / angle
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def quat_mul(a, b):
    res = np.zeros(4)
    mujoco.mju_mulQuat(res, a, b)
    return res


def random_state(m, rng):
    """qpos0 perturbed joint by joint, qvel uniform in +-0.5, ctrl uniform in ctrlrange."""
    qpos = m.qpos0.copy()
    for j in range(m.njnt):
        adr = m.jnt_qposadr[j]
        t = m.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_HINGE:
            qpos[adr] += rng.uniform(-0.3, 0.3)
        elif t == mujoco.mjtJoint.mjJNT_SLIDE:
            qpos[adr] += rng.uniform(-0.05, 0.05)
        else:
            qadr = adr
            if t == mujoco.mjtJoint.mjJNT_FREE:
                qpos[adr:adr + 3] += rng.uniform(-0.05, 0.05, 3)
                qadr = adr + 3
            dq = quat_from_rotvec(rng.uniform(-0.3, 0.3, 3))
            q = quat_mul(qpos[qadr:qadr + 4], dq)
            qpos[qadr:qadr + 4] = q / np.linalg.norm(q)
    qvel = rng.uniform(-0.5, 0.5, m.nv)
    lo, hi = ctrl_bounds(m)
    ctrl = rng.uniform(lo, hi) if m.nu else np.zeros(0)
    return qpos, qvel, ctrl


def random_extras(m, rng):
    """The rest of a random state, drawn after random_state (a model with neither draws
    nothing, so its data are unchanged): act uniform in actrange (else +-1), mocap bodies
    moved by up to 5 cm and turned by up to 0.3 rad from their model pose. Returns
    (act, mocap_pos, mocap_quat)."""
    act = np.zeros(m.na)
    for i in range(m.nu):
        adr = m.actuator_actadr[i]
        if adr >= 0:
            a_lo, a_hi = m.actuator_actrange[i] if m.actuator_actlimited[i] else (-1.0, 1.0)
            act[adr] = rng.uniform(a_lo, a_hi)
    mpos = np.zeros((m.nmocap, 3))
    mquat = np.zeros((m.nmocap, 4))
    for b in range(m.nbody):
        k = m.body_mocapid[b]
        if k >= 0:
            mpos[k] = m.body_pos[b] + rng.uniform(-0.05, 0.05, 3)
            mquat[k] = quat_mul(m.body_quat[b], quat_from_rotvec(rng.uniform(-0.3, 0.3, 3)))
    return act, mpos, mquat


def ctrl_bounds(m):
    """Per-actuator (lo, hi): ctrlrange when ctrl-limited, else [-1, 1]."""
    lo = np.full(m.nu, -1.0)
    hi = np.full(m.nu, 1.0)
    for i in range(m.nu):
        if m.actuator_ctrllimited[i]:
            lo[i], hi[i] = m.actuator_ctrlrange[i]
    return lo, hi


def traj_controls(m):
    """ctrl_t[i] = mid + half_range*0.8*sin(0.05*t*(i+1) + i), t = step index."""
    lo, hi = ctrl_bounds(m)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    out = np.zeros((TRAJ_STEPS, m.nu))
    for t in range(TRAJ_STEPS):
        for i in range(m.nu):
            out[t, i] = mid[i] + half[i] * 0.8 * np.sin(0.05 * t * (i + 1) + i)
    return out


def set_state(m, d, qpos, qvel, ctrl, extras=None):
    """Reset, then set the state; `extras` is (act, mocap_pos, mocap_quat), the model's
    reset values when None."""
    mujoco.mj_resetData(m, d)
    d.time = 0.0
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    if extras is not None:
        d.act[:], d.mocap_pos[:], d.mocap_quat[:] = extras
    if m.nu:
        d.ctrl[:] = ctrl


def split_state(m, row):
    """(qpos, qvel, (act, mocap_pos, mocap_quat)) of a state row without its time."""
    nq, nv, na, nm = m.nq, m.nv, m.na, m.nmocap
    cuts = np.cumsum([nq, nv, na, 3 * nm])
    qpos, qvel, act, mpos, mquat = np.split(np.asarray(row, dtype=float), cuts)
    return qpos, qvel, (act, mpos.reshape(nm, 3), mquat.reshape(nm, 4))


def check_stable(m, d):
    """MuJoCo silently resets the data when qacc blows up (auto-reset): refuse that."""
    if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
        name = m.names[:m.names.index(b"\0")].decode() if m.names else "?"
        sys.exit(f"error: model {name!r} went unstable (mjWARN_BADQACC) at time {d.time}")


def state_row(d):
    mocap = list(d.mocap_pos.flatten()) + list(d.mocap_quat.flatten())
    return [d.time] + list(d.qpos) + list(d.qvel) + list(d.act) + mocap


def state_header(m):
    mpos = [f"mpos{k}_{c}" for k in range(m.nmocap) for c in "xyz"]
    mquat = [f"mquat{k}_{c}" for k in range(m.nmocap) for c in "wxyz"]
    return (["time"] + [f"qpos{i}" for i in range(m.nq)] + [f"qvel{i}" for i in range(m.nv)]
            + [f"act{i}" for i in range(m.na)] + mpos + mquat)


def write_csv(path, header, rows):
    buf = io.StringIO()
    if header is not None:
        buf.write(",".join(header) + "\n")
    for r in rows:
        buf.write(",".join(x if isinstance(x, str) else fmt(x) for x in r) + "\n")
    with open(path, "w", newline="") as f:
        f.write(buf.getvalue())


def run_traj(m, qpos, qvel, extras, ctrls):
    d = mujoco.MjData(m)
    set_state(m, d, qpos, qvel, ctrls[0] if m.nu else None, extras)
    rows = [state_row(d)]
    for t in range(TRAJ_STEPS):
        if m.nu:
            d.ctrl[:] = ctrls[t]
        mujoco.mj_step(m, d)
        check_stable(m, d)
        rows.append(state_row(d))
    return np.array(rows)


def generate(name, path, out_root):
    m = load(path)
    d = mujoco.MjData(m)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    # Only this script's files are replaced: others (transition_*.csv) share the folder.
    for stale in OUTPUTS:
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    if name in ROBOTS:
        with open(os.path.join(out, "model_path.txt"), "w") as f:
            f.write(ROBOTS[name] + "\n")

    write_csv(os.path.join(out, "sizes.csv"), ["nq", "nv", "nu", "nbody", "njnt", "timestep"],
              [[str(m.nq), str(m.nv), str(m.nu), str(m.nbody), str(m.njnt), fmt(m.opt.timestep)]])

    body_rows = []
    for b in range(m.nbody):
        bname = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or ""
        body_rows.append([bname, m.body_mass[b], *m.body_ipos[b], *m.body_iquat[b], *m.body_inertia[b]])
    write_csv(os.path.join(out, "model.csv"),
              ["name", "mass", "ipos_x", "ipos_y", "ipos_z", "iquat_w", "iquat_x", "iquat_y", "iquat_z",
               "inertia_x", "inertia_y", "inertia_z"], body_rows)

    # One-step data.
    rng = rng_for(name, SEED_ONESTEP)
    rows_in, rows_ctrl, rows_out, rows_sensors = [], [], [], []
    for _ in range(K_ONESTEP):
        qpos, qvel, ctrl = random_state(m, rng)
        set_state(m, d, qpos, qvel, ctrl, random_extras(m, rng))
        rows_in.append(state_row(d))
        if m.nsensordata:
            mujoco.mj_forward(m, d)
            rows_sensors.append(list(d.sensordata))
        rows_ctrl.append(list(ctrl))
        mujoco.mj_step(m, d)
        check_stable(m, d)
        rows_out.append(state_row(d))
    header = state_header(m)
    write_csv(os.path.join(out, "onestep_in.csv"), header, rows_in)
    write_csv(os.path.join(out, "onestep_ctrl.csv"), None, rows_ctrl)
    write_csv(os.path.join(out, "onestep_out.csv"), header, rows_out)
    if m.nsensordata:
        write_csv(os.path.join(out, "sensors.csv"), None, rows_sensors)

    # Trajectory.
    traj_rng = rng_for(name, SEED_TRAJ)
    qpos, qvel, _ = random_state(m, traj_rng)
    extras = random_extras(m, traj_rng)
    ctrls = traj_controls(m)
    traj = run_traj(m, qpos, qvel, extras, ctrls)
    write_csv(os.path.join(out, "traj_ctrl.csv"), None, [list(c) for c in ctrls])
    write_csv(os.path.join(out, "traj.csv"), header, traj.tolist())

    # Chaos classification: perturb every qvel entry by 1e-10, compare at step 100.
    traj2 = run_traj(m, qpos, qvel + CHAOS_EPS, extras, ctrls)
    amp = float(np.max(np.abs(traj2[-1, 1:] - traj[-1, 1:]))) / CHAOS_EPS
    chaotic = bool(amp > CHAOS_THRESHOLD)
    write_csv(os.path.join(out, "meta.csv"), ["chaotic", "amplification"],
              [["true" if chaotic else "false", amp]])

    if m.nkey:
        key_rows = []
        for k in range(m.nkey):
            kname = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, k) or ""
            key_rows.append([kname, m.key_time[k], *m.key_qpos[k], *m.key_qvel[k], *m.key_act[k],
                             *m.key_mpos[k], *m.key_mquat[k], *m.key_ctrl[k]])
        write_csv(os.path.join(out, "keys.csv"),
                  ["name"] + header + [f"ctrl{i}" for i in range(m.nu)], key_rows)

    if has_muscles(m):
        write_csv(os.path.join(out, "actuators.csv"), ["name", "length_lo", "length_hi", "acc0"],
                  actuator_rows(m))

    return dict(name=name, nq=m.nq, nv=m.nv, nu=m.nu, nbody=m.nbody, njnt=m.njnt,
                timestep=m.opt.timestep, integrator=mujoco.mjtIntegrator(m.opt.integrator).name,
                chaotic=chaotic, amp=amp)


def has_muscles(m):
    muscle = (mujoco.mjtGain.mjGAIN_MUSCLE, mujoco.mjtBias.mjBIAS_MUSCLE)
    return any(m.actuator_gaintype[i] == muscle[0] or m.actuator_biastype[i] == muscle[1] for i in range(m.nu))


def actuator_rows(m):
    return [[mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i) or "", *m.actuator_lengthrange[i],
             m.actuator_acc0[i]] for i in range(m.nu)]


def read_csv(path, header=True):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if header:
        return rows[0], rows[1:]
    return None, rows


def floats(rows):
    return np.array([[float(x) for x in r] for r in rows], dtype=float).reshape(len(rows), -1)


def problem_list(prefix):
    """An empty list of problems, and `expect(cond, msg)`, which records `prefix: msg` in it
    when `cond` is false and returns `cond`."""
    probs = []

    def expect(cond, msg):
        if not cond:
            probs.append(f"{prefix}: {msg}")
        return cond

    return probs, expect


def check(name, path, out_root):
    """Re-read the files written for one model, check their shapes, and replay them with
    MuJoCo starting from the parsed text (so the text alone must reproduce the data
    bit for bit). Returns a list of problems (empty when all is well)."""
    out = os.path.join(out_root, name)
    m = load(path)
    d = mujoco.MjData(m)
    probs, expect = problem_list(name)

    h, rows = read_csv(os.path.join(out, "sizes.csv"))
    expect(h == ["nq", "nv", "nu", "nbody", "njnt", "timestep"] and len(rows) == 1, "sizes.csv shape")
    nq, nv, nu, nbody, njnt = (int(x) for x in rows[0][:5])
    expect((nq, nv, nu, nbody, njnt) == (m.nq, m.nv, m.nu, m.nbody, m.njnt), "sizes.csv values")
    expect(float(rows[0][5]) == m.opt.timestep, "timestep")

    h, rows = read_csv(os.path.join(out, "model.csv"))
    expect(len(h) == 12 and len(rows) == nbody and all(len(r) == 12 for r in rows), "model.csv shape")
    vals = floats([r[1:] for r in rows])
    expect(np.array_equal(vals[:, 0], m.body_mass) and np.array_equal(vals[:, 1:4], m.body_ipos)
           and np.array_equal(vals[:, 4:8], m.body_iquat) and np.array_equal(vals[:, 8:11], m.body_inertia),
           "model.csv values")

    hdr = state_header(m)
    h_in, rin = read_csv(os.path.join(out, "onestep_in.csv"))
    h_out, rout = read_csv(os.path.join(out, "onestep_out.csv"))
    _, rctrl = read_csv(os.path.join(out, "onestep_ctrl.csv"), header=False)
    expect(h_in == hdr and h_out == hdr, "onestep headers")
    expect(len(rin) == len(rout) == len(rctrl) == K_ONESTEP, "onestep row counts")
    expect(all(len(r) == len(hdr) for r in rin + rout), "onestep row widths")
    expect(all(len(r) == nu for r in rctrl), "onestep_ctrl widths")
    xin, xout = floats(rin), floats(rout)
    uin = floats(rctrl) if nu else np.zeros((K_ONESTEP, 0))
    for k in range(min(len(rin), len(rout), len(rctrl))):
        qpos, qvel, extras = split_state(m, xin[k, 1:])
        set_state(m, d, qpos, qvel, uin[k], extras)
        mujoco.mj_step(m, d)
        expect(np.array_equal(np.array(state_row(d)), xout[k]), f"onestep row {k} does not replay exactly")

    h, rtraj = read_csv(os.path.join(out, "traj.csv"))
    _, rtc = read_csv(os.path.join(out, "traj_ctrl.csv"), header=False)
    expect(h == hdr and len(rtraj) == TRAJ_STEPS + 1 and len(rtc) == TRAJ_STEPS, "traj shapes")
    expect(all(len(r) == nu for r in rtc), "traj_ctrl widths")
    x = floats(rtraj)
    u = floats(rtc) if nu else np.zeros((TRAJ_STEPS, 0))
    qpos, qvel, extras = split_state(m, x[0, 1:])
    replay = run_traj(m, qpos, qvel, extras, u)
    expect(np.array_equal(replay, x), "traj does not replay exactly")

    h, rows = read_csv(os.path.join(out, "meta.csv"))
    expect(h == ["chaotic", "amplification"] and len(rows) == 1 and rows[0][0] in ("true", "false"), "meta.csv")
    if has_muscles(m):
        h, rows = read_csv(os.path.join(out, "actuators.csv"))
        expect([r[0] for r in rows] == [r[0] for r in actuator_rows(m)]
               and np.array_equal(floats([r[1:] for r in rows]), floats([r[1:] for r in actuator_rows(m)])),
               "actuators.csv values")
    return probs


def model_paths(gym_dir):
    gym = sorted(glob.glob(os.path.join(gym_dir, "*.xml")))
    local = sorted(glob.glob(os.path.join(REPO, "tests", "models", "*.xml")))
    return gym, local


def named_models(gym_dir):
    """(name, path) of every model this script writes: the gymnasium set, the hand-written
    models, the robots."""
    gym, local = model_paths(gym_dir)
    named = [(os.path.splitext(os.path.basename(p))[0], p) for p in gym + local]
    return named + [(name, os.path.join(REPO, path)) for name, path in sorted(ROBOTS.items())]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gym-dir", default=DEFAULT_GYM_DIR, help="directory of gymnasium MJCF files")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "reference"), help="output directory")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these models (by folder name)")
    ap.add_argument("--check", action="store_true",
                    help="do not write: re-read the existing files and replay them with MuJoCo")
    args = ap.parse_args()
    route_warnings()

    models = named_models(args.gym_dir)
    if args.only:
        unknown = set(args.only) - {n for n, _ in models}
        if unknown:
            sys.exit(f"error: no models named {sorted(unknown)}")
        models = [(n, p) for n, p in models if n in args.only]
    if not model_paths(args.gym_dir)[0]:
        print(f"warning: no gymnasium models found in {args.gym_dir}", file=sys.stderr)
    names = [n for n, _ in models]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"error: duplicate model names {sorted(dup)}")

    if args.check:
        probs = []
        for name, p in models:
            probs += check(name, p, args.out)
        for msg in probs:
            print(msg)
        print(f"checked {len(models)} models with MuJoCo {mujoco.__version__}: "
              + ("OK" if not probs else f"{len(probs)} problem(s)"))
        sys.exit(1 if probs else 0)

    os.makedirs(args.out, exist_ok=True)
    print(f"MuJoCo {mujoco.__version__}; writing to {args.out}")
    print(f"{'model':<26} {'nq':>3} {'nv':>3} {'nu':>3} {'nbody':>5} {'njnt':>4} {'dt':>7} {'integrator':<10} "
          f"{'chaotic':<7} amplification")
    for name, p in models:
        r = generate(name, p, args.out)
        print(f"{r['name']:<26} {r['nq']:>3} {r['nv']:>3} {r['nu']:>3} {r['nbody']:>5} {r['njnt']:>4} "
              f"{r['timestep']:>7g} {r['integrator']:<10} {str(r['chaotic']).lower():<7} {r['amp']:.4g}")


if __name__ == "__main__":
    main()
