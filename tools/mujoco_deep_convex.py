"""MuJoCo 4.0.1's contacts between deeply overlapping convex geoms: meshes, boxes and cylinders
against one another (not two boxes, which have their own routine), each placed at a random
orientation with its centre within a few centimetres of the other's, so that they overlap by
1 to 12 cm — the penetrations MuJoCo's GJK and EPA find (its multi-contact adding points where
faces line up).

Writes tests/reference/multiccd/deep_convex.txt, read by tests/multiccd.rs, in the format of
tools/contact_scenes.py. Meshes are 12 random points (their hulls), boxes and cylinders of fixed
sizes. The last scenes, each with a cylinder, ask for a tighter `ccd_tolerance` and more
`ccd_iterations`. Random from a fixed seed. Regenerate from the repository root:

    python3 tools/mujoco_deep_convex.py > tests/reference/multiccd/deep_convex.txt
"""
import random
import sys

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
from contact_scenes import fmt, random_quat, write_scenes  # noqa: E402

PAIRS = [("mesh", "mesh"), ("box", "mesh"), ("mesh", "box"), ("cylinder", "mesh"),
         ("cylinder", "box"), ("cylinder", "cylinder")]


def geom(rng, kind, name, pos):
    """A geom of `kind` named `name` at `pos`, turned at random, and its mesh asset if any."""
    quat = fmt(random_quat(rng))
    if kind == "mesh":
        points = [rng.gauss(0, s) for _ in range(12) for s in (0.1, 0.07, 0.05)]
        asset = f'<mesh name="{name}" vertex="{fmt(points)}"/>'
        return asset, f'<geom name="{name}" type="mesh" mesh="{name}" pos="{fmt(pos)}" quat="{quat}"/>'
    size = "0.08 0.06 0.04" if kind == "box" else "0.06 0.05"
    return "", f'<geom name="{name}" type="{kind}" size="{size}" pos="{fmt(pos)}" quat="{quat}"/>'


def scene(rng, k, option=""):
    first, second = PAIRS[k % len(PAIRS)]
    asset1, geom1 = geom(rng, first, "a", [0, 0, 0])
    asset2, geom2 = geom(rng, second, "b", [rng.gauss(0, 0.03) for _ in range(3)])
    xml = (f'<mujoco>{option}<asset>{asset1}{asset2}</asset><worldbody><body name="A">{geom1}</body>'
           f'<body name="B"><freejoint/>{geom2}</body></worldbody></mujoco>')
    tight = "_tight" if option else ""
    return f"{k:03d}_{first}_{second}{tight}", xml


def main():
    rng = random.Random(20261206)
    scenes = [scene(rng, k) for k in range(60)]
    # With a cylinder, EPA stops at the tolerance: a tighter one, and more iterations.
    tight = '<option ccd_tolerance="1e-11" ccd_iterations="200"/>'
    scenes += [scene(rng, k, tight) for k in range(60, 84) if PAIRS[k % len(PAIRS)][0] == "cylinder"]
    write_scenes(scenes)


if __name__ == "__main__":
    main()
