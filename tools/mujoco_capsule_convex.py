"""MuJoCo 4.0.1's contacts between a capsule and a mesh or a cylinder (its multi-contact, which
takes a capsule's side line as an edge).

Writes tests/reference/multiccd/capsule_convex.txt, read by tests/multiccd.rs, in the format of
tools/mujoco_multiccd.py: per scene a line `=== <name> <ncon>`, one line per contact
`<geom1> <geom2> <pos x y z> <normal x y z> <dist>`, then the model. Scenes: a capsule of random
radius and length resting on a table (a mesh cube, a mesh prism of 12 sides, an upright
cylinder's cap, a cylinder lying on its side), placed so that its lowest point penetrates by up
to 3 mm, flat, tilted within MuJoCo's 5.1 degree edge tolerance, tilted beyond it, or standing
on an end; a quarter of them with a 1 cm margin; a mesh box resting on a lying capsule, tilted
about its axis or across it; a capsule lying across a table's edge, one end hanging over; and a
lying capsule beside an upright cylinder, touching its cap's rim.
Random yaw and offset from a fixed seed. Regenerate from the repository root:

    python3 tools/mujoco_capsule_convex.py > tests/reference/multiccd/capsule_convex.txt
"""
import math
import random
import sys

import mujoco
import numpy as np

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
from contact_scenes import rotation, compose, fmt, write_scenes  # noqa: E402

CUBE = " ".join(f"{x} {y} {z}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
PRISM = " ".join(f"{0.2 * math.cos(2 * math.pi * k / 12):.9f} {0.2 * math.sin(2 * math.pi * k / 12):.9f} {z}"
                 for z in (-0.1, 0.1) for k in range(12))
ASSETS = f'''<asset><mesh name="cube" vertex="{CUBE}" scale=".2 .2 .1"/>
<mesh name="small" vertex="{CUBE}" scale=".04 .05 .03"/><mesh name="prism" vertex="{PRISM}"/></asset>'''
# Tables, each with its top at z = 0.1.
TABLES = {"mesh": '<geom name="table" type="mesh" mesh="cube"/>',
          "prism": '<geom name="table" type="mesh" mesh="prism"/>',
          "cylinder": '<geom name="table" type="cylinder" size=".2 .1"/>',
          "lying_cylinder": '<geom name="table" type="cylinder" size=".1 .2" euler="0 90 0"/>'}
TOP = 0.1


def axis_of(quat):
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)[:, 2]


def horizontal(rng):
    a = np.array([rng.uniform(-1, 1), rng.uniform(-1, 1), 0.0])
    return a / np.linalg.norm(a)


def capsule_scene(rng, k):
    table = rng.choice(list(TABLES))
    pose = rng.choice(["flat", "flat", "tilt", "tilt", "steep", "end"])
    radius, half = rng.uniform(0.02, 0.05), rng.uniform(0.04, 0.15)
    # Lying along x (turned about y), yawed, then tilted about a horizontal axis.
    quat = compose(rotation([0, 0, 1], rng.uniform(0, 360)), rotation([0, 1, 0], 90))
    tilt = {"flat": 0.0, "tilt": rng.uniform(0.2, 4.8), "steep": rng.uniform(6, 15),
            "end": rng.uniform(30, 85)}[pose]
    if tilt:
        quat = compose(rotation(horizontal(rng), tilt), quat)
    depth = rng.uniform(0.0002, 0.003)
    x, y = rng.uniform(-0.06, 0.06), rng.uniform(-0.06, 0.06)
    if table == "lying_cylinder":
        y = rng.uniform(-0.01, 0.01)
    margin = ' margin="0.01"' if rng.random() < 0.25 else ""
    xml = lambda z: (f'<mujoco>{ASSETS}<worldbody><body>{TABLES[table]}</body>'
                     f'<body pos="{fmt([x, y, z])}" quat="{fmt(quat)}"><freejoint/>'
                     f'<geom name="capsule" type="capsule" size="{radius:.17g} {half:.17g}"{margin}/></body>'
                     f'</worldbody></mujoco>')
    return f"{k:03d}_capsule_on_{table}_{pose}", placed(xml, TOP + half * abs(axis_of(quat)[2]) + radius, depth)


