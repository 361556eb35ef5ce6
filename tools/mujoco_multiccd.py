"""MuJoCo 4.0.1's contacts between boxes, meshes and cylinders (its single-shot multi-contact).

Writes tests/reference/multiccd/cases.txt, read by tests/multiccd.rs: per scene a line
`=== <name> <ncon>`, then one line per contact `<geom1> <geom2> <pos x y z> <normal x y z> <dist>`
(MuJoCo's order: normal from geom1 to geom2, dist negative when penetrating), then the model.
Scenes: a resting body (box, mesh cube, 12-sided mesh prism, cylinder) on a table (box or mesh
cube), placed to penetrate by about a millimetre, flat, tilted within MuJoCo's 5.1 degree face
tolerance, tilted beyond it, lying on an edge or on its side; random yaw and offset from a fixed
seed. Regenerate from the repository root:

    python3 tools/mujoco_multiccd.py > tests/reference/multiccd/cases.txt
"""
import math
import random
import sys

import mujoco
import numpy as np

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
from contact_scenes import rotation, compose, write_scenes  # noqa: E402

CUBE = " ".join(f"{x} {y} {z}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
PRISM = " ".join(f"{0.06 * math.cos(2 * math.pi * k / 12):.9f} {0.06 * math.sin(2 * math.pi * k / 12):.9f} {z}"
                 for z in (-0.03, 0.03) for k in range(12))
ASSETS = f'''<asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/>
<mesh name="small" vertex="{CUBE}" scale=".04 .05 .03"/><mesh name="prism" vertex="{PRISM}"/></asset>'''
TABLES = {"box": '<geom name="table" type="box" size=".2 .2 .1"/>',
          "mesh": '<geom name="table" type="mesh" mesh="cube"/>'}
TOP = 0.1
BODIES = {"box": '<geom name="top" type="box" size=".04 .05 .03"/>',
          "mesh": '<geom name="top" type="mesh" mesh="small"/>',
          "prism": '<geom name="top" type="mesh" mesh="prism"/>',
          "cylinder": '<geom name="top" type="cylinder" size=".04 .05"/>'}


def lowest(kind, quat):
    """The body's lowest point below its origin, at orientation `quat`."""
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    mat = mat.reshape(3, 3)
    if kind == "cylinder":
        a = mat[:, 2]
        return 0.05 * abs(a[2]) + 0.04 * math.sqrt(max(0.0, 1 - a[2] ** 2))
    if kind == "prism":
        pts = [(0.06 * math.cos(2 * math.pi * k / 12), 0.06 * math.sin(2 * math.pi * k / 12), z)
               for z in (-0.03, 0.03) for k in range(12)]
    else:
        pts = [(x * 0.04, y * 0.05, z * 0.03) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    return max(-(mat @ np.array(p))[2] for p in pts)


def scene(rng, k):
    table = rng.choice(list(TABLES))
    kind = rng.choice(list(BODIES))
    pose = rng.choice(["flat", "flat", "tilt", "tilt", "steep", "edge", "side"])
    quat = rotation([0, 0, 1], rng.uniform(0, 360))
    if kind == "cylinder" and pose in ("edge", "side"):
        quat = compose(quat, rotation([1, 0, 0], 90 + rng.uniform(-3, 3)))
    elif pose == "edge":
        quat = compose(quat, rotation([1, 0, 0], 45 + rng.uniform(-3, 3)))
    elif pose == "side":
        quat = compose(quat, rotation([0, 1, 0], 90 + rng.uniform(-3, 3)))
    axis = [rng.uniform(-1, 1), rng.uniform(-1, 1), 0]
    tilt = {"flat": 0.0, "tilt": rng.uniform(0.5, 4.5), "steep": rng.uniform(6, 12)}.get(pose, 0.0)
    if tilt:
        quat = compose(rotation(axis, tilt), quat)
    depth = rng.uniform(0.0002, 0.002)
    x, y = rng.uniform(-0.08, 0.08), rng.uniform(-0.08, 0.08)
    z = TOP + lowest(kind, quat) - depth
    q = " ".join(f"{v:.17g}" for v in quat)
    xml = (f'<mujoco>{ASSETS}<worldbody>{TABLES[table]}'
           f'<body pos="{x:.17g} {y:.17g} {z:.17g}" quat="{q}"><freejoint/>{BODIES[kind]}</body>'
           f'</worldbody></mujoco>')
    return f"{k:03d}_{kind}_on_{table}_{pose}", xml


def main():
    rng = random.Random(1)
    write_scenes(scene(rng, k) for k in range(120))


if __name__ == "__main__":
    main()
