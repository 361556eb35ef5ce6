"""MuJoCo 4.0.1's contacts between a plane and a mesh (its `mjc_PlaneConvex`).

Writes tests/reference/multiccd/plane_mesh.txt, read by tests/multiccd.rs, in the format of
tools/mujoco_multiccd.py: per scene a line `=== <name> <ncon>`, one line per contact
`<geom1> <geom2> <pos x y z> <normal x y z> <dist>`, then the model. Scenes: a mesh (a box, a
12-sided prism, a dodecahedron with five-cornered faces, a random hull of 24 points) above a
plane (level or tilted), turned at random, or resting on a face (tilted by 0.1 to 2 degrees),
on an edge or on a corner, sunk by up to 3 mm or lifted by up to 1 mm, with a 2 mm geom margin
in some; random values from a fixed seed. Regenerate from the repository root:

    python3 tools/mujoco_plane_mesh.py > tests/reference/multiccd/plane_mesh.txt
"""
import math
import random
import sys

import mujoco
import numpy as np

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
from contact_scenes import rotation, compose, random_quat, fmt, write_scenes  # noqa: E402

PHI = (1 + math.sqrt(5)) / 2


def points(pts):
    return " ".join(f"{x:.9f} {y:.9f} {z:.9f}" for x, y, z in pts)


def meshes(rng):
    box = [(x * 0.04, y * 0.05, z * 0.03) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    prism = [(0.06 * math.cos(2 * math.pi * k / 12), 0.06 * math.sin(2 * math.pi * k / 12), z)
             for z in (-0.03, 0.03) for k in range(12)]
    dodeca = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    for a in (-1, 1):
        for b in (-1, 1):
            dodeca += [(0, a / PHI, b * PHI), (a / PHI, b * PHI, 0), (b * PHI, 0, a / PHI)]
    dodeca = [(0.03 * x, 0.03 * y, 0.03 * z) for x, y, z in dodeca]
    blob = []
    for _ in range(24):
        v = np.array([rng.gauss(0, 1) for _ in range(3)])
        v /= np.linalg.norm(v)
        blob.append(tuple(v * np.array([0.05, 0.04, 0.03])))
    return {"box": box, "prism": prism, "dodecahedron": dodeca, "blob": blob}


def model(assets, plane_quat, kind, pos, quat, margin):
    return (f'<mujoco><asset><mesh name="{kind}" vertex="{assets[kind]}"/></asset><worldbody>'
            f'<geom name="floor" type="plane" size="1 1 .1" quat="{fmt(plane_quat)}"/>'
            f'<body pos="{fmt(pos)}" quat="{fmt(quat)}"><freejoint/>'
            f'<geom name="body" type="mesh" mesh="{kind}" margin="{margin}"/></body>'
            f'</worldbody></mujoco>')


def orientation(rng, pose, plane_quat):
    """A body orientation: at random, or a face, edge or corner of the mesh's box-like frame
    down on the plane, tilted a little."""
    if pose == "random":
        return random_quat(rng)
    quat = rotation([0, 0, 1], rng.uniform(0, 360))
    if pose == "edge":
        quat = compose(rotation([1, 0, 0], 45 + rng.uniform(-3, 3)), quat)
    elif pose == "corner":
        quat = compose(rotation([1, 1, 0], 54.7 + rng.uniform(-3, 3)), quat)
    axis = [rng.uniform(-1, 1), rng.uniform(-1, 1), 0]
    quat = compose(rotation(axis, rng.uniform(0.1, 2)), quat)
    return compose(plane_quat, quat)


def scene(rng, assets, k):
    kind = rng.choice(list(assets))
    pose = rng.choice(["random", "random", "face", "face", "edge", "corner"])
    plane_quat = rotation([1, 0, 0], 0.0) if rng.random() < 0.5 else compose(
        rotation([0, 0, 1], rng.uniform(0, 360)), rotation([1, 0, 0], rng.uniform(5, 30)))
    quat = orientation(rng, pose, plane_quat)
    margin = 0.002 if rng.random() < 0.25 else 0.0
    # Put the body at the origin, find its lowest vertex along the plane's normal, then sink it.
    m = mujoco.MjModel.from_xml_string(model(assets, plane_quat, kind, [0, 0, 0], quat, margin))
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    normal = d.geom_xmat[0].reshape(3, 3)[:, 2]
    verts = m.mesh_vert[: m.mesh_vertnum[0]].astype(float)
    world = verts @ d.geom_xmat[1].reshape(3, 3).T + d.geom_xpos[1]
    low = min(world @ normal)
    depth = rng.uniform(-0.001, 0.003)
    slide = np.array([rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2), 0.0])
    slide -= normal * (slide @ normal)
    pos = normal * (-low - depth) + slide
    return f"{k:03d}_{kind}_{pose}", model(assets, plane_quat, kind, pos, quat, margin)


def main():
    rng = random.Random(2)
    assets = {kind: points(pts) for kind, pts in meshes(rng).items()}
    write_scenes(scene(rng, assets, k) for k in range(160))


if __name__ == "__main__":
    main()