def box_on_capsule(rng, k, along=False):
    """A mesh box resting on a lying capsule, flat or tilted about the capsule's axis (or, with
    `along`, about the horizontal axis across it, within the edge tolerance, some with a margin)."""
    tilt = rng.choice([0.0, rng.uniform(0.2, 4.8), rng.uniform(6, 15)])
    if along:
        tilt = rng.uniform(0.2, 4.8)
    quat = compose(rotation([0, 1, 0] if along else [1, 0, 0], tilt), rotation([0, 0, 1], rng.uniform(-20, 20)))
    margin = ' margin="0.01"' if along and rng.random() < 0.3 else ""
    x, y = rng.uniform(-0.1, 0.1), rng.uniform(-0.003, 0.003)
    xml = lambda z: (f'<mujoco>{ASSETS}<worldbody><body>'
                     f'<geom name="table" type="capsule" size=".05 .2" euler="0 90 0"{margin}/></body>'
                     f'<body pos="{fmt([x, y, z])}" quat="{fmt(quat)}">'
                     f'<freejoint/><geom name="top" type="mesh" mesh="small"/></body></worldbody></mujoco>')
    return f"{k:03d}_box_on_capsule" + ("_tilted_along" if along else ""), placed(xml, 0.2, rng.uniform(0.0002, 0.003))


def over_edge(rng, k):
    """A capsule lying across the mesh table's edge (x = 0.2), tilted within the edge tolerance
    about the horizontal axis across it, so that one end hangs over."""
    radius, half = rng.uniform(0.02, 0.05), rng.uniform(0.06, 0.15)
    quat = compose(rotation([0, 1, 0], rng.uniform(-4.5, 4.5)), rotation([0, 1, 0], 90))
    quat = compose(rotation([0, 0, 1], rng.uniform(-3, 3)), quat)
    x, y = 0.2 + rng.uniform(-0.5, 0.5) * half, rng.uniform(-0.1, 0.1)
    xml = lambda z: (f'<mujoco>{ASSETS}<worldbody><body>{TABLES["mesh"]}</body>'
                     f'<body pos="{fmt([x, y, z])}" quat="{fmt(quat)}"><freejoint/>'
                     f'<geom name="capsule" type="capsule" size="{radius:.17g} {half:.17g}"/></body>'
                     f'</worldbody></mujoco>')
    return f"{k:03d}_capsule_over_edge", placed(xml, TOP + radius + half, rng.uniform(0.0002, 0.003))


def at_rim(rng, k):
    """A lying capsule beside an upright cylinder, its core at or a little above the cap's
    height, so that its nearest point is on the cap's rim."""
    radius, half = rng.uniform(0.02, 0.05), rng.uniform(0.06, 0.15)
    quat = compose(rotation([0, 0, 1], rng.uniform(60, 120)), rotation([0, 1, 0], 90))
    z = TOP + rng.choice([0.0, rng.uniform(0.0, 0.5) * radius])
    xml = lambda x: (f'<mujoco>{ASSETS}<worldbody><body>{TABLES["cylinder"]}</body>'
                     f'<body pos="{fmt([x, rng_y, z])}" quat="{fmt(quat)}"><freejoint/>'
                     f'<geom name="capsule" type="capsule" size="{radius:.17g} {half:.17g}"/></body>'
                     f'</worldbody></mujoco>')
    rng_y = rng.uniform(-0.02, 0.02)
    depth = rng.uniform(0.0002, 0.003)
    x = 0.5
    for _ in range(50):  # the side is curved: move in until the penetration is `depth`
        m = mujoco.MjModel.from_xml_string(xml(x))
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        x -= mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None) + depth
    return f"{k:03d}_capsule_at_cylinder_rim", xml(x)


def placed(xml, z, depth):
    """`xml(z)` with the body lowered from `z` until the geoms penetrate by `depth` (MuJoCo's
    own distance)."""
    m = mujoco.MjModel.from_xml_string(xml(z))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    gap = mujoco.mj_geomDistance(m, d, 0, 1, 1.0, None)
    return xml(z - gap - depth)


def scenes(rng):
    for k in range(146):
        if k < 130:
            make = capsule_scene if k < 100 else box_on_capsule if k < 120 else over_edge
            yield make(rng, k)
        elif k < 140:
            yield box_on_capsule(rng, k, along=True)
        else:
            yield at_rim(rng, k)


def main():
    write_scenes(scenes(random.Random(7)))


if __name__ == "__main__":
    main()
